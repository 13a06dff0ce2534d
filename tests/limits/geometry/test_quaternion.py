# SPDX-License-Identifier: GPL-3.0-or-later
"""limits/geometry/quaternion.py and limits/geometry/swing_twist.py against first principles (numpy only)."""

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from limits.constants import EULER_ORDERS
from limits.geometry.quaternion import (
    as_quaternions,
    as_vectors,
    axis_angle_from_quaternion,
    check_finite,
    euler_compatible,
    euler_from_matrix,
    euler_from_quaternion,
    exp_map_from_quaternion,
    matrix_from_quaternion,
    quaternion_angle,
    quaternion_conjugate,
    quaternion_from_axis_angle,
    quaternion_from_euler,
    quaternion_from_exp_map,
    quaternion_from_matrix,
    quaternion_from_zyz,
    quaternion_mean,
    quaternion_multiply,
    quaternion_normalize,
    quaternion_random,
    quaternion_relative,
    quaternion_rotate,
    quaternion_short_way,
    quaternion_toward,
    quaternion_unroll,
    slerp,
    zyz_from_quaternion,
)
from limits.geometry.swing_twist import (
    quaternion_from_swing_twist,
    swing_twist_from_quaternion,
    twist_axis_from_children,
    unit_axis,
)

N = 500


@pytest.fixture
def rng():
    return np.random.default_rng(12345)


def same_rotation(a, b, atol=1e-9):
    """Max 4D distance between ``b`` and the cover of ``a`` nearest it (0 for equal rotations)."""
    return np.max(np.abs(quaternion_toward(a, b) - b))


def axis_matrix(axis, angle):
    c, s = np.cos(angle), np.sin(angle)
    if axis == "X":
        return np.array([[1, 0, 0], [0, c, -s], [0, s, c]])
    if axis == "Y":
        return np.array([[c, 0, s], [0, 1, 0], [-s, 0, c]])
    return np.array([[c, -s, 0], [s, c, 0], [0, 0, 1]])


unit_quaternions = (
    arrays(np.float64, 4, elements=st.floats(-1, 1))
    .filter(lambda q: np.linalg.norm(q) > 0.1)
    .map(lambda q: q / np.linalg.norm(q))
)


# -- algebra ---------------------------------------------------------------------------------------


def test_multiply_matches_matrix_product(rng):
    a, b = quaternion_random(N, rng), quaternion_random(N, rng)
    np.testing.assert_allclose(
        matrix_from_quaternion(quaternion_multiply(a, b)), matrix_from_quaternion(a) @ matrix_from_quaternion(b), atol=1e-12
    )


def test_rotate_matches_matrix(rng):
    q, v = quaternion_random(N, rng), rng.normal(size=(N, 3))
    np.testing.assert_allclose(quaternion_rotate(q, v), np.einsum("nij,nj->ni", matrix_from_quaternion(q), v), atol=1e-12)


def test_conjugate_inverts_and_relative(rng):
    a, b = quaternion_random(N, rng), quaternion_random(N, rng)
    ident = quaternion_multiply(a, quaternion_conjugate(a))
    np.testing.assert_allclose(ident, np.tile([1.0, 0, 0, 0], (N, 1)), atol=1e-12)
    np.testing.assert_allclose(quaternion_multiply(a, quaternion_relative(a, b)), b, atol=1e-12)


def test_normalize_zero_is_identity():
    out = quaternion_normalize([[0.0, 0, 0, 0], [0, 2.0, 0, 0]])
    np.testing.assert_array_equal(out, [[1.0, 0, 0, 0], [0, 1.0, 0, 0]])


# -- exp map, matrices, axis-angle -------------------------------------------------------------------


def test_exp_map_round_trip_keeps_cover(rng):
    q = quaternion_random(N, rng)  # both covers
    np.testing.assert_allclose(quaternion_from_exp_map(exp_map_from_quaternion(q)), q, atol=1e-12)
    v = rng.normal(size=(N, 3))
    v *= rng.uniform(0, 2 * np.pi - 1e-3, size=(N, 1)) / np.linalg.norm(v, axis=-1, keepdims=True)
    np.testing.assert_allclose(exp_map_from_quaternion(quaternion_from_exp_map(v)), v, atol=1e-10)


def test_exp_map_small_and_zero_angles():
    v = np.array([[0.0, 0, 0], [1e-12, 0, 0], [0, -3e-9, 1e-9]])
    q = quaternion_from_exp_map(v)
    np.testing.assert_allclose(np.linalg.norm(q, axis=-1), 1.0)
    np.testing.assert_allclose(exp_map_from_quaternion(q), v, atol=1e-20)


