# SPDX-License-Identifier: GPL-3.0-or-later
"""Sinus textures in Blender: a packed image to edit, rebuilt into the live limit; Kelly PNG
and float EXR files."""

import bpy
import numpy as np
import pytest
from rigs import evaluated_local_rotation, expect_error, fitted_rig


@pytest.fixture
def textured(clean_file, addon):
    obj, pb, _ = fitted_rig(addon, model="sinus_texture")
    return obj, pb


def _direction(addon, rel):
    return addon.limits.geometry.quaternion.quaternion_rotate(rel, np.array([0.0, 1.0, 0.0]))


def test_painting_a_forbidden_stroke_then_rebuilding_forbids_that_swing_live(textured, addon):
    obj, pb = textured
    storage, maps = addon.rig.io.storage, addon.limits.geometry.sphere_maps
    limit = storage.read_limit(pb)
    cloud = storage.read_cloud(pb)
    pose = cloud[40]
    assert limit.contains(pose)
    assert bpy.ops.pose.joint_limits_texture_edit() == {"FINISHED"}
    image = bpy.data.images[addon.rig.tasks.texture.image_name(obj, pb)]
    assert image.packed_file is not None and image.colorspace_settings.is_data
    h, w = limit.model.params["image"].shape[:2]
    assert tuple(image.size) == (w, h)
    # paint: forbid every texel within 0.15 rad of the pose's swing direction (a brush stroke)
    px = np.empty(w * h * 4, dtype=np.float32)
    image.pixels.foreach_get(px)
    px = px.reshape(h, w, 4)
    centres = maps.texel_centres(limit.model.config["layout"], (h, w))
    d = _direction(addon, limit.to_relative(pose))
    stroke = np.arccos(np.clip(centres @ d, -1, 1)) < 0.15
    assert stroke.sum() > 10
    px[stroke, 0] = 0.0
    image.pixels.foreach_set(px.ravel())
    assert bpy.ops.pose.joint_limits_texture_rebuild() == {"FINISHED"}
    rebuilt = storage.read_limit(pb)
    assert not rebuilt.contains(pose)
    # the live handler now moves that pose out of the painted stroke
    obj.animation_data.action = None
    pb.rotation_quaternion = pose
    bpy.context.scene.joint_limits.enforce_live = True
    bpy.context.scene.frame_set(1)
    after = np.array(pb.rotation_quaternion)
    assert rebuilt.violation(after) < 1e-4
    moved_to = _direction(addon, rebuilt.to_relative(after))
    assert np.arccos(np.clip(moved_to @ d, -1, 1)) > 0.14


def test_texture_image_and_rebuilt_limit_survive_save_and_reload(textured, addon, tmp_path):
    obj, pb = textured
    bpy.ops.pose.joint_limits_texture_edit()
    name = addon.rig.tasks.texture.image_name(obj, pb)
    path = tmp_path / "tex.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(path))
    bpy.ops.wm.read_homefile(use_empty=True)
    bpy.ops.wm.open_mainfile(filepath=str(path))
    image = bpy.data.images[name]
    assert image.packed_file is not None
    pb = bpy.data.objects["Rig"].pose.bones["lower"]
    before = addon.rig.io.storage.read_limit(pb)
    rebuilt = addon.rig.tasks.texture.rebuild_from_image(bpy.data.objects["Rig"], pb)
    probe = addon.limits.geometry.quaternion.quaternion_random(300, 4)
    np.testing.assert_array_equal(rebuilt.contains(probe), before.contains(probe))


@pytest.mark.parametrize("ext", ["png", "exr"])
def test_texture_files_round_trip(textured, addon, tmp_path, ext):
    obj, pb = textured
    limit = addon.rig.io.storage.read_limit(pb)
    path = tmp_path / f"limit.{ext}"
    assert bpy.ops.pose.joint_limits_texture_export(filepath=str(path)) == {"FINISHED"}
    assert path.stat().st_size > 1000
    assert bpy.ops.pose.joint_limits_texture_import(filepath=str(path)) == {"FINISHED"}
    loaded = addon.rig.io.storage.read_limit(pb)
    if ext == "exr":
        np.testing.assert_allclose(loaded.model.params["image"], limit.model.params["image"], atol=1e-6)
    else:
        expected = addon.limits.models.sinus.kelly.to_kelly_rgba8(limit.model)
        np.testing.assert_array_equal(addon.limits.models.sinus.kelly.to_kelly_rgba8(loaded.model), expected)
        probe = addon.limits.geometry.quaternion.quaternion_random(500, 2)
        direct = addon.limits.models.sinus.kelly.from_kelly_rgba8(expected)
        np.testing.assert_array_equal(loaded.model.contains(probe), direct.contains(probe))


def test_bad_texture_images_are_refused_and_keep_the_limit(textured, addon, tmp_path):
    obj, pb = textured
    before = pb.joint_limit.limit_data
    bpy.ops.pose.joint_limits_texture_edit()
    image = bpy.data.images[addon.rig.tasks.texture.image_name(obj, pb)]
    px = np.zeros(image.size[0] * image.size[1] * 4, dtype=np.float32)
    image.pixels.foreach_set(px)  # everything forbidden
    expect_error(bpy.ops.pose.joint_limits_texture_rebuild, "forbids every swing")
    image.scale(64, 32)  # resized by mistake
    expect_error(bpy.ops.pose.joint_limits_texture_rebuild, "is 64x32, the limit's texture is")
    bpy.data.images.remove(image)
    expect_error(bpy.ops.pose.joint_limits_texture_rebuild, "no texture image")
    small = bpy.data.images.new("small", 32, 16)
    small.filepath_raw = str(tmp_path / "small.png")
    small.file_format = "PNG"
    small.save()
    expect_error(bpy.ops.pose.joint_limits_texture_import, "Could not import", filepath=str(tmp_path / "small.png"))
    expect_error(bpy.ops.pose.joint_limits_texture_import, "Could not import", filepath=str(tmp_path / "missing.exr"))
    assert pb.joint_limit.limit_data == before


