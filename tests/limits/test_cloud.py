# SPDX-License-Identifier: GPL-3.0-or-later
"""limits/cloud.py: subsampling guarantees against brute force, slerp densification."""

import time

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from limits.cloud import chord_from_angle, densify_slerp, subsample_min_distance, subsample_rotations
from limits.geometry.quaternion import (
    exp_map_from_quaternion,
    quaternion_angle,
    quaternion_from_exp_map,
    quaternion_multiply,
    quaternion_random,
    quaternion_unroll,
)


def check_subsample(points, d, idx):
    """Brute-force the two guarantees: spacing >= d, every point < d from a kept one."""
    points = np.asarray(points, dtype=float)
    assert idx.dtype.kind == "i"
    assert np.all(np.diff(idx) > 0), "indices sorted and unique"
    if len(points) == 0:
        assert len(idx) == 0
        return
    kept = points[idx]
    gaps = np.linalg.norm(kept[:, None] - kept[None], axis=-1)
    np.fill_diagonal(gaps, np.inf)
    assert gaps.min() >= d, f"two kept points {gaps.min()} apart (< {d})"
    cover = np.linalg.norm(points[:, None] - kept[None], axis=-1).min(axis=1)
    assert cover.max() < d, f"a point is {cover.max()} from every kept point (>= {d})"


@pytest.mark.parametrize("dim", [1, 2, 3, 4])
@pytest.mark.parametrize("seed", range(12))
def test_subsample_guarantees_random(dim, seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 400))
    points = rng.normal(size=(n, dim)) * rng.uniform(0.05, 3.0)
    d = float(rng.uniform(0.02, 1.5))
    check_subsample(points, d, subsample_min_distance(points, d, seed=seed))


@pytest.mark.parametrize("seed", range(6))
def test_subsample_guarantees_clustered_duplicates_and_grid_aligned(seed):
    rng = np.random.default_rng(100 + seed)
    # Points on an exact lattice of spacing d (ties at distance exactly d are allowed to stay),
    # duplicates, and tight clusters.
    d = 0.25
    lattice = np.stack(np.meshgrid(*[np.arange(6) * d] * 3), -1).reshape(-1, 3)
    dup = np.repeat(rng.normal(size=(20, 3)), 5, axis=0)
    clusters = rng.normal(size=(8, 1, 3)) + rng.normal(size=(8, 30, 3)) * 0.05
    points = np.concatenate((lattice, dup, clusters.reshape(-1, 3)))[rng.permutation(len(lattice) + 100 + 240)]
    idx = subsample_min_distance(points, d, seed=seed)
    check_subsample(points, d, idx)


def test_subsample_unit_quaternions_as_4_vectors():
    rng = np.random.default_rng(7)
    q = quaternion_unroll(quaternion_from_exp_map(np.cumsum(rng.normal(size=(1500, 3)) * 0.05, axis=0)))
    for d in (0.01, 0.05, 0.3):
        check_subsample(q, d, subsample_min_distance(q, d))


def test_subsample_trajectory_matches_brute_force_count_scale():
    # A dense curve: the kept points are about d apart along it.
    t = np.linspace(0, 10, 20000)
    curve = np.stack((np.cos(t), np.sin(t), 0.1 * t), -1)
    d = 0.1
    idx = subsample_min_distance(curve, d)
    check_subsample(curve[::7], d, subsample_min_distance(curve[::7], d))
    length = np.sum(np.linalg.norm(np.diff(curve, axis=0), axis=-1))
    assert length / (2 * d) <= len(idx) <= length / d + 1


def test_subsample_edge_cases():
    assert subsample_min_distance(np.zeros((0, 3)), 0.1).shape == (0,)
    assert subsample_min_distance(np.zeros((0, 4)), 0.1).dtype.kind == "i"
    np.testing.assert_array_equal(subsample_min_distance([[1.0, 2.0, 3.0]], 0.5), [0])
    assert len(subsample_min_distance(np.ones((10, 4)), 0.5)) == 1
    np.testing.assert_array_equal(subsample_min_distance(np.ones((5, 3)), 0.0), np.arange(5))
    far = np.array([[0.0, 0, 0], [10.0, 0, 0], [0, 10.0, 0]])
    np.testing.assert_array_equal(subsample_min_distance(far, 1.0), [0, 1, 2])
    # Coordinates far from the origin and huge spreads relative to d still work.
    shifted = np.random.default_rng(0).normal(size=(500, 3)) + 1e6
    check_subsample(shifted, 0.3, subsample_min_distance(shifted, 0.3))
    spread = np.random.default_rng(1).normal(size=(300, 4)) * np.array([1e5, 1e5, 1.0, 1.0])
    check_subsample(spread, 0.5, subsample_min_distance(spread, 0.5))