def test_exp_map_angle_is_rotation_angle(rng):
    v = rng.normal(size=(N, 3))
    q = quaternion_from_exp_map(v)
    angle = np.linalg.norm(v, axis=-1)
    axis = v / angle[:, None]
    # Rotating a vector perpendicular to the axis turns it by the angle (mod 2 pi).
    perp = np.cross(axis, rng.normal(size=(N, 3)))
    perp /= np.linalg.norm(perp, axis=-1, keepdims=True)
    turned = quaternion_rotate(q, perp)
    cos = np.sum(turned * perp, axis=-1)
    sin = np.sum(np.cross(perp, turned) * axis, axis=-1)
    np.testing.assert_allclose(np.arctan2(sin, cos) % (2 * np.pi), angle % (2 * np.pi), atol=1e-9)


def test_matrix_round_trip(rng):
    q = quaternion_random(N, rng)
    m = matrix_from_quaternion(q)
    np.testing.assert_allclose(m @ np.swapaxes(m, -1, -2), np.broadcast_to(np.eye(3), m.shape), atol=1e-12)
    np.testing.assert_allclose(np.linalg.det(m), 1.0, atol=1e-12)
    back = quaternion_from_matrix(m)
    assert np.all(back[:, 0] >= 0)
    np.testing.assert_allclose(back, quaternion_short_way(q), atol=1e-12)


def test_matrix_round_trip_near_half_turns():
    # Shepperd's branch choice: trace near -1 (180 degree turns about each axis and diagonals).
    axes = np.array([[1.0, 0, 0], [0, 1, 0], [0, 0, 1], [1, 1, 0], [1, -1, 1], [0, 1, -1]])
    axes /= np.linalg.norm(axes, axis=-1, keepdims=True)
    for angle in (np.pi, np.pi - 1e-7, np.pi - 1e-3):
        q = quaternion_from_exp_map(axes * angle)
        assert same_rotation(quaternion_from_matrix(matrix_from_quaternion(q)), q) < 1e-9


def test_axis_angle_round_trip(rng):
    q = quaternion_short_way(quaternion_random(N, rng))
    aa = axis_angle_from_quaternion(q)
    assert np.all((aa[:, 0] >= 0) & (aa[:, 0] <= np.pi + 1e-12))
    np.testing.assert_allclose(np.linalg.norm(aa[:, 1:], axis=-1), 1.0)
    np.testing.assert_allclose(quaternion_from_axis_angle(aa), q, atol=1e-12)
    # Unnormalized axes and any angle give the same rotation as the unit axis.
    raw = np.concatenate((rng.uniform(-10, 10, (N, 1)), rng.normal(size=(N, 3)) * 3), axis=-1)
    unit = raw.copy()
    unit[:, 1:] /= np.linalg.norm(raw[:, 1:], axis=-1, keepdims=True)
    np.testing.assert_allclose(quaternion_from_axis_angle(raw), quaternion_from_axis_angle(unit), atol=1e-12)
    np.testing.assert_allclose(quaternion_from_axis_angle(raw), quaternion_from_exp_map(unit[:, 1:] * unit[:, :1]), atol=1e-12)


def test_axis_angle_identity_and_zero_axis():
    np.testing.assert_allclose(axis_angle_from_quaternion([1.0, 0, 0, 0]), [0.0, 0.0, 1.0, 0.0])
    np.testing.assert_allclose(quaternion_from_axis_angle([1.3, 0.0, 0.0, 0.0]), [1.0, 0, 0, 0])


# -- Euler angles ------------------------------------------------------------------------------------


@pytest.mark.parametrize("order", EULER_ORDERS)
def test_euler_to_quaternion_is_ordered_axis_product(order, rng):
    e = rng.uniform(-np.pi, np.pi, (50, 3))
    m = matrix_from_quaternion(quaternion_from_euler(e, order))
    for row, angles in zip(m, e, strict=True):
        expect = np.eye(3)
        for axis in order:  # first axis applied first: leftmost factor is the last axis
            expect = axis_matrix(axis, angles["XYZ".index(axis)]) @ expect
        np.testing.assert_allclose(row, expect, atol=1e-12)


