# SPDX-License-Identifier: GPL-3.0-or-later
"""limits/body/motion.py: the synthetic range-of-motion and impossible takes (numpy only)."""

import numpy as np
import pytest

from limits.body.motion import (
    ELBOW,
    HIP,
    KNEE,
    REGIONS,
    SHOULDER,
    ConeTwist,
    Ellipsoid,
    Hinge,
    bone_region,
    hip_swing_allowed,
    hip_twist_range,
    impossible_motion,
    in_range_of_motion,
    range_of_motion,
    shoulder_swing_allowed,
    shoulder_twist_range,
    swing_direction,
    swing_from_direction,
    twist_angle,
)
from limits.body.skeleton import armature_positions, armature_rotations, humanoid_skeleton, mirror_local_rotation
from limits.geometry.quaternion import (
    quaternion_angle,
    quaternion_dot,
    quaternion_from_exp_map,
    quaternion_multiply,
    quaternion_random,
    quaternion_rotate,
)

DEG = np.pi / 180


@pytest.fixture(scope="module")
def skeleton():
    return humanoid_skeleton()


@pytest.fixture(scope="module")
def take(skeleton):
    return range_of_motion(skeleton)


def left(skeleton, local, name):
    """A bone's track in left-side convention (right bones mirrored)."""
    q = local[:, skeleton.index(name)]
    return mirror_local_rotation(q) if name.endswith(".R") else q


# -- helpers -----------------------------------------------------------------------------------------


def test_swing_from_direction_is_minimal_arc():
    rng = np.random.default_rng(0)
    d = rng.normal(size=(500, 3))
    d /= np.linalg.norm(d, axis=-1, keepdims=True)
    s = swing_from_direction(d)
    np.testing.assert_allclose(swing_direction(s), d, atol=1e-12)
    np.testing.assert_allclose(s[:, 2], 0.0, atol=1e-15)  # no twist component
    np.testing.assert_allclose(twist_angle(s), 0.0, atol=1e-12)
    np.testing.assert_allclose(quaternion_angle(s, np.array([1.0, 0, 0, 0])), np.arccos(d[:, 1]), atol=1e-6)


def test_twist_angle_recovers_twist():
    rng = np.random.default_rng(1)
    d = rng.normal(size=(300, 3))
    d[:, 1] = np.abs(d[:, 1]) + 0.1  # swings below 180 degrees
    twist = rng.uniform(-np.pi + 1e-3, np.pi - 1e-3, 300)
    q = quaternion_multiply(swing_from_direction(d), np.stack((np.cos(twist / 2), 0 * twist, np.sin(twist / 2), 0 * twist), -1))
    np.testing.assert_allclose(twist_angle(q), twist, atol=1e-9)
    np.testing.assert_allclose(twist_angle(-q), twist, atol=1e-9)


# -- regions -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("region", [SHOULDER, HIP, ELBOW, KNEE, *[r for r in REGIONS.values() if isinstance(r, Ellipsoid)]])
def test_region_samples_are_inside(region):
    rng = np.random.default_rng(2)
    if isinstance(region, Ellipsoid):
        u = rng.normal(size=(2000, 3))
        u *= rng.random((2000, 1)) ** (1 / 3) / np.linalg.norm(u, axis=-1, keepdims=True)
    elif isinstance(region, Hinge):
        u = rng.random((2000, 3))
    else:
        u = np.stack((rng.uniform(-np.pi, np.pi, 2000), rng.random(2000), rng.random(2000)), -1)
    assert region.contains(region.sample(u)).all()


@pytest.mark.parametrize("region", [SHOULDER, HIP])
def test_cone_twist_sampling_reaches_its_boundary(region):
    # Pushing the radial or twist parameter a little past 1 leaves the region.
    rng = np.random.default_rng(3)
    phi = rng.uniform(-np.pi, np.pi, 500)
    inside = region.sample(np.stack((phi, np.full(500, 1.0), rng.random(500)), -1))
    outside = region.sample(np.stack((phi, np.full(500, 1.05), rng.random(500)), -1))
    over_twist = region.sample(np.stack((phi, rng.random(500) * 0.9, np.full(500, 1.1)), -1))
    under_twist = region.sample(np.stack((phi, rng.random(500) * 0.9, np.full(500, -0.1)), -1))
    assert region.contains(inside).all()
    assert not region.contains(outside).any()
    assert not region.contains(over_twist).any()
    assert not region.contains(under_twist).any()


