# SPDX-License-Identifier: GPL-3.0-or-later
"""Fitting a pose bone's stored cloud with the bone's own settings."""

import numpy as np

from ..limits.constants import BONE_AXIS
from ..limits.joint import JointLimit
from ..limits.model import model_class
from ..limits.swing_twist import twist_axis_from_children
from .actions import keyed_rotations
from .storage import read_cloud, write_limit


def twist_axis(pose_bone):
    """The bone's twist axis in its own frame: +Y, or the mean direction to its children."""
    if pose_bone.joint_limit.twist_axis != "CHILDREN":
        return BONE_AXIS.copy()
    bone = pose_bone.bone
    inv = np.array(bone.matrix_local.to_3x3().inverted_safe())
    heads = np.array([child.head_local - bone.head_local for child in bone.children]).reshape(-1, 3)
    return twist_axis_from_children(heads @ inv.T)


def reference_frame_rotation(obj, pose_bone):
    """Local rotation of ``pose_bone`` at its ``reference_frame`` in the object's action."""
    anim = obj.animation_data
    if anim is None or anim.action is None:
        raise ValueError(f"{pose_bone.name}: reference 'Frame' needs an action on {obj.name}")
    q, keyed = keyed_rotations(obj, anim.action, [pose_bone.name], [pose_bone.joint_limit.reference_frame])
    if not keyed[0]:
        raise ValueError(f"{pose_bone.name}: no rotation keys in action {anim.action.name!r}")
    return q[0, 0]


def fit_pose_bone(obj, pose_bone):
    """Fit the bone's limit from its stored cloud and settings, store and return it."""
    settings = pose_bone.joint_limit
    cloud = read_cloud(pose_bone)
    if len(cloud) == 0:
        raise ValueError(f"{pose_bone.name}: no samples; sample an action first")
    mode = pose_bone.rotation_mode
    available = {
        "padding": settings.padding,
        "mode": settings.mode,
        "twist_axis": twist_axis(pose_bone),
        "order": mode if mode not in {"QUATERNION", "AXIS_ANGLE"} else "XYZ",
    }
    options = {name: available[name] for name in model_class(settings.model).FIT_OPTIONS if name in available}
    frame_rotation = reference_frame_rotation(obj, pose_bone) if settings.reference == "FRAME" else None
    limit = JointLimit.fit(cloud, kind=settings.model, reference=settings.reference, frame_rotation=frame_rotation, **options)
    write_limit(pose_bone, limit)
    return limit
