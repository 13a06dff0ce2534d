# SPDX-License-Identifier: GPL-3.0-or-later
"""The maths of the viewport authoring tools (limits/authoring/pose_helper.py): picking on the swing
sphere, swings that keep twist, great-arc interpolation, twist from a drag, sampling any limit
onto the sphere, the painting sphere's UVs and twist keys. Pure numpy, no bpy."""

import numpy as np
import pytest

from limits.authoring import pose_helper as ph
from limits.geometry import sphere_maps as sm
from limits.geometry.quaternion import quaternion_angle, quaternion_from_exp_map, quaternion_multiply, quaternion_random
from limits.geometry.swing_twist import direction_twist, rotation_from_direction_twist
from limits.joint import JointLimit
from limits.models.sinus.texture import MASK, SinusTextureLimit

RNG = np.random.default_rng(11)


def unit(v):
    v = np.asarray(v, dtype=float)
    return v / np.linalg.norm(v, axis=-1, keepdims=True)


def cone_cloud(n=3000, half=0.6, twist=0.3, rng=RNG):
    """Rotations whose swing lies within ``half`` radians of +Y, twist within +-``twist``."""
    phi = rng.uniform(0, 2 * np.pi, n)
    r = half * np.sqrt(rng.uniform(0, 1, n))
    swing = quaternion_from_exp_map(np.stack((r * np.cos(phi), 0 * r, r * np.sin(phi)), -1))
    tw = quaternion_from_exp_map(np.outer(rng.uniform(-twist, twist, n), [0.0, 1.0, 0.0]))
    return quaternion_multiply(swing, tw)


@pytest.fixture(scope="module")
def box_limit():
    return JointLimit.fit(cone_cloud(), kind="box", reference="REST")


@pytest.fixture(scope="module")
def texture_limit():
    return JointLimit.fit(cone_cloud(), kind="sinus_texture", reference="REST", size=64)


# -- picking -------------------------------------------------------------------------------------
def test_ray_sphere_hit_near_far_and_miss():
    centre, radius = np.array([1.0, 2.0, 3.0]), 0.5
    point, hit = ph.ray_sphere_hit(centre + [0, 0, 5], [0, 0, -1], centre, radius)
    assert hit and np.allclose(point, centre + [0, 0, 0.5])
    point, hit = ph.ray_sphere_hit(centre + [0, 0, 5], [0, 0, -2], centre, radius, far=True)
    assert hit and np.allclose(point, centre - [0, 0, 0.5])
    # a ray passing beside the sphere snaps to the silhouette point nearest it
    point, hit = ph.ray_sphere_hit(centre + [2, 0, 5], [0, 0, -1], centre, radius)
    assert not hit and np.allclose(point, centre + [0.5, 0, 0])
    # the sphere behind the ray: not a hit
    _, hit = ph.ray_sphere_hit(centre + [0, 0, 5], [0, 0, 1], centre, radius)
    assert not hit
    with pytest.raises(ValueError):
        ph.ray_sphere_hit(centre, [0, 0, 0], centre, radius)


def test_pick_direction_is_in_the_swing_frame():
    # the swing frame turned 90 degrees about world Z: its +Y axis points along world -X
    frame = np.array([[0.0, -1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]])
    centre = np.zeros(3)
    d, hit = ph.pick_direction([-5.0, 0, 0], [1.0, 0, 0], centre, 2.0, frame)
    assert hit and np.allclose(d, [0, 1, 0])
    d, hit = ph.pick_direction([0.3, 0.2, 9.0], [0, 0, -1.0], centre, 2.0, frame)
    assert hit and np.isclose(np.linalg.norm(d), 1.0) and d[2] > 0.9


