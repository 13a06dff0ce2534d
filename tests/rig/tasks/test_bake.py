# SPDX-License-Identifier: GPL-3.0-or-later
"""Bake Limited Action with Assign: the source action stays in the file, only the constraints
whose effect the baked keys hold are muted, and the demo's file keeps the action it was
fitted from."""

import bpy
import numpy as np
import pytest
from rigs import chain_rig, fitted_rig

pytestmark = pytest.mark.blender42


def _impossible(addon, obj, frames=30):
    q = addon.limits.geometry.quaternion
    motion = np.tile(np.array([1.0, 0, 0, 0]), (frames, 3, 1))
    motion[:, 2] = q.quaternion_from_exp_map(np.outer(1.75 * np.sin(np.pi * np.linspace(0, 1, frames)), [1.0, 0, 0]))
    return addon.rig.io.humanoid.key_rotations(obj, motion, "Impossible")


def test_assign_keeps_the_source_action_through_save_and_reopen(clean_file, addon, tmp_path):
    obj, _, rom = fitted_rig(addon)
    rom.use_fake_user = True  # the training action is not what this test is about
    _impossible(addon, obj)
    assert bpy.ops.pose.joint_limits_bake(assign=True) == {"FINISHED"}
    assert obj.animation_data.action.name == "Impossible_limited"
    path = tmp_path / "baked.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(path))
    bpy.ops.wm.open_mainfile(filepath=str(path))
    assert "Impossible" in bpy.data.actions, "the source action survives save and reopen"
    assert bpy.data.objects["Rig"].animation_data.action.name == "Impossible_limited"


def test_assign_mutes_only_constraints_the_bake_holds_and_says_which(clean_file, addon, capfd):
    obj, _, _ = fitted_rig(addon)
    _impossible(addon, obj)
    upper = obj.pose.bones["upper"].constraints.new("LIMIT_ROTATION")  # baked into upper's keys
    upper.owner_space = "LOCAL"
    upper.use_limit_x = True
    upper.min_x = upper.max_x = 0.3
    off = obj.pose.bones["lower"].constraints.new("COPY_ROTATION")  # already muted: stays muted
    off.mute = True
    broken = obj.pose.bones["lower"].constraints.new("DAMPED_TRACK")  # no target: no effect to bake
    target = bpy.data.objects.new("Target", None)
    bpy.context.scene.collection.objects.link(target)
    on_object = obj.constraints.new("COPY_LOCATION")  # the armature object's: keys are relative to it
    on_object.target = target
    capfd.readouterr()
    assert bpy.ops.pose.joint_limits_bake(assign=True) == {"FINISHED"}
    assert upper.mute
    assert off.mute
    assert not broken.mute, "a constraint that had no effect was not baked"
    assert not on_object.mute, "object constraints are not in the bone keys"
    out = capfd.readouterr().out
    assert "muted 1 constraint on upper" in out, out
    assert "'Impossible' kept" in out, out


def test_assign_keeps_an_ik_chain_live_when_it_moves_a_bone_the_bake_did_not_key(clean_file, addon):
    obj = chain_rig(("root", "upper", "lower", "tip"))
    target = bpy.data.objects.new("Target", None)
    bpy.context.scene.collection.objects.link(target)
    ik = obj.pose.bones["tip"].constraints.new("IK")
    ik.target = target
    ik.chain_count = 2
    copy = obj.pose.bones["upper"].constraints.new("COPY_SCALE")
    copy.target = target
    rig_bake = addon.rig.tasks.bake
    chain = {"tip", "lower"}
    assert {c.name for _, c in rig_bake.redundant_constraints(obj, chain | {"upper"})} == {ik.name, copy.name}
    assert [c.name for _, c in rig_bake.redundant_constraints(obj, chain)] == [ik.name]
    assert rig_bake.redundant_constraints(obj, {"tip"}) == [], "the IK also moves 'lower', which was not keyed"


def test_demo_file_keeps_its_training_action_and_fit_refits_from_it(clean_file, addon, tmp_path):
    out = tmp_path / "out"
    assert addon.cli.main(["demo", str(out), "--frames", "300"]) == 0
    blend = out / "joint_limits_demo.blend"
    bpy.ops.wm.open_mainfile(filepath=str(blend))
    assert {"RangeOfMotion", "Impossible", "Impossible_limited"} <= set(bpy.data.actions.keys())
    obj = bpy.data.objects["Humanoid"]
    assert obj.animation_data.action.name == "RangeOfMotion", "fit refits from the object's action"
    assert addon.cli.main(["fit", "--save", str(blend)]) == 0
    bpy.ops.wm.open_mainfile(filepath=str(blend))
    obj = bpy.data.objects["Humanoid"]
    rows = addon.rig.tasks.report.violation_report(obj, bpy.context.scene, bpy.data.actions["Impossible"], np.arange(1, 121))
    assert sum(r["frames_out"] > 0 for r in rows) > 5, "refitted from the training action, not the impossible one"


def test_bake_of_an_ik_driven_limb_keys_the_limited_evaluated_pose_as_fk(clean_file, addon):
    """Issue 12 item 5: an action whose IK target leaves the limit is baked into FK keys of the
    limited evaluated pose; with Assign the IK (every bone of its chain keyed) is muted, so what
    plays is those keys, inside the limit on every frame."""
    obj, pb, _ = fitted_rig(addon)
    target = bpy.data.objects.new("Target", None)
    bpy.context.scene.collection.objects.link(target)
    ik = pb.constraints.new("IK")
    ik.target, ik.chain_count = target, 2
    for frame, x in ((1, 0.2), (10, 1.5), (20, -1.5), (30, 0.2)):  # swings 'lower' far out and back
        target.location = (x, 0.3, 1.2)
        target.keyframe_insert("location", frame=frame)
    frames = range(1, 31)
    bpy.context.scene.frame_start, bpy.context.scene.frame_end = 1, 30
    worst_before = 0.0
    for f in frames:
        bpy.context.scene.frame_set(f)
        worst_before = max(worst_before, addon.api.pose_violations(obj)["lower"])
    assert worst_before > 10.0, "the IK target drives the limb out of its limit"
    assert bpy.ops.pose.joint_limits_bake(assign=True) == {"FINISHED"}
    assert ik.mute, "the keys hold what the IK did"
    for f in frames:
        bpy.context.scene.frame_set(f)
        assert addon.api.pose_violations(obj)["lower"] < 0.5, f
        assert addon.api.pose_violations(obj, evaluated=False)["lower"] < 0.5, f  # the FK keys themselves
