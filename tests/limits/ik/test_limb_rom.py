# SPDX-License-Identifier: GPL-3.0-or-later
"""Mukai's limb range of motion (limits/ik/limb_rom.py), on a generated two-bone arm whose range is
known: pure numpy, no files.

The arm (frame of the shoulder's parent, rest direction +Y, pole reference +Z): the shoulder at
``ROOT``, bones of 0.30 and 0.25. The shoulder->wrist direction ``d`` has polar angle ``theta``
from +Y and azimuth ``phi = atan2(x, z)``; it is allowed when ``theta <= 75`` degrees, except a
notch ``|phi| < 40`` degrees beyond ``theta = 35`` degrees (a concave region). The elbow swivel
range is centred on ``0.8 theta cos(phi) - 0.3`` with half width ``0.35 + 0.2 theta``, the elbow
flexion ranges from ``0.15 + 0.7 theta`` to 2.3 radians: swivel and reach both depend on the
direction (the coupling per-joint limits cannot hold).
"""

import json
import time

import numpy as np
import pytest
from limb_arms import (
    LOWER,
    MAX_FLEX,
    MAX_THETA,
    NOTCH_THETA,
    POLE,
    REST,
    ROOT,
    UPPER,
    arm_poses,
    direction_allowed,
    min_flex,
    polar,
    random_directions,
    reach_of_flex,
    swivel_centre,
    swivel_half,
)

from limits.ik.limb_geometry import fibonacci_sphere, mid_position, swivel_angle, swivel_frame
from limits.ik.limb_rom import LimbRangeOfMotion, limb_from_json, limb_to_json


@pytest.fixture(scope="module")
def arm():
    mid, end, _ = arm_poses(20000, seed=1)
    return LimbRangeOfMotion.fit_joints(ROOT, mid, end, pole_reference=POLE, rest_direction=REST)


@pytest.fixture(scope="module")
def wrapped_arm():
    """The same arm with its swivel ranges turned by pi - 0.3: they straddle +-pi."""
    mid, end, swivel = arm_poses(20000, seed=2, wrap_offset=np.pi - 0.3)
    return LimbRangeOfMotion.fit(end, swivel, ROOT, pole_reference=POLE, rest_direction=REST)


# -- swivel geometry -------------------------------------------------------------------------------
def test_mid_position_and_swivel_angle_are_inverse():
    rng = np.random.default_rng(3)
    d = random_directions(2000, rng)
    d = d[d @ REST > -0.95]  # away from the convention's one singular direction, -REST
    end = ROOT + rng.uniform(0.1, UPPER + LOWER, len(d))[:, None] * d
    swivel = rng.uniform(-np.pi, np.pi, len(d))
    mid = mid_position(ROOT, end, swivel, UPPER, LOWER, POLE, REST)
    np.testing.assert_allclose(np.linalg.norm(mid - ROOT, axis=-1), UPPER, atol=1e-12)
    np.testing.assert_allclose(np.linalg.norm(end - mid, axis=-1), LOWER, atol=1e-12)
    back = swivel_angle(ROOT, mid, end, POLE, REST)
    np.testing.assert_allclose(np.angle(np.exp(1j * (back - swivel))), 0.0, atol=1e-9)


def test_swivel_convention():
    # At rest (limb along +Y) swivel 0 bends the elbow towards +Z, swivel pi/2 towards Y x Z = +X.
    end = ROOT + 0.4 * REST
    np.testing.assert_allclose(np.sign((mid_position(ROOT, end, 0.0, UPPER, LOWER, POLE, REST) - ROOT)[2]), 1.0)
    towards_x = mid_position(ROOT, end, np.pi / 2, UPPER, LOWER, POLE, REST) - ROOT
    assert towards_x[0] > 0.1 and abs(towards_x[2]) < 1e-12
    # The reference is carried by the shortest rotation: a limb swung about +X towards +Z has
    # its reference turned the same way, to -Y; it is perpendicular to the limb everywhere.
    u, v = swivel_frame(np.array([0.0, 0.0, 1.0]), POLE, REST)
    np.testing.assert_allclose(u, [0.0, -1.0, 0.0], atol=1e-12)
    d = random_directions(500, np.random.default_rng(4))
    u, v = swivel_frame(d, POLE, REST)
    np.testing.assert_allclose(np.sum(u * d, axis=-1), 0.0, atol=1e-12)
    np.testing.assert_allclose(np.cross(d, u), v, atol=1e-12)
    with pytest.raises(ValueError, match="parallel"):
        swivel_frame(d, REST, REST)


def test_fibonacci_sphere_is_even():
    s = fibonacci_sphere(400)
    np.testing.assert_allclose(np.linalg.norm(s, axis=-1), 1.0)
    nearest = np.sort(np.arccos(np.clip(s @ s.T, -1, 1)), axis=1)[:, 1]
    spacing = np.sqrt(4 * np.pi / 400)
    assert 0.7 * spacing < nearest.min() and nearest.max() < 1.3 * spacing


