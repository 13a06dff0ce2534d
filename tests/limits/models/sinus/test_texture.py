# SPDX-License-Identifier: GPL-3.0-or-later
"""Kelly's sinus texture limit and the sphere <-> texture layouts (pure numpy, no bpy)."""

import io

import numpy as np
import pytest

from limits.geometry import sphere_maps as sm
from limits.geometry.nearest_boundary import nearest_allowed_texels
from limits.geometry.quaternion import quaternion_angle, quaternion_random, quaternion_rotate
from limits.geometry.sphere_image import bilinear_taps, count_islands
from limits.geometry.swing_twist import direction_twist, rotation_from_direction_twist
from limits.joint import JointLimit
from limits.model import LimitModel
from limits.models.sinus.kelly import from_kelly_rgba8, to_kelly_rgba8
from limits.models.sinus.texture import MASK, STRESS, TWIST_MAX, TWIST_MIN, SinusTextureLimit, _ranges_at_uv
from limits.registry import model_from_dict
from limits.serialize import limit_from_json, limit_to_bytes, limit_to_json, load_limit_npz

RNG = np.random.default_rng(7)


def unit(v):
    v = np.asarray(v, dtype=float)
    return v / np.linalg.norm(v, axis=-1, keepdims=True)


def random_directions(n, rng=RNG):
    return unit(rng.normal(size=(n, 3)))


def tilt(angle_x, angle_z):
    """Direction of +Y tilted by the swing vector (angle_x, 0, angle_z) (exp map)."""
    ang = np.hypot(angle_x, angle_z)
    safe = np.where(ang > 0, ang, 1.0)
    # exp map (ax, 0, az) rotates +Y towards (az, ., -ax) direction: use the quaternion
    q = np.stack((np.cos(ang / 2), np.sin(ang / 2) * angle_x / safe, 0 * ang, np.sin(ang / 2) * angle_z / safe), -1)
    return quaternion_rotate(q, np.array([0.0, 1.0, 0.0]))


# -- an elliptical cone with swing-dependent twist ---------------------------------------------------
A, B = 1.0, 0.6  # half-axes of the cone (radians, swing vector components about X and Z)


def cone_level(d):
    """<= 1 inside the elliptical cone (swing vector of the shortest swing to d)."""
    d = unit(d)
    ang = np.arccos(np.clip(d[..., 1], -1, 1))
    # shortest swing: axis Y x d = (d_z, 0, -d_x)
    axis = np.stack((d[..., 2], 0 * d[..., 0], -d[..., 0]), -1)
    n = np.linalg.norm(axis, axis=-1)
    axis = axis / np.where(n > 0, n, 1.0)[..., None]
    sx, sz = axis[..., 0] * ang, axis[..., 2] * ang
    return np.hypot(sx / A, sz / B)


def twist_range(d):
    return -0.3 + 0.5 * d[..., 0], 0.3 + 0.5 * d[..., 0]


def cone_cloud(n, rng=RNG):
    phi = rng.uniform(0, 2 * np.pi, n)
    r = np.sqrt(rng.uniform(0, 1, n))
    d = tilt(A * r * np.cos(phi), B * r * np.sin(phi))
    lo, hi = twist_range(d)
    t = rng.uniform(0, 1, n) ** 0.3
    twist = np.where(rng.random(n) < 0.5, lo + (hi - lo) * (1 - t), lo + (hi - lo) * t)
    return rotation_from_direction_twist(d, twist)


@pytest.fixture(scope="module")
def cone_model():
    # twist_radius 0: each texel's own samples (the dense cloud samples every twist range)
    return SinusTextureLimit.fit(cone_cloud(60000), padding=0.0, size=128, closing=0.08, twist_radius=0.0)


def swing_only(d):
    return rotation_from_direction_twist(d, np.zeros(np.shape(d)[:-1]))


# -- layouts ------------------------------------------------------------------------------------
@pytest.mark.parametrize("layout", sm.LAYOUTS)
def test_direction_uv_round_trip(layout):
    d = random_directions(20000)
    u, v = sm.direction_to_uv(d, layout)
    assert u.min() >= 0 and u.max() <= 1 and v.min() >= 0 and v.max() <= 1
    np.testing.assert_allclose(sm.uv_to_direction(u, v, layout), d, atol=1e-9)


@pytest.mark.parametrize("layout", sm.LAYOUTS)
def test_texel_round_trips(layout):
    shape = sm.texture_shape(32, layout)
    centres = sm.texel_centres(layout, shape).reshape(-1, 3)
    np.testing.assert_array_equal(sm.direction_to_texel(centres, layout, shape), np.arange(len(centres)))
    # every direction lies within one texel of its texel's centre
    d = random_directions(20000)
    texel = sm.direction_to_texel(d, layout, shape)
    arc = np.arccos(np.clip(np.sum(d * centres[texel], axis=-1), -1, 1))
    assert arc.max() <= sm.distortion(layout, shape)["max_texel_arc"]
    omega = sm.texel_solid_angles(layout, shape)
    assert omega.sum() == pytest.approx(4 * np.pi, rel=1e-9)


