# SPDX-License-Identifier: GPL-3.0-or-later
"""Issue 15: throughput of ``joint_limits batch check`` and ``clean`` against Blender's BVH
import of the same clips alone, at one and two worker processes, and memory per worker.

./dev bench bench/bench_batch.py [CLIPS ...] [--model ellipsoid] [--repeat K] [--jobs 1 2]
    (default clips: /work/shared/mocap)

Fits a limit set from the clips first (not timed: the throughput measured is check and clean),
then times each job in a fresh output folder (nothing to resume). The import baseline is
``bpy.ops.import_anim.bvh`` (through the add-on's checked import) of every clip once, in this
process; with ``--repeat K`` the library is the clips K times over (copies under other names),
so the workers' start-up is spread over more clips, and the baseline is scaled by K. Memory:
the peak resident memory of a worker process (``VmHWM``; with one job, of this process, which
runs the clips itself) and of this process; "by workers": the clips the workers ran (with
several jobs this process runs BVH clips too); "CPU s": the processor time of this process and
its workers together (what the job costs whatever else the machine runs). The load average
is printed before and after: on a shared machine other work skews the two-job figures.
"""

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import _setup


def main():
    p = argparse.ArgumentParser()
    p.add_argument("clips", nargs="*", default=["/work/shared/mocap"])
    p.add_argument("--model", default="ellipsoid")
    p.add_argument("--jobs", type=int, nargs="+", default=[1, 2])
    p.add_argument("--repeat", type=int, default=1, help="the library is the clips this many times over")
    args = p.parse_args()
    addon = _setup.addon()
    import bpy

    runner = addon.batch.runner
    clips = runner.collect_clips(args.clips)
    frames = sum(addon.rig.io.bvh_file.read_bvh(c.path).frame_count for c in clips)
    print(f"{len(clips)} clips, {frames} frames; load average {os.getloadavg()[0]:.2f} (1 min)")
    quiet = open("/dev/null", "w")  # noqa: SIM115 - progress lines would drown the table
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        runner.run_batch("fit", args.clips, tmp / "fit", model=args.model, stream=quiet)
        limits = tmp / "fit" / "limits.json"
        library = args.clips
        if args.repeat > 1:
            (tmp / "library").mkdir()
            for k in range(args.repeat):
                for clip in clips:
                    shutil.copyfile(clip.path, tmp / "library" / f"r{k}_{Path(clip.path).name}")
            library = [str(tmp / "library")]

        t0 = time.perf_counter()
        for clip in clips:
            obj = addon.rig.io.bvh.import_bvh_armature(bpy.context, clip.path)
            addon.rig.io.bvh.remove_armature(obj)
        base = (time.perf_counter() - t0) * args.repeat
        count = len(clips) * args.repeat
        print(f"Blender's importer alone: {base:.2f} s for {count} clips, {60 * count / base:.1f} clips/min (this process)")
        print(
            f"{'job':<6} {'jobs':>4} {'seconds':>8} {'clips/min':>10} {'x import':>9} {'peak MB/worker':>15} {'by workers':>10} {'CPU s':>6} failed"
        )
        for job in ("check", "clean"):
            for jobs in args.jobs:
                before = os.times()
                summary, stats = runner.run_batch(job, library, tmp / f"{job}{jobs}", limits=limits, jobs=jobs, stream=quiet)
                s = stats["seconds"]
                cpu = sum(b - a for a, b in zip(before[:4], os.times()[:4], strict=True))  # this process and its workers
                print(
                    f"{job:<6} {jobs:>4} {s:>8.2f} {60 * count / s:>10.1f} {s / base:>9.2f} "
                    f"{stats['worker_peak_mb'] or stats['process_peak_mb']:>15.0f} {stats['ran_in_workers']:>10} "
                    f"{cpu:>6.2f} {summary['clips_failed']}"
                )
        print(f"this process (Blender and the add-on): peak {addon.batch.clip_jobs.peak_memory_mb():.0f} MB")
    print(f"load average {os.getloadavg()[0]:.2f} (1 min) at the end")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
