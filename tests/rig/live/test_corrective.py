# SPDX-License-Identifier: GPL-3.0-or-later
"""Limits on the evaluated pose of constraint-driven bones (rig/live/corrective.py): the corrective
constraint at the end of the bone's stack, on real Blender."""

import math

import bpy
import numpy as np
import pytest
from rigs import evaluated_local_rotation, fitted_rig

pytestmark = pytest.mark.blender42

#: A swing of ~100 degrees: far outside the ~34 degree cone the rig is trained on.
IMPOSSIBLE = np.array([math.cos(0.87), math.sin(0.87), 0.0, 0.0])
HALF_DEGREE = math.radians(0.5)


def _control(name, rotation, location=(2.0, 0.0, 0.0)):
    empty = bpy.data.objects.new(name, None)
    bpy.context.scene.collection.objects.link(empty)
    empty.rotation_mode = "QUATERNION"
    empty.rotation_quaternion = rotation
    empty.location = location
    return empty


def _copy_rotation_rig(addon):
    """The fitted chain rig with 'lower' copying an Empty's rotation (world rotation into the
    bone's local space: the Empty's rotation becomes the bone's local rotation), the Empty keyed out of the limit on
    frames 1-10 and inside on frame 20."""
    obj, pb, _ = fitted_rig(addon)
    obj.animation_data.action = None
    control = _control("Control", IMPOSSIBLE)
    con = pb.constraints.new("COPY_ROTATION")
    con.target = control
    con.owner_space, con.target_space = "LOCAL", "WORLD"
    control.keyframe_insert("rotation_quaternion", frame=1)
    control.rotation_quaternion = addon.limits.geometry.quaternion.quaternion_from_exp_map(np.array([0.0, 0.0, 1.75]))
    control.keyframe_insert("rotation_quaternion", frame=10)
    control.rotation_quaternion = (1.0, 0.0, 0.0, 0.0)
    control.keyframe_insert("rotation_quaternion", frame=20)
    return obj, pb, control, addon.rig.io.storage.read_limit(pb)


def _matrices(obj):
    return [np.array(p.matrix) for p in obj.pose.bones]


def test_copy_rotation_driven_bone_is_limited_after_frame_set(clean_file, addon):
    obj, pb, control, limit = _copy_rotation_rig(addon)
    bpy.context.scene.frame_set(1)
    assert limit.violation(evaluated_local_rotation(obj, "lower")) > 0.5, "the control drives the bone out"
    basis = np.array(pb.rotation_quaternion)
    bpy.context.scene.joint_limits.enforce_live = True
    for frame in (1, 5, 10, 20):
        bpy.context.scene.frame_set(frame)
        pre = np.array(control.rotation_quaternion)  # what Copy Rotation made of the bone
        after = evaluated_local_rotation(obj, "lower")
        assert limit.violation(after) < HALF_DEGREE, frame
        # the nearest allowed rotation, not just anything inside
        assert addon.limits.geometry.quaternion.quaternion_angle(after, limit.project(pre)) < HALF_DEGREE, frame
    # inside the limit the corrective is skipped (influence 0)
    assert pb.constraints[-1].name == "Joint Limit" and pb.constraints[-1].influence == 0.0
    # the animator's basis and control were never written
    np.testing.assert_array_equal(np.array(pb.rotation_quaternion), basis)
    bpy.context.scene.frame_set(1)
    np.testing.assert_allclose(np.array(control.rotation_quaternion), IMPOSSIBLE, atol=1e-6)


def test_moving_the_control_is_limited_without_lag(clean_file, addon):
    """Posing interactively: the update that moved the control already shows the limited pose."""
    q = addon.limits.geometry.quaternion
    obj, pb, control, limit = _copy_rotation_rig(addon)
    control.animation_data_clear()
    bpy.context.scene.joint_limits.enforce_live = True
    rng = np.random.default_rng(3)
    for rotation in q.quaternion_from_exp_map(rng.normal(size=(6, 3))):
        control.rotation_quaternion = rotation
        bpy.context.view_layer.update()
        after = evaluated_local_rotation(obj, "lower")
        assert limit.violation(after) < HALF_DEGREE
        assert q.quaternion_angle(after, limit.project(rotation)) < HALF_DEGREE
        np.testing.assert_allclose(np.array(control.rotation_quaternion), rotation, atol=1e-6)


def test_switching_off_gives_back_the_plain_rig_exactly(clean_file, addon):
    obj, pb, _control_object, _limit = _copy_rotation_rig(addon)
    bpy.context.scene.frame_set(5)
    plain = _matrices(obj)
    bpy.context.scene.joint_limits.enforce_live = True
    bpy.context.scene.frame_set(5)
    assert not np.array_equal(_matrices(obj)[2], plain[2]), "enforcement changed the evaluated pose"
    bpy.context.scene.joint_limits.enforce_live = False
    bpy.context.view_layer.update()
    for got, want in zip(_matrices(obj), plain):
        np.testing.assert_array_equal(got, want)
    assert [c.type for c in pb.constraints] == ["COPY_ROTATION"], "no corrective is left in the file"
    # switching the bone's own limit off does the same for that bone
    bpy.context.scene.joint_limits.enforce_live = True
    bpy.context.scene.frame_set(5)
    pb.joint_limit.enabled = False
    bpy.context.scene.frame_set(5)
    np.testing.assert_array_equal(_matrices(obj)[2], plain[2])


