# SPDX-License-Identifier: GPL-3.0-or-later
"""Build time, projection throughput and memory of the SDF grid limit (pure numpy, one thread).

Run with ``.venv/bin/python bench/bench_sdf_grid.py`` (``--samples``, ``--rotations``). No
Blender needed: the clouds are synthetic, a smooth random motion track of reference-relative
rotations (a sum of slow sinusoids in exp-map space, about 1 rad across), as a joint's animation
curves would give.

Seed 000 (Engell-Norregard et al., Table 2) built 30 joints at 32^3 from 200 samples in 8.3 s
by brute force, i.e. 0.277 s per joint; the ratio printed is that per-joint time over ours.
Targets: 32^3 from 50k samples <= 0.1 s, 64^3 <= 0.5 s per joint, projection >= 5 M rotations/s.

The last table compares the two parameter spaces on the same track: how far parameter distance
strays from the geodesic angle between nearby rotations (a chart's distortion), and how far the
projected rotations are, geodesically, from the nearest allowed rotation found by the other
means (the geodesic distance of the query to the densified samples minus the tube, a lower
bound of the true violation).
"""

import os

for _name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMEXPR_NUM_THREADS"):
    os.environ[_name] = "1"

import argparse  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from limits.geometry.quaternion import (  # noqa: E402
    exp_map_from_quaternion,
    quaternion_angle,
    quaternion_from_exp_map,
    quaternion_random,
    quaternion_short_way,
    zyz_from_quaternion,
)
from limits.models.sdf.grid import SdfGridLimit  # noqa: E402

SEED_SECONDS_PER_JOINT = 8.3 / 30.0


def track(samples, seed=0):
    """A smooth motion track ``(samples, 4)``: slow sinusoids in exp-map space."""
    rng = np.random.default_rng(seed)
    t = np.linspace(0.0, 1.0, samples)[:, None]
    v = np.zeros((samples, 3))
    for k in range(1, 6):
        v += rng.normal(size=3) * 0.25 / k * np.sin(2 * np.pi * (k * 3 * t + rng.random(3)))
    return quaternion_from_exp_map(v)


def best_of(fn, repeat=3):
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - start)
    return min(times), out


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=50_000)
    parser.add_argument("--rotations", type=int, default=1_000_000)
    args = parser.parse_args()

    cloud = track(args.samples)
    print(f"build from {args.samples} samples (EXP_MAP, epsilon 0.2, padding 0.05)")
    print(f"{'grid':>6} {'seconds':>9} {'target':>7} {'x seed 000':>11} {'densified':>10} {'components':>11} {'memory':>9}")
    models = {}
    for n, target in ((32, 0.1), (64, 0.5)):
        seconds, model = best_of(lambda n=n: SdfGridLimit.fit(cloud, resolution=n))
        models[n] = model
        report = model.fit_report
        print(
            f"{n:>4}^3 {seconds:9.4f} {target:7.2f} {SEED_SECONDS_PER_JOINT / seconds:11.1f}"
            f" {report['densified']:>10} {report['components']:>11} {model.memory_bytes / 1024:7.0f} kB"
        )

    rng = np.random.default_rng(1)
    far = quaternion_short_way(quaternion_random(args.rotations, rng))
    near = quaternion_from_exp_map(
        exp_map_from_quaternion(cloud[rng.integers(0, len(cloud), args.rotations)]) + rng.normal(size=(args.rotations, 3)) * 0.3
    )
    print(f"\nprojection of {args.rotations} rotations (one thread, best of 5)")
    print(f"{'grid':>6} {'uniform M/s':>12} {'near data M/s':>14} {'contains M/s':>13} {'outside':>8}")
    for n, model in models.items():
        model.project(far[:1000])  # build the gradient table once (cached per model)
        t_far, p = best_of(lambda m=model: m.project(far), 5)
        t_near, _ = best_of(lambda m=model: m.project(near), 5)
        t_in, inside = best_of(lambda m=model: m.contains(near), 5)
        assert model.contains(p).all()
        print(
            f"{n:>4}^3 {args.rotations / t_far / 1e6:12.2f} {args.rotations / t_near / 1e6:14.2f}"
            f" {args.rotations / t_in / 1e6:13.2f} {1.0 - inside.mean():8.2f}"
        )

    print("\nspaces compared on the same track (32^3), nearby rotation pairs and 20k projections")
    print(f"{'space':>8} {'fit s':>7} {'dist/angle p01':>15} {'p99':>8} {'max':>8} {'proj excess p50':>16} {'p99':>8}")
    sub = cloud[:: max(1, len(cloud) // 4000)]
    queries = near[:20_000]
    for space in ("EXP_MAP", "ZYZ"):
        seconds, model = best_of(lambda s=space: SdfGridLimit.fit(cloud, space=s), 1)
        a = sub[:-1]
        b = quaternion_from_exp_map(exp_map_from_quaternion(a) + rng.normal(size=a[:, :3].shape) * 0.02)
        angle = quaternion_angle(a, b)
        if space == "EXP_MAP":
            d = np.linalg.norm(exp_map_from_quaternion(a) - exp_map_from_quaternion(b), axis=1)
        else:
            diff = zyz_from_quaternion(a) - zyz_from_quaternion(b)
            diff[:, [0, 2]] -= 2 * np.pi * np.round(diff[:, [0, 2]] / (2 * np.pi))
            d = np.linalg.norm(diff, axis=1)
        ratio = d / np.maximum(angle, 1e-12)
        p = model.project(queries)
        moved = quaternion_angle(queries, p)
        outside = moved > 0
        # Geodesic distance to the samples minus the tube: a lower bound of the violation.
        lower = np.full(len(queries), np.inf)
        for chunk in np.array_split(np.arange(len(sub)), 20):
            lower = np.minimum(lower, quaternion_angle(queries[:, None, :], sub[chunk][None]).min(axis=1))
        excess = moved[outside] - np.maximum(lower[outside] - model.fit_report["tube"], 0.0)
        print(
            f"{space:>8} {seconds:7.3f} {np.percentile(ratio, 1):15.3f} {np.percentile(ratio, 99):8.3f} {ratio.max():8.1f}"
            f" {np.percentile(excess, 50):16.4f} {np.percentile(excess, 99):8.4f}"
        )


if __name__ == "__main__":
    main()