@pytest.mark.parametrize("order", EULER_ORDERS)
def test_euler_round_trip(order, rng):
    q = quaternion_random(N, rng)
    e = euler_from_quaternion(q, order)
    assert np.all(np.abs(e) <= np.pi + 1e-12)
    assert same_rotation(quaternion_from_euler(e, order), q) < 1e-9
    # Angles inside the principal ranges come back unchanged (middle angle within +-pi/2).
    e0 = rng.uniform(-np.pi + 1e-3, np.pi - 1e-3, (N, 3))
    mid = "XYZ".index(order[1])
    e0[:, mid] = rng.uniform(-np.pi / 2 + 1e-3, np.pi / 2 - 1e-3, N)
    e1 = euler_from_quaternion(quaternion_from_euler(e0, order), order)
    picked = np.abs(e1).sum(-1) <= np.abs(e0).sum(-1) + 1e-9
    assert np.all(picked)
    same = np.isclose(np.abs(e1).sum(-1), np.abs(e0).sum(-1), atol=1e-9)
    np.testing.assert_allclose(e1[same], e0[same], atol=1e-9)


@pytest.mark.parametrize("order", EULER_ORDERS)
@pytest.mark.parametrize("offset", [0.0, 1e-15, 1e-12, 1e-10, 3e-9, 1e-8, 1e-6, 1e-3])
def test_euler_round_trip_near_gimbal_lock(order, offset, rng):
    e = rng.uniform(-np.pi, np.pi, (200, 3))
    mid = "XYZ".index(order[1])
    e[:, mid] = rng.choice([np.pi / 2, -np.pi / 2], 200) - np.sign(rng.normal(size=200)) * offset
    q = quaternion_from_euler(e, order)
    assert same_rotation(quaternion_from_euler(euler_from_quaternion(q, order), order), q) < 1e-7


@pytest.mark.parametrize("order", EULER_ORDERS)
def test_euler_picks_smaller_of_two_solutions(order, rng):
    q = quaternion_random(N, rng)
    e = euler_from_quaternion(q, order)
    i, j, k = ("XYZ".index(c) for c in order)
    alt = e.copy()
    alt[:, i] += np.pi
    alt[:, j] = np.pi - alt[:, j]
    alt[:, k] += np.pi
    alt = (alt + np.pi) % (2 * np.pi) - np.pi
    assert same_rotation(quaternion_from_euler(alt, order), q) < 1e-9
    assert np.all(np.abs(e).sum(-1) <= np.abs(alt).sum(-1) + 1e-9)


@pytest.mark.parametrize("order", EULER_ORDERS)
def test_euler_compatible_picks_nearest_equivalent(order, rng):
    q = quaternion_random(200, rng)
    euler = euler_from_quaternion(q, order)
    previous = rng.uniform(-3 * np.pi, 3 * np.pi, (200, 3))
    out = euler_compatible(euler, previous, order)
    assert same_rotation(quaternion_from_euler(out, order), q) < 1e-9
    i, j, k = ("XYZ".index(c) for c in order)
    alt = euler.copy()
    alt[:, i] += np.pi
    alt[:, j] = np.pi - alt[:, j]
    alt[:, k] += np.pi
    best = np.full(200, np.inf)
    turns = np.array(list(itertools.product(range(-3, 4), repeat=3))) * 2 * np.pi
    for base in (euler, alt):
        cands = base[:, None, :] + turns[None]
        best = np.minimum(best, np.sum((cands - previous[:, None]) ** 2, axis=-1).min(axis=1))
    np.testing.assert_allclose(np.sum((out - previous) ** 2, axis=-1), best, atol=1e-9)


def test_euler_compatible_follows_a_continuous_curve():
    # A rotation about Z passing +-180 degrees: decoded angles jump, compatible ones do not.
    angles = np.linspace(0, 4 * np.pi, 200)
    q = quaternion_from_euler(np.stack((0 * angles, 0 * angles, angles), -1), "XYZ")
    decoded = euler_from_quaternion(q, "XYZ")
    out = [decoded[0]]
    for e in decoded[1:]:
        out.append(euler_compatible(e, out[-1], "XYZ"))
    np.testing.assert_allclose(np.array(out)[:, 2], angles, atol=1e-9)


# -- ZYZ ---------------------------------------------------------------------------------------------


