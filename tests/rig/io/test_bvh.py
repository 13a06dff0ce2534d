# SPDX-License-Identifier: GPL-3.0-or-later
"""BVH motion sampled onto a rig through Blender's own importer (the BVH is written by the test)."""

import bpy
import pytest
from bvh_files import write_bvh
from rigs import expect_error, select_only

pytestmark = pytest.mark.blender42


def test_bvh_onto_its_own_skeleton_reproduces_the_rotations(clean_file, addon, tmp_path):
    path = write_bvh(tmp_path / "take.bvh")
    target = addon.rig.io.bvh.import_bvh_armature(bpy.context, path)
    bpy.context.view_layer.objects.active = target
    bpy.ops.object.mode_set(mode="POSE")
    names = ["LeftArm", "LeftForeArm", "LeftUpLeg", "Spine"]
    select_only(target, names)
    objects_before = set(bpy.data.objects)
    assert bpy.ops.pose.joint_limits_import_bvh(filepath=str(path)) == {"FINISHED"}
    assert set(bpy.data.objects) == objects_before, "the temporary armature is removed"
    assert bpy.context.object == target and bpy.context.mode == "POSE"
    q = addon.limits.geometry.quaternion
    frames = addon.rig.io.actions.action_frames(target.animation_data.action)
    own, keyed = addon.rig.io.actions.keyed_rotations(target, target.animation_data.action, names, frames)
    assert keyed.all()
    for i, name in enumerate(names):
        cloud = addon.rig.io.storage.read_cloud(target.pose.bones[name])
        assert len(cloud) == len(frames) == 30
        assert q.quaternion_angle(cloud, own[:, i]).max() < 1e-4, name


def test_bvh_onto_a_differently_named_rig(clean_file, addon, tmp_path):
    path = write_bvh(tmp_path / "take.bvh", seed=3)
    skel = addon.limits.body.skeleton.humanoid_skeleton()
    rig = addon.rig.io.humanoid.build_armature(skel, "Humanoid")
    bpy.ops.pose.select_all(action="SELECT")
    assert bpy.ops.pose.joint_limits_import_bvh(filepath=str(path)) == {"FINISHED"}
    sampled = {pb.name for pb in rig.pose.bones if pb.joint_limit.cloud_count == 30}
    assert {"upper_arm.L", "forearm.L", "thigh.L", "shin.L", "head"} <= sampled
    assert "upper_arm.R" not in sampled, "no right arm in the file"


def test_bad_bvh_file_is_refused_cleanly(clean_file, addon, tmp_path):
    skel = addon.limits.body.skeleton.humanoid_skeleton()
    rig = addon.rig.io.humanoid.build_armature(skel, "Humanoid")
    bpy.ops.pose.select_all(action="SELECT")
    bad = tmp_path / "bad.bvh"
    bad.write_text("HIERARCHY\nROOT Hips\n{ broken")
    objects = set(bpy.data.objects)
    expect_error(bpy.ops.pose.joint_limits_import_bvh, "BVH", filepath=str(bad))
    assert set(bpy.data.objects) == objects
    assert bpy.context.object == rig and bpy.context.mode == "POSE"
    assert all(pb.joint_limit.cloud_count == 0 for pb in rig.pose.bones)
