# SPDX-License-Identifier: GPL-3.0-or-later
"""Speed and memory of the sinus texture limit on one core (pure numpy, no Blender).

Run: ``.venv/bin/python bench/bench_sinus_texture.py``. Targets: ``contains`` >= 10 M rotations
per second, ``project`` >= 5 M/s, building a 131072-texel texture (Kelly's 512 x 256, or
equal-area 362 x 362) from 100k samples, nearest-boundary table included, <= 0.5 s.
"""

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from limits.geometry.quaternion import quaternion_multiply, quaternion_normalize, quaternion_random, quaternion_rotate  # noqa: E402
from limits.geometry.swing_twist import rotation_from_direction_twist  # noqa: E402
from limits.models.sinus.texture import SinusTextureLimit  # noqa: E402


def cone_cloud(n, rng):
    """Rotations inside an elliptical swing cone (1.0 x 0.6 rad) with swing-dependent twist."""
    phi = rng.uniform(0, 2 * np.pi, n)
    r = np.sqrt(rng.uniform(0, 1, n))
    ax, az = 1.0 * r * np.cos(phi), 0.6 * r * np.sin(phi)
    ang = np.hypot(ax, az)
    safe = np.where(ang > 0, ang, 1.0)
    q = np.stack((np.cos(ang / 2), np.sin(ang / 2) * ax / safe, 0 * ang, np.sin(ang / 2) * az / safe), -1)
    d = quaternion_rotate(q, np.array([0.0, 1.0, 0.0]))
    twist = rng.uniform(-0.3, 0.3, n) + 0.5 * d[:, 0]
    return rotation_from_direction_twist(d, twist)


def best_of(fn, repeats=5):
    best = np.inf
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def main():
    rng = np.random.default_rng(0)
    cloud = cone_cloud(100_000, rng)
    print("sinus texture benchmark (one thread, best of 5)")
    for layout, size in (("equal_area", 256), ("equal_area", 362), ("kelly", None)):
        cold = time.perf_counter()
        model = SinusTextureLimit.fit(cloud, layout=layout, size=size)
        cold = time.perf_counter() - cold
        warm = best_of(lambda layout=layout, size=size: SinusTextureLimit.fit(cloud, layout=layout, size=size), 3)
        h, w = model.config["height"], model.config["width"]
        table = best_of(lambda model=model: model.with_mask(model.params["image"][..., 0]), 3)
        params = sum(v.nbytes for v in model.params.values())
        model.contains(cloud[:10])
        runtime = sum(v.nbytes for v in model._runtime().values() if isinstance(v, np.ndarray))
        runtime += sum(a.nbytes for a in model._runtime()["nearest_xyz"])
        print(
            f"{layout:>10} {h}x{w} ({h * w} texels): fit 100k samples {warm * 1e3:.0f} ms "
            f"(first call {cold * 1e3:.0f} ms, cold caches); recompute after a mask edit {table * 1e3:.0f} ms; "
            f"memory per joint: params {params / 2**20:.1f} MiB + lookup tables {runtime / 2**20:.1f} MiB"
        )

    model = SinusTextureLimit.fit(cloud)
    n = 1 << 20
    uniform = quaternion_random(n, rng)
    near = cone_cloud(n, rng) * 1.0
    jitter = quaternion_random(n, rng) * 0.15
    jitter[:, 0] = 1.0
    near = quaternion_normalize(quaternion_multiply(near, jitter))
    inside = model.contains(near).mean()
    projected = model.project(uniform)
    cases = (
        ("contains, uniform rotations", lambda: model.contains(uniform)),
        (f"contains, near the region ({inside:.0%} inside)", lambda: model.contains(near)),
        ("project, all inside (live case)", lambda: model.project(projected)),
        (f"project, near the region ({inside:.0%} inside)", lambda: model.project(near)),
        (f"project, uniform rotations ({model.contains(uniform).mean():.1%} inside, worst case)", lambda: model.project(uniform)),
        ("stress", lambda: model.stress(near)),
    )
    print(f"lookups on the default model ({model.config['height']}x{model.config['width']} equal_area), {n} rotations:")
    for label, fn in cases:
        fn()
        seconds = best_of(fn)
        print(f"  {label:<58} {n / seconds / 1e6:6.2f} M/s")
    # trajectory: from the last valid pose to a pose a few degrees further (one frame of motion)
    k = 1 << 16
    last = model.project(near[:k])
    step = quaternion_random(k, rng) * 0.05
    step[:, 0] = 1.0
    moved = quaternion_normalize(quaternion_multiply(last, step))
    seconds = best_of(lambda: model.project_along(moved, last), 3)
    print(f"  {'project_along (guarded, ~3 degree steps from valid poses)':<58} {k / seconds / 1e6:6.2f} M/s")
    stacked = SinusTextureLimit.stack([model] * 64)
    bones = near[: 64 * 4096].reshape(4096, 64, 4)
    stacked.contains(bones[:1])
    seconds = best_of(lambda: stacked.contains(bones))
    print(f"  {'contains, 64 stacked joints':<58} {bones.size / 4 / seconds / 1e6:6.2f} M/s")


if __name__ == "__main__":
    main()