def test_subsample_is_deterministic_per_seed():
    p = np.random.default_rng(3).normal(size=(2000, 3))
    np.testing.assert_array_equal(subsample_min_distance(p, 0.2, seed=5), subsample_min_distance(p, 0.2, seed=5))


def test_subsample_bad_input():
    with pytest.raises(ValueError, match=r"shape \(N, D\)"):
        subsample_min_distance(np.zeros(5), 0.1)
    with pytest.raises(ValueError, match="min_distance"):
        subsample_min_distance(np.zeros((5, 3)), -1.0)
    with pytest.raises(ValueError, match="min_distance"):
        subsample_min_distance(np.zeros((5, 3)), np.nan)
    with pytest.raises(ValueError, match="non-finite"):
        subsample_min_distance(np.array([[0.0, np.nan, 0.0]]), 0.1)
    with pytest.raises(ValueError, match="too small"):
        subsample_min_distance(np.array([[0.0, 0, 0], [1e6, 0, 0]]), 1e-12)


@settings(max_examples=60, deadline=None)
@given(
    arrays(np.float64, st.tuples(st.integers(0, 60), st.integers(1, 4)), elements=st.floats(-2, 2)),
    st.floats(0.01, 2.0),
)
def test_hypothesis_subsample(points, d):
    check_subsample(points, d, subsample_min_distance(points, d))


def test_subsample_rotations_uses_angles():
    rng = np.random.default_rng(4)
    q = quaternion_unroll(quaternion_from_exp_map(np.cumsum(rng.normal(size=(800, 3)) * 0.03, axis=0)))
    min_angle = np.radians(10)
    idx = subsample_rotations(q, min_angle)
    kept = q[idx]
    # Same cover (unrolled, slowly varying): the 4D great-circle angle is the rotation angle.
    dots = np.clip(kept @ kept.T, -1, 1)
    np.fill_diagonal(dots, -1)
    assert np.all(2 * np.arccos(dots[dots > 0]) >= min_angle - 1e-9)
    np.testing.assert_allclose(chord_from_angle(np.pi * 2), 2.0)
    with pytest.raises(ValueError, match="min_angle"):
        subsample_rotations(q, -0.1)


def test_subsample_200k_is_fast():
    rng = np.random.default_rng(0)
    points = rng.normal(size=(200_000, 3)) * 0.6
    subsample_min_distance(points[:1000], 0.05)  # warm up
    start = time.perf_counter()
    idx = subsample_min_distance(points, 0.05)
    elapsed = time.perf_counter() - start
    assert len(idx) > 1000
    assert elapsed < 2.0, f"200k points took {elapsed:.2f} s"


# -- densify_slerp -----------------------------------------------------------------------------------


def _track(rng, n, step):
    return quaternion_unroll(quaternion_from_exp_map(np.cumsum(rng.normal(size=(n, 3)) * step, axis=0)))


@pytest.mark.parametrize("max_deg", [0.5, 2.0, 10.0, 45.0])
def test_densify_max_gap_and_originals_kept(max_deg):
    rng = np.random.default_rng(int(max_deg * 10))
    q = _track(rng, 300, 0.15)
    q[::7] *= -1  # mixed covers must not matter for the angles
    max_angle = np.radians(max_deg)
    out, pos = densify_slerp(q, max_angle, return_index=True)
    gaps = quaternion_angle(out[1:], out[:-1])
    assert gaps.max() <= max_angle + 1e-7
    originals = pos == np.round(pos)
    assert originals.sum() == len(q)
    np.testing.assert_array_equal(out[originals], q)  # bit for bit, in order
    np.testing.assert_array_equal(pos[originals], np.arange(len(q)))
    assert np.all(np.diff(pos) > 0)
    # Minimal number of inserts: ceil(angle / max_angle) - 1 per segment.
    expect = np.maximum(np.ceil(quaternion_angle(q[1:], q[:-1]) / max_angle), 1).sum() + 1
    assert len(out) == expect
    np.testing.assert_allclose(np.linalg.norm(out, axis=-1), 1.0)


