# SPDX-License-Identifier: GPL-3.0-or-later
"""(d) Do fitted limits accept new motion of the same body? Each clip held out in turn.

For every model, the limits are fitted the way ``batch fit`` fits a library
(:func:`batch.library_fit.fit_library`: samples pooled over the clips, both sides learning from
each other unless ``--sides-apart``) from all clips but one, and the held-out clip is checked:
*whole-body recall* = share of its frames on which every joint of ``--joints`` is inside. Printed
per model: the whole-body recall averaged over held-out clips (each clip one new motion) and
pooled over their frames, the mean volume (share of uniformly random rotations a limit accepts,
averaged over the folds and the joints) and per joint its recall and volume. Clips are read with
the add-on's numpy BVH reader (the first clip's skeleton names the joints).

    ./dev bench bench/bench_generalization.py CLIP.bvh [...] [--models auto kdop:FULL:0.3 sdf_grid::0.15 ...]
        [--joints UpperArm_L UpperArm_R ...] [--sides-apart] [--envelope-only] [--envelope-scale 1.0 0.8 ...]

A model is ``kind[:mode[:padding]]`` (padding in radians; default: the library fit's 0.05).
``auto`` on a humanoid skeleton is the default fit of a humanoid: each joint's data joined with
the human envelope, a reach cone (``--envelope-only``: without the preset's learnt shapes).
``--envelope-scale`` repeats ``auto`` with every extent of the envelope (references and margin)
scaled: the trade between held-out recall and volume the envelope leaves. Its k-DOP figures sit near issue 13's held-out table, so it is the proxy to watch for that
issue's goal (figures: BENCHMARKS.md).
"""

import argparse
import time

import _setup
import numpy as np

addon = _setup.addon()

#: Issue 13's 11 major joints, on Bandai's skeleton (both shoulders; one side of the others).
BANDAI_MAJOR = (
    "UpperArm_L",
    "UpperArm_R",
    "LowerArm_L",
    "UpperLeg_L",
    "LowerLeg_L",
    "Spine",
    "Chest",
    "Neck",
    "Head",
    "Hand_L",
    "Foot_L",
)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("clips", nargs="+", help="BVH clips of one skeleton (at least 3)")
    p.add_argument("--models", nargs="*", default=["auto", "kdop:FULL", "kdop:FULL:0.3", "euler_box", "sdf_grid"])
    p.add_argument(
        "--joints", nargs="*", help="joints of the whole-body recall (default: issue 13's on Bandai, else every limited joint)"
    )
    p.add_argument("--sides-apart", action="store_true", help="fit each side alone (no mirrored samples)")
    p.add_argument("--random", type=int, default=100_000, help="uniform random rotations for the volume")
    p.add_argument(
        "--envelope-only",
        action="store_true",
        help="auto on a humanoid: the human envelope without the preset's learnt shapes (learnt from the shared clips, "
        "so a held-out shared clip's own shapes are in them)",
    )
    p.add_argument(
        "--envelope-scale",
        nargs="*",
        type=float,
        default=[],
        help="also fit auto with the envelope's extents scaled by each factor (the recall-volume trade)",
    )
    args = p.parse_args()
    if args.envelope_only:
        addon.limits.body.preset.load_preset("human").joints.clear()
    refs = addon.batch.clips.collect_clips(args.clips)
    if len(refs) < 3:
        raise SystemExit("give at least 3 clips")
    t = time.perf_counter()
    results = {r.name: addon.batch.clip_jobs.fit_samples(tuple(r)) for r in refs}
    print(f"{len(results)} clips read in {time.perf_counter() - t:.1f} s; symmetry {'off' if args.sides_apart else 'on'}")
    uniform = addon.limits.geometry.quaternion.quaternion_random(args.random, 0)
    names = sorted(results)
    envelope = addon.limits.body.envelope
    ranges, margin = dict(envelope.RANGES), envelope.MARGIN_DEGREES
    runs = [(spec, None) for spec in args.models] + [("auto", k) for k in args.envelope_scale]
    for spec, scale in runs:
        kind, settings = _setup.model_spec(spec)
        envelope.RANGES.update(ranges if scale is None else {j: _scaled(r, scale) for j, r in ranges.items()})
        envelope.MARGIN_DEGREES = margin if scale is None else margin * scale
        if scale is not None:
            spec = f"auto, envelope x{scale:g}"
        t = time.perf_counter()
        recall, volume, whole, frames, inside = {}, {}, [], 0, 0
        for held in names:
            train = {n: r for n, r in results.items() if n != held}
            fitted = addon.batch.library_fit.fit_library(train, kind, not args.sides_apart, **settings)
            joints = args.joints or [j for j in BANDAI_MAJOR if j in fitted.limits] or sorted(fitted.limits)
            ok_all = None
            for j in joints:
                ok = fitted.limits[j].contains(results[held]["bones"][j])
                recall.setdefault(j, []).append(ok.mean())
                volume.setdefault(j, []).append(fitted.limits[j].contains(uniform).mean())
                ok_all = ok if ok_all is None else ok_all & ok
            whole.append(ok_all.mean())
            frames, inside = frames + len(ok_all), inside + int(ok_all.sum())
        mean_volume = np.mean([np.mean(v) for v in volume.values()])
        print(
            f"\n{spec}: whole-body recall {np.mean(whole):.3f} (clip mean), {inside / frames:.3f} (frames pooled); "
            f"mean volume {mean_volume:.2%} over {len(volume)} joints; {time.perf_counter() - t:.0f} s for {len(names)} folds"
        )
        for j in volume:
            print(
                f"  {j:<14} recall {np.mean(recall[j]):.3f} (worst clip {np.min(recall[j]):.3f})  volume {np.mean(volume[j]):.2%}"
            )
        if kind == "auto" and fitted.human:  # what the envelope holds without any data
            alone = {j: _envelope_alone(fitted.human[j], fitted.settings["padding"]).contains(uniform).mean() for j in volume}
            print(f"  the envelope alone: mean volume {np.mean(list(alone.values())):.2%}")


def _envelope_alone(cone, padding):
    """The reach cone of a humanoid joint's envelope samples alone (no data)."""
    return addon.limits.joint.JointLimit.fit(
        cone.samples,
        kind="reach_cone",
        reference="REST",
        padding=padding,
        frame_left=cone.frame_left,
        frame_right=cone.frame_right,
    )


def _scaled(rng, k):
    """Envelope range ``rng`` with every extent times ``k``."""
    import dataclasses

    return dataclasses.replace(
        rng,
        twist_range=tuple(k * v for v in rng.twist_range),
        swing={a: tuple(k * v for v in ext) for a, ext in rng.swing.items()},
        between=tuple((d, k * r) for d, r in rng.between),
    )


if __name__ == "__main__":
    main()
