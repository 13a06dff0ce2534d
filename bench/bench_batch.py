# SPDX-License-Identifier: GPL-3.0-or-later
"""Issue 15: throughput of ``joint_limits batch check`` and ``clean`` against Blender's BVH
import of the same clips alone, at one and two worker processes, and memory per worker.

./dev bench bench/bench_batch.py [CLIPS ...] [--model ellipsoid]   (default: /work/shared/mocap)

Fits a limit set from the clips first (not timed: the throughput measured is check and clean),
then times each job in a fresh output folder (nothing to resume). The import baseline is
``bpy.ops.import_anim.bvh`` (through the add-on's checked import) of every clip, in this process.
"""

import argparse
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
    args = p.parse_args()
    addon = _setup.addon()
    import bpy

    runner = addon.batch.runner
    clips = runner.collect_clips(args.clips)
    frames = sum(addon.batch.bvh_file.read_bvh(c).frame_count for c in clips)
    print(f"{len(clips)} clips, {frames} frames")
    quiet = open("/dev/null", "w")  # noqa: SIM115 - progress lines would drown the table
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        runner.run_batch("fit", args.clips, tmp / "fit", model=args.model, stream=quiet)
        limits = tmp / "fit" / "limits.json"

        t0 = time.perf_counter()
        for clip in clips:
            obj = addon.rig.bvh.import_bvh_armature(bpy.context, clip)
            addon.rig.bvh.remove_armature(obj)
        base = time.perf_counter() - t0
        print(f"Blender's importer alone: {base:.2f} s, {60 * len(clips) / base:.1f} clips/min (this process)")
        print(f"{'job':<6} {'jobs':>4} {'seconds':>8} {'clips/min':>10} {'x import':>9} {'peak MB/worker':>15} failed")
        for job in ("check", "clean"):
            for jobs in args.jobs:
                summary, stats = runner.run_batch(job, args.clips, tmp / f"{job}{jobs}", limits=limits, jobs=jobs, stream=quiet)
                s = stats["seconds"]
                print(
                    f"{job:<6} {jobs:>4} {s:>8.2f} {60 * len(clips) / s:>10.1f} {s / base:>9.2f} "
                    f"{stats['peak_memory_mb']:>15.0f} {summary['clips_failed']}"
                )
    sys.stdout.flush()


if __name__ == "__main__":
    main()
