# SPDX-License-Identifier: GPL-3.0-or-later
"""Limb range of motion on a rig (issue 12's bench, part 3): the humanoid's four limbs (upper
arm + forearm, thigh + shin) sampled from generated range-of-motion takes and fitted with Fit
Limb Range's code (rig/tasks/limb.py). Prints per limb the fit time, the lookup built on the first
query, the bytes it keeps (model and stored JSON) and relocation queries per second: a batch
(half of the ends outside the workspace) and one end at a time (what live IK asks per chain
and frame, with the swivel clamp: ``limit``).

    ./dev bench bench/bench_limb_rom.py [--frames 2400] [--takes 4] [--queries 100000]
"""

import argparse
import time

import _setup
import numpy as np

addon = _setup.addon()
import bpy  # noqa: E402

LIMBS = ("forearm.L", "forearm.R", "shin.L", "shin.R")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--frames", type=int, default=2400, help="frames per generated take")
    parser.add_argument("--takes", type=int, default=4, help="generated takes sampled (seeds 0..takes-1)")
    parser.add_argument("--queries", type=int, default=100_000, help="ends per batch of relocation queries")
    args = parser.parse_args()
    bpy.ops.wm.read_homefile(use_empty=True)
    skeleton = addon.limits.body.skeleton.humanoid_skeleton()
    obj = addon.rig.io.humanoid.build_armature(skeleton, "Humanoid")
    motion = np.concatenate([addon.limits.body.motion.range_of_motion(skeleton, args.frames, s) for s in range(args.takes)])
    order = [skeleton.index(name) for name in obj.pose.bones.keys()]  # (key_rotations keys pose.bones order)
    addon.rig.io.humanoid.key_rotations(obj, motion[:, order], "ROM")
    names = [n for middle in LIMBS for n in (obj.pose.bones[middle].parent.name, middle)]
    t0 = time.perf_counter()
    clouds, _, _ = addon.rig.tasks.sample.sample_rotations(obj, names, [obj.animation_data.action])
    addon.rig.tasks.sample.store_clouds(obj, clouds)
    print(f"sampled {len(names)} bones x {len(motion)} frames in {time.perf_counter() - t0:.2f} s")
    rng = np.random.default_rng(0)
    print(
        f"{'limb':<11} {'fit s':>6} {'lookup s':>8} {'kept':>5} {'bytes':>6} {'json':>6} {'batch q/s':>10} {'single q/s':>10} {'limit q/s':>10}"
    )
    for middle in LIMBS:
        t0 = time.perf_counter()
        model = addon.rig.tasks.limb.fit_limb(obj, middle)
        fit = time.perf_counter() - t0
        stored = len(obj.pose.bones[middle].joint_limit.limb_data)
        t0 = time.perf_counter()
        model.contains(np.zeros((1, 3)) + 0.1)  # builds the lookup
        lookup = time.perf_counter() - t0
        _, _, ends = addon.rig.tasks.limb.limb_poses(obj, middle)
        inside = ends[rng.integers(len(ends), size=args.queries // 2)]
        outside = rng.normal(size=(args.queries - len(inside), 3)) * np.abs(ends).max()
        batch = np.concatenate((inside, outside))
        t0 = time.perf_counter()
        model.relocate(batch)
        batch_rate = len(batch) / (time.perf_counter() - t0)
        singles = batch[rng.integers(len(batch), size=2000)]
        t0 = time.perf_counter()
        for end in singles:
            model.relocate(end)
        single_rate = len(singles) / (time.perf_counter() - t0)
        t0 = time.perf_counter()
        for end in singles:
            model.limit(end, 0.5)
        limit_rate = len(singles) / (time.perf_counter() - t0)
        kept = len(model.params["samples"])
        print(
            f"{middle:<11} {fit:6.2f} {lookup:8.2f} {kept:5d} {model.nbytes():6d} {stored:6d} "
            f"{batch_rate:10.0f} {single_rate:10.0f} {limit_rate:10.0f}"
        )


if __name__ == "__main__":
    main()