@pytest.mark.parametrize(("region", "front_deg", "back_deg"), [(SHOULDER, 140, 45), (HIP, 120, 25)])
def test_swing_region_wider_forward_and_non_convex(region, front_deg, back_deg):
    np.testing.assert_allclose(region.theta_max(0.0) / DEG, front_deg, atol=1.0)
    np.testing.assert_allclose(region.theta_max(np.pi) / DEG, back_deg, atol=1.0)
    phi = np.linspace(-np.pi, np.pi, 3601)
    theta = region.theta_max(phi)
    assert theta.min() > 5 * DEG and theta.max() < np.pi - 0.1
    # The notch is a dent: a local minimum of the limit within one notch width.
    near = np.abs((phi - region.notch_at + np.pi) % (2 * np.pi) - np.pi) < region.notch_width
    dents = (theta < np.roll(theta, 1)) & (theta < np.roll(theta, -1))
    assert np.any(dents & near)
    # Non-convex: many pairs of allowed directions have a geodesic midpoint outside.
    rng = np.random.default_rng(4)
    phi = rng.uniform(-np.pi, np.pi, 3000)
    d = region.direction(region.theta_max(phi) * rng.uniform(0.9, 1.0, 3000), phi)
    i, j = rng.integers(0, 3000, (2, 50000))
    mid = d[i] + d[j]
    keep = np.linalg.norm(mid, axis=-1) > 0.2
    mid = mid[keep] / np.linalg.norm(mid[keep], axis=-1, keepdims=True)
    assert np.mean(~region.swing_allowed(mid)) > 0.02


def test_twist_range_depends_on_swing():
    down, horizontal, up = np.array([1.0, 0, 0]), np.array([0.0, 1, 0]), np.array([-1.0, 0, 0])
    widths = [np.subtract(*shoulder_twist_range(d)[::-1]) for d in (down, horizontal, up)]
    assert widths[0] > widths[1] > widths[2], "shoulder twist narrows as the arm rises"
    assert shoulder_swing_allowed(up) and shoulder_swing_allowed(down) and shoulder_swing_allowed(horizontal)
    backward = np.array([0.0, 0.3, -1.0]) / np.linalg.norm([0.0, 0.3, -1.0])
    assert not shoulder_swing_allowed(backward)
    standing, flexed = np.array([0.0, 1, 0]), HIP.direction(90 * DEG, 0.0)
    assert hip_swing_allowed(standing) and hip_swing_allowed(flexed)
    assert np.subtract(*hip_twist_range(flexed)[::-1]) > np.subtract(*hip_twist_range(standing)[::-1])
    assert not hip_swing_allowed(HIP.direction(60 * DEG, np.pi))  # 60 degrees of extension


def test_hinge_is_a_hinge():
    assert ELBOW.contains(ELBOW.sample(np.array([[1.0, 0.5, 0.5]])))[0]
    np.testing.assert_allclose(ELBOW.angles(ELBOW.sample(np.array([1.0, 0.5, 0.5])))[0], 145 * DEG)
    assert not ELBOW.contains(quaternion_from_exp_map(np.array([-0.2, 0.0, 0.0])))  # hyper-extension
    assert not ELBOW.contains(quaternion_from_exp_map(np.array([1.0, 0.0, 0.3])))  # sideways
    assert not KNEE.contains(quaternion_from_exp_map(np.array([0.5, 0.4, 0.0])))  # twisted


def test_bone_region_lookup(skeleton):
    assert bone_region("upper_arm.L") == (SHOULDER, False)
    assert bone_region("upper_arm.R") == (SHOULDER, True)
    assert bone_region("mixamorig:RightUpLeg") == (HIP, True)
    assert bone_region("spine") == (REGIONS["spine"], False)
    assert isinstance(bone_region("tail")[0], Ellipsoid)
    for name in skeleton.names:
        region, _ = bone_region(name)
        assert isinstance(region, Ellipsoid | Hinge | ConeTwist)


# -- range of motion ---------------------------------------------------------------------------------


def test_range_of_motion_shape_and_units(skeleton, take):
    assert take.shape == (600, len(skeleton), 4)
    np.testing.assert_allclose(np.linalg.norm(take, axis=-1), 1.0, atol=1e-12)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_range_of_motion_stays_in_its_regions(skeleton, seed):
    local = range_of_motion(skeleton, seed=seed)
    assert in_range_of_motion(skeleton, local).all()


def test_range_of_motion_is_smooth(skeleton, take):
    steps = quaternion_angle(take[1:], take[:-1])
    assert steps.max() < 8 * DEG, f"largest step {steps.max() / DEG:.1f} degrees"
    assert np.median(steps) < 2 * DEG
    assert np.all(quaternion_dot(take[1:], take[:-1]) > 0), "continuous cover"
    # Second differences are small too: no kinks beyond a few degrees per frame.
    accel = np.linalg.norm(take[2:] - 2 * take[1:-1] + take[:-2], axis=-1)
    assert accel.max() < 0.03