def test_swing_to_direction_points_bone_and_keeps_twist():
    reference = quaternion_random(1, RNG)[0]
    local = quaternion_random(200, RNG)
    targets = unit(RNG.normal(size=(200, 3)))
    for q, target in zip(local, targets):
        new = ph.swing_to_direction(q, target, reference)
        d, twist = ph.current_direction_twist(new, reference)
        _, old_twist = ph.current_direction_twist(q, reference)
        assert np.allclose(d, target, atol=1e-9)
        assert abs(ph.wrap_angle(twist - old_twist)) < 1e-9
        assert np.isclose(np.linalg.norm(new), 1.0) and new @ q >= 0  # same cover
    # identity reference: the bone's local +Y really points at the target
    q = ph.swing_to_direction([1.0, 0, 0, 0], [1.0, 0, 0])
    assert np.allclose(q, rotation_from_direction_twist([1.0, 0, 0], 0.0))


def test_with_twist_keeps_swing():
    reference = quaternion_random(1, RNG)[0]
    for q in quaternion_random(50, RNG):
        new = ph.with_twist(q, 0.7, reference)
        d_new, twist = ph.current_direction_twist(new, reference)
        d_old, _ = ph.current_direction_twist(q, reference)
        if d_old[1] > -0.999:  # away from the swing singularity at -Y
            assert np.allclose(d_new, d_old, atol=1e-9) and np.isclose(twist, 0.7)


def test_opposite_hemisphere_and_rest_direction():
    assert ph.opposite_hemisphere([0, -0.1, 1.0])
    assert not ph.opposite_hemisphere([0, 0.1, 1.0])
    ref = quaternion_from_exp_map(np.array([0.5, 0.0, 0.0]))
    rest = ph.rest_direction(ref)
    # the local identity expressed in the reference's swing frame
    d, _ = direction_twist(quaternion_multiply(ref * [1, -1, -1, -1], [1.0, 0, 0, 0]))
    assert np.allclose(rest, d)
    assert not ph.opposite_hemisphere(rest, rest) and ph.opposite_hemisphere(-rest, rest)


def test_great_arc_and_draw_interpolation():
    a, b = np.array([0, 1.0, 0]), np.array([1.0, 0, 0])
    arc = ph.great_arc(a, b, 7)
    assert np.allclose(arc[0], a) and np.allclose(arc[-1], b)
    steps = np.arccos(np.clip(np.sum(arc[1:] * arc[:-1], -1), -1, 1))
    assert np.allclose(steps, np.pi / 12) and np.allclose(np.linalg.norm(arc, axis=-1), 1)
    assert np.allclose(np.cross(arc, np.roll(arc, -1, 0))[:-1] @ [0, 0, 1], -np.sin(np.pi / 12))  # one plane
    anti = ph.great_arc(a, -a, 5)
    assert np.allclose(anti[-1], -a) and np.allclose(np.linalg.norm(anti, axis=-1), 1)
    picks = np.array([[0, 1.0, 0], [0, 1.0, 0], [1.0, 0, 0], [0, 0, 1.0]])
    path = ph.interpolate_picks(picks, step=np.radians(10))
    gaps = np.arccos(np.clip(np.sum(path[1:] * path[:-1], -1), -1, 1))
    assert gaps.max() <= np.radians(10) + 1e-9 and gaps.min() > 0
    for p in picks:
        assert np.min(np.linalg.norm(path - p, axis=-1)) < 1e-9
    keys = ph.keyed_rotations([np.cos(0.2), 0, np.sin(0.2), 0], picks, step=np.radians(10))
    assert len(keys) == len(path)
    assert np.all(np.sum(keys[1:] * keys[:-1], -1) > 0)  # continuous cover
    _, twist = direction_twist(keys)
    assert np.allclose(twist, 0.4)