@pytest.mark.parametrize("layout, shape", [("equal_area", (16, 16)), ("kelly", (32, 16)), ("kelly", (33, 16))])
def test_closed_form_solid_angles_match_integration(layout, shape):
    exact = sm.texel_solid_angles(layout, shape)
    # integrate the same layout numerically (many cells per texel) through the generic path
    n = 24
    gu = np.arange(shape[1] * n + 1) / (shape[1] * n)
    gv = np.arange(shape[0] * n + 1) / (shape[0] * n)
    vv, uu = np.meshgrid(gv, gu, indexing="ij")
    p = sm.uv_to_direction(uu, vv, layout)
    a, b, c, d = p[:-1, :-1], p[:-1, 1:], p[1:, 1:], p[1:, :-1]
    cells = sm._triangle_solid_angle(a, b, c) + sm._triangle_solid_angle(a, c, d)
    numeric = cells.reshape(shape[0], n, shape[1], n).sum(axis=(1, 3))
    np.testing.assert_allclose(exact, numeric, rtol=2e-3)
    assert exact.sum() == pytest.approx(4 * np.pi, rel=1e-12)


def test_distortion_picks_equal_area():
    ea = sm.distortion("equal_area", (64, 64))
    octa = sm.distortion("octahedral", (64, 64))
    kelly = sm.distortion("kelly", (128, 64))
    assert ea["solid_angle_ratio"] < 1.05
    assert octa["solid_angle_ratio"] > 4
    assert kelly["solid_angle_ratio"] > 100
    assert ea["arc_near_rest"] < 0.8 * kelly["arc_near_rest"]
    assert ea["max_texel_arc"] < 1.5 * ea["mean_texel_arc"]


@pytest.mark.parametrize("layout", sm.LAYOUTS)
def test_seam_neighbours_are_close(layout):
    shape = sm.texture_shape(32, layout)
    centres = sm.texel_centres(layout, shape).reshape(-1, 3)
    nb = sm.neighbour_texels(layout, shape, diagonal=False)
    arc = np.arccos(np.clip(np.sum(centres[nb] * centres[None], axis=-1), -1, 1))
    assert arc.max() <= 2.0 * sm.distortion(layout, shape)["max_texel_arc"]


def test_kelly_layout_matches_dissertation():
    # x >= 0 in the bottom half with rho = 0 at the bottom; x < 0 in the top half
    u, v = sm.direction_to_uv(np.array([[1.0, 0, 0], [-1.0, 0, 0], [0, 1.0, 0], [0, 0, 1.0]]), "kelly")
    np.testing.assert_allclose(v[:2], [0.0, 1.0])
    np.testing.assert_allclose([u[2], v[2]], [0.25, 0.5])  # the rest direction sits on the seam
    assert u[3] == 0.0
    d = sm.uv_to_direction(0.25, 0.49, "kelly")
    assert d[0] > 0 and d[1] > 0.97


# -- rotations <-> (direction, twist) -------------------------------------------------------------
def test_direction_twist_round_trip():
    q = quaternion_random(5000, 1)
    d, t = direction_twist(q)
    np.testing.assert_allclose(d, quaternion_rotate(q, np.array([0.0, 1.0, 0.0])), atol=1e-12)
    assert np.all(np.abs(t) <= np.pi + 1e-12)
    back = rotation_from_direction_twist(d, t)
    assert np.all(quaternion_angle(back, q) < 1e-7)


# -- fitting --------------------------------------------------------------------------------------
def test_cone_boundary_within_a_texel(cone_model):
    layout = cone_model.config["layout"]
    shape = (cone_model.config["height"], cone_model.config["width"])
    centres = sm.texel_centres(layout, shape).reshape(-1, 3)
    mask = cone_model.params["image"][..., MASK].ravel() > 0.5
    level = cone_level(centres)
    texel = sm.distortion(layout, shape)["max_texel_arc"]
    margin = texel / min(A, B)
    assert np.all(level[mask] <= 1 + margin)
    assert np.all(mask[level <= 1 - margin])
    assert cone_model.config["islands"] == 1


def test_cone_twist_range(cone_model):
    d = tilt(*(np.array([[0.0, 0.0], [0.5, 0.2], [-0.6, 0.1], [0.2, -0.3], [-0.3, -0.3]]).T))
    lo, hi = twist_range(d)
    rt = cone_model._ranges_at(*sm.direction_to_uv(d, "equal_area"), None)
    np.testing.assert_allclose(rt[:, 0], lo, atol=0.05)
    np.testing.assert_allclose(rt[:, 1], hi, atol=0.05)