def test_zyz_round_trip_and_ranges(rng):
    q = quaternion_random(N, rng)
    z = zyz_from_quaternion(q)
    assert np.all((z[:, 0] >= 0) & (z[:, 0] < 2 * np.pi) & (z[:, 2] >= 0) & (z[:, 2] < 2 * np.pi))
    assert np.all((z[:, 1] >= 0) & (z[:, 1] <= np.pi))
    assert same_rotation(quaternion_from_zyz(z), q) < 1e-12
    # R = Rz(a) Ry(b) Rz(c)
    m = np.stack([axis_matrix("Z", a) @ axis_matrix("Y", b) @ axis_matrix("Z", c) for a, b, c in z])
    np.testing.assert_allclose(m, matrix_from_quaternion(q), atol=1e-12)


def _angle_gap(a, b):
    return np.abs((a - b + np.pi) % (2 * np.pi) - np.pi)


@pytest.mark.parametrize("edge", [0.0, 1e-12, 1e-7, -1e-7, -1e-12])
def test_zyz_angles_near_zero_and_two_pi(edge, rng):
    n = 200
    a = np.where(rng.random(n) < 0.5, edge, 2 * np.pi + edge) % (2 * np.pi)
    c = np.where(rng.random(n) < 0.5, 2 * np.pi - abs(edge), abs(edge)) % (2 * np.pi)
    b = rng.uniform(0.1, np.pi - 0.1, n)
    angles = np.stack((a, b, c), -1)
    out = zyz_from_quaternion(quaternion_from_zyz(angles))
    assert np.all((out[:, [0, 2]] >= 0) & (out[:, [0, 2]] < 2 * np.pi))
    assert np.all(_angle_gap(out, angles) < 1e-9)


@pytest.mark.parametrize("b", [0.0, 1e-13, 1e-9, np.pi, np.pi - 1e-13, np.pi - 1e-9])
def test_zyz_poles(b, rng):
    angles = np.stack((rng.uniform(0, 2 * np.pi, 100), np.full(100, b), rng.uniform(0, 2 * np.pi, 100)), -1)
    q = quaternion_from_zyz(angles)
    out = zyz_from_quaternion(q)
    assert same_rotation(quaternion_from_zyz(out), q) < 1e-9
    if b in (0.0, np.pi):
        np.testing.assert_array_equal(out[:, 2], 0.0)


# -- covers, angles, unrolling, mean -----------------------------------------------------------------


def test_angle_ignores_cover(rng):
    a, b = quaternion_random(N, rng), quaternion_random(N, rng)
    np.testing.assert_allclose(quaternion_angle(a, -a), 0.0, atol=1e-7)
    np.testing.assert_allclose(quaternion_angle(a, b), quaternion_angle(a, -b))
    np.testing.assert_allclose(quaternion_angle(a, b), quaternion_angle(b, a))
    rel = matrix_from_quaternion(quaternion_relative(a, b))
    from_trace = np.arccos(np.clip((np.trace(rel, axis1=-2, axis2=-1) - 1) / 2, -1, 1))
    np.testing.assert_allclose(quaternion_angle(a, b), from_trace, atol=1e-6)
    assert np.all(quaternion_angle(a, b) <= np.pi + 1e-12)


def test_short_way_and_toward(rng):
    q = quaternion_random(N, rng)
    s = quaternion_short_way(q)
    assert np.all(s[:, 0] >= 0)
    assert same_rotation(s, q) < 1e-15
    t = quaternion_random(N, rng)
    assert np.all(np.sum(quaternion_toward(q, t) * t, -1) >= 0)


def _noisy_track(rng, n=400, step=0.2):
    v = np.cumsum(rng.normal(size=(n, 3)) * step, axis=0)
    q = quaternion_from_exp_map(v)
    return q * np.where(rng.random(n) < 0.5, -1.0, 1.0)[:, None]  # random covers


def test_unroll_first_short_way_then_continuous(rng):
    q = _noisy_track(rng)
    out = quaternion_unroll(q)
    assert out[0, 0] >= 0
    assert np.all(np.sum(out[1:] * out[:-1], -1) >= 0)
    np.testing.assert_allclose(np.abs(np.sum(out * q, -1)), 1.0, atol=1e-12)  # same rotations
    # Once unrolled, the track passes beyond 180 degrees where the data travels there.
    long = quaternion_from_exp_map(np.linspace(0, 1.8 * np.pi, 50)[:, None] * [0.0, 0.0, 1.0])
    long[30:] *= -1
    unrolled = quaternion_unroll(long)
    np.testing.assert_allclose(exp_map_from_quaternion(unrolled)[:, 2], np.linspace(0, 1.8 * np.pi, 50), atol=1e-9)


