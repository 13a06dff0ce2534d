# SPDX-License-Identifier: GPL-3.0-or-later
"""What a big rig's limits cost to keep: bytes stored in the .blend, turning live enforcement
on (in the session that fitted them, and after reopening the file), and one undo step, for a
rig of 200 limited bones (issue 11, item 10).

    ./dev bench bench/bench_rig_storage.py [--bones 200] [--model sinus_texture] [--distinct 8]

Turning on is timed from switching it on to the first limited frame (compiling, limiting the
300-frame action ahead, the frame itself), once in the session that fitted the limits and once
as a new session would (nothing parsed, :func:`rig.storage.forget_parsed`).

Each bone gets its own stored limit; ``--distinct`` limits are fitted (from differently scaled
random motion) and handed round the bones, so fitting stays quick while every bone's entry is
its own copy (parsed, validated and tabled on its own when enforcement turns on).
Targets for 200 sinus-texture bones: stored <= 100 MB, turning on <= 1 s, undo <= 0.2 s.
"""

import argparse
import os
import shutil
import tempfile
import time
import tracemalloc

import _setup
import numpy as np

addon = _setup.addon()
import bpy  # noqa: E402


def stored_bytes(obj):
    text = obj.data.joint_limits_data
    return sum(len(text[k]) for k in text.keys() if isinstance(text[k], str))


def turn_on(scene, trace=False):
    """Seconds from switching live enforcement on to the first limited frame shown (compile,
    limiting the action ahead, the frame itself); with ``trace``, the peak megabytes of memory
    allocated meanwhile instead (tracing slows allocation down: timed apart)."""
    if trace:
        tracemalloc.start()
    t0 = time.perf_counter()
    scene.joint_limits.enforce_live = True
    scene.frame_set(1)
    seconds = time.perf_counter() - t0
    scene.joint_limits.enforce_live = False
    if not trace:
        return seconds
    peak = tracemalloc.get_traced_memory()[1] / 1e6
    tracemalloc.stop()
    return peak


def timed(scene, prepare, repeats):
    """``(seconds of each run, peak MB)`` of :func:`turn_on`, each run after ``prepare()``."""
    seconds = []
    for _ in range(repeats):
        prepare()
        seconds.append(turn_on(scene))
    prepare()
    return seconds, turn_on(scene, trace=True)


def spread(runs):
    """Median and range of :func:`timed` runs, and their peak memory."""
    seconds, peak = runs
    seconds = sorted(seconds)
    return f"{np.median(seconds):6.2f} s ({seconds[0]:.2f}-{seconds[-1]:.2f} over {len(seconds)})   peak {peak:5.0f} MB allocated"


def undo_step(name):
    """Seconds of the undo step an edit pushes, and of one Ctrl+Z over it up to the limited
    pose shown again, with live enforcement on (the file was opened just before)."""
    obj = bpy.data.objects[name]  # (undo replaces every datablock: find it again)
    bpy.context.view_layer.objects.active = obj
    bpy.ops.object.mode_set(mode="POSE")
    scene = bpy.context.scene
    scene.joint_limits.enforce_live = True
    scene.frame_set(1)
    bpy.ops.ed.undo_push(message="before")
    obj.pose.bones[0].location.x += 0.1
    t0 = time.perf_counter()
    bpy.ops.ed.undo_push(message="moved")
    t1 = time.perf_counter()
    bpy.ops.ed.undo()
    bpy.context.scene.frame_set(1)
    t2 = time.perf_counter()
    return t1 - t0, t2 - t1


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--bones", type=int, default=200)
    p.add_argument("--frames", type=int, default=300)
    p.add_argument("--model", default="sinus_texture")
    p.add_argument("--distinct", type=int, default=8, help="limits fitted, then handed round the bones")
    p.add_argument("--repeats", type=int, default=5, help="turn-ons timed in each setting")
    args = p.parse_args()

    obj, motion = _setup.random_rig(addon, args.bones, args.frames)
    scene = bpy.context.scene
    t0 = time.perf_counter()
    for b in range(args.distinct):
        cloud = addon.limits.geometry.quaternion.slerp(np.array([1.0, 0, 0, 0]), motion[:, b], 0.4 + 0.5 * b / args.distinct)
        pb = obj.pose.bones[b]
        addon.rig.tasks.sample.store_clouds(obj, {pb.name: cloud})
        pb.joint_limit.model = args.model
        addon.rig.tasks.fit.fit_pose_bone(obj, pb)
    fit_seconds = (time.perf_counter() - t0) / args.distinct
    name = obj.name
    storage = addon.rig.io.storage
    fitted = [storage.read_limit(obj.pose.bones[b]) for b in range(args.distinct)]
    for pb in obj.pose.bones:
        pb.joint_limit.model = args.model  # (no cloud on the other bones: nothing refits)

    def write_all():
        for b, pb in enumerate(bpy.data.objects[name].pose.bones):
            storage.write_limit(pb, fitted[b % args.distinct])  # as a fit writes it
        addon.rig.live.reset()

    def fresh_session():
        addon.rig.live.reset()  # as in a new Blender session: nothing parsed yet
        storage.forget_parsed()

    write_all()
    stored = stored_bytes(obj)
    warm = timed(scene, write_all, args.repeats)
    folder = tempfile.mkdtemp(prefix="joint_limits_bench_")
    path = os.path.join(folder, "storage.blend")
    bpy.ops.wm.save_as_mainfile(filepath=path)
    size = os.path.getsize(path)
    bpy.ops.wm.open_mainfile(filepath=path)
    scene = bpy.context.scene
    cold = timed(scene, fresh_session, args.repeats)
    bpy.ops.wm.open_mainfile(filepath=path)  # starts the undo stack
    push, undo = np.min([undo_step(name) for _ in range(3)], axis=0)

    print(
        f"{args.bones} bones, model {args.model} ({args.distinct} fitted, {fit_seconds:.2f} s each), {args.frames}-frame action"
    )
    print(f"  stored limit data:         {stored / 1e6:8.1f} MB  ({stored / args.bones / 1e3:.0f} kB per bone)")
    print(f"  saved .blend:              {size / 1e6:8.1f} MB")
    print(f"  turning live enforcement on, in the fitting session: {spread(warm)}")
    print(f"  turning it on in a new session that opened the file: {spread(cold)}")
    print(f"  pushing an undo step (after every edit):             {push:6.3f} s")
    print(f"  one undo (Ctrl+Z over a pose edit, enforcement on):  {undo:6.3f} s")
    shutil.rmtree(folder)


if __name__ == "__main__":
    main()