def test_training_rotations_contained():
    cloud = cone_cloud(20000, np.random.default_rng(3))
    for layout in ("equal_area", "kelly"):
        model = SinusTextureLimit.fit(cloud, padding=0.0, size=64, layout=layout)
        assert model.contains(cloud).all()
    limit = JointLimit.fit(cloud, kind="sinus_texture", padding=0.02)
    assert limit.contains(cloud).all()


def test_sparse_data_closes_into_one_region():
    # a few sparse trajectories across the cone: closing gives one region without holes
    rng = np.random.default_rng(5)
    t = np.linspace(0, 1, 400)
    paths = [tilt(A * (2 * t - 1) * 0.8, B * np.full_like(t, z)) for z in (-0.6, -0.2, 0.2, 0.6)]
    paths += [tilt(A * np.full_like(t, x), B * (2 * t - 1) * 0.8) for x in (-0.5, 0.0, 0.5)]
    d = np.concatenate(paths)
    model = SinusTextureLimit.fit(swing_only(d), size=128, closing=0.2)
    assert model.config["islands"] == 1
    inner = tilt(*(rng.uniform(-0.4, 0.4, (2, 200)) * np.array([[A], [B]])))
    assert model.contains(swing_only(inner)).all()


def test_islands_counted():
    d = np.concatenate([tilt(rng_x, 0 * rng_x) for rng_x in (np.linspace(-0.2, 0.2, 50),)])
    far = quaternion_rotate(rotation_from_direction_twist(np.array([0.0, 0.0, 1.0]), 0.0), d)
    model = SinusTextureLimit.fit(swing_only(np.concatenate((d, far))), size=64)
    assert model.config["islands"] == 2
    assert len(model.report["island_solid_angles"]) == 2


# -- projection -----------------------------------------------------------------------------------
def brute_nearest_cos(model, d):
    layout = model.config["layout"]
    shape = (model.config["height"], model.config["width"])
    centres = sm.texel_centres(layout, shape).reshape(-1, 3)
    allowed = centres[model.params["image"][..., MASK].ravel() > 0.5]
    return np.max(d @ allowed.T, axis=1)


@pytest.mark.parametrize("layout", ["equal_area", "kelly"])
def test_nearest_table_exact(layout):
    shape = sm.texture_shape(32, layout)
    centres = sm.texel_centres(layout, shape).reshape(-1, 3)
    mask = (cone_level(centres) <= 1) | (centres @ unit([0.3, -0.5, 0.8]) > 0.9)
    index, cos = nearest_allowed_texels(mask.reshape(shape), layout)
    brute = np.max(centres @ centres[mask].T, axis=1)
    np.testing.assert_allclose(cos, brute, atol=1e-12)
    assert mask[index].all()


def test_project_lands_on_boundary_and_matches_brute_force(cone_model):
    layout = "equal_area"
    shape = (cone_model.config["height"], cone_model.config["width"])
    texel = sm.distortion(layout, shape)["max_texel_arc"]
    centres = sm.texel_centres(layout, shape).reshape(-1, 3)
    mask = cone_model.params["image"][..., MASK].ravel() > 0.5
    d = random_directions(3000)
    q = swing_only(d)
    outside = ~cone_model.contains(q)
    assert outside.sum() > 1000
    p = cone_model.project(q[outside])
    assert cone_model.contains(p).all()
    dp, _ = direction_twist(p)
    got = np.arccos(np.clip(np.sum(dp * d[outside], axis=-1), -1, 1))
    best = np.arccos(np.clip(brute_nearest_cos(cone_model, d[outside]), -1, 1))
    assert np.all(got <= best + texel)
    # on the boundary: a forbidden texel centre within one texel
    forbidden = centres[~mask]
    gap = np.arccos(np.clip(np.max(dp @ forbidden.T, axis=1), -1, 1))
    assert gap.max() <= texel


@pytest.mark.parametrize("layout", ["equal_area", "octahedral", "kelly"])
def test_project_idempotent_and_inside(layout):
    model = SinusTextureLimit.fit(cone_cloud(20000), size=32, layout=layout)
    q = quaternion_random(4000, 2)
    p = model.project(q)
    assert model.contains(p).all()
    np.testing.assert_array_equal(model.project(p), p)
    inside = model.contains(q)
    np.testing.assert_array_equal(p[inside], q[inside])
    assert np.all(model.violation(p) == 0)
    # the cover of the input is kept
    assert np.all(np.sum(p * q, axis=-1) >= 0)
    s = model.stress(q)
    assert np.all((s >= 0) & (s <= 1))


def test_twist_is_clamped_at_the_same_swing(cone_model):
    d = tilt(np.array([0.2]), np.array([0.1]))
    lo, hi = cone_model._ranges_at(*sm.direction_to_uv(d, "equal_area"), None)[0]
    q = rotation_from_direction_twist(d, np.array([hi + 0.5]))
    p = cone_model.project(q)
    dp, tp = direction_twist(p)
    np.testing.assert_allclose(dp, d, atol=1e-12)
    assert tp[0] == pytest.approx(hi, abs=1e-9)