def test_unroll_axis_and_edge_cases(rng):
    tracks = np.stack([_noisy_track(rng, 100) for _ in range(3)], axis=1)  # (time, bone, 4)
    out = quaternion_unroll(tracks, axis=0)
    for b in range(3):
        np.testing.assert_allclose(out[:, b], quaternion_unroll(tracks[:, b]))
    np.testing.assert_allclose(quaternion_unroll(np.swapaxes(tracks, 0, 1), axis=1), np.swapaxes(out, 0, 1))
    assert quaternion_unroll(np.zeros((0, 4))).shape == (0, 4)
    np.testing.assert_allclose(quaternion_unroll([[-1.0, 0, 0, 0]]), [[1.0, 0, 0, 0]])


def test_mean_ignores_sign_flips(rng):
    centre = quaternion_short_way(quaternion_random(1, rng))[0]
    noise = quaternion_from_exp_map(rng.normal(size=(300, 3)) * 0.2)
    cloud = quaternion_multiply(centre, noise)
    flipped = cloud * np.where(rng.random(300) < 0.5, -1.0, 1.0)[:, None]
    m1, m2 = quaternion_mean(cloud), quaternion_mean(flipped)
    np.testing.assert_allclose(m1, m2, atol=1e-12)
    assert m1[0] >= 0
    assert quaternion_angle(m1, centre) < 0.1
    weights = rng.random(300)
    np.testing.assert_allclose(quaternion_mean(cloud, weights), quaternion_mean(flipped, weights), atol=1e-12)


def test_slerp_endpoints_speed_and_short_arc(rng):
    a, b = quaternion_random(N, rng), quaternion_random(N, rng)
    np.testing.assert_allclose(slerp(a, b, 0.0), a, atol=1e-12)
    assert same_rotation(slerp(a, b, 1.0), b) < 1e-12
    t = rng.random(N)
    total = quaternion_angle(a, b)
    np.testing.assert_allclose(quaternion_angle(a, slerp(a, b, t)), t * total, atol=1e-6)
    np.testing.assert_allclose(quaternion_angle(slerp(a, b, t), b), (1 - t) * total, atol=1e-6)
    np.testing.assert_allclose(slerp(a, a, 0.3), a, atol=1e-12)


# -- swing-twist -------------------------------------------------------------------------------------


@pytest.mark.parametrize("axis", [(0.0, 1.0, 0.0), (1.0, 0.0, 0.0), (0.3, -0.4, 2.0)])
def test_swing_twist_recomposes_and_twist_keeps_axis(axis, rng):
    q = quaternion_random(N, rng)
    swing, twist = swing_twist_from_quaternion(q, axis)
    np.testing.assert_allclose(quaternion_from_swing_twist(swing, twist), q, atol=1e-12)
    u = unit_axis(axis)
    np.testing.assert_allclose(quaternion_rotate(twist, np.broadcast_to(u, (N, 3))), np.broadcast_to(u, (N, 3)), atol=1e-12)
    # The twist's vector part lies along the axis, the swing's is perpendicular to it.
    np.testing.assert_allclose(np.cross(twist[:, 1:], u), 0.0, atol=1e-12)
    np.testing.assert_allclose(swing[:, 1:] @ u, 0.0, atol=1e-12)
    # The swing alone puts the axis where q does.
    np.testing.assert_allclose(
        quaternion_rotate(swing, np.broadcast_to(u, (N, 3))), quaternion_rotate(q, np.broadcast_to(u, (N, 3))), atol=1e-12
    )
    # The twist keeps q's cover.
    assert np.all(np.sign(twist[:, 0]) == np.sign(q[:, 0]))


def test_swing_twist_per_sample_axes_and_degenerate(rng):
    q = quaternion_random(50, rng)
    axes = rng.normal(size=(50, 3))
    swing, twist = swing_twist_from_quaternion(q, axes)
    np.testing.assert_allclose(quaternion_multiply(swing, twist), q, atol=1e-12)
    half_turn = np.array([0.0, 1.0, 0.0, 0.0])  # 180 degrees about X: swing of +Y by 180
    swing, twist = swing_twist_from_quaternion(half_turn)
    np.testing.assert_allclose(twist, [1.0, 0, 0, 0])
    np.testing.assert_allclose(swing, half_turn)
    with pytest.raises(ValueError, match="zero length"):
        swing_twist_from_quaternion(half_turn, (0.0, 0.0, 0.0))


