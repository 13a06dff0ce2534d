# SPDX-License-Identifier: GPL-3.0-or-later
"""(d) Fit quality on real motion capture: fit on some clips, test on others.

For every joint and model, prints the held-out recall (fraction of test-clip rotations the limit
accepts) and the fraction of uniformly random rotations it accepts (a volume: lower is tighter);
then per model the *whole-body recall* (share of test frames on which every joint is inside),
the mean volume and the fit time per joint. ``auto`` (the default model) is fitted with each
training clip as its own clip (cross-validated by clip, :mod:`limits.cross_validation`); the
other models with their default padding. Clips are imported with Blender's BVH importer; the
first training clip's skeleton is the rig and every clip is retargeted onto it by bone name.

    ./dev bench bench/bench_fit_quality.py --train A.bvh [B.bvh ...] --test C.bvh [...]
        [--joints upper_arm.L forearm.L ...] [--models kdop:FULL ellipsoid:SWING_TWIST kdop:FULL:0.3 ...]

A model is ``kind[:mode[:padding]]`` (padding in radians; default: the kind's own).
"""

import argparse
import time
from pathlib import Path

import _setup
import numpy as np

addon = _setup.addon()
import bpy  # noqa: E402

JointLimit = addon.limits.joint.JointLimit
DEFAULT_MODELS = [
    "auto:",
    "euler_box:",
    "box:FULL",
    "box:SWING_TWIST",
    "oriented_box:FULL",
    "oriented_box:SWING_TWIST",
    "ellipsoid:FULL",
    "ellipsoid:SWING_TWIST",
    "kdop:FULL",
    "kdop:SWING_TWIST",
    "sdf_grid:",
    "sinus_texture:",
    "quaternion_surface:",
]
CATEGORIES = ("upper_arm", "forearm", "thigh", "shin", "spine", "neck", "head", "hand", "foot")


def clouds_from(files, rig):
    """``({name: (N, 4)}, {name: (N,) clip index})`` of the files' rotations on ``rig``."""
    out, clips = {}, {}
    for index, path in enumerate(files):
        src = addon.rig.io.bvh.import_bvh_armature(bpy.context, path)
        try:
            for name, q in addon.rig.io.bvh.bvh_rotations(src, rig).items():
                out.setdefault(name, []).append(q)
                clips.setdefault(name, []).append(np.full(len(q), index))
        finally:
            if src != rig:
                addon.rig.io.bvh.remove_armature(src)
    return {name: np.concatenate(parts) for name, parts in out.items()}, {n: np.concatenate(p) for n, p in clips.items()}


def with_mirror_images(rig, clouds, clips):
    """The clouds with each bone's mirror partner's samples seen in the mirror added (what a
    fit with *Learn From Both Sides* uses, :func:`limits.symmetry.learn_from_both_sides`)."""
    symmetry = addon.limits.body.symmetry
    skeleton = addon.rig.io.skeleton_io.skeleton_from_armature(rig)
    mirror = symmetry.BodyMirror.of(skeleton, symmetry.neutral_pose(skeleton.names, clouds))
    if mirror is None:
        print("no symmetry: neither the rest pose nor the neutral pose mirrors")
        return clouds, clips
    poses = [mirror.poses[n] for n, p in mirror.partners.items() if n != p]
    print(f"symmetry: {poses.count('rest') // 2} pairs mirror at rest, {poses.count('neutral') // 2} in the neutral pose")
    out, labels, _ = symmetry.learn_from_both_sides(mirror, clouds, clips)
    return out, labels


def default_joints(rig):
    skel = addon.rig.io.skeleton_io.skeleton_from_armature(rig)
    human = addon.limits.body.skeleton.humanoid_skeleton()
    mapping = addon.limits.body.skeleton.match_bone_names(human.names, skel.names)
    return [mapping[n] for n in human.names if n in mapping and n.split(".")[0] in CATEGORIES]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--train", nargs="+", required=True)
    p.add_argument("--test", nargs="+", required=True)
    p.add_argument("--joints", nargs="*")
    p.add_argument("--models", nargs="*", default=DEFAULT_MODELS)
    p.add_argument("--random", type=int, default=200_000, help="uniform random rotations for the volume")
    p.add_argument("--symmetry", action="store_true", help="left/right pairs learn from each other's samples mirrored")
    args = p.parse_args()

    bpy.ops.wm.read_homefile(use_empty=True)
    rig = addon.rig.io.bvh.import_bvh_armature(bpy.context, args.train[0])
    train, train_clips = clouds_from(args.train, rig)
    test, _ = clouds_from(args.test, rig)
    if args.symmetry:
        train, train_clips = with_mirror_images(rig, train, train_clips)
    joints = args.joints or default_joints(rig)
    uniform = addon.limits.geometry.quaternion.quaternion_random(args.random, 0)
    print(f"train: {', '.join(Path(f).name for f in args.train)} | test: {', '.join(Path(f).name for f in args.test)}")
    print(f"{'joint':<16} {'model':<26} {'train':>6} {'test':>6} {'recall':>7} {'volume':>8} {'fit ms':>7}")
    summary, inside = {}, {}
    lengths = {len(test[j]) for j in joints if j in test}
    for joint in joints:
        if joint not in train or joint not in test:
            print(f"{joint:<16} (not in both sets)")
            continue
        for spec in args.models:
            kind, options = _setup.model_spec(spec)
            mode = options.get("mode", "")
            if kind == "auto":
                options["clips"] = train_clips[joint]
            t0 = time.perf_counter()
            limit = JointLimit.fit(train[joint], kind=kind, **options)
            fit_ms = (time.perf_counter() - t0) * 1e3
            held = limit.contains(test[joint])
            recall = float(held.mean())
            volume = float(limit.contains(uniform).mean())
            summary.setdefault(spec, []).append((recall, volume, fit_ms))
            inside.setdefault(spec, []).append(held)
            label = f"{kind} {mode.lower()}".strip()
            if kind == "auto":
                best = limit.calibration.best
                label += f" -> {best.label} {best.padding:.2f}"
            print(
                f"{joint:<16} {label:<26} {len(train[joint]):>6} {len(test[joint]):>6} {recall:>7.3f} {volume:>8.4f} {fit_ms:>7.1f}"
            )
    print("\nper model: mean recall per joint, whole-body recall (frames with every joint inside), mean volume, fit ms per joint")
    for spec, rows in summary.items():
        r = np.array(rows)
        whole = float(np.all(np.stack(inside[spec]), axis=0).mean()) if len(lengths) == 1 else float("nan")
        print(
            f"  {spec:<26} recall {r[:, 0].mean():.3f}   whole-body {whole:.3f}   volume {r[:, 1].mean():.4f}   "
            f"fit {r[:, 2].mean():7.1f} ms"
        )


if __name__ == "__main__":
    main()