def c_shaped_model(size=96):
    """An annulus sector about +Y (polar 0.5..0.9 rad) with a gap around azimuth 0 (+X)."""
    shape = (size, size)
    c = sm.texel_centres("equal_area", shape)
    polar = np.arccos(np.clip(c[..., 1], -1, 1))
    azimuth = np.arctan2(c[..., 2], c[..., 0])
    mask = (polar > 0.5) & (polar < 0.9) & (np.abs(azimuth) > 0.4)
    image = np.zeros(shape + (4,))
    image[..., MASK] = mask
    image[..., TWIST_MIN] = -0.5
    image[..., TWIST_MAX] = 0.5
    return SinusTextureLimit.from_image(image, "equal_area")


def at(polar, azimuth):
    polar, azimuth = np.broadcast_arrays(np.asarray(polar, float), np.asarray(azimuth, float))
    return np.stack((np.sin(polar) * np.cos(azimuth), np.cos(polar), np.sin(polar) * np.sin(azimuth)), -1)


def test_trajectory_never_crosses_the_gap():
    model = c_shaped_model()
    prev = swing_only(at(0.7, 0.55))
    q = swing_only(at(0.7, -0.1))  # in the gap, nearer the lower arm
    assert not model.contains(q)
    jumped = direction_twist(model.project(q))[0]
    assert np.arctan2(jumped[2], jumped[0]) < 0  # isolated projection jumps the gap
    along = model.project_along(q, prev)
    d, _ = direction_twist(along)
    assert model.contains(along)
    assert np.arctan2(d[2], d[0]) > 0.35
    # random forbidden targets from random allowed starts: the arc start -> result stays allowed
    rng = np.random.default_rng(11)
    starts = at(rng.uniform(0.55, 0.85, 300), rng.uniform(0.5, 2.5, 300))
    targets = at(rng.uniform(0.2, 1.4, 300), rng.uniform(-1.0, 1.5, 300))
    res = model.project_along(swing_only(targets), swing_only(starts))
    assert model.contains(res).all()
    dr, _ = direction_twist(res)
    t = np.linspace(0, 1, 1000)[:, None, None]
    arc = unit((1 - t) * starts[None] + t * dr[None])
    forbidden = ~model.contains(swing_only(arc))
    # the path may clip a forbidden texel's corner between two samples, never cross the gap
    length = np.arccos(np.clip(np.sum(starts * dr, axis=-1), -1, 1))
    texel = np.sqrt(4 * np.pi / 96**2)
    assert np.all(forbidden.sum(axis=0) / 1000 * length <= 0.5 * texel)


def test_trajectory_midpoint_only():
    model = c_shaped_model()
    prev = swing_only(at(0.7, 0.55))
    q = swing_only(at(0.7, -0.1))
    along = model.project_along(q, prev, steps=2)
    assert model.contains(along)


# -- editing ----------------------------------------------------------------------------------------
def test_edit_mask_and_recompute(cone_model):
    layout = "equal_area"
    shape = (cone_model.config["height"], cone_model.config["width"])
    probe = tilt(np.array([0.0]), np.array([0.0]))
    assert cone_model.contains(swing_only(probe))[0]
    mask = cone_model.params["image"][..., MASK].copy()
    # forbid a stroke across the whole cone through the rest direction (5 texels wide)
    c = sm.texel_centres(layout, shape)
    stroke = np.abs(c[..., 0]) < 2.5 * np.sqrt(4 * np.pi / (shape[0] * shape[1]))
    mask[stroke] = 0
    edited = cone_model.with_mask(mask)
    assert not edited.contains(swing_only(probe))[0]
    p = edited.project(swing_only(probe))
    assert edited.contains(p).all()
    assert edited.config["islands"] == 2
    # twist channels survive the edit
    np.testing.assert_array_equal(edited.params["image"][..., TWIST_MIN], cone_model.params["image"][..., TWIST_MIN])
    # the nearest-boundary table is derived, never stored: a mask edited in the data
    # projects onto the edited region, as with_mask's model does
    data = cone_model.to_dict()
    data["params"]["image"][..., MASK] = mask
    assert "nearest" not in data["params"]
    q = swing_only(tilt(np.linspace(-0.3, 0.3, 7), np.zeros(7)))
    np.testing.assert_array_equal(model_from_dict(data).project(q), edited.project(q))


