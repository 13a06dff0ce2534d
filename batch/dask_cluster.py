# SPDX-License-Identifier: GPL-3.0-or-later
"""``--scheduler ADDRESS``: the clips run on a Dask cluster (``dask scheduler`` and ``dask
worker`` processes, or a ``distributed.LocalCluster``) instead of local processes.

Each clip is one task, the same function the local workers run (:func:`.runner._task`),
reached through :func:`.worker_boot.run_task`, which Dask sends by value; the add-on's source
goes to every worker once (:func:`.worker_boot.source_archive`, a file in its folder), so
workers need only ``numpy`` and ``distributed`` (and ``bpy`` for .blend and FBX clips), not
the add-on.
Clips and the output folder must be at the same paths on every worker (a shared file system):
workers read clips and write cleaned ones. Dask is imported only here.
"""

import hashlib
import tempfile
from pathlib import Path

from . import worker_boot


def _by_value(function):
    """A copy of ``function`` that plain pickle cannot find by name, so Dask sends it with
    cloudpickle, by value (its module, registered by value, comes with it): pickled by
    reference, a worker would have to import the add-on to read the task."""
    import types

    copy = types.FunctionType(function.__code__, function.__globals__, f"{function.__name__}_by_value")
    copy.__qualname__ = copy.__name__
    return copy


def run_on_dask(address, tasks, on_result, folder):
    """Run ``tasks`` ``[(name, args)]`` on the Dask scheduler at ``address``; calls
    ``on_result(name, status, payload, memory)`` as each ends. A task whose worker died (Dask
    gave up on it) is reported as failed."""
    try:
        import cloudpickle
        import distributed
        from distributed.diagnostics.plugin import UploadFile
    except ImportError:
        raise ValueError(
            "--scheduler needs Dask's distributed scheduler, which is not installed: pip install dask distributed"
        ) from None
    cloudpickle.register_pickle_by_value(worker_boot)
    task = _by_value(worker_boot.run_task)
    try:
        client = distributed.Client(address, timeout="20s")
    except (OSError, TimeoutError) as err:
        raise ValueError(f"cannot reach the Dask scheduler at {address}: {err}") from None
    with client, tempfile.TemporaryDirectory() as tmp:
        # the source goes to every worker, and to every worker that joins or restarts later,
        # as a file in its folder (a worker plugin, named after the digest: a second batch
        # replaces it); not as data a task holds, which dies with the worker holding it
        archive = worker_boot.source_archive(Path(folder))
        name = f"joint_limits_batch_{hashlib.sha256(archive).hexdigest()[:16]}"
        path = Path(tmp) / f"{name}.zip"
        path.write_bytes(archive)
        client.register_plugin(UploadFile(str(path), load=False), name=name)
        futures = {
            client.submit(task, path.name, args, pure=False, key=f"joint-limits-{name}-{clip}"): clip for clip, args in tasks
        }
        for future in distributed.as_completed(futures):
            try:
                result = future.result()
            except Exception as err:  # KilledWorker, a lost connection: reported, the batch goes on
                last = (str(err).strip().splitlines() or [""])[-1]
                result = ("failed", f"the Dask task failed ({type(err).__name__}: {last})", 0.0)
            # forgotten once read: a result held on a worker that dies later (the crash of another
            # clip) is otherwise computed again, and that clip's files written after the batch
            # ended (CI: a '.rom1.bvh.partial' renamed under the test reading the output)
            clip = futures.pop(future)
            future.release()
            on_result(clip, *result)