def test_densify_samples_lie_on_the_slerp_arc():
    a = quaternion_from_exp_map(np.array([0.0, 0.0, 0.0]))
    b = quaternion_from_exp_map(np.array([0.0, 0.0, 1.0]))
    out = densify_slerp(np.stack((a, b)), 0.1)
    assert len(out) == 11
    np.testing.assert_allclose(exp_map_from_quaternion(out)[:, 2], np.linspace(0, 1, 11), atol=1e-12)


def test_densify_segments_not_bridged_unless_asked():
    rng = np.random.default_rng(9)
    clip_a, clip_b = _track(rng, 50, 0.05), _track(rng, 40, 0.05)
    clip_b = quaternion_multiply(quaternion_from_exp_map(np.array([2.5, 0.0, 0.0])), clip_b)  # elsewhere
    q = np.concatenate((clip_a, clip_b))
    max_angle = np.radians(3)
    gap = quaternion_angle(q[49], q[50])
    assert gap > 10 * max_angle
    for segments in ([0, 50], [50], np.arange(90) == 50):
        out, pos = densify_slerp(q, max_angle, segments=segments, return_index=True)
        across = (pos > 49) & (pos < 50)
        assert not across.any()
        gaps = quaternion_angle(out[1:], out[:-1])
        assert np.sum(gaps > max_angle + 1e-7) == 1
    bridged, pos = densify_slerp(q, max_angle, segments=[50], bridge=True, return_index=True)
    assert quaternion_angle(bridged[1:], bridged[:-1]).max() <= max_angle + 1e-7
    assert ((pos > 49) & (pos < 50)).sum() == np.ceil(gap / max_angle) - 1
    np.testing.assert_array_equal(bridged, densify_slerp(q, max_angle))


def test_densify_edge_cases_and_errors():
    assert densify_slerp(np.zeros((0, 4)), 0.1).shape == (0, 4)
    one = np.array([[1.0, 0, 0, 0]])
    out, pos = densify_slerp(one, 0.1, return_index=True)
    np.testing.assert_array_equal(out, one)
    np.testing.assert_array_equal(pos, [0.0])
    still = np.tile(one, (5, 1))
    np.testing.assert_array_equal(densify_slerp(still, 0.1), still)
    # A half turn (opposite rotations, dot 0) is interpolated through the middle.
    half = np.array([[1.0, 0, 0, 0], [0.0, 0, 0, 1.0]])
    assert quaternion_angle(densify_slerp(half, 0.5)[1:], densify_slerp(half, 0.5)[:-1]).max() <= 0.5 + 1e-9
    with pytest.raises(ValueError, match="max_angle"):
        densify_slerp(one, 0.0)
    with pytest.raises(ValueError, match=r"\(N, 4\)"):
        densify_slerp(np.zeros((2, 3, 4)), 0.1)
    with pytest.raises(ValueError, match="segment start"):
        densify_slerp(still, 0.1, segments=[7])
    with pytest.raises(ValueError, match="boolean segments mask"):
        densify_slerp(still, 0.1, segments=np.zeros(3, bool))
    with pytest.raises(ValueError, match="non-finite"):
        densify_slerp(np.array([[1.0, 0, 0, 0], [np.nan, 0, 0, 0]]), 0.1)


def test_densify_100k_is_fast():
    rng = np.random.default_rng(1)
    q = _track(rng, 100_000, 0.05)
    start = time.perf_counter()
    out = densify_slerp(q, np.radians(2))
    elapsed = time.perf_counter() - start
    assert len(out) > len(q)
    assert elapsed < 1.0, f"100k rotations took {elapsed:.2f} s"


def test_subsample_random_rotations_both_covers():
    q = quaternion_random(3000, np.random.default_rng(2))
    check_subsample(q, 0.5, subsample_min_distance(q, 0.5))