def test_from_keys():
    keys = tilt(np.array([0.0, 0.8, -0.8, 0.0, 0.0]), np.array([0.0, 0.0, 0.0, 0.6, -0.6]))
    lo = np.array([-0.5, -0.2, -0.8, -0.4, -0.4])
    hi = np.array([0.5, 0.9, 0.1, 0.4, 0.4])
    model = SinusTextureLimit.from_keys(keys, lo, hi, size=64)
    q = rotation_from_direction_twist(keys, 0.5 * (lo + hi))
    assert model.contains(q).all()
    ranges = model._ranges_at(*sm.direction_to_uv(keys, "equal_area"), None)
    np.testing.assert_allclose(ranges[:, 0], lo, atol=0.1)
    np.testing.assert_allclose(ranges[:, 1], hi, atol=0.1)
    assert not model.contains(swing_only(np.array([0.0, -1.0, 0.0])))
    # with a given mask
    mask = np.ones((64, 64))
    full = SinusTextureLimit.from_keys(keys, lo, hi, mask=mask)
    assert full.contains(swing_only(np.array([0.0, -1.0, 0.0])))
    with pytest.raises(ValueError):
        SinusTextureLimit.from_keys(keys, hi, lo)


# -- images: bad and extreme ------------------------------------------------------------------------
def image_of(shape, allowed=True):
    image = np.zeros(shape + (4,))
    image[..., MASK] = float(allowed)
    image[..., TWIST_MIN] = -0.2
    image[..., TWIST_MAX] = 0.3
    return image


def test_bad_images():
    with pytest.raises(ValueError, match="4 channels"):
        SinusTextureLimit.from_image(np.zeros((32, 32, 3)))
    with pytest.raises(ValueError, match="even"):
        SinusTextureLimit.from_image(image_of((33, 32)))
    with pytest.raises(ValueError, match="height, width"):
        SinusTextureLimit.from_image(np.zeros((32, 32)))
    with pytest.raises(ValueError, match="every swing"):
        SinusTextureLimit.from_image(image_of((32, 32), allowed=False))
    bad = image_of((32, 32))
    bad[3, 4, 1] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        SinusTextureLimit.from_image(bad)
    with pytest.raises(ValueError, match="layout"):
        SinusTextureLimit.from_image(image_of((32, 32)), "cubemap")
    with pytest.raises(ValueError, match="512, 256, 4"):
        from_kelly_rgba8(np.zeros((256, 512, 4), dtype=np.uint8))
    with pytest.raises(ValueError, match="4 channels"):
        from_kelly_rgba8(np.zeros((512, 256, 3), dtype=np.uint8))
    with pytest.raises(ValueError, match="every swing"):
        from_kelly_rgba8(np.zeros((512, 256, 4), dtype=np.uint8))


def test_all_allowed_only_clamps_twist():
    model = SinusTextureLimit.from_image(image_of((32, 32)))
    q = quaternion_random(2000, 4)
    p = model.project(q)
    d, t = direction_twist(q)
    dp, tp = direction_twist(p)
    np.testing.assert_allclose(dp, d, atol=1e-12)
    low, high = model.params["image"][0, 0, TWIST_MIN : TWIST_MAX + 1].tolist()  # -0.2 and 0.3 at half precision, outward
    assert -0.2001 < low <= -0.2 and 0.3 <= high < 0.3001
    np.testing.assert_allclose(tp, np.clip(t, low, high), atol=1e-9)
    assert model.contains(p).all()
    assert model.config["islands"] == 1


def test_non_finite_rows():
    model = SinusTextureLimit.from_image(image_of((32, 32)))
    q = np.array([[np.nan, 0, 0, 0], [0, 0, 0, 0], [1.0, 0, 0, 0]])
    np.testing.assert_array_equal(model.contains(q), [False, False, True])
    p = model.project(q)
    assert np.isnan(p[0, 0]) and np.all(p[1] == 0)


# -- Kelly's 8-bit texture --------------------------------------------------------------------------
def test_kelly_rgba8_round_trip():
    model = SinusTextureLimit.fit(cone_cloud(20000), layout="kelly")
    rgba = to_kelly_rgba8(model)
    assert rgba.shape == (512, 256, 4) and rgba.dtype == np.uint8
    back = from_kelly_rgba8(rgba)
    np.testing.assert_array_equal(back.params["image"][..., MASK], model.params["image"][..., MASK])
    allowed = model.params["image"][..., MASK] > 0.5
    for ch in (TWIST_MIN, TWIST_MAX):
        err = np.abs(back.params["image"][..., ch] - np.clip(model.params["image"][..., ch], -np.pi, np.pi))[allowed]
        assert err.max() <= 2 * np.pi / 254
    np.testing.assert_array_equal(to_kelly_rgba8(back), rgba)
    # forbidden pixels point at the nearest allowed pixel, read as Kelly's shader does
    forbidden = rgba[..., 0] == 0
    col = rgba[..., 1].astype(int)
    row = rgba[..., 2].astype(int) + (255 - rgba[..., 3].astype(int))
    assert (rgba[row[forbidden], col[forbidden], 0] > 0).all()
    centres = sm.texel_centres("kelly", sm.KELLY_SHAPE)
    got = np.sum(centres[forbidden] * centres[row[forbidden], col[forbidden]], axis=-1)
    # brute force over every allowed pixel, a few thousand rows at a time (the whole matrix is 6 GB)
    queries, candidates = centres[forbidden], centres[allowed].T
    best = np.concatenate([np.max(queries[i : i + 2048] @ candidates, axis=1) for i in range(0, len(queries), 2048)])
    np.testing.assert_allclose(got, best, atol=1e-12)