def test_twist_axis_from_children():
    np.testing.assert_allclose(twist_axis_from_children([[0.0, 2.0, 0.0], [0.0, 0.0, 3.0]]), np.array([0, 1, 1]) / np.sqrt(2))
    np.testing.assert_allclose(twist_axis_from_children(np.zeros((0, 3))), [0.0, 1.0, 0.0])
    np.testing.assert_allclose(twist_axis_from_children([[0.0, 0.0, 0.0]], default=(1.0, 0, 0)), [1.0, 0, 0])
    np.testing.assert_allclose(twist_axis_from_children([[0.0, 1.0, 0.0], [0.0, -1.0, 0.0]]), [0.0, 1.0, 0.0])


# -- hypothesis --------------------------------------------------------------------------------------


@settings(max_examples=200, deadline=None)
@given(unit_quaternions, st.sampled_from(EULER_ORDERS))
def test_hypothesis_euler_and_matrix_round_trips(q, order):
    assert same_rotation(quaternion_from_euler(euler_from_quaternion(q, order), order), q) < 1e-7
    assert same_rotation(quaternion_from_matrix(matrix_from_quaternion(q)), q) < 1e-9
    assert same_rotation(quaternion_from_zyz(zyz_from_quaternion(q)), q) < 1e-9
    assert same_rotation(quaternion_from_axis_angle(axis_angle_from_quaternion(q)), q) < 1e-9


@settings(max_examples=200, deadline=None)
@given(unit_quaternions, arrays(np.float64, 3, elements=st.floats(-1, 1)).filter(lambda a: np.linalg.norm(a) > 1e-3))
def test_hypothesis_swing_twist(q, axis):
    swing, twist = swing_twist_from_quaternion(q, axis)
    np.testing.assert_allclose(quaternion_multiply(swing, twist), q, atol=1e-9)
    u = axis / np.linalg.norm(axis)
    np.testing.assert_allclose(quaternion_rotate(twist, u), u, atol=1e-9)


@settings(max_examples=200, deadline=None)
@given(arrays(np.float64, (3,), elements=st.floats(-6.2, 6.2)).filter(lambda v: np.linalg.norm(v) < 2 * np.pi - 1e-6))
def test_hypothesis_exp_map(v):
    np.testing.assert_allclose(exp_map_from_quaternion(quaternion_from_exp_map(v)), v, atol=1e-9)


@settings(max_examples=100, deadline=None)
@given(arrays(np.float64, (3,), elements=st.floats(-np.pi, np.pi)), st.sampled_from(EULER_ORDERS))
def test_hypothesis_euler_to_matrix_consistent(e, order):
    m = matrix_from_quaternion(quaternion_from_euler(e, order))
    assert same_rotation(quaternion_from_euler(euler_from_matrix(m, order), order), quaternion_from_euler(e, order)) < 1e-7


# -- validation --------------------------------------------------------------------------------------


def test_bad_shapes_raise():
    with pytest.raises(ValueError, match=r"shape \(\.\.\., 4\)"):
        as_quaternions(np.zeros(3))
    with pytest.raises(ValueError, match=r"shape \(\.\.\., 4\)"):
        as_quaternions(1.0)
    with pytest.raises(ValueError, match=r"shape \(\.\.\., 3\)"):
        as_vectors(np.zeros((2, 4)))
    with pytest.raises(ValueError, match=r"\(\.\.\., 3, 3\)"):
        quaternion_from_matrix(np.eye(4))
    with pytest.raises(ValueError, match=r"shape \(\.\.\., 4\)"):
        quaternion_multiply(np.zeros(4), np.zeros(3))
    with pytest.raises(ValueError, match=r"shape \(\.\.\., 3\)"):
        quaternion_rotate(np.array([1.0, 0, 0, 0]), np.zeros(4))
    with pytest.raises(ValueError, match=r"euler must have shape"):
        quaternion_from_euler(np.zeros(4))
    with pytest.raises(ValueError, match="Euler order"):
        quaternion_from_euler(np.zeros(3), "XYX")
    with pytest.raises(ValueError, match="Euler order"):
        euler_from_quaternion([1.0, 0, 0, 0], "xyz")
    with pytest.raises(ValueError, match="zyz angles"):
        quaternion_from_zyz(np.zeros(2))
    with pytest.raises(ValueError, match="non-empty"):
        quaternion_mean(np.zeros((0, 4)))
    with pytest.raises(ValueError, match="axis_angle"):
        quaternion_from_axis_angle(np.zeros(3))
    with pytest.raises(ValueError, match="2 non-finite"):
        check_finite(np.array([[1.0, np.nan, 0, 0], [np.inf, 0, 0, 0], [1.0, 0, 0, 0]]))
