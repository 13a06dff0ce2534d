# SPDX-License-Identifier: GPL-3.0-or-later
"""Sculpted SDF maths (numpy only): grid -> mesh -> grid round trips, mesh checks."""

import numpy as np
import pytest

from limits.geometry.quaternion import quaternion_from_exp_map
from limits.models.sdf.grid import SdfGridLimit
from limits.models.sdf.sculpt import (
    check_closed_manifold,
    closest_points_on_triangles,
    mesh_from_sdf,
    sdf_from_mesh,
    signed_volume,
)


def _grid(n, half=1.0):
    lower = np.full(3, -half)
    spacing = np.full(3, 2.0 * half / (n - 1))
    axis = lower[0] + spacing[0] * np.arange(n)
    return lower, spacing, np.stack(np.meshgrid(axis, axis, axis, indexing="ij"), axis=-1)


def _nodes(lower, spacing, n):
    axes = [lower[a] + spacing[a] * np.arange(n) for a in range(3)]
    return np.stack(np.meshgrid(*axes, indexing="ij"), axis=-1)


def _sphere(p, radius=0.7):
    return np.linalg.norm(p, axis=-1) - radius


def _c_shape(p):
    """A thick ring in the XY plane (radius 0.55, thickness 0.25) cut open on the +X side:
    the gap ``x > 0.3`` around ``y = 0`` is outside."""
    ring = np.sqrt((np.sqrt(p[..., 0] ** 2 + p[..., 1] ** 2) - 0.55) ** 2 + p[..., 2] ** 2) - 0.25
    slot = np.maximum(np.abs(p[..., 1]) - 0.12, 0.3 - p[..., 0])  # negative in the slot
    return np.maximum(ring, -slot)


def _brute_distance(points, vertices, triangles):
    corners = vertices[triangles]
    out = np.empty(len(points))
    for i, x in enumerate(points):
        cp = closest_points_on_triangles(np.broadcast_to(x, (len(triangles), 3)), corners[:, 0], corners[:, 1], corners[:, 2])
        out[i] = np.sqrt(np.min(np.sum((cp - x) ** 2, axis=1)))
    return out


@pytest.mark.parametrize("n", [24, 32])
def test_sphere_mesh_is_closed_outward_and_on_the_level_set(n):
    lower, spacing, p = _grid(n)
    vertices, triangles = mesh_from_sdf(_sphere(p), lower, spacing)
    check_closed_manifold(triangles)
    # every vertex on the sphere to a small fraction of a spacing
    assert np.abs(np.linalg.norm(vertices, axis=1) - 0.7).max() < 0.1 * spacing[0]
    # outward: positive enclosed volume, close to the sphere's; each normal points away from the centre
    assert signed_volume(vertices, triangles) == pytest.approx(4.0 / 3.0 * np.pi * 0.7**3, rel=0.02)
    corners = vertices[triangles]
    normals = np.cross(corners[:, 1] - corners[:, 0], corners[:, 2] - corners[:, 0])
    assert np.all(np.einsum("ij,ij->i", normals, corners.mean(axis=1)) > 0)


def test_sphere_round_trip_stays_within_a_spacing_of_the_analytic_field():
    n = 32
    lower, spacing, p = _grid(n)
    vertices, triangles = mesh_from_sdf(_sphere(p), lower, spacing)
    phi, lower2, spacing2 = sdf_from_mesh(vertices, triangles, resolution=n)
    assert phi.shape == (n, n, n)
    exact = _sphere(_nodes(lower2, spacing2, n))
    assert np.abs(phi - exact).max() < spacing2.max()
    # the sign agrees except for nodes within a hair of the sphere
    wrong = (phi <= 0) != (exact <= 0)
    assert np.all(np.abs(exact[wrong]) < 0.05 * spacing2.max())
    # the grid covers the mesh with its margin: border nodes are outside
    assert phi[0].min() > 0 and phi[-1].min() > 0 and phi[:, :, 0].min() > 0