def test_kelly_export_resamples_other_layouts(cone_model):
    rgba = to_kelly_rgba8(cone_model)
    back = from_kelly_rgba8(rgba)
    d = random_directions(4000)
    agree = back.contains(swing_only(d)) == cone_model.contains(swing_only(d))
    assert agree.mean() > 0.97


# -- batching and files -----------------------------------------------------------------------------
def test_stack_equals_per_model():
    m1 = SinusTextureLimit.fit(cone_cloud(5000), size=32)
    m2 = SinusTextureLimit.fit(cone_cloud(5000)[:, [0, 3, 2, 1]], size=32)
    stacked = SinusTextureLimit.stack([m1, m2])
    q = quaternion_random(2, 9)
    for _ in range(20):
        q = quaternion_random(2, RNG)
        np.testing.assert_array_equal(stacked.contains(q), [m1.contains(q[0]), m2.contains(q[1])])
        np.testing.assert_allclose(stacked.project(q), np.stack([m1.project(q[0]), m2.project(q[1])]), atol=1e-12)
    qs = quaternion_random(64, 3).reshape(32, 2, 4)
    np.testing.assert_allclose(stacked.project(qs)[:, 0], m1.project(qs[:, 0]), atol=1e-12)
    np.testing.assert_allclose(stacked.stress(qs)[:, 1], m2.stress(qs[:, 1]), atol=1e-12)
    np.testing.assert_allclose(stacked.project_along(qs, qs[::-1])[:, 1], m2.project_along(qs[:, 1], qs[::-1, 1]), atol=1e-12)
    other = SinusTextureLimit.fit(cone_cloud(5000), size=64)
    assert other.group_key() != m1.group_key()
    with pytest.raises(ValueError, match="cannot stack"):
        SinusTextureLimit.stack([m1, other])


def _reference_ranges(image, u, v, layout):
    """Twist ranges ``(B, n, 2)`` at texture coordinates ``u, v (B, n)`` as first computed: bone
    by bone with :func:`bilinear_taps` (wrapping every tap)."""
    h, w = image.shape[-3:-1]
    out = []
    for img, bu, bv in zip(image.reshape(-1, h * w, 4), u, v):
        taps, weights = bilinear_taps(bu, bv, layout, (h, w))
        out.append(np.stack([np.sum(img[taps, ch] * weights, axis=-1) for ch in (TWIST_MIN, TWIST_MAX)], axis=-1))
    return np.stack(out)


@pytest.mark.parametrize("layout", sm.LAYOUTS)
def test_runtime_tables_equal_per_bone_reference(layout):
    """The runtime tables, built for all bones at once from the padded tables, are the per-bone
    wrap-and-interpolate ones (``padded`` and :func:`bilinear_taps`), single and stacked."""
    rng = np.random.default_rng(21)
    size = 16 if layout == "kelly" else 24
    perms = ([0, 1, 2, 3], [0, 3, 2, 1], [0, 2, 1, 3])
    models = [SinusTextureLimit.fit(cone_cloud(3000, rng)[:, p], size=size, layout=layout) for p in perms]
    h, w = models[0].params["image"].shape[:2]
    rows, cols = np.meshgrid(np.arange(-1, h + 1), np.arange(-1, w + 1), indexing="ij")
    r, c = sm.wrap_texels(rows, cols, layout, (h, w))
    stacked = SinusTextureLimit.stack(models)
    for model in models + [stacked, SinusTextureLimit.stack([SinusTextureLimit.stack(models[:2])] * 2)]:
        rt = model._runtime()
        image = model.params["image"].reshape(-1, h, w, 4)
        pad = np.stack([img[r, c] for img in image])
        np.testing.assert_array_equal(np.stack([sm.padded(img, layout) for img in image]), pad)
        np.testing.assert_array_equal(rt["padded"], pad.reshape(-1, 4))
        np.testing.assert_array_equal(rt["mask"], image[..., MASK].ravel() > 0.5)
        # every forbidden texel's nearest-boundary entry, filled on demand, and the range there
        forbidden = np.flatnonzero(~rt["mask"])
        filled = model._nearest(forbidden)
        table = model.nearest_table().reshape(-1, 3)
        # numpy's sin, cos and arctan may differ by an ulp between their vector and scalar loops,
        # which they pick by a row's place in its batch and by memory layout: the entries filled
        # on demand equal the whole table's to a few ulps (a texel is some 0.1 rad), and the
        # forward map is compared to the interpolation, not bit for bit
        np.testing.assert_allclose(filled[:, :3], table[forbidden], rtol=0, atol=1e-14)
        u, v = sm._FORWARD[layout](table[..., 0], table[..., 1], table[..., 2])
        reference = _reference_ranges(image, u.reshape(-1, h * w), v.reshape(-1, h * w), layout).reshape(-1, 2)
        np.testing.assert_allclose(filled[:, 3:], reference[forbidden], rtol=0, atol=1e-12)
    # the interpolation itself is exact, also for points a rounding step outside the texture
    # (beyond the padded border: those rows take the wrapped path)
    rt = stacked._runtime()
    u = rng.uniform(-0.2, 1.2, size=(3, 4000))
    v = rng.uniform(-0.2, 1.2, size=(3, 4000))
    bone = np.repeat(np.arange(3), 4000)
    image = stacked.params["image"].reshape(3, -1, 4)
    ranges = _ranges_at_uv(u.ravel(), v.ravel(), bone, rt, image, layout, (h, w))
    np.testing.assert_array_equal(ranges, _reference_ranges(stacked.params["image"], u, v, layout).reshape(-1, 2))