def test_texture_panel_and_stress_of_the_current_pose(textured, addon):
    obj, pb = textured
    assert addon.ui.panels.texture.JOINTLIMITS_PT_texture.poll(bpy.context)
    limit = addon.rig.io.storage.read_limit(pb)
    obj.animation_data.action = None
    pb.rotation_quaternion = addon.rig.io.storage.read_cloud(pb)[3]
    lines = addon.rig.live.status.texture_details(pb)
    stress = float(limit.model.stress(limit.to_relative(np.array(pb.rotation_quaternion))))
    assert lines[0] == f"Stress {stress:.2f}" and "island" in lines[1]
    pb.joint_limit.model = "kdop"
    assert not addon.ui.panels.texture.JOINTLIMITS_PT_texture.poll(bpy.context)


def test_report_gives_peak_stress_and_its_frame(textured, addon):
    obj, pb = textured
    assert bpy.ops.pose.joint_limits_report() == {"FINISHED"}
    text = bpy.data.texts["Joint Limits Report"].as_string()
    frames = np.arange(1, 241)
    rows = addon.rig.tasks.report.violation_report(obj, bpy.context.scene, obj.animation_data.action, frames)
    row = rows[0]
    limit = addon.rig.io.storage.read_limit(pb)
    stress = limit.model.stress(limit.to_relative(addon.rig.io.storage.read_cloud(pb)))
    assert row["stress"] == pytest.approx(stress.max(), abs=1e-4)
    assert f"stress {row['stress']:.2f} at frame {row['stress_frame']}" in text


def test_sinus_cone_and_boundary_tour_agree(textured, addon):
    obj, pb = textured
    q = addon.limits.geometry.quaternion
    assert bpy.ops.pose.joint_limits_texture_cone() == {"FINISHED"}
    cone = bpy.data.objects[addon.rig.tasks.texture.cone_name(obj, pb)]
    assert len(cone.data.vertices) == 65 and len(cone.data.polygons) == 65
    assert bpy.ops.pose.joint_limits_boundary_tour(count=64) == {"FINISHED"}
    tour = obj.animation_data.action
    assert tour.name == "lower_boundary_tour" and bpy.data.actions.get("ROM") is not None
    limit = addon.rig.io.storage.read_limit(pb)
    bpy.context.view_layer.update()
    rim = np.array([cone.matrix_world @ v.co for v in cone.data.vertices])
    apex, rim = rim[0], rim[1:]
    for k in (0, 16, 40):
        bpy.context.scene.frame_set(1 + k)
        local = evaluated_local_rotation(obj, "lower")
        assert limit.contains(local), "tour poses are allowed"
        # the bone's Y axis points along the cone's k-th rim edge
        y_world = np.array((obj.matrix_world @ pb.matrix).to_3x3().col[1])
        edge = rim[k] - apex
        assert np.degrees(np.arccos(np.clip(y_world @ edge / np.linalg.norm(edge), -1, 1))) < 0.5
        # a little further out along the same azimuth is forbidden
        d, twist = addon.limits.geometry.swing_twist.direction_twist(limit.to_relative(local))
        out = d + 0.05 * (d - np.array([0.0, 1.0, 0.0]))
        beyond = q.quaternion_multiply(
            limit.reference, addon.limits.geometry.swing_twist.rotation_from_direction_twist(out, twist)
        )
        assert not limit.contains(beyond)


def test_fit_warns_about_disconnected_regions(clean_file, addon, capfd):
    q = addon.limits.geometry.quaternion
    obj = addon.rig.io.humanoid.build_armature(addon.limits.body.skeleton.humanoid_skeleton(), "Humanoid")
    rng = np.random.default_rng(3)
    frames = 120
    motion = np.tile(np.array([1.0, 0, 0, 0]), (frames, len(obj.pose.bones), 1))
    # two separate swing clusters, 70 degrees either side of rest, nothing in between
    side = np.where(np.arange(frames) < frames // 2, 1.0, -1.0)
    swing = np.stack(
        (side * 0.6 + rng.normal(scale=0.05, size=frames), np.zeros(frames), rng.normal(scale=0.05, size=frames)), -1
    )
    b = obj.pose.bones.find("forearm.L")
    motion[:, b] = q.quaternion_from_exp_map(swing)
    addon.rig.io.humanoid.key_rotations(obj, motion, "Two")
    bpy.ops.pose.select_all(action="DESELECT")
    pb = obj.pose.bones["forearm.L"]
    if hasattr(pb, "select"):
        pb.select = True
    else:
        pb.bone.select = True
    assert bpy.ops.pose.joint_limits_sample() == {"FINISHED"}
    assert bpy.ops.pose.joint_limits_fit(model="sinus_texture") == {"FINISHED"}
    assert addon.rig.io.storage.read_limit(pb).model.region_count() == 2
    assert "forearm.L: 2 disconnected regions" in capfd.readouterr().out
