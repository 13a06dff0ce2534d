# SPDX-License-Identifier: GPL-3.0-or-later
"""The Euler box limit model (pure numpy): the wrap-around at pi, Blender's Limit Rotation
clamp, and the fast path against the plain maths."""

import warnings

import numpy as np
import pytest

from limits.constants import EULER_ORDERS
from limits.geometry.quaternion import (
    euler_from_quaternion,
    quaternion_angle,
    quaternion_from_euler,
    quaternion_random,
    quaternion_toward,
)
from limits.model import LimitModel
from limits.models.euler_box import angle_in_arc, circular_ranges, clamp_angle
from limits.registry import model_class


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
