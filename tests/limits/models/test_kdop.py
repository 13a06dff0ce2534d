# SPDX-License-Identifier: GPL-3.0-or-later
"""The k-DOP limit model (pure numpy): the nearest point of a k-DOP, certified against its
vertices, in batches, and the fast paths of fitted swing and twist k-DOPs."""

import itertools

import numpy as np
import pytest
from model_helpers import cloud

from limits.geometry.quaternion import quaternion_from_exp_map
from limits.models.kdop import (
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
from limits.models.shape_limit import from_local, to_local
from limits.registry import model_class


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
    import limits.models.kdop as kdop

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
