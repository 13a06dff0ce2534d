# SPDX-License-Identifier: GPL-3.0-or-later
"""(f) Smoothness of limited motion on held-out capture (issue 16): pops and the worst step.

Fits every model on the training clips (defaults, like bench_fit_quality.py), then limits each
test clip's motion per joint two ways: frame by frame (``JointLimit.project``, the naive way)
and as one motion (``JointLimit.project_sequence``). A *pop* is
a frame where the limited pose moves more than 3x the input's step and more than 5 degrees beyond
it (``limits.continuity.pops``). Per model: frames outside the limit, pops per 1000 of them, the
worst limited step (with the input's step there), whether every limited pose is inside, and how
many frames whose input is inside the sequence still holds elsewhere (lagging behind a jump the
input made inside the limit) and how far at most.

    ./dev bench bench/bench_smoothness.py --train A.bvh [B.bvh ...] --test C.bvh [...]
        [--joints upper_arm.L ...] [--models sinus_texture: kdop:FULL ...]
"""

import argparse
import time
from pathlib import Path

import _setup
import numpy as np
from bench_fit_quality import DEFAULT_MODELS, clouds_from, default_joints

addon = _setup.addon()
import bpy  # noqa: E402

JointLimit = addon.limits.joint.JointLimit
pops = addon.limits.continuity.pops
angle = addon.limits.geometry.quaternion.quaternion_angle


def clips_from(files, rig):
    """``[{joint: (F, 4)}]``, one per clip (each clip is its own motion: no step between clips)."""
    out = []
    for path in files:
        src = addon.rig.io.bvh.import_bvh_armature(bpy.context, path)
        try:
            out.append(addon.rig.io.bvh.bvh_rotations(src, rig))
        finally:
            if src != rig:
                addon.rig.io.bvh.remove_armature(src)
    return out


def _columns(totals, worst, name):
    step, given = np.degrees(worst[name])
    per = 1000.0 * totals[name] / max(totals["outside"], 1)
    return f"{totals[name]:>5} {per:>6.1f} {step:>7.1f} / {given:>5.1f} deg {totals[name + '_ms']:>6.0f}"


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--train", nargs="+", required=True)
    p.add_argument("--test", nargs="+", required=True)
    p.add_argument("--joints", nargs="*")
    p.add_argument("--models", nargs="*", default=DEFAULT_MODELS)
    args = p.parse_args()

    bpy.ops.wm.read_homefile(use_empty=True)
    rig = addon.rig.io.bvh.import_bvh_armature(bpy.context, args.train[0])
    train, _ = clouds_from(args.train, rig)
    tests = clips_from(args.test, rig)
    joints = args.joints or default_joints(rig)
    print(f"train: {', '.join(Path(f).name for f in args.train)}")
    print(f"test: {', '.join(Path(f).name for f in args.test)}; joints: {', '.join(joints)}")
    header = (
        f"{'model':<24} {'outside':>8} | {'pops':>5} {'/1000':>6} {'worst step':>17} {'ms':>6} |"
        f" {'pops':>5} {'/1000':>6} {'worst step':>17} {'ms':>6} {'inside':>6} {'held in':>7} {'max held':>8}"
    )
    print(f"{'':<33}   frame by frame{'':<22}   as one motion (project_sequence)")
    print(header)
    for spec in args.models:
        kind, _, mode = spec.partition(":")
        options = {"mode": mode} if mode else {}
        totals = {"outside": 0, "plain": 0, "seq": 0, "plain_ms": 0.0, "seq_ms": 0.0, "held": 0, "max_held": 0.0}
        worst = {"plain": (0.0, 0.0), "seq": (0.0, 0.0)}
        all_inside = True
        for joint in joints:
            if joint not in train:
                continue
            limit = JointLimit.fit(train[joint], kind=kind, **options)
            for clip in tests:
                q = clip.get(joint)
                if q is None or len(q) < 2:
                    continue
                t0 = time.perf_counter()
                plain = limit.project(q)
                t1 = time.perf_counter()
                seq = limit.project_sequence(q)
                t2 = time.perf_counter()
                totals["plain_ms"] += 1e3 * (t1 - t0)
                totals["seq_ms"] += 1e3 * (t2 - t1)
                inside = limit.contains(q)
                totals["outside"] += int((~inside).sum())
                steps = angle(q[1:], q[:-1])
                for name, out in (("plain", plain), ("seq", seq)):
                    totals[name] += int(pops(q, out).sum())
                    limited_steps = angle(out[1:], out[:-1])
                    i = int(np.argmax(limited_steps))
                    if limited_steps[i] > worst[name][0]:
                        worst[name] = (float(limited_steps[i]), float(steps[i]))
                all_inside &= bool(np.all(limit.violation(seq) < 1e-4))
                held = angle(q, seq)[inside]
                totals["held"] += int((held > 1e-4).sum())
                totals["max_held"] = max(totals["max_held"], float(held.max(initial=0.0)))
        print(
            f"{spec:<24} {totals['outside']:>8} | {_columns(totals, worst, 'plain')} | {_columns(totals, worst, 'seq')} {'yes' if all_inside else 'NO':>6}"
            f" {totals['held']:>7} {np.degrees(totals['max_held']):>6.1f} d"
        )


if __name__ == "__main__":
    main()
