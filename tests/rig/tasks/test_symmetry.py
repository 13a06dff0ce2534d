# SPDX-License-Identifier: GPL-3.0-or-later
"""Left/right pairs learn from each other's samples seen in the mirror (issue 13, item 2), on a
real rig: the mirrored samples pose the partner as the mirror image, whatever its roll; a fit
learns from both sides, or one side with the option off; rigs whose rest pose does not mirror
get no partners."""

import json

import bpy
import numpy as np
import pytest
from rigs import cone_motion, select_only


def humanoid(addon, roll_right_deg=0.0):
    """The add-on's humanoid (mirrored about X = 0); ``upper_arm.R`` rolled by ``roll_right_deg``
    more than the mirror image of ``upper_arm.L`` (a rig whose rolls are not mirror images)."""
    obj = addon.rig.io.humanoid.build_armature(addon.limits.body.skeleton.humanoid_skeleton())
    if roll_right_deg:
        bpy.ops.object.mode_set(mode="EDIT")
        obj.data.edit_bones["upper_arm.R"].roll += np.radians(roll_right_deg)
        bpy.ops.object.mode_set(mode="POSE")
    return obj


def posed_axes(obj, name):
    bpy.context.view_layer.update()
    return np.array(obj.pose.bones[name].matrix.to_3x3())


@pytest.mark.parametrize("roll", [0.0, 35.0])
def test_mirrored_samples_pose_the_partner_as_the_mirror_image(clean_file, addon, roll):
    obj = humanoid(addon, roll)
    mirror = addon.rig.tasks.symmetry.body_mirror(obj)
    assert set(mirror.poses.values()) == {"rest"}
    assert mirror.partners["upper_arm.L"] == "upper_arm.R" and mirror.partners["spine"] == "spine"
    assert "hips" in mirror.partners and abs(abs(mirror.normal("upper_arm.L")[0]) - 1.0) < 1e-6
    s = np.diag([-1.0, 1.0, 1.0])
    left, right = obj.pose.bones["upper_arm.L"], obj.pose.bones["upper_arm.R"]
    rest_l, rest_r = posed_axes(obj, "upper_arm.L"), posed_axes(obj, "upper_arm.R")
    q = addon.limits.geometry.quaternion.quaternion_random(12, 3)
    seen = mirror.mirrored(q, "upper_arm.R", "upper_arm.L")
    for a, b in zip(q, seen):
        left.rotation_quaternion = a
        right.rotation_quaternion = b
        posed_l, posed_r = posed_axes(obj, "upper_arm.L"), posed_axes(obj, "upper_arm.R")
        # the right arm points where the left one's mirror image points, its axes as at rest
        np.testing.assert_allclose(posed_r[:, 1], s @ posed_l[:, 1], atol=1e-5)
        np.testing.assert_allclose(posed_r, s @ posed_l @ (rest_l.T @ s @ rest_r), atol=1e-5)
    if roll:  # Blender's own X-flip convention is wrong for such a rig; this is not
        assert addon.limits.geometry.quaternion.quaternion_angle(seen, q * [1, 1, -1, -1]).max() > 0.3


def one_sided_rig(addon):
    """The humanoid with a keyed action in which only the left upper arm moves (a cone to one
    side); both upper arms sampled. Returns ``(obj, the left arm's motion)``."""
    q = addon.limits.geometry.quaternion
    obj = humanoid(addon, roll_right_deg=35.0)
    names = [pb.name for pb in obj.pose.bones]
    frames = 200
    motion = np.tile(np.array([1.0, 0, 0, 0]), (frames, len(names), 1))
    left = q.quaternion_multiply(q.quaternion_from_exp_map(np.array([0.7, 0.0, 0.0])), cone_motion(q, frames, 0.4, 0.2, 1))
    motion[:, names.index("upper_arm.L")] = left
    addon.rig.io.humanoid.key_rotations(obj, motion, "OneSide")
    select_only(obj, ["upper_arm.L", "upper_arm.R"])
    assert bpy.ops.pose.joint_limits_sample() == {"FINISHED"}
    for name in ("upper_arm.L", "upper_arm.R"):
        settings = obj.pose.bones[name].joint_limit
        settings.model, settings.mode, settings.padding = "kdop", "FULL", 0.05
    return obj, left


