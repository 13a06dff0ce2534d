# SPDX-License-Identifier: GPL-3.0-or-later
"""The limit models (pure numpy, no bpy) through their common interface: the registry, and on
every model fitting, containment, exact projections, degenerate data, batching, serialization,
validation of corrupt data and softening. Each model's own maths: test_box.py, test_ellipsoid.py,
test_kdop.py, test_euler_box.py."""

import io
import json

import numpy as np
import pytest
from model_helpers import CASE_IDS, CASES, KINDS, SHAPES, cloud, no_warnings, options, queries

from limits.geometry.quaternion import (
    exp_map_from_quaternion,
    quaternion_angle,
    quaternion_from_exp_map,
    quaternion_multiply,
    quaternion_random,
)
from limits.joint import JointLimit
from limits.model import LimitModel
from limits.models.kdop import NORMALS, kdop_offsets
from limits.models.shape_limit import from_local
from limits.registry import model_class, model_from_dict, model_kinds
from limits.serialize import limit_from_json, limit_to_json, load_limit_npz, save_limit_npz
from limits.softening import soften


@pytest.fixture(scope="module")
def fitted():
    return {case: model_class(case[0]).fit(cloud(1), **options(case[1])) for case in CASES}


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
    model_from_dict(model.to_dict())  # valid data


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
    import limits.models.shape_limit as shape_limit

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
    # absurd but finite: each projected to NaN once loaded (overflowing squares)
    ("kdop", "FULL", set_param("position", [1e300, 0.0, 0.0]), "'position' is out of range"),
    ("ellipsoid", "FULL", set_param("position", [0.0, 1e300, 0.0]), "'position' is out of range"),
    ("oriented_box", "FULL", set_param("position", [0.0, 0.0, -1e300]), "'position' is out of range"),
    ("sdf_grid", None, set_param("lower", [1e300, 0.0, 0.0]), "'lower' is out of range"),
    ("sdf_grid", None, set_param("spacing", [1e300, 0.1, 0.1]), "'spacing' is out of range"),
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

    from limits.models.sinus.texture import TWIST_MAX, TWIST_MIN, SinusTextureLimit
    from limits.serialize import DTYPES

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
