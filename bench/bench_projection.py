# SPDX-License-Identifier: GPL-3.0-or-later
"""Projection throughput of every limit model against the target of 5 M rotations/s on one
core for Holden's shapes (box, oriented box, ellipsoid, k-DOP; both modes); a per-rotation
Python loop with mathutils is timed beside it for information.

Run with ``.venv/bin/python bench/bench_projection.py`` (``--rotations N`` and ``--loop N`` to
change the sizes). Single thread: the BLAS thread counts are pinned to 1 before numpy loads.

Each model is fitted on a synthetic cloud of reference-relative rotations (an anisotropic,
turned Gaussian in exp-map space), then asked to project uniformly random rotations (taken the
short way round, as :class:`~limits.joint.JointLimit` would hand them over); nearly all of
them are outside, most far outside, so this is the expensive case.

The baseline is what a handler written with ``mathutils`` would do, one rotation at a time,
with the same maths, starting from ``mathutils.Quaternion`` objects built before the timing (as
numpy starts from its ready array; building a Quaternion from a numpy row costs ~0.8 us, about
as much as a whole box projection, and is input conversion, not projection): e.g. for the box
``q.to_exponential_map()``, clamp, and ``Quaternion(exp_map_vector)``; for the ellipsoid the
same safeguarded Newton iteration in Python floats; for the k-DOP the same face / edge / vertex active-set guesses with the same
precomputed tables and the exhaustive edge scan as fallback. The loop runs on ``--loop``
rotations and its rate is scaled; the ``agree`` column is the largest angle (degrees) between
the loop's and numpy's results on those rotations (mathutils stores float32, which can tip the
k-DOP's choice between an edge and a neighbouring vertex: the numpy result is the certified
nearest point, see ``tests/limits/models/test_kdop.py``). ``near M/s`` is numpy's rate on rotations drawn
like the data (mostly allowed, as in live use), where most of the work is skipped.
"""

import os

for _name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMEXPR_NUM_THREADS"):
    os.environ[_name] = "1"

import argparse  # noqa: E402
import math  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import bpy  # noqa: E402, F401  (provides mathutils)
from mathutils import Euler, Matrix, Quaternion, Vector  # noqa: E402

from limits.geometry.quaternion import quaternion_angle, quaternion_from_exp_map, quaternion_random, quaternion_short_way  # noqa: E402
from limits.model import model_class, model_kinds  # noqa: E402
from limits.models.euler_box import TWO_PI  # noqa: E402
from limits.models.kdop import _GRAM, _LINE_DIR, _PLANES, NORMALS, cached_tables, kdop_offsets  # noqa: E402

CASES = [("euler_box", None)] + [
    (kind, mode) for kind in ("box", "oriented_box", "ellipsoid", "kdop") for mode in ("FULL", "SWING_TWIST")
]
#: M rotations / s on one core, every mode (issue 14's target; the loop's ratio is information only).
TARGETS = {"box": 5.0, "oriented_box": 5.0, "ellipsoid": 5.0, "kdop": 5.0}


# -- per-rotation loops with mathutils ------------------------------------------------------------
def clamp(x, lo, hi):
    return lo if x < lo else hi if x > hi else x


def loop_box(params, shape_points, rotation_from):
    """``shape_points(q) -> [Vector]`` and back: clamp every coordinate of every shape."""
    mins, maxs = params["mins"].tolist(), params["maxs"].tolist()

    def project(q):
        points = shape_points(q)
        out, moved = [], False
        for s, v in enumerate(points):
            c = Vector([clamp(v[i], mins[3 * s + i], maxs[3 * s + i]) for i in range(3)])
            moved = moved or c != v
            out.append(c)
        return rotation_from(out) if moved else q

    return project