def test_a_fit_learns_from_both_sides_and_one_side_with_the_option_off(clean_file, addon, tmp_path):
    obj, left = one_sided_rig(addon)
    right = obj.pose.bones["upper_arm.R"]
    assert right.joint_limit.use_symmetry  # the default
    assert bpy.ops.pose.joint_limits_fit() == {"FINISHED"}
    mirror_image = addon.rig.tasks.symmetry.body_mirror(obj).mirrored(left, "upper_arm.R", "upper_arm.L")
    limit = addon.rig.io.storage.read_limit(right)
    assert limit.contains(mirror_image).mean() > 0.97  # the right arm never moved like that
    assert json.loads(right.joint_limit.fit_report)["mirrored"] == {"partner": "upper_arm.L", "samples": 200}
    line = addon.rig.tasks.fit_report.mirrored_line(right)
    assert "upper_arm.L" in line and "200" in line

    right.joint_limit.use_symmetry = False  # refits (the setting's update), from its own samples only
    limit = addon.rig.io.storage.read_limit(right)
    assert limit.contains(mirror_image).mean() < 0.05
    assert addon.rig.tasks.fit_report.mirrored_line(right) == ""

    path, name = str(tmp_path / "sides.blend"), obj.name
    bpy.ops.wm.save_as_mainfile(filepath=path)
    bpy.ops.wm.open_mainfile(filepath=path)
    obj = bpy.data.objects[name]
    assert not obj.pose.bones["upper_arm.R"].joint_limit.use_symmetry
    assert obj.pose.bones["upper_arm.L"].joint_limit.use_symmetry


def test_a_rig_whose_rest_pose_does_not_mirror_mirrors_in_its_neutral_pose(clean_file, addon):
    """Like Bandai's BVH skeleton: the right arm points up at rest, and the motion holds it out
    to the side (the mirror image of the left arm's rest). The rig mirrors in its neutral pose
    (each bone at the mean of its samples), and the mirrored samples pose the right arm as the
    mirror image of the left, checked on Blender's evaluated pose."""
    q = addon.limits.geometry.quaternion
    obj = humanoid(addon)
    bpy.ops.object.mode_set(mode="EDIT")
    arm = obj.data.edit_bones["upper_arm.R"]
    for child in arm.children_recursive:
        child.use_connect = False
    length = arm.length
    arm.tail = (arm.head[0], arm.head[1], arm.head[2] + length)  # pointing up
    arm.roll = 0.6
    bpy.ops.object.mode_set(mode="POSE")
    assert "upper_arm.L" not in addon.rig.tasks.symmetry.body_mirror(obj).partners  # nothing sampled: at rest
    left, right = obj.pose.bones["upper_arm.L"], obj.pose.bones["upper_arm.R"]
    s = np.diag([-1.0, 1.0, 1.0])
    # the right arm's rotation that holds it as the mirror image of the left arm at rest
    rest_l, rest_r = posed_axes(obj, "upper_arm.L"), posed_axes(obj, "upper_arm.R")
    flip = np.diag([-1.0, 1.0, 1.0])
    hold = q.quaternion_from_matrix(rest_r.T @ s @ rest_l @ flip)
    names = [pb.name for pb in obj.pose.bones]
    frames = 200
    motion = np.tile(np.array([1.0, 0, 0, 0]), (frames, len(names), 1))
    motion[:, names.index("upper_arm.L")] = cone_motion(q, frames, 0.4, 0.2, 1)
    motion[:, names.index("upper_arm.R")] = hold
    addon.rig.io.humanoid.key_rotations(obj, motion, "Stance")
    select_only(obj, ["upper_arm.L", "upper_arm.R"])
    assert bpy.ops.pose.joint_limits_sample() == {"FINISHED"}
    obj.animation_data.action = None  # (the test poses the bones by hand below)
    mirror = addon.rig.tasks.symmetry.body_mirror(obj)
    assert mirror.poses["upper_arm.L"] == "neutral" and mirror.partners["upper_arm.L"] == "upper_arm.R"
    assert mirror.poses["forearm.L"] == "rest"  # (the forearm still mirrors at rest)
    samples = q.quaternion_random(10, 7)
    seen = mirror.mirrored(samples, "upper_arm.R", "upper_arm.L")
    neutral_l = addon.rig.tasks.symmetry.neutral_pose(obj)[names.index("upper_arm.L")]
    left.rotation_quaternion, right.rotation_quaternion = neutral_l, hold
    at_neutral = posed_axes(obj, "upper_arm.L").T @ s @ posed_axes(obj, "upper_arm.R")
    for a, b in zip(samples, seen):
        left.rotation_quaternion, right.rotation_quaternion = a, b
        posed_l, posed_r = posed_axes(obj, "upper_arm.L"), posed_axes(obj, "upper_arm.R")
        np.testing.assert_allclose(posed_r, s @ posed_l @ at_neutral, atol=1e-5)


def test_a_rig_that_mirrors_in_no_pose_learns_from_its_own_side(clean_file, addon):
    obj, _ = one_sided_rig(addon)
    bpy.ops.object.mode_set(mode="EDIT")
    for name in ("shoulder.R", "upper_arm.R", "forearm.R", "hand.R", "thigh.R", "shin.R", "foot.R", "toe.R"):
        bone = obj.data.edit_bones[name]
        bone.use_connect = False
        bone.head = (bone.head[0], bone.head[1] + 0.4, bone.head[2] + 0.3)  # the right side moved away
    bpy.ops.object.mode_set(mode="POSE")
    assert addon.rig.tasks.symmetry.body_mirror(obj) is None
    assert bpy.ops.pose.joint_limits_fit() == {"FINISHED"}
    assert "mirrored" not in (obj.pose.bones["upper_arm.R"].joint_limit.fit_report or "{}")
