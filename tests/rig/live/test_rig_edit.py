# SPDX-License-Identifier: GPL-3.0-or-later
"""Live enforcement follows edits of the rig's bones (Edit Mode): each bone keeps its own limit."""

import math

import bpy
import numpy as np
import pytest
from rigs import chain_rig, cone_motion, evaluated_local_rotation

pytestmark = pytest.mark.blender42

OUTSIDE = np.array([math.cos(0.87), math.sin(0.87), 0.0, 0.0])
LIMITED = ("a", "b", "c")


def _rig_with_different_limits(addon):
    """A chain root-a-b-c; a, b and c have k-DOP limits of different sizes (so a neighbour's
    limit gives a different result), returned as ``{name: limit}``."""
    obj = chain_rig(("root",) + LIMITED)
    limits = {}
    for i, name in enumerate(LIMITED):
        cloud = cone_motion(addon.limits.geometry.quaternion, 200, half_angle=0.2 + 0.25 * i, seed=i)
        limits[name] = addon.limits.joint.JointLimit.fit(cloud, kind="kdop")
        addon.rig.io.storage.write_limit(obj.pose.bones[name], limits[name])
    return obj, limits


def _edit(obj, change):
    bpy.ops.object.mode_set(mode="EDIT")
    change(obj.data.edit_bones)
    bpy.ops.object.mode_set(mode="POSE")


def _assert_each_bone_meets_its_own_limit(addon, obj, limits, frame):
    for name in limits:
        obj.pose.bones[name].rotation_quaternion = OUTSIDE
    bpy.context.scene.frame_set(frame)
    for name, limit in limits.items():
        after = evaluated_local_rotation(obj, name)
        assert addon.limits.geometry.quaternion.quaternion_angle(after, limit.project(OUTSIDE)) == pytest.approx(0.0, abs=1e-3), (
            name
        )


def test_reparenting_that_reorders_the_bones_keeps_each_bone_on_its_own_limit(clean_file, addon):
    obj, limits = _rig_with_different_limits(addon)
    bpy.context.scene.joint_limits.enforce_live = True
    _assert_each_bone_meets_its_own_limit(addon, obj, limits, 1)

    def reparent(bones):
        bones["c"].parent = bones["root"]
        bones["a"].parent = bones["c"]

    _edit(obj, reparent)
    assert obj.pose.bones.keys() == ["root", "c", "a", "b"], "the edit must reorder the pose bones"
    _assert_each_bone_meets_its_own_limit(addon, obj, limits, 2)


def test_deleting_a_bone_and_adding_another_keeps_each_bone_on_its_own_limit(clean_file, addon):
    obj, limits = _rig_with_different_limits(addon)
    bpy.context.scene.joint_limits.enforce_live = True
    _assert_each_bone_meets_its_own_limit(addon, obj, limits, 1)

    def replace_a(bones):
        bones.remove(bones["a"])
        new = bones.new("z")
        new.head, new.tail = (1.0, 0.0, 0.0), (1.0, 0.0, 1.0)
        new.parent = bones["root"]

    _edit(obj, replace_a)
    assert len(obj.pose.bones) == 4, "same bone count: only the structure changed"
    del limits["a"]
    obj.pose.bones["z"].rotation_quaternion = OUTSIDE
    _assert_each_bone_meets_its_own_limit(addon, obj, limits, 2)
    np.testing.assert_allclose(evaluated_local_rotation(obj, "z"), OUTSIDE, atol=1e-5, err_msg="the new bone has no limit")


def test_a_bone_replaced_by_a_new_one_of_the_same_name_is_not_limited_with_the_old_limit(clean_file, addon):
    """Names and order unchanged, yet the bone is another: leaving Edit Mode recompiles."""
    obj, limits = _rig_with_different_limits(addon)
    bpy.context.scene.joint_limits.enforce_live = True
    _assert_each_bone_meets_its_own_limit(addon, obj, limits, 1)

    def replace_c(bones):
        bones.remove(bones["c"])
        new = bones.new("c")
        new.head, new.tail = (1.0, 0.0, 0.0), (1.0, 0.0, 1.0)
        new.parent = bones["b"]

    bpy.ops.object.mode_set(mode="EDIT")
    bpy.context.view_layer.update()  # the update an edit in the viewport brings
    replace_c(obj.data.edit_bones)
    bpy.ops.object.mode_set(mode="POSE")
    assert obj.pose.bones.keys() == ["root", "a", "b", "c"], "same names, same order"
    assert not obj.pose.bones["c"].joint_limit.has_limit
    del limits["c"]
    obj.pose.bones["c"].rotation_quaternion = OUTSIDE
    _assert_each_bone_meets_its_own_limit(addon, obj, limits, 2)
    np.testing.assert_allclose(evaluated_local_rotation(obj, "c"), OUTSIDE, atol=1e-5, err_msg="the new bone has no limit")
