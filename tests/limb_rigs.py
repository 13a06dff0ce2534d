# SPDX-License-Identifier: GPL-3.0-or-later
"""A four-bone chain (root, upper, lower, hand) as an IK limb with a fitted range, for the limb and limited-IK tests."""

import bpy
import numpy as np
from rigs import chain_rig, cone_motion, select_only


def _ik_limb(addon):
    """root -> upper -> lower -> hand, 1 m bones along +Z, sampled on generated motion (the
    upper arm sweeping a cone of 0.6 rad, the elbow bending 0.1-0.7 rad about X) and given a
    limb range on 'lower' (no per-joint limits); an IK on 'lower' (chain of 2) aiming at the
    Empty 'Target' with the pole 'Pole'."""
    q_lib = addon.limits.geometry.quaternion
    obj = chain_rig(("root", "upper", "lower", "hand"))
    frames = 600
    motion = np.tile(np.array([1.0, 0.0, 0.0, 0.0]), (frames, 4, 1))
    motion[:, 1] = cone_motion(q_lib, frames, half_angle=0.6, twist=0.4, seed=1)
    bend = q_lib.quaternion_from_exp_map(np.outer(0.4 + 0.3 * np.sin(np.linspace(0, 23, frames)), [1.0, 0.0, 0.0]))
    motion[:, 2] = bend
    addon.rig.io.humanoid.key_rotations(obj, motion, "ROM")
    select_only(obj, ["lower", "upper"])
    assert bpy.ops.pose.joint_limits_sample() == {"FINISHED"}
    assert bpy.ops.pose.joint_limits_fit_limb() == {"FINISHED"}
    obj.animation_data.action.use_fake_user = True  # (kept through a save)
    obj.animation_data.action = None
    for pb in obj.pose.bones:
        pb.rotation_quaternion = (1.0, 0.0, 0.0, 0.0)
    obj.pose.bones["lower"].rotation_quaternion = (np.cos(0.2), np.sin(0.2), 0.0, 0.0)
    empties = []
    for name, location in (("Target", (3.0, 2.0, 4.0)), ("Pole", (0.0, -3.0, 2.0))):
        empty = bpy.data.objects.new(name, None)
        bpy.context.scene.collection.objects.link(empty)
        empty.location = location
        empties.append(empty)
    con = obj.pose.bones["lower"].constraints.new("IK")
    con.target, con.chain_count = empties[0], 2
    con.pole_target = empties[1]
    bpy.context.view_layer.update()
    return obj, *empties


def _limb_frame(obj):
    """Armature -> the model's frame (the upper bone's rest frame carried by its posed parent)."""
    upper = obj.data.bones["upper"]
    parent = obj.pose.bones["root"]
    m = np.array(parent.matrix) @ np.linalg.inv(np.array(upper.parent.matrix_local)) @ np.array(upper.matrix_local)
    return np.linalg.inv(m)


def _apply(m, p):
    return m[:3, :3] @ np.asarray(p, dtype=float) + m[:3, 3]


def _limb_state(addon, obj, model):
    """``(end (3,), swivel)`` of the evaluated limb, in the model's frame and convention."""
    to_limb = _limb_frame(obj)
    mid, end = (_apply(to_limb, getattr(obj.pose.bones["lower"], at)) for at in ("head", "tail"))
    return end, float(addon.limits.ik.limb_rom.limb_swivels(model, mid[None], end[None])[0])
