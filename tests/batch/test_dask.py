# SPDX-License-Identifier: GPL-3.0-or-later
"""``joint_limits batch --scheduler``: the clips run on a Dask cluster (a ``LocalCluster`` of
two worker processes, which get the add-on's code from the batch, not from this checkout) and
the outputs are the bytes of one local job; a clip that kills its workers is reported and the
rest done; without Dask installed, one line says so."""

import json
import sys

import pytest
from clip_library import _files, _library

distributed = pytest.importorskip("distributed")


@pytest.fixture(scope="module")
def cluster(addon):
    """Two worker processes (one thread each) that end themselves on a clip named crash.bvh
    (the batch's test hook, in their environment only); Dask gives up on a task after it
    killed two workers, and hands a worker one task at a time (saturation 1), so no other clip
    is on a worker when it dies (Dask counts those against them too)."""
    import dask

    with (
        pytest.MonkeyPatch.context() as env,
        dask.config.set({"distributed.scheduler.allowed-failures": 1, "distributed.scheduler.worker-saturation": 1.0}),
    ):
        env.setenv(addon.batch.clip_jobs.CRASH_ENV, "crash.bvh")
        local = distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None, worker_dashboard_address=None
        )
    with local:
        yield local


def test_a_dask_cluster_writes_the_bytes_of_one_job(clean_file, addon, tmp_path, cluster):
    lib = _library(addon, tmp_path / "lib")
    main = addon.cli.main
    fit = ["batch", "fit", str(lib / "rom*.bvh"), "--model", "ellipsoid"]
    assert main([*fit, "--output", str(tmp_path / "fit1")]) == 0
    assert main([*fit, "--output", str(tmp_path / "fitd"), "--scheduler", cluster.scheduler_address]) == 0
    assert _files(tmp_path / "fit1") == _files(tmp_path / "fitd")
    with distributed.Client(cluster) as client:  # the clips ran there, on the code the batch sent
        where = client.run(eval, "[m.__file__ for n, m in __import__('sys').modules.items() if n.endswith('.batch.runner')]")
    files = [f for found in where.values() for f in found]
    assert files and all("joint_limits_batch_" in f and "dask-scratch" in f for f in files), where
    args = ["batch", "clean", str(lib), "--limits", str(tmp_path / "fit1" / "limits.json")]
    assert main([*args, "--output", str(tmp_path / "one")]) == 1
    (lib / "crash.bvh").write_bytes((lib / "rom0.bvh").read_bytes())  # ends the Dask worker that reads it
    assert main([*args, "--output", str(tmp_path / "dask"), "--scheduler", cluster.scheduler_address]) == 1
    ours = _files(tmp_path / "dask")
    assert "clips/crash.bvh" not in ours and {k: v for k, v in ours.items() if "summary" not in k} == {
        k: v for k, v in _files(tmp_path / "one").items() if "summary" not in k
    }
    summary = json.loads((tmp_path / "dask" / "summary.json").read_text())
    failed = {c["clip"]: c["error"] for c in summary["clips"] if c["status"] == "failed"}
    assert summary["clips_done"] == 4 and sorted(failed) == ["corrupt.bvh", "crash.bvh"]
    assert "KilledWorker" in failed["crash.bvh"]


def test_without_dask_the_scheduler_option_is_one_line(clean_file, addon, tmp_path, capsys, monkeypatch):
    lib = _library(addon, tmp_path / "lib")
    monkeypatch.setitem(sys.modules, "distributed", None)  # import distributed -> ImportError
    code = addon.cli.main(
        ["batch", "fit", str(lib / "rom0.bvh"), "--output", str(tmp_path / "o"), "--scheduler", "tcp://127.0.0.1:1"]
    )
    assert code == 2
    err = capsys.readouterr().err
    assert "needs Dask" in err and "pip install dask distributed" in err and "Traceback" not in err