# -- fitting: recall and tightness -----------------------------------------------------------------
def test_fitted_examples_are_all_allowed(arm):
    mid, end, swivel = arm_poses(20000, seed=1)
    assert arm.contains(end, swivel).all()


def test_recall_on_held_back_poses(arm):
    _, end, swivel = arm_poses(5000, seed=11)
    recall = arm.contains(end, swivel).mean()
    assert recall >= 0.99, recall


def test_forbidden_directions_are_rejected(arm):
    rng = np.random.default_rng(12)
    d = random_directions(20000, rng)
    theta, phi = polar(d)
    beyond = theta > MAX_THETA + np.radians(15)  # past the cap's rim
    notch = (np.abs(phi) < np.radians(20)) & (theta > NOTCH_THETA + np.radians(15)) & (theta < MAX_THETA)
    assert beyond.sum() > 1000 and notch.sum() > 100
    assert not arm.allows_direction(d[beyond]).any()
    assert not arm.allows_direction(d[notch]).any()  # the hull follows the concave notch
    mid_reach = ROOT + 0.4 * d
    assert not arm.contains(mid_reach[beyond | notch]).any()


def test_allowed_region_is_tight_near_the_boundary(arm):
    d = random_directions(40000, np.random.default_rng(13))
    truth = direction_allowed(d)
    found = arm.allows_direction(d)
    assert found[truth].mean() > 0.995
    # The true region is 3.9 sr with a rim of 6.9 rad; allowing 0.55 sr beyond it is a band of
    # 4.6 degrees on average (the samples are 10 degrees apart). A convex hull would add the
    # notch's 0.78 sr.
    false_area = (found & ~truth).mean() * 4 * np.pi
    assert false_area < 0.55, false_area


def test_coupled_ranges_are_learned(arm):
    # Where the arm is raised the elbow must bend: a straight arm is forbidden there, a bent one allowed.
    d = np.array([np.sin(1.1), np.cos(1.1), 0.0])  # theta 63 degrees, phi 90 degrees
    assert not arm.contains(ROOT + (UPPER + LOWER) * d)
    assert arm.contains(ROOT + reach_of_flex(1.8) * d)
    low, high = arm.reach_range(d)
    assert abs(high - reach_of_flex(min_flex(d))) < 0.02 and abs(low - reach_of_flex(MAX_FLEX)) < 0.02
    # Swivel ranges follow the direction: at phi = 0 and pi their centres differ by 2 * 0.8 * theta.
    for d in (np.array([0.0, np.cos(0.5), np.sin(0.5)]), np.array([0.0, np.cos(0.5), -np.sin(0.5)])):
        low, high = arm.swivel_range(ROOT + 0.4 * d)
        centre, half = swivel_centre(d), swivel_half(d)
        assert low <= centre - half + 1e-3 and high >= centre + half - 1e-3
        assert low > centre - half - 0.25 and high < centre + half + 0.25
        assert arm.contains(ROOT + 0.4 * d, centre)
        assert not arm.contains(ROOT + 0.4 * d, centre + half + 0.4)


def test_wrapping_swivel_ranges(wrapped_arm):
    _, end, swivel = arm_poses(5000, seed=21, wrap_offset=np.pi - 0.3)
    assert (np.abs(swivel) > 3.0).mean() > 0.05  # the test data does straddle +-pi
    assert wrapped_arm.contains(end, swivel).mean() >= 0.99
    low, high = wrapped_arm.swivel_range(end)
    assert (high > np.pi).mean() > 0.3  # intervals across +-pi: max beyond pi
    assert np.all(high - low < 2 * np.pi - 0.5)  # ... and not the full circle
    opposite = (
        (swivel_centre((end - ROOT) / np.linalg.norm(end - ROOT, axis=-1, keepdims=True), np.pi - 0.3)) % (2 * np.pi)
    ) - np.pi
    assert wrapped_arm.contains(end, opposite).mean() < 0.01


# -- relocation ------------------------------------------------------------------------------------
def test_relocation_lands_inside_and_is_idempotent(arm):
    rng = np.random.default_rng(31)
    points = ROOT + rng.uniform(-0.8, 0.8, size=(20000, 3))
    moved = arm.relocate(points)
    assert arm.contains(moved).all()
    again = arm.relocate(moved)
    assert np.abs(again - moved).max() <= 1e-9
    inside = arm.contains(points)
    assert 0.01 < inside.mean() < 0.5
    assert np.array_equal(moved[inside], points[inside])  # allowed ends do not move
    assert np.all(np.linalg.norm(moved[~inside] - points[~inside], axis=-1) > 0)