def test_nearest_entries_filled_on_demand_are_the_whole_table():
    """Projection fills the nearest-boundary entries of the forbidden texels it meets; in any
    order and batch, single or stacked, they are the whole table's entries bit for bit, and so
    are the projections."""
    fitted = [SinusTextureLimit.fit(cone_cloud(3000)[:, p], size=32) for p in ([0, 1, 2, 3], [0, 3, 2, 1])]
    models = [SinusTextureLimit.from_dict(m.to_dict()) for m in fitted]
    stacked = SinusTextureLimit.stack(models)
    reference = LimitModel.stack(fitted)
    np.testing.assert_array_equal(stacked.params["image"], reference.params["image"])
    assert stacked.config == reference.config and stacked.group_key() == reference.group_key()
    q = quaternion_random(4000, 5).reshape(2000, 2, 4)
    one_go = reference.project(q)
    for i in range(0, 2000, 7):  # the stack fills its entries a few rows at a time, backwards
        stacked.project(q[::-1][i : i + 7])
    np.testing.assert_array_equal(stacked.project(q), one_go)
    for model in (stacked, reference):
        rt = model._runtime()
        met = np.flatnonzero(rt["slot"])
        assert 0 < met.size < (~rt["mask"]).sum()  # only what projection met
        whole = np.concatenate([m.nearest_table().reshape(-1, 3) for m in fitted])
        np.testing.assert_array_equal(rt["nearest"][rt["slot"][met] - 1, :3], whole[met])
    np.testing.assert_array_equal(stacked.contains(q), reference.contains(q))
    np.testing.assert_array_equal(models[1].project(q[:, 1]), one_go[:, 1])


def test_dict_json_and_npz_round_trips():
    rng = np.random.default_rng(12)
    cloud = cone_cloud(3000, rng)
    limit = JointLimit.fit(cloud, kind="sinus_texture", padding=0.03)
    q = quaternion_random(500, rng)
    expected = limit.project(q)
    model = model_from_dict(limit.model.to_dict())
    np.testing.assert_array_equal(model.project(q), limit.model.project(q))
    for loaded in (limit_from_json(limit_to_json(limit)), load_limit_npz(io.BytesIO(limit_to_bytes(limit)))):
        assert loaded.model.kind == "sinus_texture"
        assert loaded.model.config == limit.model.config
        np.testing.assert_array_equal(loaded.project(q), expected)
        assert loaded.contains(cloud).all()


def test_from_dict_validation():
    data = SinusTextureLimit.from_image(image_of((32, 32))).to_dict()
    for change in (
        lambda d: d["config"].update(height=16),
        lambda d: d["config"].update(layout="cube"),
        lambda d: d["config"].update(extra=1),
        lambda d: d["params"]["image"].__setitem__((0, 0, STRESS), 2.0),
        lambda d: d["params"]["image"].__setitem__((0, 0, TWIST_MIN), 1.0),
        lambda d: d["params"].update(mask=d["params"]["image"][..., MASK]),
    ):
        bad = {"kind": data["kind"], "config": dict(data["config"]), "params": {k: v.copy() for k, v in data["params"].items()}}
        change(bad)
        with pytest.raises(ValueError):
            model_from_dict(bad)
    # files of earlier versions stored the (derived) nearest-boundary table: it is dropped
    legacy = {**data, "params": {**data["params"], "nearest": np.zeros((32, 32, 3))}}
    np.testing.assert_array_equal(model_from_dict(legacy).params["image"], data["params"]["image"])


