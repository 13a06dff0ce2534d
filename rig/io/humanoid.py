# SPDX-License-Identifier: GPL-3.0-or-later
"""Building an armature from a :class:`~...limits.body.skeleton.Skeleton` and keying generated motion
(the embedded demo and the tests use it instead of outside files)."""

import bpy
import numpy as np
from mathutils import Quaternion

from .actions import assign_action, bone_path, new_action, rotation_channel_values, write_curve


def build_armature(skeleton, name="Humanoid", scene=None, modes=None):
    """A new armature object with the skeleton's bones (rest orientations exact); ``modes``
    maps bone names to rotation modes (default quaternion). Leaves it active in Pose Mode."""
    scene = scene or bpy.context.scene
    data = bpy.data.armatures.new(name)
    obj = bpy.data.objects.new(name, data)
    scene.collection.objects.link(obj)
    view_layer = bpy.context.view_layer
    view_layer.objects.active = obj
    obj.select_set(True)
    bpy.ops.object.mode_set(mode="EDIT")
    edit_bones = []
    for i, bone_name in enumerate(skeleton.names):
        eb = data.edit_bones.new(bone_name)
        length = float(np.linalg.norm(skeleton.tails[i] - skeleton.heads[i]))
        eb.head = skeleton.heads[i].tolist()
        eb.tail = (skeleton.heads[i] + [0.0, length, 0.0]).tolist()
        m = Quaternion(skeleton.rest_rotations[i].tolist()).to_matrix().to_4x4()
        m.translation = skeleton.heads[i].tolist()
        eb.matrix = m
        eb.length = length
        if skeleton.parents[i] >= 0:
            eb.parent = edit_bones[skeleton.parents[i]]
        edit_bones.append(eb)
    bpy.ops.object.mode_set(mode="POSE")
    for pb in obj.pose.bones:
        pb.rotation_mode = (modes or {}).get(pb.name, "QUATERNION")
    return obj


def key_rotations(obj, rotations, name="Motion", frame_start=1, assign=True):
    """A new action keying ``rotations (F, n, 4)`` (local, ``pose.bones`` order) on every frame,
    each bone in its own rotation mode's channel. Returns the action."""
    rotations = np.asarray(rotations, dtype=float)
    frames = np.arange(frame_start, frame_start + len(rotations), dtype=float)
    action, container = new_action(obj, name)
    for b, pb in enumerate(obj.pose.bones):
        channel, values = rotation_channel_values(pb.rotation_mode, rotations[:, b])
        for i in range(values.shape[1]):
            write_curve(container, f"{bone_path(pb.name)}.{channel}", i, frames, values[:, i], pb.name)
    if assign:
        assign_action(obj, action)
    else:
        action.use_fake_user = True  # keep it through save/reload
    return action
