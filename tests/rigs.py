# SPDX-License-Identifier: GPL-3.0-or-later
"""Small rigs and motions for the Blender tests, generated here (no outside files)."""

import bpy
import numpy as np


def chain_rig(names=("root", "upper", "lower"), name="Rig", roll_deg=0.0):
    """An armature with a chain of 1 m bones along +Z (the first one the root); Pose Mode, all selected."""
    data = bpy.data.armatures.new(name)
    obj = bpy.data.objects.new(name, data)
    bpy.context.scene.collection.objects.link(obj)
    bpy.context.view_layer.objects.active = obj
    obj.select_set(True)
    bpy.ops.object.mode_set(mode="EDIT")
    prev = None
    for i, bone_name in enumerate(names):
        eb = data.edit_bones.new(bone_name)
        eb.head = (0.0, 0.0, float(i))
        eb.tail = (0.0, 0.0, float(i + 1))
        eb.roll = np.radians(roll_deg)
        eb.parent = prev
        prev = eb
    bpy.ops.object.mode_set(mode="POSE")
    bpy.ops.pose.select_all(action="SELECT")
    data.bones.active = data.bones[names[-1]]
    return obj


def select_only(obj, names):
    bpy.ops.pose.select_all(action="DESELECT")
    for pb in obj.pose.bones:
        if pb.name in names:
            if hasattr(pb, "select"):
                pb.select = True
            else:
                pb.bone.select = True
    obj.data.bones.active = obj.data.bones[names[0]]


def cone_motion(q_lib, frames=240, half_angle=0.6, twist=0.3, seed=0):
    """Smooth local rotations ``(frames, 4)`` sweeping a swing cone about the bone's +Y axis with a
    twist range; uses the add-on's own quaternion helpers ``q_lib`` (``addon.limits.geometry.quaternion``)."""
    t = np.linspace(0.0, 1.0, frames)
    rng = np.random.default_rng(seed)
    phase = rng.uniform(0, 2 * np.pi)
    radius = half_angle * (0.5 + 0.5 * np.abs(np.sin(7 * np.pi * t)))
    azimuth = 6 * np.pi * t + phase
    swing_axis = np.stack((np.cos(azimuth), np.zeros_like(t), np.sin(azimuth)), -1)
    swing = q_lib.quaternion_from_exp_map(swing_axis * radius[:, None])
    tw = q_lib.quaternion_from_exp_map(np.outer(twist * np.sin(11 * np.pi * t), [0.0, 1.0, 0.0]))
    return q_lib.quaternion_multiply(swing, tw)


def evaluated_local_rotation(obj, name):
    """The bone's evaluated local rotation (constraints included), from ``pose_bone.matrix``,
    as the last evaluation left it (no extra update: frame changes must leave it right)."""
    pb = obj.pose.bones[name]
    m = obj.convert_space(pose_bone=pb, matrix=pb.matrix, from_space="POSE", to_space="LOCAL")
    return np.array(m.to_quaternion(), dtype=float)


def worst_degrees_out(addon, obj, names):
    """The most degrees any of the named limited bones' evaluated poses (after every constraint,
    driver and IK) stands outside its limit, all bones read in one pass."""
    ev = addon.rig.live.evaluate
    _, q, _ = ev.decompose(ev.local_from_pose(ev.pose_matrices(obj), ev.rest_matrices(obj), ev.bone_parents(obj)))
    rows = {pb.name: i for i, pb in enumerate(obj.pose.bones)}
    read = addon.rig.io.storage.read_limit
    return max(float(np.degrees(read(obj.pose.bones[n]).violation(q[rows[n]]))) for n in names)


def set_local_rotation(pb, q, q_lib):
    """Set a pose bone's rotation from a quaternion, in whatever rotation mode it has."""
    mode = pb.rotation_mode
    if mode == "QUATERNION":
        pb.rotation_quaternion = q
    elif mode == "AXIS_ANGLE":
        pb.rotation_axis_angle = q_lib.axis_angle_from_quaternion(np.asarray(q)).tolist()
    else:
        pb.rotation_euler = q_lib.euler_from_quaternion(np.asarray(q), mode).tolist()


def expect_error(operator, match, **kwargs):
    """Run ``operator``; it must cancel with an error report matching ``match`` (bpy raises it)."""
    import pytest

    with pytest.raises(RuntimeError, match=match):
        operator(**kwargs)


def fitted_rig(addon, mode="QUATERNION", model="kdop", fit_mode="FULL", frames=240):
    """A chain rig whose bone 'lower' (rotation ``mode``) was sampled from a keyed cone motion
    and fitted with ``model``; returns ``(obj, pose_bone, action)``."""
    q_lib = addon.limits.geometry.quaternion
    obj = chain_rig()
    obj.pose.bones["lower"].rotation_mode = mode
    motion = np.tile(np.array([1.0, 0, 0, 0]), (frames, 3, 1))
    motion[:, 2] = cone_motion(q_lib, frames)
    action = addon.rig.io.humanoid.key_rotations(obj, motion, "ROM")
    select_only(obj, ["lower"])
    assert bpy.ops.pose.joint_limits_sample() == {"FINISHED"}
    pb = obj.pose.bones["lower"]
    pb.joint_limit.model = model
    pb.joint_limit.mode = fit_mode
    assert bpy.ops.pose.joint_limits_fit() == {"FINISHED"}
    return obj, pb, action


def keyed_rigify(rig, frames=range(1, 25), controls=("hand_ik.L", "foot_ik.L"), scale=0.4, seed=8):
    """The human preset applied to a generated Rigify rig and its IK ``controls`` keyed at random
    places over ``frames`` (the scene's range); returns the limited bones' names."""
    assert bpy.ops.pose.joint_limits_apply_preset() == {"FINISHED"}
    rng = np.random.default_rng(seed)
    for f in frames:
        for name in controls:
            pb = rig.pose.bones[name]
            pb.location = rng.normal(size=3) * scale
            pb.keyframe_insert("location", frame=f)
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = frames[0], frames[-1]
    return [pb.name for pb in rig.pose.bones if pb.joint_limit.has_limit and pb.joint_limit.enabled]