def test_a_chain_of_world_space_constraints_is_limited_level_by_level(clean_file, addon):
    """A Damped Track on the parent moves where the child's world-space Copy Rotation leaves it
    locally: each corrected level is evaluated before the next is corrected."""
    obj, pb, _ = fitted_rig(addon)
    obj.animation_data.action = None
    upper = obj.pose.bones["upper"]
    upper.joint_limit.limit_data = pb.joint_limit.limit_data
    upper.joint_limit.enabled = True
    target = _control("Target", (1.0, 0.0, 0.0, 0.0), location=(0.0, 3.0, 1.5))
    track = upper.constraints.new("DAMPED_TRACK")
    track.target = target
    control = _control("Control", IMPOSSIBLE)
    copy = pb.constraints.new("COPY_ROTATION")
    copy.target = control  # world space: its local result depends on the parent's pose
    limits = {name: addon.rig.io.storage.read_limit(obj.pose.bones[name]) for name in ("upper", "lower")}
    bpy.context.scene.frame_set(1)
    assert all(limits[n].violation(evaluated_local_rotation(obj, n)) > 0.2 for n in limits)
    bpy.context.scene.joint_limits.enforce_live = True
    bpy.context.scene.frame_set(1)
    for name, limit in limits.items():
        assert limit.violation(evaluated_local_rotation(obj, name)) < HALF_DEGREE, name
    target.location = (3.0, -1.0, 1.0)
    bpy.context.view_layer.update()
    for name, limit in limits.items():
        assert limit.violation(evaluated_local_rotation(obj, name)) < HALF_DEGREE, name


def test_a_bone_that_copies_another_corrected_bone_is_corrected_after_it(clean_file, addon):
    """'side' is no child of 'upper' but copies its world rotation (a constraint target, as
    Rigify's deforming bones follow their ORG bones): its correction waits for upper's to be
    evaluated, or it would be computed on upper's uncorrected pose."""
    obj, pb, _ = fitted_rig(addon)
    obj.animation_data.action = None
    bpy.ops.object.mode_set(mode="EDIT")
    side = obj.data.edit_bones.new("side")
    side.head, side.tail, side.parent = (0.0, 0.0, 1.0), (0.0, 0.0, 2.0), obj.data.edit_bones["root"]
    bpy.ops.object.mode_set(mode="POSE")
    for name in ("upper", "side"):
        obj.pose.bones[name].joint_limit.limit_data = obj.pose.bones["lower"].joint_limit.limit_data
        obj.pose.bones[name].joint_limit.enabled = True
    track = obj.pose.bones["upper"].constraints.new("DAMPED_TRACK")
    track.target = _control("Target", (1.0, 0.0, 0.0, 0.0), location=(0.0, 1.0, -0.5))  # (far out: 146 deg)
    copy = obj.pose.bones["side"].constraints.new("COPY_ROTATION")
    copy.target, copy.subtarget = obj, "upper"
    limit = addon.rig.io.storage.read_limit(obj.pose.bones["upper"])
    bpy.context.scene.frame_set(1)
    assert limit.violation(evaluated_local_rotation(obj, "side")) > 0.2
    bpy.context.scene.joint_limits.enforce_live = True
    bpy.context.scene.frame_set(1)
    corrected = addon.rig.live.compiled(obj).corrected
    rows = {name: obj.pose.bones.find(name) for name in ("upper", "side")}
    assert corrected.level[rows["side"]] == corrected.level[rows["upper"]] + 1
    for name in ("upper", "side"):
        assert limit.violation(evaluated_local_rotation(obj, name)) < HALF_DEGREE, name


def test_unconstrained_bones_keep_the_basis_path(clean_file, addon):
    """A limited bone no constraint drives is still limited by writing its basis, and gets no
    corrective."""
    obj, pb, _ = fitted_rig(addon)
    obj.animation_data.action = None
    pb.rotation_quaternion = IMPOSSIBLE
    bpy.context.scene.joint_limits.enforce_live = True
    bpy.context.scene.frame_set(1)
    assert addon.rig.io.storage.read_limit(pb).violation(np.array(pb.rotation_quaternion)) < 1e-4
    assert len(pb.constraints) == 0


def test_a_file_saved_with_enforcement_on_holds_no_frozen_correction(clean_file, addon, tmp_path):
    """Opened without the add-on, a saved correction would pin the bone to one frame's fix: the
    saved correctives stand at influence 0, and the session's pose is limited again after the
    save."""
    obj, pb, _, limit = _copy_rotation_rig(addon)
    bpy.context.scene.joint_limits.enforce_live = True
    bpy.context.scene.frame_set(1)
    assert pb.constraints["Joint Limit"].influence == 1.0, "correcting on frame 1"
    path = str(tmp_path / "saved.blend")
    bpy.ops.wm.save_as_mainfile(filepath=path, copy=True)  # (a copy: the current file can be read back)
    assert pb.constraints["Joint Limit"].influence == 1.0, "the session goes on limited"
    assert limit.violation(evaluated_local_rotation(obj, "lower")) < HALF_DEGREE
    with bpy.data.libraries.load(path) as (data_from, data_to):
        data_to.objects = [obj.name]
    saved = data_to.objects[0]
    assert saved.pose is None or saved.pose.bones["lower"].constraints["Joint Limit"].influence == 0.0
    if saved.pose is None:  # (an appended armature gets its pose on evaluation)
        bpy.context.scene.collection.objects.link(saved)
        bpy.context.view_layer.update()
        assert saved.pose.bones["lower"].constraints["Joint Limit"].influence == 0.0


def test_switching_live_enforcement_prints_no_error(clean_file, addon, capfd):
    """The switch's update callback returns None: Blender prints 'the return value must be None'
    for anything else, on every switch-on."""
    fitted_rig(addon)
    capfd.readouterr()
    bpy.context.scene.joint_limits.enforce_live = True
    bpy.context.scene.joint_limits.enforce_live = False
    err = capfd.readouterr().err
    assert "return value must be None" not in err, err
