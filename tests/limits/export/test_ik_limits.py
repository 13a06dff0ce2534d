# SPDX-License-Identifier: GPL-3.0-or-later
"""Blender's IK limits as the Standard solver reads them (limits/export/ik_limits.py), pure numpy."""

import math

import numpy as np
import pytest

from limits.constants import MIN_PADDING
from limits.export import ik_limits as ik
from limits.geometry import quaternion as q_lib
from limits.joint import JointLimit

DEG = math.pi / 180.0


def _about(axis, angles):
    """Rotations ``(N, 4)`` by ``angles (N,)`` about the unit ``axis`` (3,)."""
    return q_lib.quaternion_from_exp_map(np.outer(np.asarray(angles, dtype=float), axis))


def _swing_twist(x, z, twist):
    """Rotations ``swing * twist``: the swing about the horizontal axis whose quaternion has
    the components ``(sin(x / 2), sin(z / 2))`` (Blender's IK X and Z angles), then the twist."""
    sx, sz = np.sin(0.5 * np.asarray(x)), np.sin(0.5 * np.asarray(z))
    swing = np.stack((np.sqrt(1.0 - sx**2 - sz**2), sx, np.zeros_like(sx), sz), axis=-1)
    return q_lib.quaternion_multiply(swing, _about([0.0, 1.0, 0.0], twist))


def _blender_angles(q):
    """Blender's IK_Math.h on the rotation matrix (SphericalRangeParameters, ComputeTwist),
    written independently of the module: (x, twist, z) angles."""
    m = q_lib.matrix_from_quaternion(q)
    tau = 2.0 * np.arctan2(m[..., 0, 2] - m[..., 2, 0], m[..., 0, 0] + m[..., 1, 1] + m[..., 2, 2] + 1.0)
    num = 1.0 / np.sqrt(2.0 * (1.0 + m[..., 1, 1]))
    ax, az = -m[..., 2, 1] * num, m[..., 0, 1] * num
    return np.stack((2.0 * np.arcsin(-ax), tau, 2.0 * np.arcsin(-az)), axis=-1)


def test_angles_are_blenders_swing_twist_parameters_for_either_cover():
    rots = q_lib.quaternion_random(2000, np.random.default_rng(3))
    expected = _blender_angles(rots)
    np.testing.assert_allclose(ik.ik_angles_from_quaternion(rots), expected, atol=1e-9)
    np.testing.assert_allclose(ik.ik_angles_from_quaternion(-rots), expected, atol=1e-9)


@pytest.mark.parametrize("column, axis", [(0, [1.0, 0, 0]), (1, [0, 1.0, 0]), (2, [0, 0, 1.0])])
def test_a_rotation_about_one_axis_is_that_axis_angle(column, axis):
    angles = np.linspace(-3.0, 3.0, 13)
    out = ik.ik_angles_from_quaternion(_about(axis, angles))
    np.testing.assert_allclose(out[:, column], angles, atol=1e-12)
    np.testing.assert_allclose(np.delete(out, column, axis=1), 0.0, atol=1e-12)


def test_swing_limits_are_a_quarter_ellipse_per_quadrant_not_a_box():
    limits = ik.IkLimits([-40 * DEG, -10 * DEG, -20 * DEG], [30 * DEG, 10 * DEG, 50 * DEG], [False] * 3)
    # on each axis alone the bounds are the angles
    assert limits.contains(_swing_twist([29.9 * DEG, -39.9 * DEG, 0, 0], [0, 0, 49.9 * DEG, -19.9 * DEG], [0, 0, 0, 0])).all()
    assert not limits.contains(_swing_twist([30.1 * DEG, -40.1 * DEG, 0, 0], [0, 0, 50.1 * DEG, -20.1 * DEG], [0, 0, 0, 0])).any()
    # both at their bound: inside a box, outside the ellipse Blender clamps to
    assert not limits.contains(_swing_twist([29 * DEG], [49 * DEG], [0.0])).any()
    # on the ellipse of the (+x, +z) quadrant, just inside and just outside
    t = np.linspace(0.05, 1.5, 9)
    a, b = math.sin(15 * DEG), math.sin(25 * DEG)
    for scale, expected in ((0.999, True), (1.001, False)):
        x, z = 2 * np.arcsin(scale * a * np.cos(t)), 2 * np.arcsin(scale * b * np.sin(t))
        assert (limits.contains(_swing_twist(x, z, np.zeros_like(t))) == expected).all()
    assert not limits.contains(_swing_twist([0.0], [0.0], [10.1 * DEG])).any()