def test_range_of_motion_sweeps_the_ranges(skeleton, take):
    # Shoulders and hips reach their swing limit in every 30-degree azimuth sector ...
    for name, region in (("upper_arm.L", SHOULDER), ("upper_arm.R", SHOULDER), ("thigh.L", HIP), ("thigh.R", HIP)):
        q = left(skeleton, take, name)
        theta, phi = region.polar(swing_direction(q))
        reach = theta / region.theta_max(phi)
        sector = ((phi + np.pi) // (np.pi / 6)).astype(int) % 12
        for k in range(12):
            assert reach[sector == k].max() > 0.97, f"{name} sector {k}"
        # ... and both ends of their (swing-dependent) twist range.
        lo, hi = region.twist_range(swing_direction(q))
        frac = (twist_angle(q) - lo) / (hi - lo)
        assert frac.min() < 0.05 and frac.max() > 0.95
        # ... and come near the rest direction as well.
        assert theta.min() < 0.35 * region.theta_max(phi[np.argmin(theta)])
    # Hinges go from straight to nearly fully bent.
    for name, region in (("forearm.L", ELBOW), ("forearm.R", ELBOW), ("shin.L", KNEE), ("shin.R", KNEE)):
        flex, _, _ = region.angles(left(skeleton, take, name))
        assert flex.min() < 5 * DEG and flex.max() > region.flex[1] - 20 * DEG
    # Ellipsoid joints reach their boundary and their centre region.
    for name in ("spine", "chest", "neck", "head", "shoulder.L", "hand.R", "foot.L", "toe.R"):
        region, _ = bone_region(name)
        level = region.level(left(skeleton, take, name))
        assert level.max() > 0.99 and level.min() < 0.5, name


def test_range_of_motion_is_left_right_symmetric_in_distribution(skeleton, take):
    for name in ("upper_arm", "thigh", "forearm"):
        lt, rt = left(skeleton, take, f"{name}.L"), left(skeleton, take, f"{name}.R")
        assert not np.allclose(lt, rt), "sides move independently"
        region, _ = bone_region(f"{name}.L")
        assert region.contains(rt).all()


def test_range_of_motion_other_lengths_and_seeds(skeleton):
    short = range_of_motion(skeleton, frames=120, seed=4)
    assert short.shape == (120, len(skeleton), 4)
    assert in_range_of_motion(skeleton, short).all()
    np.testing.assert_array_equal(range_of_motion(skeleton, frames=50, seed=9), range_of_motion(skeleton, frames=50, seed=9))
    assert not np.allclose(range_of_motion(skeleton, frames=50, seed=9), range_of_motion(skeleton, frames=50, seed=10))


def test_range_of_motion_poses_are_plausible(skeleton, take):
    # Elbows and knees bend one way only, seen in armature space: the distal bone leans toward
    # the proximal bone's local +Z (forward for the arm, backward for the thigh), never more
    # than the hinge wobble the other way.
    heads, tails = armature_positions(skeleton, take)
    pose = armature_rotations(skeleton, take)
    for side in ("L", "R"):
        for upper, lower in (("upper_arm", "forearm"), ("thigh", "shin")):
            u, lo = skeleton.index(f"{upper}.{side}"), skeleton.index(f"{lower}.{side}")
            direction = tails[:, lo] - heads[:, lo]
            direction /= np.linalg.norm(direction, axis=-1, keepdims=True)
            z_axis = quaternion_rotate(pose[:, u], np.broadcast_to([0.0, 0.0, 1.0], direction.shape))
            lean = np.sum(direction * z_axis, axis=-1)
            assert lean.min() > -np.sin(5 * DEG), f"{lower}.{side} bends the wrong way"
            assert lean.max() > 0.8


# -- impossible motion -------------------------------------------------------------------------------


def test_impossible_motion_is_outside_everywhere(skeleton):
    local = impossible_motion(skeleton)
    assert local.shape == (120, len(skeleton), 4)
    assert not in_range_of_motion(skeleton, local, tol=1e-3).any()


def test_impossible_motion_is_far_outside(skeleton):
    local = impossible_motion(skeleton)
    for side in ("L", "R"):
        flex, _, _ = KNEE.angles(left(skeleton, local, f"shin.{side}"))
        assert flex.max() < -30 * DEG, "knees bent backward"
        flex, _, _ = ELBOW.angles(left(skeleton, local, f"forearm.{side}"))
        assert flex.max() < -25 * DEG, "elbows hyper-extended"
        twist = twist_angle(left(skeleton, local, f"upper_arm.{side}"))
        assert np.all(np.abs(twist) > 135 * DEG), "shoulders twisted about 150 degrees"
    head = quaternion_angle(local[:, skeleton.index("head")], np.array([1.0, 0, 0, 0]))
    assert head.min() > 160 * DEG
    for name in skeleton.names:
        region, mirrored = bone_region(name)
        q = local[:, skeleton.index(name)]
        if isinstance(region, Ellipsoid):
            assert region.level(mirror_local_rotation(q) if mirrored else q).min() > 1.5, name


def test_impossible_motion_is_smooth(skeleton):
    local = impossible_motion(skeleton, frames=240, seed=3)
    assert quaternion_angle(local[1:], local[:-1]).max() < 3 * DEG
    assert np.all(quaternion_dot(local[1:], local[:-1]) > 0)


def test_random_rotations_are_mostly_outside(skeleton):
    rng = np.random.default_rng(5)
    q = quaternion_random(2000 * len(skeleton), rng).reshape(2000, len(skeleton), 4)
    assert in_range_of_motion(skeleton, q).mean() < 0.2


def test_regions_treat_covers_alike(skeleton, take):
    assert in_range_of_motion(skeleton, -take).all()
    assert not in_range_of_motion(skeleton, -impossible_motion(skeleton)).any()