def test_relocation_of_allowed_ends_is_the_identity(arm):
    _, end, _ = arm_poses(3000, seed=32)
    allowed = arm.contains(end)
    assert allowed.mean() > 0.99
    assert np.array_equal(arm.relocate(end)[allowed], end[allowed])


def test_relocation_is_near_the_nearest_allowed_end(arm):
    """Against brute force over many allowed ends: relocation is never much further."""
    rng = np.random.default_rng(33)
    candidates = arm_poses(60000, seed=34)[1]
    candidates = candidates[arm.contains(candidates)]
    points = ROOT + rng.uniform(-0.7, 0.7, size=(1500, 3))
    points = points[~arm.contains(points)]
    moved = arm.relocate(points)
    ours = np.linalg.norm(moved - points, axis=-1)
    brute = np.min(np.linalg.norm(points[:, None, :] - candidates[None, ::4, :], axis=-1), axis=1)
    assert np.all(ours <= brute + 0.03), (ours - brute).max()
    assert np.median(ours - brute) < 0.005


def test_relocated_directions_follow_the_edge(arm):
    """Just outside the region (0.3 degrees beyond its edge, found by bisection along meridians)
    directions move to the edge: by about 0.3 degrees, continuously along the path (steps of the
    path's size, not of the 1.6 degree texels a per-texel table would give)."""
    phi = np.linspace(np.radians(100), np.radians(260), 4000)

    def meridian(theta):
        return np.stack((np.sin(theta) * np.sin(phi), np.cos(theta), np.sin(theta) * np.cos(phi)), axis=-1)

    lo, hi = np.full(len(phi), np.radians(60)), np.full(len(phi), np.radians(100))
    for _ in range(40):
        mid = 0.5 * (lo + hi)
        ok = arm.allows_direction(meridian(mid))
        lo, hi = np.where(ok, mid, lo), np.where(ok, hi, mid)
    query = meridian(hi + np.radians(0.3))
    moved = arm.nearest_direction(query)
    assert arm.allows_direction(moved).all()
    angle = np.degrees(np.arccos(np.clip(np.sum(moved * query, axis=-1), -1, 1)))
    assert 0.15 < np.median(angle) <= 0.3 and np.percentile(angle, 99) < 0.8
    steps = np.linalg.norm(np.diff(moved, axis=0), axis=-1)
    path = np.linalg.norm(np.diff(query, axis=0), axis=-1)
    assert np.percentile(steps / path, 99) < 5.0
    assert steps.max() < np.radians(1.6)
    assert np.all(steps > 0)  # no plateaus


def test_unknown_directions_go_to_the_nearest_allowed_direction(arm):
    far = np.array([0.0, -1.0, 0.0])  # straight down: no data within 100 degrees
    moved = arm.nearest_direction(far)
    assert arm.allows_direction(moved)
    theta, _ = polar(moved)
    assert abs(theta - MAX_THETA) < np.radians(6)  # on the rim of the cap
    at_root = arm.relocate(ROOT)
    assert arm.contains(at_root)
    bad = arm.relocate(np.array([[np.nan, 0.0, 0.0], [0.0, np.inf, 0.0]]))
    assert np.isnan(bad[0, 0]) and np.isinf(bad[1, 1])
    assert not arm.contains(np.array([np.nan, 0.0, 0.0]))


# -- swivel clamp ----------------------------------------------------------------------------------
def test_clamp_swivel(arm):
    rng = np.random.default_rng(41)
    _, end, swivel = arm_poses(4000, seed=42)
    end = end[arm.contains(end)]
    wild = rng.uniform(-np.pi, np.pi, len(end))
    clamped = arm.clamp_swivel(end, wild)
    assert arm.contains(end, clamped).all()
    inside = arm.contains(end, wild)
    assert 0.05 < inside.mean() < 0.95
    assert np.array_equal(clamped[inside], wild[inside])
    # the clamped swivel is the nearer end of the interval
    low, high = arm.swivel_range(end)
    dist = np.minimum(np.abs(np.angle(np.exp(1j * (wild - low)))), np.abs(np.angle(np.exp(1j * (wild - high)))))
    moved = np.abs(np.angle(np.exp(1j * (clamped - wild))))
    np.testing.assert_allclose(moved[~inside], dist[~inside], atol=1e-12)


def test_limit_relocates_then_clamps_keeping_the_end(wrapped_arm):
    rng = np.random.default_rng(43)
    targets = ROOT + rng.uniform(-0.6, 0.6, size=(3000, 3))
    swivels = rng.uniform(-np.pi, np.pi, len(targets))
    end, swivel = wrapped_arm.limit(targets, swivels)
    np.testing.assert_array_equal(end, wrapped_arm.relocate(targets))
    assert wrapped_arm.contains(end, swivel).all()
    again_end, again_swivel = wrapped_arm.limit(end, swivel)
    np.testing.assert_array_equal(again_end, end)
    np.testing.assert_array_equal(again_swivel, swivel)


