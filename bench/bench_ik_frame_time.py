# SPDX-License-Identifier: GPL-3.0-or-later
"""Frame time of a rig whose limbs are posed by IK (issue 12's bench): 60 limited bones, four of
them two-bone limbs with Blender's IK constraint aiming at Empties keyed to wander in and out
of the limbs' limited reach. Played with live enforcement on (the limbs solved within their
limits by rig/live/limited_ik.py, keyed frames in batches ahead by rig/live/ik_lookahead.py) against the
same rig with Blender's IK alone and enforcement off. Target (issue 12): <= 1.5x. Two floors
are measured in the same run: what a held limb costs at least (Blender's IK muted, a handler
that only writes the limbs' correctives: Blender then evaluates the rig again), and the
enforcement of the other bones alone (the limbs' limits off).

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
        pb.name: addon.limits.geometry.quaternion.slerp(np.array([1.0, 0, 0, 0]), motion[:, b], 0.6)
        for b, pb in enumerate(obj.pose.bones)
    }
    addon.rig.tasks.sample.store_clouds(obj, clouds)
    t0 = time.perf_counter()
    for pb in obj.pose.bones:
        pb.joint_limit.model = args.model
        addon.rig.tasks.fit.fit_pose_bone(obj, pb)
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


def play_held_floor(obj, chosen, scene, frames):
    """ms/frame of the least a held limb can cost with enforcement's design: Blender's IK
    muted, and a frame handler that only reads the targets' world matrices and writes the
    chain bones' correctives (angles precomputed), which makes Blender evaluate the rig again.
    No other bone is limited."""
    corrective = addon.rig.live.corrective
    iks = [obj.pose.bones[lower].constraints["IK"] for _, lower in chosen]
    cons = [corrective.ensure(obj, obj.pose.bones[n]) for pair in chosen for n in pair]
    rng = np.random.default_rng(2)
    rotations = addon.limits.geometry.quaternion.quaternion_from_exp_map(rng.normal(scale=0.2, size=(frames + 1, len(cons), 3)))
    eulers = [[corrective.euler_of(d) for d in row] for row in rotations]
    targets = [con.target for con in iks]

    def handler(scene, depsgraph=None):
        for target in targets:
            np.array(target.matrix_world)
        for con, euler in zip(cons, eulers[scene.frame_current]):
            corrective.write_euler(con, euler)

    for con in iks:
        con.mute = True
    bpy.app.handlers.frame_change_post.append(handler)
    try:
        _setup.play(scene, 2)
        return _setup.play(scene, frames)
    finally:
        bpy.app.handlers.frame_change_post.remove(handler)
        for con in iks:
            con.mute = False
        corrective.remove_all(obj)


def play_other_bones(obj, chosen, scene, frames):
    """ms/frame of live enforcement of the bones outside the limbs (their poses remembered), the
    limbs' limits off so Blender's IK poses them."""
    names = [n for pair in chosen for n in pair]
    for name in names:
        obj.pose.bones[name].joint_limit.enabled = False
    addon.rig.live.reset()
    scene.joint_limits.enforce_live = True
    try:
        _setup.play(scene, frames)
        return _setup.play(scene, frames)
    finally:
        scene.joint_limits.enforce_live = False
        for name in names:
            obj.pose.bones[name].joint_limit.enabled = True


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

    live = addon.rig.live
    alone, first, later = (
        "Blender's IK alone (enforcement off)",
        "limited IK, first play (solved as met)",
        "limited IK, later plays (solutions remembered)",
    )
    floor_ik = "floor: IK muted, handler writes 8 correctives"
    floor_rest = "floor: the other bones' limits alone"
    times = {name: [] for name in (alone, first, later, floor_ik, floor_rest)}
    for _ in range(args.rounds):
        scene.joint_limits.enforce_live = False
        live.reset()
        _setup.play(scene, 2)
        times[alone].append(_setup.play(scene, args.frames))
        scene.joint_limits.enforce_live = True
        times[first].append(_setup.play(scene, args.frames))
        times[later].append(_setup.play(scene, args.frames))
        scene.joint_limits.enforce_live = False
        times[floor_ik].append(play_held_floor(obj, chosen, scene, args.frames))
        times[floor_rest].append(play_other_bones(obj, chosen, scene, args.frames))
    profiles = {}
    if args.profile:
        live.reset()
        scene.joint_limits.enforce_live = True
        for name in ("first play", "later play"):
            profiler = cProfile.Profile()
            profiler.runcall(_setup.play, scene, args.frames)
            profiles[name] = profiler
        scene.joint_limits.enforce_live = False

    print(
        f"{args.bones} limited bones ({args.model}, fitted in {fit_ms:.1f} ms each), {len(chosen)} two-bone IK limbs, {args.frames} frames"
    )
    base = min(times[alone])
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