def test_distance_is_exact_near_the_surface_and_bounded_far_away():
    lower, spacing, p = _grid(20)
    vertices, triangles = mesh_from_sdf(_c_shape(p), lower, spacing)
    phi, lower2, spacing2 = sdf_from_mesh(vertices, triangles, resolution=20)
    nodes = _nodes(lower2, spacing2, 20).reshape(-1, 3)
    rng = np.random.default_rng(3)
    pick = rng.choice(len(nodes), 400, replace=False)
    truth = _brute_distance(nodes[pick], vertices, triangles)
    got = np.abs(phi.ravel()[pick])
    rho = np.linalg.norm(spacing2)
    near = truth <= rho
    assert near.sum() > 20
    np.testing.assert_allclose(got[near], truth[near], atol=1e-12)
    assert np.all(got >= truth - 1e-12)
    assert np.all(got <= truth + 2.0 * rho)  # the stated bound
    assert np.max(got - truth) < 0.3 * spacing2.max()  # in practice much tighter


def test_c_shape_round_trip_keeps_the_gap_outside():
    n = 32
    lower, spacing, p = _grid(n)
    vertices, triangles = mesh_from_sdf(_c_shape(p), lower, spacing)
    check_closed_manifold(triangles)
    assert signed_volume(vertices, triangles) > 0
    phi, lower2, spacing2 = sdf_from_mesh(vertices, triangles, resolution=n)
    model = SdfGridLimit.from_grid(phi, lower2, spacing2)
    assert model.params["components"] == 1
    # in the ring, opposite the gap, and in the gap / the hole / far away
    inside = np.array([[-0.55, 0.0, 0.0], [0.0, 0.55, 0.0], [0.0, -0.55, 0.1]])
    outside = np.array([[0.55, 0.0, 0.0], [0.45, 0.0, 0.05], [0.0, 0.0, 0.0], [0.0, 0.0, 0.5]])
    assert model.contains(quaternion_from_exp_map(inside)).all()
    assert not model.contains(quaternion_from_exp_map(outside)).any()
    # the field agrees with the analytic one on the sign away from the surface
    exact = _c_shape(_nodes(lower2, spacing2, n))
    clear = np.abs(exact) > spacing2.max()
    np.testing.assert_array_equal(phi[clear] <= 0, exact[clear] <= 0)


def test_two_islands_count_as_two_components():
    lower, spacing, p = _grid(24)
    field = np.minimum(_sphere(p - [0.5, 0, 0], 0.3), _sphere(p + [0.5, 0, 0], 0.3))
    vertices, triangles = mesh_from_sdf(field, lower, spacing)
    model = SdfGridLimit.from_grid(*sdf_from_mesh(vertices, triangles, resolution=24))
    assert model.params["components"] == 2
    assert model.fit_report["components"] == 2


def test_region_touching_the_grid_border_is_closed_along_it():
    lower, spacing, p = _grid(12)
    vertices, triangles = mesh_from_sdf(p[..., 0] - 0.2, lower, spacing)  # a half space
    check_closed_manifold(triangles)
    assert signed_volume(vertices, triangles) > 0
    assert vertices[:, 0].min() < -1.0  # closed just outside the grid


def test_empty_or_full_grid_gives_no_faces():
    lower, spacing, p = _grid(8)
    assert mesh_from_sdf(np.ones((8, 8, 8)), lower, spacing)[1].shape == (0, 3)
    vertices, triangles = mesh_from_sdf(-np.ones((8, 8, 8)), lower, spacing)
    check_closed_manifold(triangles)  # the whole grid, closed by the padding


def _cube():
    vertices = np.array([[x, y, z] for x in (0.0, 1.0) for y in (0.0, 1.0) for z in (0.0, 1.0)])
    quads = [(0, 1, 3, 2), (4, 6, 7, 5), (0, 4, 5, 1), (2, 3, 7, 6), (0, 2, 6, 4), (1, 5, 7, 3)]
    triangles = np.array([t for a, b, c, d in quads for t in ((a, b, c), (a, c, d))])
    return vertices, triangles


