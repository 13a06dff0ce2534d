# SPDX-License-Identifier: GPL-3.0-or-later
"""Sampling options: several actions, frame ranges, densification, constraints, reference pose,
twist axis, undo."""

import bpy
import numpy as np
import pytest
from rigs import chain_rig, cone_motion, expect_error, select_only

pytestmark = pytest.mark.blender42


def _rig_and_motion(addon, frames=60, seed=0):
    obj = chain_rig()
    motion = np.tile(np.array([1.0, 0, 0, 0]), (frames, 3, 1))
    motion[:, 2] = cone_motion(addon.limits.geometry.quaternion, frames, seed=seed)
    return obj, motion


def test_sample_several_actions_and_a_frame_range(clean_file, addon):
    obj, a = _rig_and_motion(addon, 60, 0)
    _, b = _rig_and_motion(addon, 40, 1)
    bpy.data.objects.remove(_)
    bpy.context.view_layer.objects.active = obj
    addon.rig.io.humanoid.key_rotations(obj, a, "A")
    addon.rig.io.humanoid.key_rotations(obj, b, "B", assign=False)
    select_only(obj, ["lower"])
    pb = obj.pose.bones["lower"]
    assert bpy.ops.pose.joint_limits_sample(source="NAMED", action_names="A, B") == {"FINISHED"}
    assert pb.joint_limit.cloud_count == 100
    cloud = addon.rig.io.storage.read_cloud(pb)
    q = addon.limits.geometry.quaternion
    assert q.quaternion_angle(cloud[:60], a[:, 2]).max() < 1e-5
    assert q.quaternion_angle(cloud[60:], b[:, 2]).max() < 1e-5
    assert bpy.ops.pose.joint_limits_sample(use_frame_range=True, frame_start=11, frame_end=20) == {"FINISHED"}
    assert pb.joint_limit.cloud_count == 10
    assert bpy.ops.pose.joint_limits_sample(use_frame_range=True, frame_start=1, frame_end=5, append=True) == {"FINISHED"}
    assert pb.joint_limit.cloud_count == 15
    expect_error(bpy.ops.pose.joint_limits_sample, "no action named", source="NAMED", action_names="Nope")
    assert pb.joint_limit.cloud_count == 15, "a failed sample loses nothing"


def test_densify_keeps_consecutive_samples_close(clean_file, addon):
    obj, motion = _rig_and_motion(addon, 20)
    addon.rig.io.humanoid.key_rotations(obj, motion, "A")
    select_only(obj, ["lower"])
    assert bpy.ops.pose.joint_limits_sample(densify=np.radians(1.0)) == {"FINISHED"}
    cloud = addon.rig.io.storage.read_cloud(obj.pose.bones["lower"])
    gaps = addon.limits.geometry.quaternion.quaternion_angle(cloud[1:], cloud[:-1])
    assert len(cloud) > 20 and gaps.max() <= np.radians(1.0) + 1e-5


def test_min_spacing_thins_the_cloud(clean_file, addon):
    obj, motion = _rig_and_motion(addon, 200)
    addon.rig.io.humanoid.key_rotations(obj, motion, "A")
    select_only(obj, ["lower"])
    spacing = np.radians(5.0)
    assert bpy.ops.pose.joint_limits_sample(min_spacing=spacing) == {"FINISHED"}
    cloud = addon.rig.io.storage.read_cloud(obj.pose.bones["lower"])
    q = addon.limits.geometry.quaternion
    assert 10 < len(cloud) < 200
    pair = q.quaternion_angle(cloud[:, None], cloud[None, :]) + np.eye(len(cloud)) * 10
    assert pair.min() >= spacing - 1e-4, "kept samples are at least the spacing apart"
    cover = q.quaternion_angle(motion[:, 2][:, None], cloud[None, :]).min(axis=1)
    assert cover.max() < spacing + 1e-4, "every original sample is near a kept one"