def test_twist_from_drag():
    axis, centre, zero = np.array([0, 1.0, 0]), np.zeros(3), np.array([0, 0, 1.0])
    assert np.isclose(ph.angle_about_axis([1.0, 5.0, 0], centre, axis, zero), np.pi / 2)
    assert np.isclose(ph.angle_about_axis([-1.0, -2.0, 0], centre, axis, zero), -np.pi / 2)
    start = ph.angle_about_axis([0, 0, 1.0], centre, axis, zero)
    now = ph.angle_about_axis([1.0, 0, 1.0], centre, axis, zero)
    assert np.isclose(ph.twist_from_drag(0.1, start, now), 0.1 + np.pi / 4)
    # dragging across the -pi/pi cut wraps
    assert np.isclose(ph.twist_from_drag(3.0, np.pi - 0.05, -np.pi + 0.05), 3.1)
    assert np.isclose(ph.twist_from_drag(3.1, 0.0, 0.2), 3.3 - 2 * np.pi)
    hit = ph.ray_plane_hit([0, 5.0, 0.5], [0, -1.0, 0], centre, axis)
    assert np.allclose(hit, [0, 0, 0.5])
    assert ph.ray_plane_hit([0, 5.0, 0], [1.0, 0, 0], centre, axis) is None


def test_twist_disk_points_read_back_as_twist():
    d = unit([0.3, 0.8, -0.2])
    angles = np.array([0.0, 0.5, -1.2, 2.5])
    points = ph.twist_disk_points(d, angles)
    assert np.allclose(points @ d, 0) and np.allclose(np.linalg.norm(points, axis=-1), 1)
    back = [ph.angle_about_axis(p, np.zeros(3), d, points[0]) for p in points]
    assert np.allclose(back, angles)
    # the disk point at the bone's twist is where its X axis points
    local = rotation_from_direction_twist(d, 0.5)
    from limits.geometry.quaternion import quaternion_rotate

    assert np.allclose(quaternion_rotate(local, [1.0, 0, 0]), points[1])


def test_twist_range_at_any_model(box_limit, texture_limit):
    for limit in (box_limit, texture_limit):
        low, high = ph.twist_range_at(limit, [0, 1.0, 0])
        assert -0.45 < low < -0.2 and 0.2 < high < 0.45, (limit.model.kind, low, high)
        assert ph.twist_range_at(limit, [0, -1.0, 0]) is None


# -- sampling onto the sphere --------------------------------------------------------------------
def test_sample_limit_matches_the_model(box_limit):
    image, layout = ph.sample_limit(box_limit, size=32)
    assert image.shape == (32, 32, 4) and layout == "equal_area"
    allowed, stress = ph.sphere_values(image, layout, np.array([[0, 1.0, 0], [0, -1.0, 0], [1.0, 0, 0]]))
    assert allowed.tolist() == [True, False, False]
    assert stress[0] < 0.2 and stress[1] == 1.0
    # every allowed texel holds a contained rotation at its twist range's middle
    d = sm.texel_centres(layout, (32, 32)).reshape(-1, 3)
    flat = image.reshape(-1, 4)
    ok = flat[:, MASK] > 0.5
    mid = 0.5 * (flat[ok, 1] + flat[ok, 2])
    rel = rotation_from_direction_twist(d[ok], mid)
    assert box_limit.contains(box_limit.from_relative(rel)).mean() > 0.95
    loop = ph.boundary_loop(image, layout, 32)
    angles = np.arccos(loop[:, 1])
    assert loop.shape == (32, 3) and 0.4 < angles.min() and angles.max() < 1.0  # a box: corners reach further


def test_sample_limit_uses_a_textures_own_mask(texture_limit):
    image, layout = ph.sample_limit(texture_limit)
    assert image is texture_limit.model.params["image"] or np.array_equal(image, texture_limit.model.params["image"])
    d = unit(RNG.normal(size=(500, 3)))
    allowed, _ = ph.sphere_values(image, layout, d)
    contained = texture_limit.model.contains(rotation_from_direction_twist(d, 0.0))
    assert np.array_equal(allowed[contained], np.ones(contained.sum(), bool))


def test_colours_ramp():
    c = ph.colours([True, True, False], [0.0, 1.0, np.nan])
    assert np.allclose(c[0], ph.COLOUR_ALLOWED) and np.allclose(c[1], ph.COLOUR_STRESSED)
    assert np.allclose(c[2], ph.COLOUR_FORBIDDEN)