def test_fit_holds_every_sample_of_a_box_like_cloud_with_a_grown_ellipse():
    rng = np.random.default_rng(0)
    n = 3000
    x, z, twist = rng.uniform(-0.3, 0.5, n), rng.uniform(-0.2, 0.2, n), rng.uniform(-0.1, 0.4, n)
    cloud = _swing_twist(x, z, twist)
    limits = ik.IkLimits.fit(cloud, padding=0.0)
    assert limits.contains(cloud, 1e-9).all()
    np.testing.assert_allclose(limits.mins[1], twist.min() - MIN_PADDING, atol=1e-9)  # padding 0 is MIN_PADDING
    np.testing.assert_allclose(limits.maxs[1], twist.max() + MIN_PADDING, atol=1e-9)
    # the corners of the rectangle need the X and Z bounds beyond the samples' extremes
    assert limits.maxs[0] > x.max() + 0.05 and limits.maxs[2] > z.max() + 0.05
    assert not limits.locked.any()
    fidelity = ik.ik_fidelity(limits, cloud, JointLimit.fit(cloud, kind="kdop"))
    assert fidelity.sample_share == 1.0
    assert fidelity.limit_volume > 0 and 0.3 < fidelity.volume_ratio < 3.0


def test_fit_pads_each_bound():
    cloud = _swing_twist(np.array([-0.2, 0.3]), np.array([0.1, -0.1]), np.array([0.05, -0.02]))
    bare, padded = ik.IkLimits.fit(cloud, padding=0.1), ik.IkLimits.fit(cloud, padding=0.2)
    np.testing.assert_allclose(padded.maxs - bare.maxs, 0.1, atol=1e-12)
    np.testing.assert_allclose(bare.mins - padded.mins, 0.1, atol=1e-12)


def test_a_range_away_from_rest_is_widened_to_hold_it_and_said_so():
    cloud = _swing_twist(np.radians([10.0, 25.0, 40.0]), np.zeros(3), np.radians([-30.0, -20.0, -5.0]))
    limits = ik.IkLimits.fit(cloud, padding=0.02)
    assert limits.mins[0] == pytest.approx(-0.02) and limits.maxs[0] == pytest.approx(40 * DEG + 0.02)
    assert limits.maxs[1] == pytest.approx(0.02) and limits.mins[1] == pytest.approx(-30 * DEG - 0.02)
    assert set(limits.widened()) == {"X", "Y"}
    assert limits.widened()["X"] == pytest.approx((10 * DEG, 40 * DEG))
    summary = ik.ik_fidelity(limits, cloud).summary()
    assert "X: samples 10..40 deg, widened to hold the rest pose" in summary
    assert "Y: samples -30..-5 deg" in summary


def test_an_axis_the_samples_never_turn_is_locked():
    hinge = _about([1.0, 0.0, 0.0], np.linspace(-0.2, 1.4, 50)).astype(np.float32).astype(float)
    limits = ik.IkLimits.fit(hinge, padding=0.05)
    assert limits.locked.tolist() == [False, True, True]
    assert "locked: Y, Z (no volume)" in ik.ik_fidelity(limits, hinge).summary()
    mins, maxs = limits.bounds()
    assert mins[1:].tolist() == [0.0, 0.0] and maxs[1:].tolist() == [0.0, 0.0]
    assert ik.ik_fidelity(limits, hinge).sample_share == 1.0
    assert not limits.contains(_about([0.0, 0.0, 1.0], [0.01])).any()


