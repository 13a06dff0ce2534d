# SPDX-License-Identifier: GPL-3.0-or-later
"""Frame time of a rig whose limbs are posed by IK (issue 12's bench): 60 limited bones, four of
them two-bone limbs with Blender's IK constraint aiming at Empties keyed to wander in and out
of the limbs' limited reach. Played with live enforcement on (the limbs solved within their
limits by rig/limited_ik.py) against the same rig with Blender's IK alone and enforcement off.
Target (issue 12): <= 1.5x.

    ./dev bench bench/bench_ik_frame_time.py [--bones 60] [--frames 300] [--model kdop] [--rounds 3] [--profile]

With ``--profile``, one more first play and later play run under cProfile and their heaviest
functions (own time and cumulative) are printed after the figures.
"""

import argparse
import cProfile
import io
import pstats
import time

import _setup
import numpy as np

addon = _setup.addon()
import bpy  # noqa: E402


def limbs(obj, count):
    """``count`` bones with a parent and a grandparent, no two sharing a bone: (upper, lower)."""
    taken, found = set(), []
    for pb in obj.pose.bones:
        upper = pb.parent
        if upper is None or upper.parent is None or {pb.name, upper.name} & taken:
            continue
        found.append((upper.name, pb.name))
        taken |= {pb.name, upper.name, upper.parent.name}
        if len(found) == count:
            break
    return found


def build(args):
    """The bench rig: ``args.bones`` limited bones, ``args.limbs`` of them two-bone limbs with an IK
    aiming at a keyed Empty; returns ``(object, limbs, fit ms per bone)``."""
    obj, motion = _setup.random_rig(addon, args.bones, args.frames)
    scene = bpy.context.scene
    bpy.ops.pose.select_all(action="SELECT")
    clouds = {
        pb.name: addon.limits.quaternion.slerp(np.array([1.0, 0, 0, 0]), motion[:, b], 0.6) for b, pb in enumerate(obj.pose.bones)
    }
    addon.rig.sampling.store_clouds(obj, clouds)
    t0 = time.perf_counter()
    for pb in obj.pose.bones:
        pb.joint_limit.model = args.model
        addon.rig.fitting.fit_pose_bone(obj, pb)
    fit_ms = (time.perf_counter() - t0) / len(obj.pose.bones) * 1e3

    rng = np.random.default_rng(1)
    chosen = limbs(obj, args.limbs)
    for k, (upper, lower) in enumerate(chosen):
        head = np.array(obj.pose.bones[upper].head)
        reach = obj.data.bones[upper].length + obj.data.bones[lower].length
        target = bpy.data.objects.new(f"Target{k}", None)
        scene.collection.objects.link(target)
        # a smooth wander around the limb's root, in and out of its reach
        path = np.cumsum(rng.normal(scale=0.08 * reach, size=(args.frames // 10 + 1, 3)), axis=0)
        path = head + reach * 0.8 * path / np.maximum(1.0, np.abs(path).max(axis=0) / 1.0)
        for i, location in enumerate(path):
            target.location = location
            target.keyframe_insert("location", frame=1 + 10 * i)
        con = obj.pose.bones[lower].constraints.new("IK")
        con.target, con.chain_count = target, 2

    return obj, chosen, fit_ms


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--bones", type=int, default=60)
    p.add_argument("--frames", type=int, default=300)
    p.add_argument("--model", default="kdop")
    p.add_argument("--limbs", type=int, default=4)
    p.add_argument("--rounds", type=int, default=3, help="passes per set-up, interleaved; the best is kept")
    p.add_argument("--profile", action="store_true", help="profile a first and a later play after the timed rounds")
    args = p.parse_args()

    obj, chosen, fit_ms = build(args)
    scene = bpy.context.scene

    enforcement = addon.enforcement
    times = {
        "Blender's IK alone (enforcement off)": [],
        "limited IK, first play (every frame solved)": [],
        "limited IK, later plays (solutions remembered)": [],
    }
    for _ in range(args.rounds):
        scene.joint_limits.enforce_live = False
        enforcement.reset()
        _setup.play(scene, 2)
        times["Blender's IK alone (enforcement off)"].append(_setup.play(scene, args.frames))
        scene.joint_limits.enforce_live = True
        times["limited IK, first play (every frame solved)"].append(_setup.play(scene, args.frames))
        times["limited IK, later plays (solutions remembered)"].append(_setup.play(scene, args.frames))
    scene.joint_limits.enforce_live = False
    profiles = {}
    if args.profile:
        enforcement.reset()
        scene.joint_limits.enforce_live = True
        for name in ("first play", "later play"):
            profiler = cProfile.Profile()
            profiler.runcall(_setup.play, scene, args.frames)
            profiles[name] = profiler
        scene.joint_limits.enforce_live = False

    print(
        f"{args.bones} limited bones ({args.model}, fitted in {fit_ms:.1f} ms each), {len(chosen)} two-bone IK limbs, {args.frames} frames"
    )
    base = min(times["Blender's IK alone (enforcement off)"])
    for name, values in times.items():
        best = min(values)
        print(f"  {name:48s} {best:8.2f} ms/frame  ({best / base:5.2f}x)")
    for name, profiler in profiles.items():
        for order in ("tottime", "cumulative"):
            out = io.StringIO()
            pstats.Stats(profiler, stream=out).sort_stats(order).print_stats(25)
            print(f"\n== profile of the {name}, {args.frames} frames, by {order} ==")
            print(out.getvalue().split("\n\n", 1)[-1].rstrip())


if __name__ == "__main__":
    main()
