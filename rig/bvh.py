# SPDX-License-Identifier: GPL-3.0-or-later
"""BVH motion capture onto a rig: import with Blender's own importer, retarget by name."""

import bpy
import numpy as np

from ..limits.skeleton import match_bone_names, retarget_local_rotations
from .actions import action_frames, keyed_rotations
from .skeleton_io import skeleton_from_armature


def import_bvh_armature(context, filepath):
    """Import ``filepath`` with ``io_anim_bvh`` as a temporary armature; returns the object."""
    before = set(bpy.data.objects)
    result = bpy.ops.import_anim.bvh(filepath=str(filepath), rotate_mode="QUATERNION", update_scene_fps=False, use_fps_scale=False)
    new = [o for o in bpy.data.objects if o not in before and o.type == "ARMATURE"]
    if "FINISHED" not in result or not new:
        raise ValueError(f"could not import BVH {filepath}")
    return new[0]


def remove_armature(obj):
    action = obj.animation_data.action if obj.animation_data else None
    data = obj.data
    bpy.data.objects.remove(obj)
    if data.users == 0:
        bpy.data.armatures.remove(data)
    if action is not None and action.users == 0:
        bpy.data.actions.remove(action)


def bvh_rotations(source, target, bone_names=None):
    """Local rotations ``{target bone: (F, 4)}`` of ``target``'s bones matched by name to the
    imported ``source`` armature, retargeted through armature-space rotation deltas from rest."""
    action = source.animation_data.action if source.animation_data else None
    if action is None:
        raise ValueError("the BVH file holds no motion")
    src = skeleton_from_armature(source)
    dst = skeleton_from_armature(target)
    mapping = match_bone_names(dst.names, src.names)  # all bones: parents' poses matter
    wanted = [n for n in mapping if bone_names is None or n in set(bone_names)]
    if not wanted:
        raise ValueError(f"no bone of {target.name} matches a BVH joint by name ({', '.join(src.names[:6])}, ...)")
    frames = action_frames(action)
    q, keyed = keyed_rotations(source, action, src.names, frames)
    q = np.where(keyed[None, :, None], q, np.array([1.0, 0.0, 0.0, 0.0]))
    local = retarget_local_rotations(src, q, dst, mapping)
    return {name: local[:, dst.names.index(name)] for name in wanted}
