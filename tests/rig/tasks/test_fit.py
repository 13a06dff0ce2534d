# SPDX-License-Identifier: GPL-3.0-or-later
"""Issue 13 in Blender: samples remember their action, the default model ``auto`` is fitted by
cross-validation over those actions and reports what it tried, and the root bone (which
carries the character's heading) is fitted but not limited by default."""

import bpy
import numpy as np
from rigs import chain_rig, cone_motion, select_only


def _motion(addon, frames, seed, heading=0.0):
    q = addon.limits.geometry.quaternion
    motion = np.tile(np.array([1.0, 0, 0, 0]), (frames, 3, 1))
    turn = np.linspace(0.0, heading, frames)
    motion[:, 0] = q.quaternion_from_exp_map(np.outer(turn, [0.0, 0.0, 1.0]) + [0.0, 0.0, 0.02 * seed])
    motion[:, 1] = cone_motion(q, frames, seed=seed)
    motion[:, 2] = cone_motion(q, frames, seed=seed + 7)
    return motion


def test_samples_remember_their_action_and_auto_is_cross_validated_by_action(clean_file, addon):
    obj = chain_rig()
    walk = addon.rig.io.humanoid.key_rotations(obj, _motion(addon, 90, 1), "Walk")
    run = addon.rig.io.humanoid.key_rotations(obj, _motion(addon, 60, 2), "Run")
    walk.use_fake_user = run.use_fake_user = True
    select_only(obj, ["upper", "lower"])
    assert bpy.ops.pose.joint_limits_sample(source="NAMED", action_names="Walk, Run") == {"FINISHED"}
    pb = obj.pose.bones["lower"]
    q, runs = addon.rig.io.storage.read_cloud_clips(pb)
    assert runs == [("Walk", 90), ("Run", 60)] and len(q) == 150
    assert pb.joint_limit.model == "auto", "auto is the default model"
    assert bpy.ops.pose.joint_limits_fit() == {"FINISHED"}
    report = addon.rig.tasks.fit_report.read_report(pb.joint_limit)
    assert report["by_clip"] and report["folds"] == 2
    assert len(report["candidates"]) == len(addon.limits.fitting.cross_validation.AUTO_CANDIDATES)
    limit = addon.rig.io.storage.read_limit(pb)
    chosen = report["candidates"][report["chosen"]]
    assert limit.model.kind == chosen["kind"]
    text = bpy.data.texts[addon.rig.tasks.fit_report.TEXT_NAME].as_string()
    assert "lower: 2 folds by clips" in text and "upper:" in text
    # the trade-off picture: a panel per bone (upper, lower), the chosen model ringed in white
    image = bpy.data.images[addon.rig.tasks.fit_report.PICTURE_NAME]
    height, width = addon.limits.fitting.tradeoff_picture.PANEL
    assert tuple(image.size) == (2 * width, height) and image.packed_file is not None
    pixels = np.empty(2 * width * height * 4, dtype=np.float32)
    image.pixels.foreach_get(pixels)
    lower = pixels.reshape(height, 2 * width, 4)[::-1, width:, :3]  # (top row first)
    row, col = addon.limits.fitting.tradeoff_picture._to_pixel(chosen["volume"], chosen["recall"], height, width)
    np.testing.assert_allclose(lower[row - 4, col], 1.0, atol=0.01)  # the ring around the chosen dot
    colour = addon.limits.fitting.tradeoff_picture.KIND_COLOURS[chosen["kind"]]
    np.testing.assert_allclose(lower[row, col], colour, atol=0.01)
    # appending keeps the earlier clips; the clip runs survive a mirror-free refit
    assert bpy.ops.pose.joint_limits_sample(source="NAMED", action_names="Walk", append=True) == {"FINISHED"}
    assert addon.rig.io.storage.read_cloud_clips(pb)[1] == [("Walk", 90), ("Run", 60), ("Walk", 90)]


def test_a_turning_root_keeps_its_heading_when_baked(clean_file, addon):
    """Fitted on a straight walk, a root limit clamped a turning walk's heading; the root
    carries the heading, so its limit is fitted but off, and the bake keeps the turn."""
    q = addon.limits.geometry.quaternion
    obj = chain_rig()
    straight = addon.rig.io.humanoid.key_rotations(obj, _motion(addon, 60, 1), "Straight")
    straight.use_fake_user = True
    select_only(obj, ["root", "upper", "lower"])
    assert bpy.ops.pose.joint_limits_sample() == {"FINISHED"}
    assert bpy.ops.pose.joint_limits_fit() == {"FINISHED"}
    root = obj.pose.bones["root"]
    assert root.joint_limit.has_limit and not root.joint_limit.enabled, "fitted, but not limited"
    assert obj.pose.bones["upper"].joint_limit.enabled
    turning = addon.rig.io.humanoid.key_rotations(obj, _motion(addon, 60, 1, heading=np.radians(45.0)), "Turn")
    baked = addon.rig.tasks.bake.bake_action(obj, bpy.context.scene, turning, list(range(1, 61)))
    obj.animation_data.action = baked
    if hasattr(obj.animation_data, "action_slot") and baked.slots:
        obj.animation_data.action_slot = baked.slots[0]
    bpy.context.scene.frame_set(60)
    heading = q.quaternion_angle(np.array(root.rotation_quaternion), np.array([1.0, 0, 0, 0]))
    assert np.degrees(heading) > 40.0
    root.joint_limit.enabled = True  # turned on by hand, it stays on through a refit
    root.joint_limit.target_recall = 0.95
    assert root.joint_limit.enabled


def test_a_bone_sampled_on_one_frame_fits_with_auto_and_its_report_says_recall_is_unmeasured(clean_file, addon):
    """One sample leaves nothing to hold out: the cross-validated fit still gives a limit around
    it, and the report and its picture say so instead of failing on a NaN recall."""
    obj = chain_rig()
    pb = obj.pose.bones["lower"]
    one = np.array([[0.95, 0.1, 0.2, 0.1]]) / np.linalg.norm([0.95, 0.1, 0.2, 0.1])
    addon.rig.tasks.sample.store_clouds(obj, {"lower": one})
    pb.joint_limit.model = "auto"
    select_only(obj, ["lower"])
    assert bpy.ops.pose.joint_limits_fit() == {"FINISHED"}
    assert addon.rig.io.storage.read_limit(pb).contains(one).all()
    report = bpy.data.texts[addon.rig.tasks.fit_report.TEXT_NAME].as_string()
    assert "recall is unmeasured" in report and "nan" not in report
    assert addon.rig.tasks.fit_report.PICTURE_NAME in bpy.data.images
