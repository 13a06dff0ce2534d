# SPDX-License-Identifier: GPL-3.0-or-later
"""The reach cone (pure numpy): swing reach and twist range per direction, in a frame."""

import numpy as np

from limits.geometry.quaternion import quaternion_from_exp_map, quaternion_multiply, quaternion_random
from limits.models.reach_cone import ReachConeLimit


def swing_twist(direction_deg, swing_deg, twist_deg):
    """Rotations swung ``swing_deg`` towards ``direction_deg`` (from +X towards +Z), then twisted
    ``twist_deg`` about +Y."""
    phi, swing, twist = (np.radians(np.atleast_1d(np.asarray(v, dtype=float))) for v in (direction_deg, swing_deg, twist_deg))
    s = np.stack([np.cos(phi) * swing, np.zeros_like(phi), np.sin(phi) * swing], axis=-1)
    t = np.stack([np.zeros_like(twist), twist, np.zeros_like(twist)], axis=-1)
    return quaternion_multiply(quaternion_from_exp_map(s), quaternion_from_exp_map(t))


def test_how_far_a_joint_twists_depends_on_where_it_points():
    """Raised towards +X the samples twist one way, towards +Z the other: the cone keeps each
    direction's twists (swing and twist coupled), and its projection lands inside for good."""
    rng = np.random.default_rng(1)
    n = 400
    towards_x = swing_twist(rng.uniform(-20, 20, n), rng.uniform(15, 60, n), rng.uniform(0, 40, n))
    towards_z = swing_twist(rng.uniform(70, 110, n), rng.uniform(15, 60, n), rng.uniform(-40, 0, n))
    # (samples near neutral, whose direction means little, count for every direction: none here)
    cone = ReachConeLimit.fit(np.concatenate((towards_x, towards_z)), padding=np.radians(2.0))
    assert cone.contains(np.concatenate((towards_x, towards_z))).all()
    assert cone.contains(swing_twist(0, 50, 30))[0] and not cone.contains(swing_twist(90, 50, 30))[0]
    assert cone.contains(swing_twist(90, 50, -30))[0] and not cone.contains(swing_twist(0, 50, -30))[0]
    assert not cone.contains(swing_twist(-90, 50, 0))[0]  # no sample points there
    outside = quaternion_random(2000, rng)
    projected = cone.project(outside)
    assert cone.contains(projected).all()
    np.testing.assert_array_equal(cone.project(projected), projected)


def test_a_cone_fitted_in_a_frame_is_the_cone_of_the_turned_samples():
    rng = np.random.default_rng(2)
    cloud = quaternion_from_exp_map(rng.normal(scale=0.5, size=(300, 3)))
    left, right = quaternion_random(2, rng)
    framed = ReachConeLimit.fit(cloud, frame_left=left, frame_right=right)
    plain = ReachConeLimit.fit(quaternion_multiply(left, quaternion_multiply(cloud, right)))
    q = quaternion_random(3000, rng)
    np.testing.assert_array_equal(framed.contains(q), plain.contains(quaternion_multiply(left, quaternion_multiply(q, right))))