def loop_oriented_box(params, shape_points, rotation_from):
    frames = [Matrix(params["rotation"][3 * s : 3 * s + 3].tolist()) for s in range(len(params["position"]) // 3)]
    inverse = [m.transposed() for m in frames]
    centres = [Vector(params["position"][3 * s : 3 * s + 3].tolist()) for s in range(len(frames))]
    mins, maxs = params["mins"].tolist(), params["maxs"].tolist()

    def project(q):
        out, moved = [], False
        for s, v in enumerate(shape_points(q)):
            local = inverse[s] @ (v - centres[s])
            c = Vector([clamp(local[i], mins[3 * s + i], maxs[3 * s + i]) for i in range(3)])
            if c != local:
                moved = True
                out.append(frames[s] @ c + centres[s])
            else:
                out.append(v)
        return rotation_from(out) if moved else q

    return project


def newton_ellipsoid(y, a):
    """The numpy model's Newton iteration on h(t) = S(t)^-1/2 - 1, in Python floats."""
    a2 = [x * x for x in a]
    ay = [abs(a[i] * y[i]) for i in range(3)]
    lo = max(max(ay[i] - a2[i] for i in range(3)), 0.0)
    hi = math.sqrt(sum(x * x for x in ay))
    t = lo
    for _ in range(40):
        d = [t + a2[i] for i in range(3)]
        r2 = [(ay[i] / d[i]) ** 2 for i in range(3)]
        s = sum(r2)
        slope = sum(r2[i] / d[i] for i in range(3))
        if s > 1.0:
            lo = t
        elif s < 1.0:
            hi = t
        t_new = t + s * (math.sqrt(s) - 1.0) / slope
        if not lo <= t_new <= hi:
            t_new = 0.5 * (lo + hi)
        if abs(t_new - t) <= 1e-13 * (t_new + min(a2)):
            t = t_new
            break
        t = t_new
    return Vector([a2[i] * y[i] / (t + a2[i]) for i in range(3)])


def loop_ellipsoid(params, shape_points, rotation_from):
    frames = [Matrix(params["rotation"][3 * s : 3 * s + 3].tolist()) for s in range(len(params["position"]) // 3)]
    inverse = [m.transposed() for m in frames]
    centres = [Vector(params["position"][3 * s : 3 * s + 3].tolist()) for s in range(len(frames))]
    scales = [params["scales"][3 * s : 3 * s + 3].tolist() for s in range(len(frames))]

    def project(q):
        out, moved = [], False
        for s, v in enumerate(shape_points(q)):
            local = inverse[s] @ (v - centres[s])
            a = scales[s]
            if (local[0] / a[0]) ** 2 + (local[1] / a[1]) ** 2 + (local[2] / a[2]) ** 2 <= 1.0:
                out.append(v)
                continue
            moved = True
            out.append(frames[s] @ newton_ellipsoid(local, a) + centres[s])
        return rotation_from(out) if moved else q

    return project


def loop_kdop(params, shape_points, rotation_from):
    """The numpy model's face / edge / vertex guesses and edge-scan fallback, per rotation."""
    count = len(params["position"]) // 3
    frames = [Matrix(params["rotation"][3 * s : 3 * s + 3].tolist()) for s in range(count)]
    inverse = [m.transposed() for m in frames]
    centres = [Vector(params["position"][3 * s : 3 * s + 3].tolist()) for s in range(count)]
    normals = [Vector(n) for n in NORMALS.tolist()]
    gram = _GRAM.tolist()
    shapes = []
    for s in range(count):
        offsets = kdop_offsets(params["mins"][13 * s : 13 * s + 13], params["maxs"][13 * s : 13 * s + 13])
        t = cached_tables(offsets)
        n_edges = int(t["edge_count"][0])
        shapes.append(
            {
                "b": offsets.tolist(),
                "facet": t["face_is_facet"].tolist(),
                "adjacent": [sorted(set(row)) for row in t["face_adjacent"].tolist()],
                "is_edge": t["pair_is_edge"].tolist(),
                "origin": [Vector(o) for o in t["pair_origin"].tolist()],
                "t_lo": t["pair_t_lo"].tolist(),
                "t_hi": t["pair_t_hi"].tolist(),
                "plane_lo": t["pair_plane_lo"].tolist(),
                "plane_hi": t["pair_plane_hi"].tolist(),
                "edges": [
                    (Vector(o), Vector(d), length)
                    for o, d, length in zip(
                        t["edge_origin"][0, :n_edges].tolist(),
                        t["edge_direction"][0, :n_edges].tolist(),
                        t["edge_length"][0, :n_edges].tolist(),
                        strict=True,
                    )
                ],
            }
        )
    directions = [Vector(d) for d in _LINE_DIR.reshape(-1, 3).tolist()]
    tol = 1e-10

    def nearest(y, sh):
        b = sh["b"]
        s = [normals[j].dot(y) - b[j] for j in range(_PLANES)]
        k = max(range(_PLANES), key=s.__getitem__)
        sk = s[k]
        if sk <= 0.0:
            return None
        k2 = max(sh["adjacent"][k], key=lambda j: s[j] - sk * gram[k][j])
        if sh["facet"][k] and s[k2] - sk * gram[k][k2] <= tol:
            return y - sk * normals[k]
        pair = line = k * _PLANES + k2  # one k-DOP per table: pair index = line index
        if sh["is_edge"][pair]:
            g = gram[k][k2]
            lam_k, lam_2 = (sk - g * s[k2]) / (1 - g * g), (s[k2] - g * sk) / (1 - g * g)
            o, d = sh["origin"][pair], directions[line]
            t = (y - o).dot(d)
            t_lo, t_hi = sh["t_lo"][pair], sh["t_hi"][pair]
            if t_lo <= t <= t_hi:
                if lam_k >= -tol and lam_2 >= -tol:
                    return o + t * d
            else:
                k3 = sh["plane_lo"][pair] if t < t_lo else sh["plane_hi"][pair]
                a, bb, c = g, gram[k][k3], gram[k2][k3]
                det = 1 + 2 * a * bb * c - a * a - bb * bb - c * c
                if abs(det) > 1e-9:
                    s1, s2, s3 = sk, s[k2], s[k3]
                    lams = (
                        ((1 - c * c) * s1 + (bb * c - a) * s2 + (a * c - bb) * s3) / det,
                        ((bb * c - a) * s1 + (1 - bb * bb) * s2 + (a * bb - c) * s3) / det,
                        ((a * c - bb) * s1 + (a * bb - c) * s2 + (1 - a * a) * s3) / det,
                    )
                    if min(lams) >= -tol:
                        return o + (t_lo if t < t_lo else t_hi) * d
        best, best_d = None, math.inf
        for o, d, length in sh["edges"]:
            p = o + clamp((y - o).dot(d), 0.0, length) * d
            dist = (y - p).length_squared
            if dist < best_d:
                best, best_d = p, dist
        return best

    def project(q):
        out, moved = [], False
        for s, v in enumerate(shape_points(q)):
            p = nearest(inverse[s] @ (v - centres[s]), shapes[s])
            if p is None:
                out.append(v)
            else:
                moved = True
                out.append(frames[s] @ p + centres[s])
        return rotation_from(out) if moved else q

    return project


def clamp_angle(angle, lo, hi):
    """Blender's clamp_angle (non-legacy Limit Rotation), in Python floats."""
    if hi - lo >= TWO_PI:
        return angle
    if hi <= lo:
        return lo

    def wrap(x):
        return x - TWO_PI * math.floor(x / TWO_PI + 0.5)

    lo_rel, hi_rel = wrap(lo - angle), wrap(hi - angle)
    if lo_rel < hi_rel:
        return angle + min(max(0.0, lo_rel), hi_rel)
    if hi_rel >= 0.0 or lo_rel <= 0.0:
        return angle
    return angle + (hi_rel if abs(hi_rel) < abs(lo_rel) else lo_rel)


def loop_euler_box(params, order):
    mins, maxs = params["mins"].tolist(), params["maxs"].tolist()
    i, j, k = ("XYZ".index(c) for c in order)

    def in_box(e):
        return all((hi - lo >= TWO_PI) or ((x - lo) % TWO_PI) <= hi - lo for x, lo, hi in zip(e, mins, maxs, strict=True))

    def project(q):
        e = q.to_euler(order)
        alt = list(e)
        alt[i] += math.pi
        alt[j] = math.pi - alt[j]
        alt[k] += math.pi
        if in_box(e) or in_box(alt):
            return q
        out = Euler([clamp_angle(e[a], mins[a], maxs[a]) for a in range(3)], order).to_quaternion()
        return out if out.dot(q) >= 0 else -out

    return project


def full_mode():
    return (lambda q: [q.to_exponential_map()]), (lambda pts: Quaternion(pts[0]))


def swing_twist_mode():
    """Bone axis +Y: the twist frame is the identity, mathutils splits ``q = swing @ twist``."""
    y_axis = Vector((0.0, 1.0, 0.0))

    def points(q):
        swing, twist = q.to_swing_twist("Y")
        s = swing.to_exponential_map()
        s.y = 0.0
        return [s, Vector((0.0, twist, 0.0))]

    def rotation(pts):
        return Quaternion(pts[0]) @ Quaternion(y_axis, pts[1].y)

    return points, rotation


LOOPS = {"box": loop_box, "oriented_box": loop_oriented_box, "ellipsoid": loop_ellipsoid, "kdop": loop_kdop}


# -- the benchmark ------------------------------------------------------------------------------------
def synthetic_cloud(rng, n=2000):
    turn = np.linalg.qr(rng.normal(size=(3, 3)))[0]
    v = (rng.normal(size=(n, 3)) * (0.6, 0.3, 0.12)) @ turn.T + (0.2, -0.1, 0.3)
    return quaternion_from_exp_map(v)


def best_time(fn, repeats):
    best = math.inf
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rotations", type=int, default=1_000_000, help="rotations for numpy")
    parser.add_argument("--loop", type=int, default=20_000, help="rotations for the mathutils loop")
    parser.add_argument("--repeats", type=int, default=3, help="numpy runs (best is kept)")
    args = parser.parse_args()

    rng = np.random.default_rng(2024)
    cloud = synthetic_cloud(rng)
    rotations = quaternion_short_way(quaternion_random(args.rotations, rng))
    sample = rotations[: args.loop]
    # The live case: rotations like the data, most of them allowed, the others close by.
    near = synthetic_cloud(np.random.default_rng(2024), args.rotations)
    labels = dict((kind, label) for kind, label, _ in model_kinds())

    print(f"numpy {np.__version__}, mathutils from bpy {bpy.app.version_string}, single thread")
    print(f"{args.rotations:,} random rotations for numpy (best of {args.repeats}), {args.loop:,} for the loop\n")
    header = f"{'kind':<14}{'mode':<13}{'numpy M rot/s':>14}{'loop k rot/s':>14}{'ratio':>8}{'agree deg':>11}{'near M/s':>10}  {'target':<s}"
    print(header)
    print("-" * len(header))
    for kind, mode in CASES:
        options = {"order": "XYZ"} if mode is None else {"mode": mode}
        model = model_class(kind).fit(cloud, **options)
        model.project(rotations[:1000])  # warm caches (k-DOP tables)
        numpy_rate = args.rotations / best_time(lambda model=model: model.project(rotations), args.repeats) / 1e6
        if kind == "euler_box":
            project = loop_euler_box(model.params, "XYZ")
        else:
            assert np.allclose(model.params["axis"], (0.0, 1.0, 0.0))
            points, rotation = full_mode() if mode == "FULL" else swing_twist_mode()
            project = LOOPS[kind](model.params, points, rotation)
        looped = []
        quaternions = [Quaternion(row) for row in sample.tolist()]

        def run_loop(project=project, looped=looped, quaternions=quaternions):
            looped[:] = [project(q) for q in quaternions]

        loop_rate = len(sample) / best_time(run_loop, args.repeats) / 1e3
        near_rate = len(near) / best_time(lambda model=model: model.project(near), args.repeats) / 1e6
        agree = np.degrees(quaternion_angle(np.array([list(q) for q in looped]), model.project(sample)).max())
        target = TARGETS.get(kind)
        verdict = "" if target is None else f">= {target:g} M/s: {'met' if numpy_rate >= target else 'MISSED'}"
        ratio = numpy_rate * 1e3 / loop_rate
        print(
            f"{labels[kind]:<14}{mode or '-':<13}{numpy_rate:>14.2f}{loop_rate:>14.1f}{ratio:>7.0f}x{agree:>11.1e}{near_rate:>10.2f}  {verdict}"
        )


if __name__ == "__main__":
    main()