def test_sample_share_counts_the_samples_left_out():
    cloud = _swing_twist(np.linspace(-0.5, 0.5, 100), np.zeros(100), np.zeros(100))
    narrow = ik.IkLimits([-0.25, 0.0, 0.0], [0.25, 0.0, 0.0], [False] * 3)
    assert ik.ik_fidelity(narrow, cloud).sample_share == pytest.approx(0.5, abs=0.02)


def test_volume_of_a_curved_cloud_is_larger_than_its_learned_limit():
    """A swing along a 120 degree arc: the learned k-DOP follows the arc, the IK ellipse must
    hold its ends and so takes in the hollow inside."""
    t = np.linspace(-1.05, 1.05, 400)
    swing_axis = np.stack((np.cos(t), np.zeros_like(t), np.sin(t)), axis=-1)
    cloud = q_lib.quaternion_multiply(
        q_lib.quaternion_from_exp_map(0.7 * swing_axis), _about([0.0, 1.0, 0.0], 0.2 * np.sin(9 * t))
    )
    limits = ik.IkLimits.fit(cloud, padding=0.05)
    fidelity = ik.ik_fidelity(limits, cloud, JointLimit.fit(cloud, kind="kdop"))
    assert fidelity.sample_share == 1.0
    assert fidelity.volume_ratio > 1.5


def test_volume_is_the_share_of_uniformly_random_rotations():
    """The ball-sampled estimate agrees with plain uniform sampling (here a limit wide enough
    for plain sampling to be precise: +-0.2 points at 3 sigma with 2 million draws)."""
    limits = ik.IkLimits([-1.2, -1.0, -0.9], [1.0, 1.2, 1.1], [False] * 3)
    wide = ik.ik_fidelity(limits, _about([1.0, 0.0, 0.0], [0.9]), count=200_000)
    plain = np.mean(limits.contains(q_lib.quaternion_random(2_000_000, np.random.default_rng(7))))
    assert wide.box_volume == pytest.approx(plain, abs=0.003)
    assert wide.limit_volume is None and wide.volume_ratio is None
    assert ik.rotation_ball_share(np.pi) == pytest.approx(1.0)


def test_the_ball_grows_until_it_holds_the_learned_limit():
    """Samples near rest, a learned limit reaching far beyond them: the estimate must not cut
    the learned limit at the first ball."""

    class Everything:
        def contains(self, q):
            return np.ones(len(q), dtype=bool)

    cloud = _about([1.0, 0.0, 0.0], [0.01, 0.02])
    fidelity = ik.ik_fidelity(ik.IkLimits.fit(cloud), cloud, Everything(), count=20_000)
    assert fidelity.limit_volume == pytest.approx(1.0)


def test_volume_estimate_is_repeatable():
    cloud = _swing_twist(np.array([0.3, -0.2]), np.array([0.1, 0.2]), np.array([0.1, -0.1]))
    limits = ik.IkLimits.fit(cloud)
    assert ik.ik_fidelity(limits, cloud).box_volume == ik.ik_fidelity(limits, cloud).box_volume


def test_bad_limits_and_clouds_are_refused():
    with pytest.raises(ValueError, match="min <= 0 <= max"):
        ik.IkLimits([0.1, 0.0, 0.0], [0.2, 0.0, 0.0], [False] * 3)
    with pytest.raises(ValueError, match=r"shape \(3,\)"):
        ik.IkLimits([0.0, 0.0], [0.0, 0.0], [False] * 2)
    with pytest.raises(ValueError, match="empty"):
        ik.IkLimits.fit(np.zeros((0, 4)))
    with pytest.raises(ValueError):
        ik.IkLimits.fit(np.array([[np.nan, 0.0, 0.0, 0.0]]))