def test_closed_manifold_check_names_the_problem():
    vertices, triangles = _cube()
    check_closed_manifold(triangles)
    assert signed_volume(vertices, triangles) == pytest.approx(1.0)
    with pytest.raises(ValueError, match=r"mesh is open: 3 boundary edges"):
        check_closed_manifold(triangles[1:])
    with pytest.raises(ValueError, match=r"mesh is open: 4 boundary edges"):
        check_closed_manifold(triangles[2:])
    # a fin on an edge: three faces share it
    fin = np.vstack((triangles, [[0, 1, 8]], [[1, 0, 9]], [[0, 8, 9]], [[1, 9, 8]]))
    with pytest.raises(ValueError, match=r"non-manifold: 1 edge shared by more than two faces"):
        check_closed_manifold(fin)
    with pytest.raises(ValueError, match="no faces"):
        check_closed_manifold(np.zeros((0, 3), dtype=int))
    with pytest.raises(ValueError, match="degenerate"):
        check_closed_manifold(np.vstack((triangles, [[0, 0, 1]])))


def test_cube_with_round_coordinates_is_read_robustly():
    # grid lines pass exactly through the cube's vertices and edges before the ray shift
    vertices, triangles = _cube()
    phi, lower, spacing = sdf_from_mesh(vertices * 2.0 - 1.0, triangles, resolution=13, margin=2.0)
    a = np.abs(_nodes(lower, spacing, 13))
    exact_inside = np.all(a < 1.0 - 1e-9, axis=-1)
    on_faces = np.all(a < 1.0 + 1e-9, axis=-1) & ~exact_inside
    assert on_faces.sum() > 100
    np.testing.assert_array_equal((phi < 0)[~on_faces], exact_inside[~on_faces])
    np.testing.assert_allclose(np.abs(phi[on_faces]), 0.0, atol=1e-12)


def test_orientation_does_not_matter_for_the_rebuild():
    lower, spacing, p = _grid(16)
    vertices, triangles = mesh_from_sdf(_sphere(p), lower, spacing)
    a, _, spacing2 = sdf_from_mesh(vertices, triangles, 16)
    b = sdf_from_mesh(vertices, triangles[:, ::-1], 16)[0]
    np.testing.assert_array_equal(a <= 0, b <= 0)
    np.testing.assert_allclose(a, b, atol=0.1 * spacing2.max())  # ties between closest points may differ


def test_bad_input_is_refused():
    vertices, triangles = _cube()
    with pytest.raises(ValueError, match="flat"):
        sdf_from_mesh(vertices * [1.0, 1.0, 0.0], triangles)
    with pytest.raises(ValueError, match="NaN"):
        sdf_from_mesh(np.where(vertices == 1.0, np.nan, vertices), triangles)
    with pytest.raises(ValueError, match="indices"):
        sdf_from_mesh(vertices, triangles + 5)
    with pytest.raises(ValueError, match="no inside node"):
        SdfGridLimit.from_grid(np.ones((8, 8, 8)), np.zeros(3), np.ones(3))
    with pytest.raises(ValueError, match=r"\(n, n, n\)"):
        SdfGridLimit.from_grid(np.ones((8, 8, 9)), np.zeros(3), np.ones(3))


def test_from_grid_round_trips_through_plain_data():
    lower, spacing, p = _grid(16)
    model = SdfGridLimit.from_grid(_sphere(p), lower, spacing)
    again = SdfGridLimit.from_dict(model.to_dict())
    q = quaternion_from_exp_map(np.random.default_rng(0).uniform(-1, 1, (200, 3)))
    np.testing.assert_array_equal(again.contains(q), model.contains(q))
    assert model.config == {"space": "EXP_MAP", "resolution": 16}
