# SPDX-License-Identifier: GPL-3.0-or-later
"""How much real human motion the human preset accepts: each BVH clip imported with Blender's
own importer (``import_anim.bvh``), the human preset applied to the imported armature
(``apply_preset``, timed), then every frame's keyed local rotation of every limited bone checked
against its fitted limit.

    ./dev bench bench/bench_preset_acceptance.py [CLIP.bvh ...] [--dir ../shared/mocap] [--step 1] [--tolerance 0.5]

A bone is inside on a frame when its geodesic violation (radians to the nearest allowed rotation,
``limit.model.violation``) is at most ``--tolerance`` degrees; a frame is accepted when every
limited bone is inside (bones without rotation keys stand at rest). Per clip: frames read
(every ``--step``-th), the share accepted, the bones limited, and up to three bones most often
outside (share of frames out, 99th-percentile violation), and how many poses of the impossible
set (:func:`limits.body.envelope.impossible_poses`, posed on the clip's rig through its
anatomical frames, a chain joint's spread evenly over its bones) the limits refuse; then the
share over all frames of all clips and the mean over clips. Clips are development data (``../shared/mocap/README.md``).
"""

import argparse
import contextlib
import io
import time
from pathlib import Path

import _setup
import numpy as np

addon = _setup.addon()
import bpy  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
preset = addon.rig.tasks.preset
actions = addon.rig.io.actions
storage = addon.rig.io.storage
IDENTITY = addon.limits.constants.IDENTITY_QUATERNION


def import_clip(path):
    """A fresh file holding the clip's armature (active, in Pose mode)."""
    bpy.ops.wm.read_homefile(use_empty=True)
    addon.rig.live.reset()
    with contextlib.redirect_stdout(io.StringIO()):  # (the importer's progress lines)
        bpy.ops.import_anim.bvh(filepath=str(path), update_scene_fps=False, update_scene_duration=True)
    obj = next(o for o in bpy.context.scene.objects if o.type == "ARMATURE")
    bpy.context.view_layer.objects.active = obj
    bpy.ops.object.mode_set(mode="POSE")
    return obj


def refused_impossible(obj, tolerance):
    """``(refused, poses)``: the impossible poses of joints the rig has that its limits refuse
    (some limited bone of the joint more than ``tolerance`` degrees outside)."""
    frames = addon.rig.io.anatomy.rig_anatomy(obj).frames
    limits = {name: storage.read_limit(obj.pose.bones[name]) for name in frames.matches}
    refused = total = 0
    for pose in addon.limits.body.envelope.impossible_poses():
        bones = [n for n, m in frames.matches.items() if m.joint == pose.joint and limits[n] is not None]
        if not bones:
            continue
        total += 1
        worst = max(
            np.degrees(limits[n].model.violation(limits[n].to_relative(frames.basis(n, pose.anatomical()[None]))))[0]
            for n in bones
        )
        refused += int(worst > tolerance)
    return refused, total


def measure(path, step):
    """``(result, seconds to apply, frames, {bone: (F,) degrees outside its limit}, obj)``."""
    obj = import_clip(path)
    t = time.perf_counter()
    result = preset.apply_preset(obj, preset.load_preset("human"))
    seconds = time.perf_counter() - t
    action = obj.animation_data.action
    frames = actions.action_frames(action)[::step]
    names = list(result.fitted)
    q, keyed = actions.keyed_rotations(obj, action, names, frames)
    q[:, ~keyed] = IDENTITY
    degrees = {}
    for b, name in enumerate(names):
        limit = storage.read_limit(obj.pose.bones[name])
        if limit is not None:
            degrees[name] = np.degrees(limit.model.violation(limit.to_relative(q[:, b])))
    return result, seconds, len(frames), degrees, obj


def main():
    p = argparse.ArgumentParser()
    p.add_argument("paths", nargs="*", help="BVH clips (default: every *.bvh in --dir)")
    p.add_argument("--dir", default=str(ROOT.parent / "shared" / "mocap"))
    p.add_argument("--step", type=int, default=1, help="read every N-th frame")
    p.add_argument("--tolerance", type=float, default=0.5, help="degrees outside still counted inside")
    args = p.parse_args()
    paths = [Path(s) for s in args.paths] or sorted(Path(args.dir).glob("*.bvh"))

    total_frames, total_accepted, shares, total_refused, total_poses = 0, 0, [], 0, 0
    for path in paths:
        try:
            result, seconds, count, degrees, obj = measure(path, args.step)
            refused, poses = refused_impossible(obj, args.tolerance)
        except Exception as err:  # one bad clip must not stop the rest
            lines = [line for line in str(err).splitlines() if line.strip() and not line.startswith("Location:")]
            print(f"{path.name}: FAILED {type(err).__name__}: {lines[-1] if lines else ''}")
            continue
        out = {name: d > args.tolerance for name, d in degrees.items()}
        accepted = int(np.sum(~np.any(list(out.values()), axis=0))) if out else count
        share = 100.0 * accepted / max(count, 1)
        total_frames, total_accepted = total_frames + count, total_accepted + accepted
        shares.append(share)
        print(
            f"{path.name}: {count} frames, {share:.1f}% accepted, {len(degrees)} bones limited ({seconds:.1f} s to apply); "
            f"impossible set {refused} of {poses} refused"
        )
        total_refused, total_poses = total_refused + refused, total_poses + poses
        worst = sorted((n for n in out if out[n].any()), key=lambda n: out[n].mean(), reverse=True)[:3]
        for name in worst:
            print(f"    {name:<24} out {100 * out[name].mean():5.1f}%   p99 {np.percentile(degrees[name], 99):6.1f} deg")
        assumed = getattr(result, "assumed", None)
        if assumed:
            for line in assumed.splitlines() if isinstance(assumed, str) else assumed:
                print(f"    assumed: {line}")
    if shares:
        print(
            f"total: {100 * total_accepted / max(total_frames, 1):.1f}% of {total_frames} frames accepted;"
            f" mean over {len(shares)} clips {np.mean(shares):.1f}%; impossible set {total_refused} of {total_poses} refused"
        )


if __name__ == "__main__":
    main()