def test_drawing_meshes_face_outward():
    verts, tris = ph.uv_sphere(8, 16)
    assert np.allclose(np.linalg.norm(verts, axis=-1), 1)
    p = verts[tris]
    n = np.cross(p[:, 1] - p[:, 0], p[:, 2] - p[:, 0])
    assert np.all(np.sum(n * p.mean(1), -1) > 0)
    disk = ph.marker([0, 0, 1.0], radius=0.1, segments=8)
    assert disk.shape == (24, 3) and np.all(disk[:, 2] > 0.99)


# -- painting and twist keys ---------------------------------------------------------------------
@pytest.mark.parametrize("layout", sm.LAYOUTS)
def test_layout_sphere_uvs_are_the_swing_parameterization(layout):
    verts, faces, uvs = ph.layout_sphere(layout, cells=16)
    assert np.allclose(np.linalg.norm(verts, axis=-1), 1)
    # every face corner's UV maps back to that corner's direction
    back = sm.uv_to_direction(uvs[..., 0], uvs[..., 1], layout)
    close = np.linalg.norm(back - verts[faces], axis=-1) < 1e-9
    assert close.all()
    # no face straddles a seam: its UVs span one cell
    span = uvs.max(axis=1) - uvs.min(axis=1)
    assert span.max() <= 1 / 16 + 1e-9
    # the mesh faces outward wherever it is not degenerate
    p = verts[faces]
    n = np.cross(p[:, 2] - p[:, 0], p[:, 3] - p[:, 1])
    big = np.linalg.norm(n, axis=-1) > 1e-6
    assert np.all(np.sum(n * p.mean(1), -1)[big] > 0)


def test_twist_keys_rebuild_the_twist_channels(texture_limit):
    model = texture_limit.model
    layout = model.config["layout"]
    keys = ph.record_twist_key(np.zeros((0, 5)), [0, 1.0, 0], -0.1, "MIN", current_range=(-0.3, 0.3))
    assert np.allclose(keys, [[0, 1, 0, -0.1, 0.3]])
    keys = ph.record_twist_key(keys, [0, 1.0, 0.01], 0.2, "MAX")  # merges with the first key
    assert np.allclose(keys, [[0, 1 / np.hypot(1, 0.01), 0.01 / np.hypot(1, 0.01), -0.1, 0.2]])
    side = unit([0.4, 1.0, 0.0])
    keys = ph.record_twist_key(keys, side, 0.5, "MAX", current_range=(-0.2, 0.3))
    assert len(keys) == 2
    with pytest.raises(ValueError):
        ph.record_twist_key(keys, side, 0.5, "BOTH")
    image = ph.twist_channels_from_keys(model.params["image"], layout, keys)
    assert np.array_equal(image[..., MASK], model.params["image"][..., MASK])
    rebuilt = SinusTextureLimit.from_image(image, layout)
    for d, low, high in ((keys[0, :3], -0.1, 0.2), (side, -0.2, 0.5)):
        look = rebuilt._lookup(rotation_from_direction_twist(d, 0.0)[None], None)
        assert abs(look["low"][0] - low) < 0.05 and abs(look["high"][0] - high) < 0.05  # bilinear between texels


def test_mask_changes():
    a = np.zeros((4, 4, 4))
    b = a.copy()
    a[0, 0, 0] = 1
    b[1, 1, 0] = 1
    forbidden, allowed = ph.mask_changes(a, b)
    assert forbidden.sum() == 1 and forbidden[0, 0] and allowed.sum() == 1 and allowed[1, 1]


def test_angle_helpers_are_consistent():
    q = quaternion_random(20, RNG)
    d, tw = direction_twist(q)
    assert np.all(quaternion_angle(rotation_from_direction_twist(d, tw), q) < 1e-9)
    assert np.allclose(ph.wrap_angle([np.pi, -np.pi, 3 * np.pi]), np.pi)
