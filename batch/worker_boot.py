# SPDX-License-Identifier: GPL-3.0-or-later
"""How a batch worker (a spawned process, or a Dask worker) gets the add-on's code.

A worker needs the batch's functions, not a registered add-on: :func:`boot` makes the add-on's
package importable under the parent's module name (``bl_ext.<repo>.<id>``) without running
its ``__init__`` (which imports Blender), so a worker on BVH clips never starts Blender; the
modules that read .blend and FBX clips import ``bpy`` themselves when such a clip comes.

Spawned workers run this file through ``runpy.run_path`` (importing it does nothing); a Dask
worker gets :func:`run_task` by value (cloudpickle) and the add-on's source as a zip
(:func:`source_archive`) in its folder, unpacked once per worker.
"""

import importlib
import io
import os
import sys
import types
import zipfile
from pathlib import Path

RUN_NAME = "__joint_limits_worker__"
#: Folders of the add-on a worker never needs.
NOT_SHIPPED = ("tests", "bench", "tools", "demo", "out")


def boot(module, directory):
    """Make the package ``module`` (``bl_ext.<repo>.<id>``), whose folder is
    ``directory/<id>`` (``directory/joint_limits`` for a top-level name), importable without
    running its ``__init__``, unless it is loaded."""
    if module in sys.modules:
        return
    parts = module.split(".")
    for k in range(1, len(parts)):
        name = ".".join(parts[:k])
        if name not in sys.modules:
            parent = types.ModuleType(name)
            parent.__path__ = []
            sys.modules[name] = parent
    package = types.ModuleType(module)
    package.__path__ = [os.path.join(directory, parts[-1] if len(parts) > 1 else "joint_limits")]
    package.__package__ = module
    sys.modules[module] = package


def source_archive(folder):
    """The add-on's Python files under ``folder`` as zip bytes, under ``joint_limits/``."""
    folder = Path(folder)
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(folder.rglob("*.py")):
            relative = path.relative_to(folder)
            if relative.parts[0] in NOT_SHIPPED or relative.parts[0].startswith("."):
                continue
            archive.write(path, f"joint_limits/{relative.as_posix()}")
    return buffer.getvalue()


def _without_blender_scripts():
    """Drop Blender's script folders from ``sys.path`` before ``bpy`` is imported: a worker
    started from a process running Blender (a ``LocalCluster``) inherits them, and with them
    ``import bpy`` finds Blender's inner ``bpy`` package (``scripts/modules``) instead of the
    module (whose ``bpy/__init__`` is compiled)."""
    if "bpy" in sys.modules:
        return
    sys.path[:] = [p for p in sys.path if not os.path.isfile(os.path.join(p, "bpy", "__init__.py"))]


def run_task(archive_name, args):
    """One clip's task on a Dask worker: unpack the add-on's source ``archive_name`` (a zip Dask
    put in the worker's folder; named after its digest), once per worker and version, load it
    as a package of that name (so a long-lived worker never runs an older version's code) and
    run ``batch.runner._task(*args)``."""
    module = archive_name.removesuffix(".zip")
    if module not in sys.modules:
        from distributed import get_worker

        _without_blender_scripts()
        base = get_worker().local_directory
        folder = os.path.join(base, module)
        if not os.path.isdir(folder):
            partial = f"{folder}.{os.getpid()}.partial"
            with zipfile.ZipFile(os.path.join(base, archive_name)) as z:
                z.extractall(partial)
            try:
                os.rename(partial, folder)
            except OSError:  # another process of this machine unpacked it first
                pass
        boot(module, folder)
    return importlib.import_module(module + ".batch.runner")._task(*args)


if __name__ == RUN_NAME:
    boot(MODULE, DIRECTORY)  # noqa: F821 - given by the parent through runpy's init_globals