# -- plain data ------------------------------------------------------------------------------------
def test_json_round_trip_is_exact(wrapped_arm):
    text = limb_to_json(wrapped_arm)
    back = limb_from_json(text)
    assert back.config == wrapped_arm.config
    for name, value in wrapped_arm.params.items():
        np.testing.assert_array_equal(back.params[name], value)
    points = ROOT + np.random.default_rng(51).uniform(-0.6, 0.6, size=(2000, 3))
    np.testing.assert_array_equal(back.relocate(points), wrapped_arm.relocate(points))
    np.testing.assert_array_equal(back.swivel_range(points)[0], wrapped_arm.swivel_range(points)[0])
    assert limb_to_json(back) == text
    assert LimbRangeOfMotion.from_dict(wrapped_arm.to_dict()).config == wrapped_arm.config


def test_size_per_limb(arm):
    kept = len(arm.params["samples"])
    assert 100 < kept < 400  # empty samples are dropped
    assert arm.nbytes() < 4000
    assert len(limb_to_json(arm)) < 6000


def _broken(model, where, name, value):
    data = model.to_dict()
    if where is None:
        data[name] = value
    elif value is KeyError:
        del data[where][name]
    else:
        data[where][name] = value
    return data


@pytest.mark.parametrize(
    "where, name, value, match",
    [
        (None, "kind", "sinus_texture", "expected"),
        (None, "params", [1, 2], "mappings"),
        ("params", "coverage", KeyError, "params must be"),
        ("params", "extra", np.zeros(3), "params must be"),
        ("params", "root", np.zeros(4), "shape"),
        ("params", "root", np.array([np.nan, 0, 0]), "NaN"),
        ("params", "samples", "abc", "numeric"),
        ("params", "rest_direction", np.array([0.0, 2.0, 0.0]), "perpendicular unit"),
        ("config", "threshold", -1.0, "threshold"),
        ("config", "sample_count", 12.5, "sample_count"),
        ("config", "fill_holes", 1, "fill_holes"),
        ("config", "grid", 7, "grid"),
        ("config", "radius", float("inf"), "radius"),
        ("config", "reach_scale", KeyError, "config keys"),
    ],
)
def test_malformed_dicts_are_rejected(arm, where, name, value, match):
    with pytest.raises(ValueError, match=match):
        LimbRangeOfMotion.from_dict(_broken(arm, where, name, value))


def test_inconsistent_tables_are_rejected(arm):
    def with_params(**changes):
        data = arm.to_dict()
        data["params"].update(changes)
        return data

    p = arm.params
    cases = {
        "swivel": with_params(swivel_max=p["swivel_min"] - 0.1),
        "reach": with_params(reach_min=p["reach_max"] + 0.1),
        "increasing": with_params(samples=p["samples"][::-1].copy()),
        "integer": with_params(samples=p["samples"] + 0.5),
        "one non-zero length": with_params(coverage=p["coverage"][:-1]),
        "below sample_count": with_params(samples=p["samples"] + 400),
    }
    for match, data in cases.items():
        with pytest.raises(ValueError, match=match):
            LimbRangeOfMotion.from_dict(data)
    for text in ("not json", json.dumps([1, 2]), json.dumps({"kind": "limb_rom"}), "[" * 100 + "]" * 100):
        with pytest.raises(ValueError):
            limb_from_json(text)


def test_bad_fit_input_is_rejected():
    with pytest.raises(ValueError, match="shape"):
        LimbRangeOfMotion.fit(np.zeros((5, 2)), np.zeros(5))
    with pytest.raises(ValueError, match="swivel"):
        LimbRangeOfMotion.fit(np.ones((5, 3)), np.zeros(4))
    with pytest.raises(ValueError, match="no usable"):
        LimbRangeOfMotion.fit(np.full((5, 3), np.nan), np.zeros(5))
    with pytest.raises(ValueError, match="grid"):
        LimbRangeOfMotion.fit(np.ones((5, 3)), np.zeros(5), grid=9)


def test_queries_are_vectorized_and_fast(arm):
    points = ROOT + np.random.default_rng(61).uniform(-0.6, 0.6, size=(200000, 3))
    arm.relocate(points[:10])  # (lookup built)
    start = time.perf_counter()
    moved = arm.relocate(points)
    elapsed = time.perf_counter() - start
    assert moved.shape == points.shape
    assert elapsed < 5.0, elapsed  # about 1 M points per second on one core; generous for shared CI
    assert arm.contains(points.reshape(400, 500, 3)).shape == (400, 500)
