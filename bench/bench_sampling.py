# SPDX-License-Identifier: GPL-3.0-or-later
"""(c) Sampling 1000 frames x 60 bones from an action (keyframe fast path and evaluated path).

./dev bench bench/bench_sampling.py [--bones 60] [--frames 1000]
"""

import argparse
import time

import _setup
import bench_frame_time as rigs

addon = _setup.addon()
import bpy  # noqa: E402


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--bones", type=int, default=60)
    p.add_argument("--frames", type=int, default=1000)
    args = p.parse_args()
    obj, _ = rigs.build(args.bones, args.frames)
    names = [pb.name for pb in obj.pose.bones]
    action = obj.animation_data.action
    best = float("inf")
    for _ in range(5):
        t0 = time.perf_counter()
        clouds, _, _ = addon.rig.tasks.sample.sample_rotations(obj, names, [action])
        best = min(best, time.perf_counter() - t0)
    t0 = time.perf_counter()
    addon.rig.tasks.sample.store_clouds(obj, clouds)
    store = time.perf_counter() - t0
    # a plain per-frame Python loop over fcurve.evaluate, for scale
    curves = addon.rig.io.actions.bone_rotation_curves(obj, action)
    t0 = time.perf_counter()
    for f in range(1, args.frames + 1):
        for channels in curves.values():
            for fc in channels["rotation_quaternion"].values():
                fc.evaluate(f)
    loop = time.perf_counter() - t0
    t0 = time.perf_counter()
    addon.rig.tasks.sample.sample_rotations(obj, names, [action], evaluated=True, scene=bpy.context.scene)
    evaluated = time.perf_counter() - t0
    print(f"sampling {args.frames} frames x {args.bones} bones")
    print(f"  keyframe fast path:          {best * 1e3:8.1f} ms   (target <= 100 ms)")
    print(f"  storing clouds in the .blend: {store * 1e3:7.1f} ms")
    print(f"  fcurve.evaluate Python loop: {loop * 1e3:8.1f} ms   ratio {loop / best:.1f}x")
    print(f"  evaluated (frame_set) path:  {evaluated * 1e3:8.1f} ms")


if __name__ == "__main__":
    main()
