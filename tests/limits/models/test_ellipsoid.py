# SPDX-License-Identifier: GPL-3.0-or-later
"""The ellipsoid limit model (pure numpy): its fit on lopsided data, and the exact nearest point
on an ellipsoid (Newton's method, its batches and fast paths)."""

import numpy as np
import pytest
from model_helpers import cloud, queries

from limits.geometry.quaternion import quaternion_from_exp_map, quaternion_random
from limits.models.ellipsoid import nearest_on_ellipsoid
from limits.models.shape_limit import from_local, to_local
from limits.registry import model_class


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
    from limits.models.ellipsoid import CHUNK_ROWS

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
    from limits.models.ellipsoid import _all_zero, _used_components

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
