# SPDX-License-Identifier: GPL-3.0-or-later
"""The human preset (issue 13 item 5): what is stored, what it fits, and whether two rigs built
differently get the same limits from it.

Prints the preset file's size and samples per joint; applies it to the embedded humanoid with
each bone's default model (``auto``) and prints per joint the chosen model, its padding,
held-out recall and volume (share of uniformly random rotations accepted); then applies it to
a T-pose rig with Rigify (DEF-) names and an A-pose rig (arms 45 degrees down) with Mixamo names
and every bone rolled at random, poses both in the same physical poses (preset rotations turned
by up to 0.5 rad more, so that many leave the limits), and prints, per model, how often the two
rigs agree (per joint, and on whole poses: every joint agreeing).

    ./dev bench bench/bench_human_preset.py [--poses 2000] [--models auto kdop ellipsoid euler_box]
"""

import argparse
import sys
import time
from pathlib import Path

import _setup
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
import humanoid_variants as hv  # noqa: E402

addon = _setup.addon()
import bpy  # noqa: E402


def build(rename, arms_down=0.0, roll_seed=None, model="auto"):
    skeleton, rolls, _ = hv.humanoid_variant(addon.limits, rename, arms_down, roll_seed)
    obj = addon.rig.io.humanoid.build_armature(skeleton, name=rename("hips").replace(":", "_"))
    for pb in obj.pose.bones:
        pb.joint_limit.model = model
    return obj, skeleton, rolls


def poses(skeleton, preset, count, seed=1):
    """Basis rotations ``(count, n, 4)``: each joint at a preset rotation turned by up to 0.5 rad."""
    lib = addon.limits
    q = lib.geometry.quaternion
    rng = np.random.default_rng(seed)
    frames = lib.body.retarget.RigFrames(skeleton, lib.body.bone_names.match_joints(skeleton.names, skeleton.parents)[0])
    out = np.tile([1.0, 0.0, 0.0, 0.0], (count, len(skeleton), 1))
    for name, match in frames.matches.items():
        if match.joint in preset.joints:
            joint = preset.joints[match.joint]
            turn = q.quaternion_from_exp_map(rng.normal(size=(count, 3)) * rng.uniform(0, 0.5, (count, 1)))
            out[:, skeleton.index(name)] = frames.basis(
                name, q.quaternion_multiply(joint[rng.integers(len(joint), size=count)], turn)
            )
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--poses", type=int, default=2000, help="random physical poses for the agreement")
    parser.add_argument("--models", nargs="+", default=["auto", "kdop", "ellipsoid", "euler_box"], help="models compared")
    args = parser.parse_args()
    presets = addon.rig.tasks.preset
    path = presets.PRESET_DIR / presets.PRESETS["human"]
    preset = presets.load_preset("human")
    print(
        f"{path.name}: {path.stat().st_size / 1024:.0f} kB, {len(preset.joints)} joints, {sum(len(v) for v in preset.joints.values())} rotations"
    )
    print(f"learnt from: {', '.join(s['file'] for s in preset.info.get('sources', []))}")

    bpy.ops.wm.read_homefile(use_empty=True)
    obj, skeleton, _ = build(lambda n: n)
    t0 = time.perf_counter()
    result = presets.apply_preset(obj, preset)
    print(f"\nembedded humanoid, default model: {len(result.fitted)} bones fitted in {time.perf_counter() - t0:.1f} s")
    print(f"{'bone':<13} {'joint':<11} {'samples':>7}  {'model':<26} {'padding':>7} {'recall':>7} {'volume':>7}")
    read_report = addon.rig.tasks.fit_report.read_report
    for name, (joint, count, _) in result.fitted.items():
        report = read_report(obj.pose.bones[name].joint_limit)
        best = report["candidates"][report["chosen"]]
        label = best["kind"] + (f" {best['mode'].lower()}" if best.get("mode") else "")
        print(
            f"{name:<13} {joint:<11} {count:>7}  {label:<26} {best['padding']:>7.3f} {best['recall']:>7.1%} {best['volume']:>7.2%}"
        )

    print(f"\nT-pose Rigify-named rig vs A-pose Mixamo-named rig with rolled bones, {args.poses} poses:")
    print(f"{'model':<10} {'fit s':>6} {'inside':>7} {'agree':>7} {'worst joint':>26} {'whole pose':>11}")
    for model in args.models:
        bpy.ops.wm.read_homefile(use_empty=True)
        t_obj, t_sk, _ = build(hv.rigify_name, model=model)
        a_obj, a_sk, rolls = build(hv.mixamo_name, 45.0, 7, model=model)
        t0 = time.perf_counter()
        presets.apply_preset(t_obj, preset)
        presets.apply_preset(a_obj, preset)
        fit = time.perf_counter() - t0
        t_basis = poses(t_sk, preset, args.poses)
        a_basis = hv.same_pose(addon.limits, t_sk, t_basis, a_sk, rolls)
        agree, inside, joints = [], [], []
        for i, name in enumerate(t_sk.names):
            if not t_obj.pose.bones[name].joint_limit.has_limit:
                continue
            joints.append(name)
            t_in = addon.api.limit(t_obj.pose.bones[name]).contains(t_basis[:, i])
            a_in = addon.api.limit(a_obj.pose.bones[a_sk.names[i]]).contains(a_basis[:, i])
            agree.append(t_in == a_in)
            inside.append(t_in)
        agree = np.array(agree)
        print(
            f"{model:<10} {fit:>6.1f} {np.mean(inside):>7.1%} {agree.mean():>7.2%} "
            f"{joints[int(np.argmin(agree.mean(axis=1)))]:>17} {agree.mean(axis=1).min():>8.2%} "
            f"{agree.all(axis=0).mean():>11.1%}"
        )


if __name__ == "__main__":
    main()
