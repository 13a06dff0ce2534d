# SPDX-License-Identifier: GPL-3.0-or-later
"""Bake: evaluate an action with constraints and IK, limit every limited bone, write a clean action."""

import numpy as np

from ..limits.quaternion import slerp
from .actions import bone_path, new_action, rotation_channel_values, write_curve
from .bone_errors import NOT_FINITE, guarded
from .evaluate import evaluated_local_transforms
from .sampling import temporarily_assigned
from .storage import read_limit


def limited_bones(obj, bone_names=None, skipped=None):
    """``{name: JointLimit}`` of enabled, fitted bones (restricted to ``bone_names`` if given).
    A bone whose limit cannot be read is left out and added to ``skipped`` (a
    :class:`.bone_errors.SkippedBones`; without one, a ``ValueError`` naming it is raised)."""
    out = {}
    for pb in obj.pose.bones:
        if bone_names is not None and pb.name not in bone_names:
            continue
        if pb.joint_limit.enabled and pb.joint_limit.has_limit:
            with guarded(skipped, pb.name):
                out[pb.name] = read_limit(pb)
    return out


def apply_limits(obj, rotations, limits, skipped=None):
    """Limit ``rotations (F, n, 4)`` (``pose.bones`` order) in place; returns them. A bone whose
    limit fails or gives NaN keeps its rotations and is added to ``skipped`` (see
    :func:`limited_bones`)."""
    for name, limit in limits.items():
        with guarded(skipped, name):
            b = obj.pose.bones.find(name)
            q = rotations[:, b]
            p = limit.project(q)
            influence = obj.pose.bones[b].joint_limit.influence
            limited = slerp(q, p, influence) if influence < 1.0 else p
            if not np.all(np.isfinite(limited)):
                raise ValueError(NOT_FINITE)
            rotations[:, b] = limited
    return rotations


def bake_action(obj, scene, action, frames, bone_names=None, name=None, progress=None, skipped=None):
    """A new action with loc/rot/scale keys on every frame for every bone, reproducing the
    evaluated pose (constraints and IK baked in) with limited bones projected into their limits.
    The source action is untouched and the new one is not assigned. Returns the new action.
    A limited bone whose limit cannot be read or gives NaN is baked unlimited and added to
    ``skipped`` (see :func:`limited_bones`)."""
    limits = limited_bones(obj, bone_names, skipped)
    with temporarily_assigned(obj, action):
        loc, rot, scale = evaluated_local_transforms(obj, scene, frames, progress)
    rot = apply_limits(obj, rot, limits, skipped)
    baked, container = new_action(obj, name or f"{action.name}_limited")
    frames = np.asarray(frames, dtype=float)
    for b, pb in enumerate(obj.pose.bones):
        group = pb.name
        path = bone_path(pb.name)
        channel, values = rotation_channel_values(pb.rotation_mode, rot[:, b])
        for i in range(3):
            write_curve(container, f"{path}.location", i, frames, loc[:, b, i], group)
        for i in range(values.shape[1]):
            write_curve(container, f"{path}.{channel}", i, frames, values[:, i], group)
        for i in range(3):
            write_curve(container, f"{path}.scale", i, frames, scale[:, b, i], group)
    baked.use_fake_user = True
    return baked