def test_image_is_half_precision_twist_rounded_outward():
    image = image_of((32, 32))
    image[..., TWIST_MIN] = np.linspace(-6.3, 1.0, 32 * 32).reshape(32, 32)
    image[..., TWIST_MAX] = np.linspace(1.0, 6.3, 32 * 32).reshape(32, 32)
    image[..., STRESS] = np.linspace(0.0, 1.0, 32 * 32).reshape(32, 32)
    model = SinusTextureLimit.from_image(image)
    kept = model.params["image"]
    np.testing.assert_array_equal(kept, kept.astype(np.float16))
    low, high = kept[..., TWIST_MIN], kept[..., TWIST_MAX]
    inside = np.abs(image[..., TWIST_MIN : TWIST_MAX + 1]) <= np.float16(2 * np.pi)
    assert np.all((low <= image[..., TWIST_MIN])[inside[..., 0]]) and np.all((high >= image[..., TWIST_MAX])[inside[..., 1]])
    assert np.all(np.abs(kept[..., TWIST_MIN : TWIST_MAX + 1]) <= 2 * np.pi)  # clipped, not rounded past 2 pi
    assert np.abs(kept[..., TWIST_MIN : TWIST_MAX + 1] - image[..., TWIST_MIN : TWIST_MAX + 1])[inside].max() < 0.004
    np.testing.assert_allclose(kept[..., STRESS], image[..., STRESS], atol=2.5e-4)


def test_count_islands_across_seams():
    shape = (32, 32)
    c = sm.texel_centres("equal_area", shape)
    # a cap around -Y straddles all four corners (the seams) yet is one island
    count, _ = count_islands(c[..., 1] < -0.9, "equal_area")
    assert count == 1
    count, _ = count_islands((c[..., 1] < -0.9) | (c[..., 1] > 0.9), "equal_area")
    assert count == 2


@pytest.mark.parametrize(
    "channel, value, accepted",
    [
        (MASK, -0.0, True),
        (MASK, 1.0, True),
        (MASK, 0.5, False),
        (MASK, -1.0, False),
        (STRESS, -0.0, True),
        (STRESS, 1.0, True),
        (STRESS, 1.0009765625, False),  # the next half above 1
        (STRESS, -0.25, False),
        (TWIST_MIN, -6.28125, True),  # the largest half within 2 pi
        (TWIST_MIN, -6.28515625, False),
        (TWIST_MAX, 6.28515625, False),
        (TWIST_MIN, 0.75, False),  # above the texel's twist maximum (0.5)
        (TWIST_MAX, -0.75, False),  # below its minimum (-0.5)
        (TWIST_MAX, float("nan"), False),
        (STRESS, float("inf"), False),
    ],
)
def test_channel_checks_at_the_edges_of_float16(channel, value, accepted):
    """The channel checks read float16 bits: signed zeros, the half nearest 1 and 2 pi, signs."""
    image = np.zeros((8, 16, 4))
    image[..., MASK] = 1.0
    image[..., TWIST_MIN], image[..., TWIST_MAX] = -0.5, 0.5
    image[3, 5, channel] = value
    data = {"kind": "sinus_texture", "config": {"layout": "equal_area", "height": 8, "width": 16}, "params": {"image": image}}
    if accepted:
        model_from_dict(data)
    else:
        with pytest.raises(ValueError, match="sinus_texture limit"):
            model_from_dict(data)


def test_twist_ranges_pooled_over_nearby_swings_accept_new_passes_of_the_same_motion():
    """Motion capture samples a joint along a few passes (curves over the sphere of swings),
    each with its own twist: a texel's own samples give a range a few degrees wide that new
    passes miss (issue 13). Pooling the twists of swings within 15 degrees accepts them."""

    def passes(count, seed):
        r = np.random.default_rng(seed)
        out = []
        for _ in range(count):
            t = np.linspace(0.0, 1.0, 300)
            start, turn = r.uniform(0, 2 * np.pi), r.uniform(-1.5, 1.5)
            radius = r.uniform(0.2, 1.0) * (0.6 + 0.4 * np.sin(2 * np.pi * t + r.uniform(0, 6)))
            d = tilt(A * radius * np.cos(start + turn * t), B * radius * np.sin(start + turn * t))
            lo, hi = twist_range(d)
            twist = lo + (hi - lo) * (0.5 + 0.5 * np.sin(r.uniform(1, 4) * 2 * np.pi * t + r.uniform(0, 6)))
            out.append(rotation_from_direction_twist(d, twist))
        return np.concatenate(out)

    train, new = passes(12, 1), passes(12, 2)
    pooled = JointLimit.fit(train, kind="sinus_texture")
    own = JointLimit.fit(train, kind="sinus_texture", twist_radius=0.0)
    assert pooled.contains(train).all() and own.contains(train).all()
    recall_pooled, recall_own = pooled.contains(new).mean(), own.contains(new).mean()
    # measured: 0.90 pooled against 0.19 per texel (the rest: swings the training passes never reached)
    assert recall_pooled > 0.85 and recall_pooled > recall_own + 0.5, (recall_pooled, recall_own)
