# SPDX-License-Identifier: GPL-3.0-or-later
"""Bake Limited Action on a generated Rigify rig keys the rig's controls (its FK controls, the
limbs switched to FK), never the ORG/DEF/MCH bones its constraints drive: the baked action plays
inside the limits with live enforcement off."""

import bpy
import numpy as np
import pytest
from rigs import keyed_rigify, worst_degrees_out

pytestmark = pytest.mark.blender42

#: Where the deforming chain meets the ORG chain: elbow, wrist, knee, ankle.
JOINTS = ("forearm.L", "hand.L", "shin.L", "foot.L")


def _joint_gap(rig):
    bones = rig.pose.bones
    return max((bones[f"DEF-{j}"].head - bones[f"ORG-{j}"].head).length for j in JOINTS)


def test_a_bake_of_a_rigify_rig_keys_its_controls_and_plays_inside_the_limits(addon, rig):
    limited = keyed_rigify(rig)
    scene = bpy.context.scene
    source = rig.animation_data.action
    source_paths = {fc.data_path for fc in addon.rig.io.actions.action_fcurves(rig, source)}
    plain = 0.0
    for f in range(1, 25):
        scene.frame_set(f)
        plain = max(plain, worst_degrees_out(addon, rig, limited))
    assert plain > 2.0

    assert bpy.ops.pose.joint_limits_bake(assign=True) == {"FINISHED"}
    baked = rig.animation_data.action
    assert baked != source and source.use_fake_user
    paths = {fc.data_path for fc in addon.rig.io.actions.action_fcurves(rig, baked)}
    keyed_bones = {p.split('"]')[0][len('pose.bones["') :] for p in paths if p.startswith("pose.bones[")}
    assert {"upper_arm_fk.L", "forearm_fk.L", "hand_fk.L", "thigh_fk.L", "shin_fk.L", "foot_fk.L"} <= keyed_bones
    assert not [b for b in keyed_bones if b.startswith(("ORG-", "DEF-", "MCH-"))]
    assert 'pose.bones["upper_arm_parent.L"]["IK_FK"]' in paths
    assert source_paths <= paths | {p for p in source_paths if "_fk." in p}  # (the IK controls keep their keys)
    report = bpy.data.texts["Joint Limits Bake Report"].as_string()
    assert "upper_arm_fk.L" in report and "IK_FK" in report

    assert not scene.joint_limits.enforce_live
    worst, gap = 0.0, 0.0
    for f in range(1, 25):
        scene.frame_set(f)
        assert rig.pose.bones["upper_arm_parent.L"]["IK_FK"] == pytest.approx(1.0)
        worst = max(worst, worst_degrees_out(addon, rig, limited))
        gap = max(gap, _joint_gap(rig))
    assert worst < 0.5 and gap < 1e-4
    assert not [c for pb in rig.pose.bones for c in pb.constraints if c.name == "Joint Limit"]


def test_the_bake_poses_the_limbs_where_live_enforcement_put_them(addon, rig):
    keyed_rigify(rig, frames=range(1, 9))
    scene = bpy.context.scene
    scene.joint_limits.enforce_live = True
    names = ("ORG-upper_arm.L", "ORG-forearm.L", "ORG-hand.L", "ORG-thigh.L", "ORG-shin.L", "ORG-foot.L")
    rows = [rig.pose.bones.find(n) for n in names]
    live = {}
    for f in range(1, 9):
        scene.frame_set(f)
        live[f] = addon.rig.live.evaluate.pose_matrices(rig)[rows]
    assert bpy.ops.pose.joint_limits_bake(assign=True, keys_on="CONTROLS") == {"FINISHED"}
    scene.joint_limits.enforce_live = False
    for f in range(1, 9):
        scene.frame_set(f)
        np.testing.assert_allclose(addon.rig.live.evaluate.pose_matrices(rig)[rows], live[f], atol=1e-4)
