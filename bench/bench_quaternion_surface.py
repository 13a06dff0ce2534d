# SPDX-License-Identifier: GPL-3.0-or-later
"""Fit time, ``contains``/``project`` throughput and projection step counts of the quaternion
implicit surface limit (seed 002), pure numpy on one thread.

    .venv/bin/python bench/bench_quaternion_surface.py [--rotations 200000]
    ./dev bench bench/bench_quaternion_surface.py --bvh /path/cmu_143_21_range_of_motion.bvh [--joints LeftArm ...]

Synthetic clouds: a smooth motion track (slow sinusoids in exp-map space, about 1 rad across, as
animation curves give) and a volumetric cloud (a solid ellipsoid of rotations with a cavity),
each at 5k and 50k samples. With ``--bvh`` (needs Blender: the clip is imported with Blender's
BVH importer) the same table is printed for real joints of that clip; the step histogram there
is the finding to watch (the paper's projection is a handful of gradient steps, then bisection).
Held-out recall and volume next to the other models: ``bench/bench_fit_quality.py``.
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

from limits.geometry.quaternion import exp_map_from_quaternion, quaternion_angle, quaternion_from_exp_map, quaternion_random  # noqa: E402
from limits.models.surface.quaternion_surface import GRADIENT_STEPS, QuaternionSurfaceLimit  # noqa: E402


def track(samples, seed=0):
    """A smooth motion track ``(samples, 4)``: slow sinusoids in exp-map space."""
    rng = np.random.default_rng(seed)
    t = np.linspace(0.0, 1.0, samples)[:, None]
    v = np.zeros((samples, 3))
    for k in range(1, 6):
        v += rng.normal(size=3) * 0.25 / k * np.sin(2 * np.pi * (k * 3 * t + rng.random(3)))
    return quaternion_from_exp_map(v)


def volume(samples, seed=0):
    """A solid ellipsoid of rotations (vector parts up to 0.5) with a cavity."""
    rng = np.random.default_rng(seed)
    out = np.zeros((0, 3))
    while len(out) < samples:
        u = rng.normal(size=(samples, 3))
        u /= np.linalg.norm(u, axis=1, keepdims=True)
        p = u * (rng.random(samples) ** (1 / 3))[:, None] * (0.5, 0.35, 0.25)
        out = np.vstack((out, p[np.linalg.norm(p - (0.15, 0, 0), axis=1) > 0.15]))
    p = out[:samples]
    return np.c_[np.sqrt(1 - np.sum(p * p, axis=1)), p]


def timed(fn):
    start = time.perf_counter()
    out = fn()
    return time.perf_counter() - start, out


def queries(cloud, count, rng):
    """Half uniform rotations, half near the data (exp-map noise of 0.3 rad)."""
    near = quaternion_from_exp_map(
        exp_map_from_quaternion(cloud[rng.integers(0, len(cloud), count // 2)]) + rng.normal(size=(count // 2, 3)) * 0.3
    )
    return np.concatenate((quaternion_random(count - count // 2, rng), near))


def report(name, cloud, rotations, rng):
    seconds, model = timed(lambda: QuaternionSurfaceLimit.fit(cloud))
    fr = model.fit_report
    q = queries(cloud, rotations, rng)
    t_in, inside = timed(lambda: model.contains(q))
    t_proj, p = timed(lambda: model.project(q))
    stats = model.last_projection
    assert model.contains(p).all()
    outside = ~inside
    moved = quaternion_angle(q[outside], p[outside])
    sub = cloud[:: max(1, len(cloud) // 2000)]
    probe = q[outside][:300]
    nearest = np.min(quaternion_angle(probe[:, None, :], sub[None, :, :]), axis=1)
    closer = np.mean(moved[:300] <= nearest + 1e-9)
    stages = fr["seconds"]
    hist = " ".join(str(int(c)) for c in stats["steps"][1:])
    print(
        f"{name:<22} {len(cloud):>6} {seconds:7.3f} ({stages['primitives']:.3f} fit, {stages['grow']:.3f} grow, {stages['carve']:.3f} carve)"
        f" {fr['positive']:>3}+{len(model.params['signs']) - fr['positive']:<2} {len(fr['holes']):>5}"
        f" {rotations / t_in / 1e6:8.2f} {outside.sum() / t_proj / 1e6:9.3f} {outside.mean():6.2f}"
        f"  [{hist}] fb={stats['fallbacks']} closer={closer:.2f}"
    )


HEADER = (
    f"{'cloud':<22} {'N':>6} {'fit s':>7} {'(stages)':<36} {'prims':>6} {'holes':>5} {'cont M/s':>8} {'proj M/s':>9} {'out':>6}"
    f"  [rows needing 1..{GRADIENT_STEPS} gradient steps] fallbacks, share closer than nearest sample"
)


def real_clouds(path, joints):
    import _setup

    addon = _setup.addon()
    import bpy

    bpy.ops.wm.read_homefile(use_empty=True)
    rig = addon.rig.io.bvh.import_bvh_armature(bpy.context, path)
    rotations = addon.rig.io.bvh.bvh_rotations(rig, rig)
    names = joints or [n for n in rotations if any(key in n.lower() for key in ("arm", "shoulder", "upleg", "thigh"))][:6]
    out = {}
    for name in names:
        if name not in rotations:
            print(f"{name}: not in the clip; bones: {', '.join(rotations)}")
            continue
        local = rotations[name]
        limit_cloud = addon.limits.joint.relative_cloud(local, addon.limits.joint.reference_rotation(local))
        out[name] = limit_cloud
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rotations", type=int, default=200_000, help="queries for the throughput columns")
    parser.add_argument("--bvh", help="a BVH clip for real joints (imported with Blender)")
    parser.add_argument("--joints", nargs="*", help="bone names of the clip (default: arm/leg bones)")
    args = parser.parse_args()
    rng = np.random.default_rng(1)
    print("contains M/s: all queries; proj M/s: rotations actually projected (outside) per second")
    print(HEADER)
    for n in (5_000, 50_000):
        report(f"track {n // 1000}k", track(n), args.rotations, rng)
        report(f"volume {n // 1000}k", volume(n), args.rotations, rng)
    if args.bvh:
        for name, cloud in real_clouds(args.bvh, args.joints).items():
            report(f"{Path(args.bvh).stem[:10]}:{name}"[:22], cloud, args.rotations, rng)


if __name__ == "__main__":
    main()