def test_evaluated_sampling_sees_constraints(clean_file, addon):
    obj, motion = _rig_and_motion(addon, 30)
    addon.rig.io.humanoid.key_rotations(obj, motion, "A")
    con = obj.pose.bones["lower"].constraints.new("LIMIT_ROTATION")
    con.owner_space = "LOCAL"
    con.use_limit_z = True  # clamp Z to 0
    select_only(obj, ["lower"])
    assert bpy.ops.pose.joint_limits_sample(evaluated=True) == {"FINISHED"}
    evaluated = addon.rig.io.storage.read_cloud(obj.pose.bones["lower"])
    euler = addon.limits.geometry.quaternion.euler_from_quaternion(evaluated, "XYZ")
    assert np.abs(euler[:, 2]).max() < 1e-4
    assert bpy.ops.pose.joint_limits_sample(evaluated=False) == {"FINISHED"}
    keyed = addon.limits.geometry.quaternion.euler_from_quaternion(
        addon.rig.io.storage.read_cloud(obj.pose.bones["lower"]), "XYZ"
    )
    assert np.abs(keyed[:, 2]).max() > 0.1


@pytest.mark.parametrize("reference", ["MEAN", "REST", "FRAME"])
def test_reference_pose_choices(clean_file, addon, reference):
    q = addon.limits.geometry.quaternion
    obj, motion = _rig_and_motion(addon, 60)
    # the whole motion sits ~150 degrees from rest (as BVH legs do)
    offset = q.quaternion_from_exp_map(np.array([np.radians(150), 0, 0]))
    motion[:, 2] = q.quaternion_multiply(offset, motion[:, 2])
    addon.rig.io.humanoid.key_rotations(obj, motion, "A")
    select_only(obj, ["lower"])
    pb = obj.pose.bones["lower"]
    pb.joint_limit.reference = reference
    pb.joint_limit.reference_frame = 7
    bpy.ops.pose.joint_limits_sample()
    bpy.ops.pose.joint_limits_fit()
    limit = addon.rig.io.storage.read_limit(pb)
    expected = {"MEAN": q.quaternion_mean(motion[:, 2]), "REST": np.array([1.0, 0, 0, 0]), "FRAME": motion[6, 2]}[reference]
    assert q.quaternion_angle(limit.reference, expected) < 1e-5
    assert limit.contains(motion[:, 2]).all()


def test_twist_axis_from_children(clean_file, addon):
    obj = chain_rig()
    bpy.ops.object.mode_set(mode="EDIT")
    child = obj.data.edit_bones.new("child")
    child.parent = obj.data.edit_bones["upper"]
    child.head = (0.5, 0.0, 2.0)  # the upper bone's head is (0, 0, 1): child at 45 degrees
    child.tail = (0.5, 0.0, 3.0)
    bpy.ops.object.mode_set(mode="POSE")
    pb = obj.pose.bones["upper"]
    pb.joint_limit.twist_axis = "CHILDREN"
    axis = addon.rig.tasks.fit.twist_axis(pb)
    # 'lower' (straight along the bone) and 'child' (tilted 26.6 degrees) average between them
    to_bone = np.array(obj.data.bones["upper"].matrix_local.to_3x3().inverted())
    dirs = np.array([[0, 0, 1.0], [0.5, 0, 1.0]]) @ to_bone.T
    expected = (dirs / np.linalg.norm(dirs, axis=1, keepdims=True)).mean(axis=0)
    np.testing.assert_allclose(axis, expected / np.linalg.norm(expected), atol=1e-6)
    assert abs(axis[0]) + abs(axis[2]) > 0.2
    pb.joint_limit.twist_axis = "BONE_Y"
    np.testing.assert_allclose(addon.rig.tasks.fit.twist_axis(pb), [0, 1, 0])


def test_fit_can_be_undone(clean_file, addon):
    obj, motion = _rig_and_motion(addon, 40)
    addon.rig.io.humanoid.key_rotations(obj, motion, "A")
    select_only(obj, ["lower"])
    bpy.ops.pose.joint_limits_sample()
    bpy.ops.ed.undo_push(message="sampled")
    bpy.ops.pose.joint_limits_fit()
    bpy.ops.ed.undo_push(message="fitted")
    assert bpy.data.objects["Rig"].pose.bones["lower"].joint_limit.limit_data
    bpy.ops.ed.undo()
    pb = bpy.data.objects["Rig"].pose.bones["lower"]
    assert pb.joint_limit.limit_data == "" and pb.joint_limit.cloud_count == 40
