# SPDX-License-Identifier: GPL-3.0-or-later
"""The limit models (pure numpy, no bpy): fitting, containment, exact projections, batching,
serialization, validation of corrupt data, the Euler box's wrap-around, and softening."""

import contextlib
import io
import itertools
import json
import warnings

import numpy as np
import pytest

from limits.constants import EULER_ORDERS
from limits.ellipsoid import nearest_on_ellipsoid
from limits.euler_box import angle_in_arc, circular_ranges, clamp_angle
from limits.joint import JointLimit
from limits.kdop import (
    KDOP_AXES,
    NORMALS,
    KDopLimit,
    _nearest_polygon_edge,
    cached_tables,
    interior_margin,
    kdop_offsets,
    nearest_in_kdop,
    swing_plane_polygon,
    twist_axis_interval,
)
from limits.model import LimitModel, model_class, model_kinds
from limits.quaternion import (
    euler_from_quaternion,
    exp_map_from_quaternion,
    quaternion_angle,
    quaternion_from_euler,
    quaternion_from_exp_map,
    quaternion_multiply,
    quaternion_random,
    quaternion_toward,
)
from limits.serialize import limit_from_json, limit_to_json, load_limit_npz, save_limit_npz
from limits.shape_limit import from_local, to_local
from limits.softening import soften

KINDS = ("euler_box", "box", "oriented_box", "ellipsoid", "kdop")
SHAPES = KINDS[1:]
CASES = [("euler_box", None)] + [(kind, mode) for kind in SHAPES for mode in ("FULL", "SWING_TWIST")]
CASE_IDS = [f"{kind}-{mode}" if mode else kind for kind, mode in CASES]


def options(mode):
    return {} if mode is None else {"mode": mode}


def random_rotation_matrix(rng):
    m, r = np.linalg.qr(rng.normal(size=(3, 3)))
    m = m * np.sign(np.diag(r))
    return m if np.linalg.det(m) > 0 else -m


def cloud(seed, n=400, centre=(0.2, -0.1, 0.3), spread=(0.6, 0.3, 0.12)):
    """Reference-relative rotations: an anisotropic, turned Gaussian in exp-map space."""
    rng = np.random.default_rng(seed)
    v = (rng.normal(size=(n, 3)) * spread) @ random_rotation_matrix(rng).T + centre
    return quaternion_from_exp_map(v)


