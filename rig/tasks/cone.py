# SPDX-License-Identifier: GPL-3.0-or-later
"""Kelly's sinus cone at the bone, and the boundary tour that keys a bone around its limit."""

import bpy
import numpy as np
from mathutils import Quaternion

from ...limits.geometry.quaternion import quaternion_multiply
from ...limits.geometry.swing_twist import rotation_from_direction_twist
from ...limits.models.sinus.texture import boundary_rim
from ..io.actions import assign_action, bone_path, new_action, rotation_channel_values, write_curve
from .display import display_object, place_at_bone
from .texture import texture_limit


def cone_name(obj, pose_bone):
    return f"JL {obj.name} {pose_bone.name} sinus cone"


def update_cone(obj, pose_bone, count=64):
    """Create or update the sinus cone mesh of ``pose_bone``: apex at the bone head, rim along
    the boundary of the allowed swings, as long as the bone. It sits in the frame the swings
    are measured in (parent pose x rest x reference) and follows the parent bone (a Child Of
    constraint), so the bone's Y axis points into the cone while its swing is allowed.
    Returns the object."""
    limit = texture_limit(pose_bone)
    directions, _ = boundary_rim(limit.model, count)
    length = pose_bone.bone.length
    verts = np.concatenate((np.zeros((1, 3)), directions * length))
    faces = [(0, 1 + i, 1 + (i + 1) % count) for i in range(count)]
    faces.append(tuple(range(count, 0, -1)))  # the cap closes the cone
    name = cone_name(obj, pose_bone)
    mesh = bpy.data.meshes.new(name)
    mesh.from_pydata(verts.tolist(), [], faces)
    cone = display_object(name, mesh, bpy.context.scene)
    cone.display_type = "WIRE"
    cone.hide_render = True
    place_at_bone(cone, obj, pose_bone, swing_frame(pose_bone, limit.reference))
    return cone


def swing_frame(pose_bone, reference):
    """Armature-space matrix of the frame swings are measured in, at the bone head."""
    bone = pose_bone.bone
    if pose_bone.parent is not None:
        parent = pose_bone.parent
        frame = parent.matrix @ parent.bone.matrix_local.inverted() @ bone.matrix_local
    else:
        frame = bone.matrix_local.copy()
    rotation = frame.to_quaternion() @ Quaternion(reference.tolist())
    out = rotation.to_matrix().to_4x4()
    out.translation = pose_bone.head
    return out


def boundary_tour(obj, pose_bone, count=48, frame_start=1):
    """A new action keying ``pose_bone`` around the rim of its sinus texture, one key per frame
    (twist at the middle of its range), for previewing the limit. Returns the action; it is
    assigned to the armature (the previous action stays in the file)."""
    limit = texture_limit(pose_bone)
    directions, twist = boundary_rim(limit.model, count)
    rel = rotation_from_direction_twist(directions, twist)
    rel = np.concatenate((rel, rel[:1]))  # back to the start
    local = quaternion_multiply(limit.reference, rel)
    frames = np.arange(frame_start, frame_start + len(local), dtype=float)
    action, container = new_action(obj, f"{pose_bone.name}_boundary_tour")
    channel, values = rotation_channel_values(pose_bone.rotation_mode, local)
    for i in range(values.shape[1]):
        write_curve(container, f"{bone_path(pose_bone.name)}.{channel}", i, frames, values[:, i], pose_bone.name)
    action.use_fake_user = True
    assign_action(obj, action)
    return action