def queries(seed, n=3000):
    """Rotations everywhere (both covers) plus some near the data."""
    rng = np.random.default_rng(seed)
    near = quaternion_from_exp_map(rng.normal(size=(n // 3, 3)) * 0.5 + (0.2, -0.1, 0.3))
    return np.concatenate((quaternion_random(n - len(near), rng), near))


@pytest.fixture(scope="module")
def fitted():
    return {case: model_class(case[0]).fit(cloud(1), **options(case[1])) for case in CASES}


@contextlib.contextmanager
def no_warnings():
    """Turn numpy's RuntimeWarnings (invalid value, division by zero...) into failures."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        yield


# -- registry -------------------------------------------------------------------------------------
def test_kinds_are_registered_in_ui_order_with_labels():
    kinds = [kind for kind, _, _ in model_kinds()]
    assert [kind for kind in kinds if kind in KINDS] == list(KINDS)
    for kind, label, description in model_kinds():
        if kind in KINDS:
            assert label and description and model_class(kind).kind == kind


# -- the interface on every model -----------------------------------------------------------------
@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_training_rotations_are_contained_and_untouched(fitted, case):
    model, q = fitted[case], cloud(1)
    assert model.contains(q).all()
    assert np.array_equal(model.project(q), q)
    assert np.array_equal(model.violation(q), np.zeros(len(q)))


@pytest.mark.parametrize("mode", ("FULL", "SWING_TWIST"))
def test_ellipsoid_is_centred_on_the_data_extent_and_bounded_by_it(mode):
    """Issue 13: centred on the mean and sized by the farther side, lopsided data made the
    ellipsoid reach twice its extent on the near side (a shoulder accepted 85% of rotations).
    Along every principal axis it now reaches at most sqrt(3) times the half extent plus the
    padding beyond the middle of the data, and holds every point."""
    padding = 0.05
    rng = np.random.default_rng(3)
    v = np.c_[rng.exponential(0.4, 600), rng.normal(0, 0.2, 600), rng.normal(0, 0.1, 600)]  # lopsided
    q = quaternion_from_exp_map(v)
    model = model_class("ellipsoid").fit(q, mode=mode, padding=padding)
    assert model.contains(q).all()
    for shape, p in zip(model._shapes(), model._points(q), strict=True):
        local = to_local(p, shape["position"], shape["rotation"])
        half = np.maximum(0.5 * (local.max(axis=0) - local.min(axis=0)), padding)
        assert np.allclose(0.5 * (local.max(axis=0) + local.min(axis=0)), 0.0, atol=1e-9), "centred on the extent"
        assert np.all(shape["scales"] <= np.sqrt(3.0) * half + padding + 1e-9)
    uniform = quaternion_random(20000, 0)
    assert model.contains(uniform).mean() <= model_class("euler_box").fit(q, padding=padding).contains(uniform).mean()


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_projection_lands_inside_and_is_idempotent(fitted, case):
    model, q = fitted[case], queries(2)
    with no_warnings():
        p = model.project(q)
        assert model.contains(p).all()
        pp = model.project(p)
    assert quaternion_angle(p, pp).max() <= 1e-6
    # Stronger than the angle (whose arccos floors near 3e-8): the quaternions agree.
    assert np.abs(p - pp).max() <= 1e-9


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_points_inside_are_returned_exactly(fitted, case):
    model, q = fitted[case], queries(3)
    inside = model.contains(q, tolerance=0.0)
    assert 0 < inside.sum() < len(q)
    assert np.array_equal(model.project(q[inside]), q[inside])


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_violation_is_zero_inside_and_the_geodesic_distance_outside(fitted, case):
    model, q = fitted[case], queries(4)
    v = model.violation(q)
    p = model.project(q)
    inside = model.contains(q, tolerance=0.0)
    assert np.all(v[inside] == 0.0)
    assert np.all(v[~inside] > 0.0)
    np.testing.assert_allclose(v[~inside], quaternion_angle(q[~inside], p[~inside]), atol=1e-12)


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_non_finite_rows_are_not_contained_and_pass_through(fitted, case):
    model = fitted[case]
    q = queries(5, 12)
    q[3] = np.nan
    q[7, 2] = np.inf
    with no_warnings():
        inside = model.contains(q)
        p = model.project(q)
        v = model.violation(q)
    assert not inside[3] and not inside[7]
    assert np.isnan(p[3]).all() and np.array_equal(p[7], q[7])
    good = np.ones(len(q), dtype=bool)
    good[[3, 7]] = False
    assert np.array_equal(p[good], model.project(q[good]))
    assert np.isnan(v[[3, 7]]).all() and np.isfinite(v[good]).all()


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_single_rotation_and_batch_shapes(fitted, case):
    model = fitted[case]
    q = queries(6, 24)
    single = model.project(q[5])
    assert single.shape == (4,)
    # Equal up to rounding (BLAS may take another path for one row).
    np.testing.assert_allclose(single, model.project(q)[5], rtol=0, atol=1e-14)
    assert np.ndim(model.contains(q[5])) == 0
    grid = q.reshape(4, 6, 4)
    np.testing.assert_allclose(model.project(grid).reshape(-1, 4), model.project(q), rtol=0, atol=1e-14)


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_q_and_minus_q_project_to_the_same_rotation_through_joint_limit(case):
    kind, mode = case
    rng = np.random.default_rng(7)
    local = quaternion_multiply(quaternion_from_exp_map([0.3, 0.2, -0.4]), cloud(8))
    limit = JointLimit.fit(local, kind=kind, **options(mode))
    q = quaternion_random(500, rng)
    assert quaternion_angle(limit.project(q), limit.project(-q)).max() <= 1e-9
    assert np.array_equal(limit.contains(q), limit.contains(-q))
    np.testing.assert_allclose(limit.violation(q), limit.violation(-q), atol=1e-9)
    assert limit.contains(local).all()
    assert limit.violation(local).max() <= 1e-7  # quaternion_angle's arccos floor


# -- degenerate data -------------------------------------------------------------------------------
DEGENERATE = {
    "one rotation": quaternion_from_exp_map(np.array([[0.1, 0.2, -0.3]])),
    "identical rotations": np.tile(quaternion_from_exp_map([0.4, 0.0, 0.1]), (20, 1)),
    "one axis": quaternion_from_exp_map(np.outer(np.linspace(-0.8, 1.1, 50), [0.0, 0.0, 1.0])),
    "bone twist only": quaternion_from_exp_map(np.outer(np.linspace(-0.5, 0.7, 50), [0.0, 1.0, 0.0])),
    "a plane": quaternion_from_exp_map(np.c_[np.random.default_rng(9).normal(size=(60, 2)) * 0.4, np.zeros(60)]),
    "identity": np.array([[1.0, 0.0, 0.0, 0.0]]),
}


@pytest.mark.parametrize("data", list(DEGENERATE), ids=list(DEGENERATE))
@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_degenerate_clouds_fit_without_nan(case, data):
    q = DEGENERATE[data]
    with no_warnings():
        model = model_class(case[0]).fit(q, **options(case[1]))
        assert all(np.all(np.isfinite(value)) for value in model.params.values())
        assert model.contains(q).all()
        p = model.project(queries(10, 300))
        assert np.isfinite(p).all() and model.contains(p).all()
        assert np.abs(model.project(p) - p).max() <= 1e-9
    LimitModel.from_dict(model.to_dict())  # valid data


@pytest.mark.parametrize("kind", SHAPES)
@pytest.mark.parametrize("axis", [(1.0, 1.0, 0.0), (0.0, -1.0, 0.0), (0.2, 0.3, -0.9)])
def test_swing_twist_with_other_twist_axes(kind, axis):
    q = cloud(11)
    model = model_class(kind).fit(q, mode="SWING_TWIST", twist_axis=axis)
    assert np.isclose(np.linalg.norm(model.params["axis"]), 1.0)
    assert model.contains(q).all()
    p = model.project(queries(12, 1000))
    assert model.contains(p).all()
    assert np.abs(model.project(p) - p).max() <= 1e-9


@pytest.mark.parametrize("kind", SHAPES)
@pytest.mark.parametrize("mode", ["FULL", "SWING_TWIST"])
def test_shapes_reaching_past_the_largest_expressible_rotation_stay_consistent(kind, mode):
    """Data near 180 degree swings (or 360 degree rotations): the shape grows past that sphere,
    yet projections must stay rotations whose points are in the shape (see ``_keep_in_ball``)."""
    rng = np.random.default_rng(19)
    n = 300
    if mode == "SWING_TWIST":
        angle = rng.uniform(0.0, 1.2, n)
        radius = rng.uniform(2.8, 3.1, n)
        swing = np.c_[radius * np.cos(angle), np.zeros(n), radius * np.sin(angle)]
        twist = np.c_[np.zeros(n), rng.uniform(-0.5, 0.5, n), np.zeros(n)]
        data = quaternion_multiply(quaternion_from_exp_map(swing), quaternion_from_exp_map(twist))
        limit = np.pi
    else:
        data = quaternion_from_exp_map(np.outer(rng.uniform(5.6, 6.2, n), [1.0, 0.0, 0.0]) + rng.normal(size=(n, 3)) * 0.1)
        limit = 2 * np.pi
    directions = rng.normal(size=(4000, 3))
    if mode == "SWING_TWIST":
        directions[:, 1] = 0.0
    directions /= np.linalg.norm(directions, axis=1, keepdims=True)
    v = directions * limit * rng.uniform(0.9, 0.99999, (4000, 1))
    q = quaternion_from_exp_map(v)
    if mode == "SWING_TWIST":
        q = quaternion_multiply(q, quaternion_from_exp_map(np.c_[np.zeros(4000), rng.uniform(-1, 1, 4000), np.zeros(4000)]))
    model = model_class(kind).fit(data, mode=mode)
    assert model.contains(data).all()
    p = model.project(q)
    assert model.contains(p).all()
    assert np.abs(model.project(p) - p).max() <= 1e-9


@pytest.mark.parametrize("kind", SHAPES)
@pytest.mark.parametrize("mode", ["FULL", "SWING_TWIST"])
def test_shapes_inside_their_ball_skip_pulling_back_with_the_same_results(kind, mode, monkeypatch):
    """Large projections skip ``_keep_in_ball`` for shapes whose bound lies inside the ball:
    the bound holds every projected point, the results equal those of the full path, and a
    shape reaching past the ball is never skipped."""
    import limits.shape_limit as shape_limit

    model = model_class(kind).fit(cloud(27), mode=mode)
    q = queries(28, 3000)
    shapes = model._shapes()
    assert model._in_ball(shapes) == [True] * len(shapes)
    fast = model._project(q)
    for shape, p in zip(shapes, model._points(model.project(q)), strict=True):
        assert np.all(np.linalg.norm(p, axis=-1) <= model._shape_radius(shape) + 1e-12)
    monkeypatch.setattr(shape_limit, "IN_BALL_ROWS", 10**9)
    full = model._project(q)
    assert np.array_equal(fast[0], full[0]) and np.array_equal(fast[1], full[1])
    # Data near 360 degree rotations (180 degree swings): the shape reaches past its ball.
    rng = np.random.default_rng(29)
    v = np.outer(rng.uniform(2.9, 3.1, 300), [1.0, 0.0, 0.0]) + rng.normal(size=(300, 3)) * 0.1
    if mode == "FULL":
        v *= 2.0
    far = model_class(kind).fit(quaternion_from_exp_map(v), mode=mode)
    assert not far._in_ball(far._shapes())[0]


# -- exact nearest points in exp-map space ----------------------------------------------------------
def fibonacci_sphere(n):
    i = np.arange(n) + 0.5
    z = 1.0 - 2.0 * i / n
    r = np.sqrt(1.0 - z * z)
    phi = i * np.pi * (3.0 - np.sqrt(5.0))
    return np.stack((r * np.cos(phi), r * np.sin(phi), z), axis=-1)


def box_surface(mins, maxs, n=60):
    """Points on the surface of the box ``[mins, maxs]``: a grid on each face."""
    t = np.linspace(0.0, 1.0, n)
    u, v = (g.ravel() for g in np.meshgrid(t, t))
    out = []
    for axis in range(3):
        others = [i for i in range(3) if i != axis]
        for bound in (mins[axis], maxs[axis]):
            face = np.empty((len(u), 3))
            face[:, axis] = bound
            face[:, others[0]] = mins[others[0]] + u * (maxs[others[0]] - mins[others[0]])
            face[:, others[1]] = mins[others[1]] + v * (maxs[others[1]] - mins[others[1]])
            out.append(face)
    return np.concatenate(out)


def boundary_samples(model):
    """Dense points on the boundary of a FULL-mode model's shape, in exp-map space."""
    p = model.params
    if model.kind == "box":
        return box_surface(p["mins"], p["maxs"])
    if model.kind == "oriented_box":
        return from_local(box_surface(p["mins"], p["maxs"]), p["position"], p["rotation"])
    directions = fibonacci_sphere(40000)
    if model.kind == "ellipsoid":
        return from_local(directions * p["scales"], p["position"], p["rotation"])
    # k-DOP: cast rays from the frame origin (the data mean, inside) to the nearest plane.
    offsets = kdop_offsets(p["mins"], p["maxs"])
    along = directions @ NORMALS.T
    reach = np.where(along > 1e-12, offsets / np.where(along > 1e-12, along, 1.0), np.inf).min(axis=1)
    return from_local(directions * reach[:, None], p["position"], p["rotation"])


def brute_force_distance(points, samples, chunk=200):
    out = np.empty(len(points))
    sq = np.sum(samples**2, axis=1)
    for start in range(0, len(points), chunk):
        x = points[start : start + chunk]
        d = sq[None, :] - 2.0 * x @ samples.T + np.sum(x**2, axis=1)[:, None]
        out[start : start + chunk] = np.sqrt(np.maximum(d.min(axis=1), 0.0))
    return out


@pytest.mark.parametrize("kind", SHAPES)
def test_projection_is_never_farther_than_brute_force_nearest_boundary_point(kind):
    rng = np.random.default_rng(13)
    training = cloud(14, spread=(0.15, 0.08, 0.04), centre=(0.1, 0.05, -0.1))
    model = model_class(kind).fit(training, mode="FULL")
    samples = boundary_samples(model)
    data = exp_map_from_quaternion(training)
    centre = data.mean(axis=0)
    size = np.ptp(data, axis=0).max()
    # Near the surface, a little outside, and up to ten times the shape's size away (inside the
    # 2 pi ball so that exp map -> quaternion -> exp map is the identity).
    directions = rng.normal(size=(1200, 3))
    directions /= np.linalg.norm(directions, axis=1, keepdims=True)
    radii = np.concatenate((rng.uniform(0.0, 1.5, 400), rng.uniform(1.5, 4.0, 400), rng.uniform(4.0, 10.0, 400))) * size
    v = centre + directions * radii[:, None]
    q = quaternion_from_exp_map(v[np.linalg.norm(v, axis=1) < 2 * np.pi - 0.1])
    v = exp_map_from_quaternion(q)  # the exp map the model sees (equal up to rounding)
    projected = exp_map_from_quaternion(model.project(q))
    moved = np.linalg.norm(projected - v, axis=1)
    brute = brute_force_distance(v, samples)
    outside = ~model.contains(q, tolerance=0.0)
    assert outside.sum() > 700
    assert np.all(moved[outside] <= brute[outside] + 1e-9)
    assert np.all(moved[~outside] == 0.0)
    # The samples are dense: the exact distance is not much below the sampled one either.
    assert np.all(moved[outside] >= brute[outside] - 0.02 * size)


def polytope_vertices(offsets):
    """All vertices of ``{n_j . y <= b_j}``, by brute force over every triple of planes."""
    triples = np.array(list(itertools.combinations(range(len(NORMALS)), 3)))
    matrices = NORMALS[triples]
    regular = np.abs(np.linalg.det(matrices)) > 1e-9
    vertices = np.linalg.solve(matrices[regular], offsets[triples[regular]][..., None])[..., 0]
    return vertices[np.all(vertices @ NORMALS.T <= offsets + 1e-9, axis=1)]


@pytest.mark.parametrize("shape", ["generic", "single point", "thin rod", "symmetric"])
def test_kdop_projection_is_certified_nearest_far_outside(shape):
    """``p`` is the nearest point of a convex polytope iff it is inside and
    ``(y - p) . (w - p) <= 0`` for every vertex ``w`` (the variational inequality on the hull)."""
    rng = np.random.default_rng(15)
    points = {
        "generic": rng.normal(size=(200, 3)) * (0.6, 0.3, 0.1),
        "single point": np.zeros((1, 3)),
        "thin rod": np.outer(rng.normal(size=40), (0.0, 1.0, 0.0)),
        "symmetric": np.concatenate((np.eye(3), -np.eye(3))) * 0.5,  # vertices where 4+ planes meet
    }[shape]
    along = points @ KDOP_AXES.T
    mins, maxs = along.min(axis=0) - 0.05, along.max(axis=0) + 0.05
    offsets = kdop_offsets(mins, maxs)
    size = np.max(maxs - mins)
    spread = np.repeat([0.3, 1.0, 10.0, 100.0], 500)[:, None] * size
    y = rng.normal(size=spread.shape[:1] + (3,)) * spread
    p = nearest_in_kdop(y, 0.5 * (maxs + mins), 0.5 * (maxs - mins), cached_tables(offsets))
    scale = np.maximum(1.0, np.linalg.norm(y, axis=1))
    assert np.all(np.max(p @ NORMALS.T - offsets, axis=1) <= 1e-12 * scale)
    vertices = polytope_vertices(offsets)
    certificate = np.einsum("ni,nvi->nv", y - p, vertices[None] - p[:, None]).max(axis=1)
    assert np.all(certificate <= 1e-9 * scale**2)
    inside = np.all(y @ NORMALS.T <= offsets, axis=1)
    assert np.array_equal(p[inside], y[inside])


def test_kdop_projection_is_certified_on_random_degenerate_kdops():
    """Few points, lattice points, tiny and large padding: many vertices where 4+ planes meet."""
    rng = np.random.default_rng(151)
    for trial in range(40):
        points = rng.normal(size=(rng.integers(1, 6), 3)) * rng.uniform(0.01, 1.0, 3)
        if trial % 2:
            points = np.round(points * 4.0) / 4.0
        along = points @ KDOP_AXES.T
        padding = rng.choice([1e-3, 0.05, 0.3])
        mins, maxs = along.min(axis=0) - padding, along.max(axis=0) + padding
        offsets = kdop_offsets(mins, maxs)
        y = rng.normal(size=(300, 3)) * rng.choice([0.1, 1.0, 10.0, 100.0])
        y[:60] = np.round(y[:60])
        p = nearest_in_kdop(y, 0.5 * (maxs + mins), 0.5 * (maxs - mins), cached_tables(offsets))
        scale = np.maximum(1.0, np.linalg.norm(y, axis=1))
        vertices = polytope_vertices(offsets)
        certificate = np.einsum("ni,nvi->nv", y - p, vertices[None] - p[:, None]).max(axis=1)
        assert np.all(certificate <= 1e-9 * scale**2), trial
        assert np.all(np.max(p @ NORMALS.T - offsets, axis=1) <= 1e-9 * scale), trial


def test_kdop_projection_is_the_same_in_small_batches_and_per_kdop(monkeypatch):
    """Batches (several chunks, the edge scan run once for all of them, split in pieces), one
    k-DOP per point (``which``), and rows outside by less than their rounding."""
    import limits.kdop as kdop

    rng = np.random.default_rng(152)
    shapes = [rng.normal(size=(rng.integers(1, 30), 3)) * rng.uniform(0.05, 1.0, 3) for _ in range(3)]
    along = [s @ KDOP_AXES.T for s in shapes]
    mins, maxs = np.stack([a.min(axis=0) - 0.05 for a in along]), np.stack([a.max(axis=0) + 0.05 for a in along])
    offsets = kdop_offsets(mins, maxs)
    mid, half = 0.5 * (maxs + mins), 0.5 * (maxs - mins)
    y = rng.normal(size=(3000, 3)) * rng.choice([0.1, 1.0, 10.0], size=(3000, 1))
    which = rng.integers(0, 3, size=len(y))
    # Boundary points pushed out by a unit in the last place.
    boundary = nearest_in_kdop(y[:40], mid[which[:40]], half[which[:40]], cached_tables(offsets), which[:40])
    y[:40] = np.nextafter(boundary, 2.0 * boundary)
    separate = np.empty_like(y)
    for b in range(3):
        on = which == b
        separate[on] = nearest_in_kdop(y[on], mid[b], half[b], cached_tables(offsets[b]))
    whole = nearest_in_kdop(y, mid[which], half[which], cached_tables(offsets), which)
    monkeypatch.setattr(kdop, "CHUNK_ROWS", 128)
    monkeypatch.setattr(kdop, "_SCAN_ROWS", 5)
    batched = nearest_in_kdop(y, mid[which], half[which], cached_tables(offsets), which)
    np.testing.assert_array_equal(batched, whole)
    np.testing.assert_allclose(whole, separate, atol=1e-12)
    scale = np.maximum(1.0, np.linalg.norm(y, axis=1))
    for b in range(3):
        on = which == b
        vertices = polytope_vertices(offsets[b])
        certificate = np.einsum("ni,nvi->nv", y[on] - whole[on], vertices[None] - whole[on][:, None]).max(axis=1)
        assert np.all(certificate <= 1e-9 * scale[on] ** 2)


@pytest.mark.parametrize("seed", [41, 42])
def test_kdop_twist_shape_projects_by_a_clamp_on_the_axis(seed):
    """Fitted twist k-DOPs are symmetric about the twist axis: their projection of twist
    points is a clamp on the axis, equal to the general nearest point, and exactly idempotent."""
    model = model_class("kdop").fit(cloud(seed, spread=(0.6, 0.9, 0.2)), mode="SWING_TWIST")
    twist = model._shapes()[1]
    interval = twist_axis_interval(twist)
    assert interval is not None
    centre = twist["position"][1]
    angles = np.concatenate((np.linspace(-2 * np.pi, 2 * np.pi, 2001), centre + np.array(interval)))
    points = np.zeros((len(angles), 3))
    points[:, 1] = angles
    fast = KDopLimit._project_shape(twist, points)
    mins, maxs = twist["mins"], twist["maxs"]
    local = to_local(points, twist["position"], twist["rotation"])
    nearest = nearest_in_kdop(local, 0.5 * (maxs + mins), 0.5 * (maxs - mins), cached_tables(kdop_offsets(mins, maxs)))
    general = from_local(nearest, twist["position"], twist["rotation"])
    np.testing.assert_allclose(fast, general, rtol=0, atol=1e-12)
    np.testing.assert_array_equal(KDopLimit._project_shape(twist, fast), fast)
    inside = (angles - centre >= interval[0]) & (angles - centre <= interval[1])
    np.testing.assert_array_equal(fast[inside], points[inside])
    # Not symmetric about the axis: the general projection.
    skewed = dict(twist, mins=twist["mins"] - np.eye(13)[3] * 0.01)
    assert twist_axis_interval(skewed) is None
    assert twist_axis_interval(dict(twist, position=twist["position"] + (1e-3, 0.0, 0.0))) is None


def general_kdop_projection(shape, points):
    mins, maxs = shape["mins"], shape["maxs"]
    local = to_local(points, shape["position"], shape["rotation"])
    nearest = nearest_in_kdop(local, 0.5 * (maxs + mins), 0.5 * (maxs - mins), cached_tables(kdop_offsets(mins, maxs)))
    return from_local(nearest, shape["position"], shape["rotation"])


@pytest.mark.parametrize("seed", [43, 44])
def test_kdop_swing_shape_projects_onto_its_section_polygon(seed):
    """Fitted swing k-DOPs are mirror-symmetric about the swing plane: their projection of
    swing points is the nearest point of the section polygon, equal to the general nearest
    point; inside points are unchanged and the projection is idempotent."""
    model = model_class("kdop").fit(cloud(seed, spread=(0.6, 0.9, 0.2)), mode="SWING_TWIST")
    swing = model._shapes()[0]
    polygon = swing_plane_polygon(swing)
    assert polygon is not None and polygon["length"].size >= 3
    rng = np.random.default_rng(seed)
    points = np.zeros((6000, 3))
    points[:, [0, 2]] = rng.normal(size=(6000, 2)) * np.repeat([0.2, 1.0, 3.0], 2000)[:, None]
    # On the borders between regions: along each edge's normal from its vertices.
    ends = polygon["vertex"].T[:, None, :] + np.linspace(0.0, 2.0, 20)[:, None] * polygon["normal"].T[:, None, :]
    points[: ends.size // 2, [0, 2]] = ends.reshape(-1, 2)
    fast = KDopLimit._project_shape(swing, points)
    np.testing.assert_allclose(fast, general_kdop_projection(swing, points), rtol=0, atol=1e-12)
    np.testing.assert_allclose(KDopLimit._project_shape(swing, fast), fast, rtol=0, atol=1e-14)
    inside = model._contains_shape(swing, points, -1e-12)  # (on the border, rounding may move by an ulp)
    assert inside.sum() > 100
    np.testing.assert_array_equal(fast[inside], points[inside])
    # The exhaustive edge scan (for points that rounding leaves in no region) agrees.
    x, z = points[:, 0], points[:, 2]
    t = polygon["direction"][0][:, None] * x + polygon["direction"][1][:, None] * z - polygon["start"][:, None]
    edge = _nearest_polygon_edge(t, x, z, polygon)
    tt = np.clip(t[edge, np.arange(len(x))], 0.0, polygon["length"][edge])
    scanned = polygon["vertex"][:, edge] + tt * polygon["direction"][:, edge]
    np.testing.assert_allclose(scanned.T[~inside], fast[~inside][:, [0, 2]], rtol=0, atol=1e-12)
    # Not symmetric about the plane: the general projection.
    assert swing_plane_polygon(dict(swing, maxs=swing["maxs"] + np.eye(13)[3] * 0.01)) is None
    assert swing_plane_polygon(dict(swing, position=swing["position"] + (0.0, 1e-3, 0.0))) is None


def ellipsoid_by_bisection(y, a, steps=200):
    """Reference nearest points on the ellipsoid: 200 bisection steps on the multiplier."""
    a2 = a * a
    lo = np.zeros(len(y))
    hi = np.linalg.norm(a * y, axis=1)
    for _ in range(steps):
        t = 0.5 * (lo + hi)
        f = np.sum((a * y / (t[:, None] + a2)) ** 2, axis=1) - 1.0
        lo, hi = np.where(f > 0, t, lo), np.where(f > 0, hi, t)
    t = 0.5 * (lo + hi)
    return a2 * y / (t[:, None] + a2)


@pytest.mark.parametrize("scales", [(1.5, 0.6, 0.2), (0.3, 0.3, 0.3), (1.0, 0.05, 0.001), (3.0, 0.002, 0.002)])
def test_ellipsoid_newton_is_exact_far_outside_and_on_axes(scales):
    rng = np.random.default_rng(16)
    a = np.array(scales)
    directions = rng.normal(size=(3000, 3))
    directions /= np.linalg.norm(directions, axis=1, keepdims=True)
    # Radii from just outside to 100x the largest semi-axis, plus points on each axis.
    on_surface = directions / np.linalg.norm(directions / a, axis=1, keepdims=True)
    y = on_surface * np.geomspace(1.0001, 100.0 * a.max() / np.linalg.norm(on_surface, axis=1).min(), len(directions))[:, None]
    axes = np.concatenate([np.eye(3) * a * f for f in (1.001, 2.0, 100.0)] + [-np.eye(3) * a * 50.0])
    y = np.concatenate((y, axes))
    got = nearest_on_ellipsoid(y, a)
    want = ellipsoid_by_bisection(y, a)
    scale = np.maximum(1.0, np.linalg.norm(y, axis=1))
    assert np.all(np.linalg.norm(got - want, axis=1) <= 1e-9 * scale)
    assert np.abs(np.sum((got / a) ** 2, axis=1) - 1.0).max() <= 1e-12
    # On an axis the answer is the axis' end.
    ends = nearest_on_ellipsoid(axes, a)
    np.testing.assert_allclose(ends, np.sign(axes) * a, atol=1e-12)


def test_ellipsoid_model_projects_exactly_100x_outside():
    model = model_class("ellipsoid").fit(cloud(17, spread=(0.05, 0.02, 0.01)))
    p = model.params
    local = np.concatenate((np.eye(3) * 100.0 * p["scales"], np.random.default_rng(18).normal(size=(50, 3))))
    points = from_local(local, p["position"], p["rotation"])
    got = to_local(model._project_shape(model._shapes()[0], points), p["position"], p["rotation"])
    np.testing.assert_allclose(got, ellipsoid_by_bisection(local, p["scales"]), atol=1e-9)


def test_ellipsoid_newton_rows_do_not_depend_on_their_batch():
    """The Newton iteration gathers the rows still iterating as others stop: every row's result
    must be bit for bit what it is alone (needle-like semi-axes spread the stopping steps)."""
    rng = np.random.default_rng(24)
    a = np.array([2.0, 0.05, 0.002])
    directions = rng.normal(size=(600, 3))
    y = directions * np.geomspace(0.01, 50.0, len(directions))[:, None] + (2.5, 0.0, 0.0)
    y = y[np.sum((y / a) ** 2, axis=1) > 1.0]
    batch = nearest_on_ellipsoid(y, a)
    alone = np.concatenate([nearest_on_ellipsoid(row[None], a) for row in y])
    assert np.array_equal(batch, alone)
    per_row = nearest_on_ellipsoid(y, np.broadcast_to(a, y.shape))
    assert np.array_equal(per_row, batch)
    few = nearest_on_ellipsoid(y, a, iterations=2)  # stopped early: still the same per row
    assert np.array_equal(few, np.concatenate([nearest_on_ellipsoid(row[None], a, iterations=2) for row in y]))


def test_ellipsoid_newton_bracket_orders_agree():
    """The bracket moves after each step's test when it starts ordered and finite, before it
    otherwise (a NaN row or a huge point in the batch): bit for bit the same per row, including
    points on the axes (they start at the root, where S is 1 give or take rounding) and rows
    that bisect."""
    rng = np.random.default_rng(31)
    for a in (np.array([2.0, 0.05, 0.002]), np.array([1.5, 0.6, 0.2]), np.array([0.3, 0.3, 0.3])):
        directions = rng.normal(size=(800, 3))
        y = directions * np.geomspace(0.01, 80.0, len(directions))[:, None]
        y = np.concatenate((y, np.eye(3) * a * 1.5, -np.eye(3) * a * 7.0, np.eye(3) * a * (1.0 + 1e-15)))
        y = y[np.sum((y / a) ** 2, axis=1) > 1.0]
        ordered = nearest_on_ellipsoid(y, a)
        with np.errstate(all="ignore"):  # (the odd rows' own arithmetic)
            for odd in ([np.nan, 0.0, 0.0], [1e301, 0.0, 0.0]):
                written = nearest_on_ellipsoid(np.concatenate((y, [odd])), a)
                assert np.array_equal(written[:-1], ordered)
            for iterations in (1, 2, 3):  # stopped part way: the same per row too
                few = nearest_on_ellipsoid(y, a, iterations=iterations)
                odd = nearest_on_ellipsoid(np.concatenate((y, [[np.nan] * 3])), a, iterations=iterations)
                assert np.array_equal(odd[:-1], few)
        # Per-row semi-axes and the planar / axial problems take the same steps.
        assert np.array_equal(nearest_on_ellipsoid(y, np.broadcast_to(a, y.shape)), ordered)


@pytest.mark.parametrize("mode", ["FULL", "SWING_TWIST"])
def test_ellipsoid_projection_of_more_outside_points_than_a_batch(mode):
    """More points outside than one Newton batch (CHUNK_ROWS): batched, the same rows bit for
    bit as in small pieces."""
    from limits.ellipsoid import CHUNK_ROWS

    model = model_class("ellipsoid").fit(cloud(27), mode=mode)
    q = quaternion_random(2 * CHUNK_ROWS + 1000, np.random.default_rng(28))
    for shape, points in zip(model._shapes(), model._points(q), strict=True):
        whole = model._project_shape(shape, points)
        pieces = np.concatenate([model._project_shape(shape, points[i : i + 5000]) for i in range(0, len(points), 5000)])
        assert np.array_equal(whole, pieces)
    outside = ~model.contains(q, tolerance=0.0)
    assert outside.sum() > CHUNK_ROWS


def test_ellipsoid_plane_and_axis_detection():
    """Swing points (x, 0, z) and twist points (0, y, 0) are told by their zero components:
    -0.0 is zero, NaN is not, no rows is all zeros."""
    from limits.ellipsoid import _all_zero, _used_components

    assert _all_zero(np.array([0.0, -0.0, 0.0])) and _all_zero(np.zeros(0))
    assert not _all_zero(np.array([0.0, np.nan])) and not _all_zero(np.array([0.0, -1e-300]))
    frame = np.eye(3)
    swing = np.array([[0.3, -0.0, 0.1], [0.0, 0.0, -2.0]])
    twist = np.array([[-0.0, 0.5, 0.0], [0.0, -1.0, 0.0]])
    assert _used_components(swing, np.zeros(3), frame) == [0, 2]
    assert _used_components(twist, np.array([0.0, 0.2, 0.0]), frame) == [1]
    assert _used_components(twist + (0.0, 0.0, 1e-300), np.zeros(3), frame) is None
    assert _used_components(swing, np.array([0.0, 1e-9, 0.0]), frame) is None
    turned = frame.copy()
    turned[[0, 1]] = turned[[1, 0]]
    assert _used_components(swing, np.zeros(3), turned) is None


@pytest.mark.parametrize("mode", ["FULL", "SWING_TWIST"])
def test_ellipsoid_fast_projection_equals_the_general_one(mode):
    """One ellipsoid and (n, 3) points take the by-component path (in SWING_TWIST mode on the
    swing plane's two components or the twist axis' one); points with more leading axes take
    the general one: the same results, points inside returned bit for bit."""
    model = model_class("ellipsoid").fit(cloud(25), mode=mode)
    for shape, points in zip(model._shapes(), model._points(queries(26, 3000)), strict=True):
        fast = model._project_shape(shape, points)
        general = model._project_shape(shape, points[None])[0]
        np.testing.assert_allclose(fast, general, rtol=0, atol=1e-13)
        inside = np.all(general == points, axis=1)
        assert 0 < inside.sum() < len(points)
        assert np.array_equal(fast[inside], points[inside])
        # Off the plane / axis: the three-component path, the same results.
        moved = points + (1e-3, 1e-3, 1e-3)
        np.testing.assert_allclose(
            model._project_shape(shape, moved), model._project_shape(shape, moved[None])[0], rtol=0, atol=1e-13
        )


def test_box_swing_twist_component_path_equals_the_generic_one(monkeypatch):
    """Large SWING_TWIST box projections about +Y clamp on component arrays: the generic
    pipeline's results bit for bit (rotations and moved flags), on uniform, near, tiny,
    identity, pure swing / twist, half-turn, huge and non-finite rows, in one and several
    batches."""
    from limits.box import BoxLimit
    from limits.shape_limit import ShapeLimit

    model = model_class("box").fit(cloud(31), mode="SWING_TWIST")
    rng = np.random.default_rng(32)
    tiny = np.zeros((2000, 4))
    tiny[:, 0] = 1.0
    tiny[:, 1:] = rng.normal(size=(2000, 3)) * 10.0 ** rng.uniform(-20, -5, size=(2000, 1))
    tiny[:500, 1:] = 0.0
    tiny[500:600, 0] = -1.0
    pure = quaternion_random(2000, rng)  # pure swings and twists, half turns, signed zeros
    pure[:500, 2] = 0.0
    pure[500:1000, 2] = -0.0
    pure[1000:1500, 1::2] = 0.0
    pure[1500:1800, 0] = 0.0
    pure[1800:, 0] = -0.0
    clean = np.concatenate((quaternion_random(20000, rng), tiny, pure, np.zeros((10, 4)), 1e200 * quaternion_random(50, rng)))
    clean = clean[rng.permutation(len(clean))]
    odd = clean[:3000].copy()
    odd[::30, 2] = np.nan
    odd[1::30, 0] = np.inf
    near = cloud(33, n=20000)
    queries = [clean, clean[:5000], odd, near, near[:2000].reshape(40, 50, 4)]
    with np.errstate(over="ignore", invalid="ignore"):  # the huge rows
        fast = [model._project(x) for x in queries]
        monkeypatch.setattr(BoxLimit, "_project_rows", ShapeLimit._project_rows)
        generic = [model._project(x) for x in queries]
    for (rotations, moved), (rotations_generic, moved_generic) in zip(fast, generic, strict=True):
        assert rotations.shape == rotations_generic.shape and moved.shape == moved_generic.shape
        assert np.array_equal(rotations.view(np.int64), rotations_generic.view(np.int64))
        assert np.array_equal(moved, moved_generic)
        assert 0 < moved.sum() < moved.size


# -- batching --------------------------------------------------------------------------------------
@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_stacked_models_equal_per_model_results(case):
    kind, mode = case
    models = [
        model_class(kind).fit(cloud(20 + i, centre=c, spread=s), **options(mode))
        for i, (c, s) in enumerate(
            [((0.2, 0.0, 0.1), (0.5, 0.2, 0.1)), ((-0.3, 0.4, 0.0), (0.2, 0.6, 0.3)), ((0.0, 0.0, 0.9), (0.1, 0.1, 0.4))]
        )
    ]
    stacked = LimitModel.stack(models)
    q = queries(23, 30).reshape(10, 3, 4)
    # Per-bone frames go through einsum instead of a matrix product: equal up to rounding.
    for i, model in enumerate(models):
        np.testing.assert_allclose(stacked.project(q)[:, i], model.project(q[:, i]), rtol=0, atol=1e-12)
        assert np.array_equal(stacked.contains(q)[:, i], model.contains(q[:, i]))
        np.testing.assert_allclose(stacked.violation(q)[:, i], model.violation(q[:, i]), rtol=0, atol=1e-9)
    batch = q[4]  # (3, 4): bone b's rotation in row b, like the live handler
    expected = np.stack([m.project(batch[i]) for i, m in enumerate(models)])
    np.testing.assert_allclose(stacked.project(batch), expected, rtol=0, atol=1e-12)


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_stacked_joint_limits_equal_per_limit_results(case):
    kind, mode = case
    st = {"twist_axis": (1.0, 0.0, 0.0)} if mode == "SWING_TWIST" else {}
    limits = [
        JointLimit.fit(cloud(30), kind=kind, **options(mode)),
        JointLimit.fit(cloud(31, centre=(0.5, 0.1, 0.0)), kind=kind, reference="REST", **options(mode)),
        JointLimit.fit(cloud(32, spread=(0.2, 0.2, 0.2)), kind=kind, **options(mode), **st),
    ]
    stacked = JointLimit.stack(limits)
    batch = queries(33, 30).reshape(10, 3, 4)[7]
    expected = np.stack([lim.project(batch[i]) for i, lim in enumerate(limits)])
    np.testing.assert_allclose(stacked.project(batch), expected, rtol=0, atol=1e-12)
    assert np.array_equal(stacked.contains(batch), np.array([lim.contains(batch[i]) for i, lim in enumerate(limits)]))


def test_models_with_different_settings_do_not_stack():
    with pytest.raises(ValueError, match="cannot stack"):
        LimitModel.stack([model_class("box").fit(cloud(1)), model_class("box").fit(cloud(1), mode="SWING_TWIST")])


# -- serialization ----------------------------------------------------------------------------------
def assert_same_limit(a, b):
    assert a.model.kind == b.model.kind and a.model.config == b.model.config
    assert set(a.model.params) == set(b.model.params)
    for name, value in a.model.params.items():
        assert np.array_equal(value, b.model.params[name]), name
    assert np.array_equal(a.reference, b.reference) and np.array_equal(a.centre, b.centre)
    q = queries(40, 200)
    # the parameters are equal bit for bit; the same maths on them may still differ in the last
    # bit (BLAS picks kernels by memory alignment), as two runs on one instance may
    np.testing.assert_allclose(a.project(q), b.project(q), rtol=0, atol=1e-12)


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_json_and_npz_round_trips_are_exact(case):
    kind, mode = case
    limit = JointLimit.fit(cloud(41), kind=kind, soft_radius=0.05, **options(mode))
    assert_same_limit(limit, limit_from_json(limit_to_json(limit)))
    buffer = io.BytesIO()
    save_limit_npz(buffer, limit)
    buffer.seek(0)
    assert_same_limit(limit, load_limit_npz(buffer))


def corrupted(kind, mode, change):
    data = json.loads(limit_to_json(JointLimit.fit(cloud(42), kind=kind, **options(mode))))
    change(data)
    return json.dumps(data)


def set_param(name, values, shape=None):
    def change(data):
        array = np.asarray(values, dtype=float)
        data["model"]["params"][name] = {"__array__": array.ravel().tolist(), "shape": list(shape or array.shape)}

    return change


CORRUPTIONS = [
    ("box", "FULL", set_param("mins", np.zeros(4)), "'mins' must hold 1 x 3"),
    ("box", "SWING_TWIST", set_param("maxs", np.zeros(3)), "'maxs' must hold 2 x 3"),
    ("oriented_box", "FULL", set_param("rotation", np.eye(3)[:2]), "rotation"),
    ("oriented_box", "FULL", set_param("rotation", np.diag([1.0, 1.0, -1.0])), "rotation matrix"),
    ("oriented_box", "FULL", set_param("rotation", np.eye(3) * 2.0), "rotation matrix"),
    ("ellipsoid", "FULL", set_param("scales", [1.0, 0.0, 1.0]), "positive"),
    ("ellipsoid", "FULL", set_param("position", [np.nan, 0.0, 0.0]), "NaN or infinity"),
    ("kdop", "FULL", set_param("mins", np.r_[np.full(3, -1.0), np.full(10, 5.0)]), "mins"),
    ("kdop", "FULL", lambda d: d["model"]["params"]["maxs"]["__array__"].__setitem__(0, -9.0), "no room inside|must not exceed"),
    ("box", "FULL", set_param("axis", [0.0, 0.0, 0.0]), "zero length"),
    ("box", "FULL", set_param("axis", [0.0, 1.0]), "'axis' must have shape"),
    ("box", "FULL", lambda d: d["model"]["params"].pop("maxs"), "'maxs' missing"),
    ("box", "FULL", lambda d: d["model"]["params"].update(extra={"__array__": [1.0], "shape": [1]}), "unknown parameters"),
    ("box", "FULL", lambda d: d["model"]["config"].update(mode="SIDEWAYS"), "'mode' must be one of"),
    ("box", "FULL", lambda d: d["model"]["config"].pop("mode"), "'mode' must be one of"),
    ("box", "FULL", lambda d: d["model"]["config"].update(colour="red"), "unknown config"),
    ("box", "FULL", lambda d: d["model"].update(kind="banana"), "unknown limit model 'banana'"),
    ("box", "FULL", lambda d: d.update(format="something_else"), "not a Joint Limits limit"),
    ("box", "FULL", lambda d: d.update(version=99), "unsupported Joint Limits format version 99"),
    ("box", "FULL", lambda d: d["model"]["params"]["mins"].update(__array__=[10.0, 10.0, 10.0]), "must not exceed"),
    ("euler_box", None, set_param("maxs", [1e4, 1.0, 1.0]), "1000"),
    ("euler_box", None, lambda d: d["model"]["config"].update(order="XYX"), "'order' must be one of"),
    ("euler_box", None, set_param("mins", [0.0, 0.0]), "'mins' must have shape"),
    ("euler_box", None, set_param("mins", [np.inf, 0.0, 0.0]), "NaN or infinity|not numeric"),
]


@pytest.mark.parametrize("kind, mode, change, message", CORRUPTIONS)
def test_corrupt_limits_raise_value_error_with_a_clear_message(kind, mode, change, message):
    try:
        text = corrupted(kind, mode, change)
    except ValueError as err:  # json.dumps refuses inf: the encoder side already says no
        assert "Out of range float" in str(err)
        return
    with pytest.raises(ValueError, match=message):
        limit_from_json(text)


def test_corrupt_files_raise_value_error():
    with pytest.raises(ValueError, match="invalid JSON"):
        limit_from_json("{not json")
    with pytest.raises(ValueError, match="archive"):  # numpy takes non-zip bytes for a pickle
        load_limit_npz(io.BytesIO(b"this is not a zip file"))
    buffer = io.BytesIO()
    np.savez(
        buffer,
        header=np.array(json.dumps({"format": "joint_limits", "version": 1})),
        **{"model/params/mins": np.array([object()], dtype=object)},
    )
    buffer.seek(0)
    with pytest.raises(ValueError, match="pickle"):
        load_limit_npz(buffer)
    buffer = io.BytesIO()
    np.savez(buffer, other=np.zeros(3))
    buffer.seek(0)
    with pytest.raises(ValueError, match="no 'header'"):
        load_limit_npz(buffer)


def test_bad_fit_arguments_raise_value_error():
    q = cloud(43)
    with pytest.raises(ValueError, match="mode"):
        model_class("box").fit(q, mode="SIDEWAYS")
    with pytest.raises(ValueError, match="padding"):
        model_class("kdop").fit(q, padding=-1.0)
    with pytest.raises(ValueError, match="zero length"):
        model_class("ellipsoid").fit(q, mode="SWING_TWIST", twist_axis=(0.0, 0.0, 0.0))
    with pytest.raises(ValueError, match="empty"):
        model_class("oriented_box").fit(np.zeros((0, 4)))
    with pytest.raises(ValueError, match="non-finite"):
        model_class("box").fit(np.array([[np.nan, 0.0, 0.0, 1.0]]))
    with pytest.raises(ValueError, match="Euler order"):
        model_class("euler_box").fit(q, order="XYX")
    with pytest.raises(ValueError, match="no 'SWING_TWIST' mode"):
        model_class("euler_box").fit(q, mode="SWING_TWIST")


# -- the Euler box ---------------------------------------------------------------------------------
@pytest.mark.parametrize("order", EULER_ORDERS)
@pytest.mark.parametrize("axis", [0, 1, 2])
def test_euler_box_wraps_around_pi(order, axis):
    rng = np.random.default_rng(50 + axis)
    euler = rng.normal(size=(300, 3)) * 0.1
    euler[:, axis] = np.pi + rng.uniform(-0.15, 0.15, 300)  # across +-pi
    q = quaternion_from_euler(euler, order)
    model = model_class("euler_box").fit(q, order=order, padding=0.05)
    mins, maxs = model.params["mins"], model.params["maxs"]
    assert maxs[axis] - mins[axis] < 0.45, (mins, maxs)  # 0.3 of data + 2 x 0.05 padding, not 2 pi
    assert np.all(maxs - mins < 1.0), (mins, maxs)
    assert mins[axis] < np.pi < maxs[axis] or mins[axis] < -np.pi < maxs[axis]
    assert model.contains(q).all()
    away = euler.copy()
    away[:, axis] = 0.0
    assert not model.contains(quaternion_from_euler(away, order)).any()


def test_circular_ranges_choose_the_smallest_arc():
    angles = np.array([[3.0, -0.2, 1.0], [-3.1, 0.3, 1.0], [3.1, 0.0, 1.0]])
    mins, maxs = circular_ranges(angles, 0.0)
    np.testing.assert_allclose([mins[1], maxs[1]], [-0.2, 0.3])
    np.testing.assert_allclose([mins[2], maxs[2]], [1.0, 1.0])
    assert np.isclose(maxs[0] - mins[0], 2 * np.pi - 6.1)
    assert np.isclose(np.mod(mins[0], 2 * np.pi), 3.0)
    mins, maxs = circular_ranges(np.linspace(-np.pi, np.pi, 40, endpoint=False)[:, None], 0.2)
    assert mins[0] == -np.pi and maxs[0] == np.pi  # a full turn: no limit


def test_clamp_angle_follows_blender_non_legacy_limit_rotation():
    # Outside the arc the angle goes to the circularly nearer bound (a naive clamp would give 0.2).
    assert np.isclose(clamp_angle(2.9, -1.0, 0.2), -1.0 + 2 * np.pi)  # Blender keeps the turn: angle + wrapped offset
    assert np.isclose(clamp_angle(1.0, -1.0, 0.2), 0.2)
    assert np.isclose(clamp_angle(-2.0, -1.0, 0.2), -1.0)
    assert clamp_angle(0.1, -1.0, 0.2) == 0.1
    # An arc across +-pi, given beyond pi as Blender's constraint accepts it.
    assert clamp_angle(-3.0, 2.9, 3.4) == -3.0
    assert np.isclose(np.cos(clamp_angle(0.0, 2.9, 3.4)), np.cos(3.4))
    assert np.isclose(clamp_angle(1.5, 2.9, 3.4), 2.9)
    # Full turn: free; max <= min: min (Blender's invalid case).
    assert clamp_angle(2.0, -4.0, 4.0) == 2.0
    assert clamp_angle(2.0, 0.5, 0.5) == 0.5


def test_euler_box_projection_clamps_each_angle_of_the_decomposition():
    model = model_class("euler_box")({"mins": [-1.0, -0.3, -0.2], "maxs": [0.2, 0.4, 0.3]}, {"order": "XYZ"})
    q = quaternion_from_euler([2.9, 0.0, 0.1], "XYZ")
    assert quaternion_angle(model.project(q), quaternion_from_euler([-1.0, 0.0, 0.1], "XYZ")) < 1e-7
    q = quaternion_from_euler([0.1, 0.9, -0.5], "XYZ")
    assert quaternion_angle(model.project(q), quaternion_from_euler([0.1, 0.4, -0.2], "XYZ")) < 1e-7


def reference_euler_box(q, mins, maxs, order, tolerance=1e-9):
    """The Euler box's original plain numpy maths: ``(project, moved, contains)``."""
    i, j, k = ("XYZ".index(c) for c in order)
    finite = np.all(np.isfinite(q), axis=-1)
    safe = np.where(finite[..., None], q, (1.0, 0.0, 0.0, 0.0))
    euler = euler_from_quaternion(safe, order)
    alternative = euler.copy()
    alternative[..., i] += np.pi
    alternative[..., j] = np.pi - alternative[..., j]
    alternative[..., k] += np.pi

    def in_box(e, tol):
        return np.all(angle_in_arc(e, mins, maxs, tol), axis=-1)

    allowed = in_box(euler, 0.0) | in_box(alternative, 0.0)
    limited = quaternion_toward(quaternion_from_euler(clamp_angle(euler, mins, maxs), order), safe)
    moved = finite & ~allowed
    contains = finite & (in_box(euler, tolerance) | in_box(alternative, tolerance))
    return np.where(moved[..., None], limited, q), moved, contains


def euler_box_queries(order, rng, n=6000):
    q = quaternion_random(n, rng)
    q[::5] *= rng.uniform(0.3, 3.0, (len(q[::5]), 1))  # not unit
    locked = rng.uniform(-np.pi, np.pi, (300, 3))
    locked[:, "XYZ".index(order[1])] = rng.choice([np.pi / 2, -np.pi / 2], 300)  # gimbal lock
    near_locked = locked.copy()
    near_locked[:, "XYZ".index(order[1])] *= 1.0 - 10.0 ** rng.uniform(-12, -4, 300)
    odd = [
        [np.nan, 0.0, 0.0, 1.0],
        [0.0, np.inf, 0.0, 0.0],
        [0.0, 0.0, 0.0, 0.0],
        [1e-12, 0.0, 1e-12, 0.0],
        [1e200, 0.0, 1e200, 0.0],
    ]
    return np.concatenate((q, quaternion_from_euler(locked, order), quaternion_from_euler(near_locked, order), odd))


EULER_BOXES = {
    "plain": ([-1.0, -0.3, -0.2], [0.2, 0.4, 0.3]),
    "wide": ([-2.5, -1.4, -0.5], [1.9, 1.2, 2.8]),
    "across pi": ([2.9, -0.3, -3.5], [3.5, 0.4, -2.8]),
    "full turn": ([-1.0, -4.0, -0.2], [0.2, 4.0, 0.3]),
    "all free": ([-np.pi, -np.pi, -np.pi], [np.pi, np.pi, np.pi]),
    "max == min": ([0.3, -0.3, 0.5], [0.3, 0.4, 0.5]),
    "turns away": (
        [-1.0 + 4 * np.pi, -0.3 - 2 * np.pi, -0.2 + 100 * np.pi],
        [0.2 + 4 * np.pi, 0.4 - 2 * np.pi, 0.3 + 100 * np.pi],
    ),
}


@pytest.mark.parametrize("order", EULER_ORDERS)
@pytest.mark.parametrize("box", list(EULER_BOXES))
def test_euler_box_fast_path_matches_the_plain_maths(order, box):
    rng = np.random.default_rng(EULER_ORDERS.index(order) * 10 + list(EULER_BOXES).index(box))
    mins, maxs = (np.array(v) for v in EULER_BOXES[box])
    q = euler_box_queries(order, rng)
    model = model_class("euler_box")({"mins": mins, "maxs": maxs}, {"order": order})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # numpy's norm of the 1e200 row overflows
        expected, expected_moved, expected_inside = reference_euler_box(q, mins, maxs, order)
        projected, moved = model._project(q)
        inside = model.contains(q)
    np.testing.assert_array_equal(moved, expected_moved)
    np.testing.assert_array_equal(inside, expected_inside)
    finite = np.all(np.isfinite(q), axis=-1)
    np.testing.assert_array_equal(projected[~finite], q[~finite])  # NaN rows come back as they are
    np.testing.assert_array_equal(projected[~moved], q[~moved])
    assert np.abs(projected[finite] - expected[finite]).max() <= 1e-12


@pytest.mark.parametrize("order", EULER_ORDERS)
def test_euler_box_angle_opposite_the_arc_goes_to_min_like_blender(order):
    mins, maxs = np.full(3, -1.0), np.full(3, 1.0)
    model = model_class("euler_box")({"mins": mins, "maxs": maxs}, {"order": order})
    for axis in range(3):
        euler = np.array([0.3, 0.2, -0.1])
        euler[axis] = np.pi  # as far from min as from max
        q = quaternion_from_euler(euler, order)
        expected = euler.copy()
        expected[axis] = -1.0
        assert quaternion_angle(model.project(q), quaternion_from_euler(expected, order)) < 1e-9
        np.testing.assert_allclose(model.project(q), reference_euler_box(q, mins, maxs, order)[0], atol=1e-12)


def test_euler_box_fast_path_matches_the_plain_maths_for_stacked_bones():
    rng = np.random.default_rng(77)
    boxes = [EULER_BOXES[name] for name in ("plain", "across pi", "full turn", "max == min", "wide")]
    models = [model_class("euler_box")({"mins": lo, "maxs": hi}, {"order": "YZX"}) for lo, hi in boxes]
    stacked = LimitModel.stack(models)
    mins, maxs = stacked.params["mins"], stacked.params["maxs"]
    q = euler_box_queries("YZX", rng, n=4000)[: 4000 // len(boxes) * len(boxes)].reshape(-1, len(boxes), 4)
    expected, expected_moved, expected_inside = reference_euler_box(q, mins, maxs, "YZX")
    projected, moved = stacked._project(q)
    assert projected.shape == q.shape and moved.shape == q.shape[:-1]
    np.testing.assert_array_equal(moved, expected_moved)
    np.testing.assert_array_equal(stacked.contains(q), expected_inside)
    assert np.abs(projected - expected).max() <= 1e-12
    one = stacked._project(q[0])[0]  # (B, 4): bone b's limit on row b
    np.testing.assert_array_equal(one, projected[0])
    for b, model in enumerate(models):  # agrees with each bone's own model
        np.testing.assert_array_equal(model.project(q[:, b]), projected[:, b])
    single = models[0].project(q[0, 0])  # one rotation, shape (4,)
    assert single.shape == (4,)
    np.testing.assert_array_equal(single, projected[0, 0])
    # a motion limits a few rows at a time on subset views: they share the kernel's constants
    # with the stack, also when a view is made before the stack's first query
    fresh = LimitModel.stack(models)
    view = fresh.subset(q.shape[1:-1], [1, 3])
    np.testing.assert_array_equal(view.project(q[0, [1, 3]]), projected[0, [1, 3]])
    assert fresh._arcs_cache is view._arcs_cache and len(fresh._arcs_cache) == 1


# -- softening --------------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", KINDS)
def test_softening_stays_near_the_hard_limit(kind):
    radius = 0.15
    limit = JointLimit.fit(cloud(60), kind=kind, soft_radius=radius, soft_falloff=2.0)
    q = queries(61, 1000)
    hard = limit.project(q, soften_result=False)
    soft = limit.project(q)
    assert np.all(quaternion_angle(soft, hard) <= radius + 1e-9)
    assert np.all(quaternion_angle(soft, q) <= quaternion_angle(hard, q) + 1e-9)
    inside = limit.contains(q)
    assert inside.any()
    assert np.all(quaternion_angle(soft[inside], q[inside]) <= 1e-7)
    rel = limit.to_relative(q)
    direct = soften(rel, limit.model.project(rel), radius, 2.0)
    assert quaternion_angle(limit.from_relative(direct), soft).max() <= 1e-9


def test_rounded_tables_are_stored_narrow_and_packed_and_read_back_exactly():
    import base64
    import zlib

    from limits.serialize import DTYPES
    from limits.sinus_texture import TWIST_MAX, TWIST_MIN, SinusTextureLimit

    limit = JointLimit.fit(cloud(43), kind="sdf_grid")
    data = json.loads(limit_to_json(limit))
    phi = data["model"]["params"]["phi"]
    assert phi["dtype"] == "<f4" and len(zlib.decompress(base64.b64decode(phi["__zlib__"]))) == 4 * limit.model.params["phi"].size
    assert_same_limit(limit, limit_from_json(json.dumps(data)))
    # arrays written before the dtype field are float64, those before packing plain bytes, and
    # a foreign dtype is refused
    phi64 = limit.model.params["phi"].astype("<f8")
    data["model"]["params"]["phi"] = {"__base64__": base64.b64encode(phi64.tobytes()).decode(), "shape": list(phi64.shape)}
    assert_same_limit(limit, limit_from_json(json.dumps(data)))
    data["model"]["params"]["phi"]["dtype"] = "<i8"
    with pytest.raises(ValueError, match="dtype '<i8' is not one of " + ", ".join(DTYPES)):
        limit_from_json(json.dumps(data))
    # packed data that does not fill its declared shape, or overfills it, is refused
    for shape in ([2, 64, 64], [64, 64, 63]):
        packed = dict(phi, shape=shape)
        data["model"]["params"]["phi"] = packed
        with pytest.raises(ValueError, match="bytes its shape declares"):
            limit_from_json(json.dumps(data))
    # rounding the sinus texture to float16 never narrows its twist range
    image = np.zeros((32, 16, 4))
    image[..., 0] = 1.0
    image[..., TWIST_MIN], image[..., TWIST_MAX] = -0.1 - 1e-9, 0.3 + 1e-9
    rounded = SinusTextureLimit.round_single("image", image)
    assert np.all(rounded[..., TWIST_MIN] <= image[..., TWIST_MIN]) and np.all(rounded[..., TWIST_MAX] >= image[..., TWIST_MAX])
    assert np.array_equal(rounded, rounded.astype(np.float16))
    sinus = JointLimit.fit(cloud(44), kind="sinus_texture")
    image = json.loads(limit_to_json(sinus))["model"]["params"]["image"]
    assert sinus.model.params["image"].dtype == np.float16  # in memory too
    assert image["dtype"] == "<f2" and len(image["__zlib__"]) < 0.5 * sinus.model.params["image"].nbytes


def test_kdop_interior_margin_alone_equals_the_tables_and_rejects_flat_kdops():
    """Validation computes the interior margin without the projection tables: the same value."""
    rng = np.random.default_rng(11)
    fitted = [KDopLimit.fit(quaternion_from_exp_map(rng.normal(size=(200, 3)) * s)) for s in (0.05, 0.3, 1.0)]
    offsets = np.stack([kdop_offsets(m.params["mins"], m.params["maxs"]) for m in fitted])
    flat = kdop_offsets(np.zeros(13), np.r_[np.zeros(1), np.ones(12)])  # slab 0 of width zero
    empty = kdop_offsets(np.ones(13), np.r_[np.ones(1) * -1.0, np.ones(12) * 2.0])  # no point in slab 0
    offsets = np.concatenate((offsets, flat[None], empty[None]))
    margin = interior_margin(offsets)
    np.testing.assert_array_equal(margin, cached_tables(offsets)["interior_margin"])
    assert np.all(margin[:3] > 1e-3) and np.all(margin[3:] < 1e-7)
