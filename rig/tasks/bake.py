# SPDX-License-Identifier: GPL-3.0-or-later
"""Bake: evaluate an action with constraints and IK, limit every limited bone, write a clean action.

The baked keys hold what the bones' constraints did, so once the baked action is assigned those
constraints are redundant: left live they would apply a second time (and IK would pull limited
bones out of their limits again). :func:`assign_baked` mutes exactly those.
"""

import numpy as np

from ...limits.geometry.quaternion import slerp
from ..io.actions import assign_action, bone_rotation_curves, new_action, write_bone_transform
from ..io.bone_errors import NOT_FINITE, guarded
from ..io.constraints import moved_bones
from ..io.storage import read_limit
from ..live.corrective import is_corrective
from ..live.evaluate import evaluated_local_transforms
from .sample import temporarily_assigned


def limited_bones(obj, bone_names=None, skipped=None):
    """``{name: JointLimit}`` of enabled, fitted bones (restricted to ``bone_names`` if given).
    A bone whose limit cannot be read is left out and added to ``skipped`` (a
    :class:`..io.bone_errors.SkippedBones`; without one, a ``ValueError`` naming it is raised)."""
    out = {}
    for pb in obj.pose.bones:
        if bone_names is not None and pb.name not in bone_names:
            continue
        if pb.joint_limit.enabled and pb.joint_limit.has_limit:
            with guarded(skipped, pb.name):
                out[pb.name] = read_limit(pb)
    return out


def apply_limits(obj, rotations, limits, skipped=None):
    """Limit ``rotations (F, n, 4)`` (``pose.bones`` order, frames in order) in place; returns
    them. Each bone's frames are limited as one motion (:meth:`...JointLimit.project_sequence`),
    so a limit the motion runs along or through does not make it pop. A bone whose limit fails
    or gives NaN keeps its rotations and is added to ``skipped`` (see :func:`limited_bones`)."""
    for name, limit in limits.items():
        with guarded(skipped, name):
            b = obj.pose.bones.find(name)
            q = rotations[:, b]
            p = limit.project_sequence(q)
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
        write_bone_transform(container, pb, frames, loc[:, b], rot[:, b], scale[:, b])
    baked.use_fake_user = True
    return baked


def redundant_constraints(obj, baked_bones):
    """``[(pose bone, constraint)]`` whose effect keys of ``baked_bones`` (names) already hold: the
    live constraints (not muted, and valid: one without a target did nothing to bake) of baked
    bones that move no bone outside them. The armature object's own constraints are not in the
    keys (they are relative to the armature) and never listed, nor are live enforcement's
    correctives (:mod:`..live.corrective`), which enforcement manages itself."""
    baked_bones = set(baked_bones)
    return [
        (pb, con)
        for pb in obj.pose.bones
        if pb.name in baked_bones
        for con in pb.constraints
        if not con.mute and con.is_valid and not is_corrective(con) and moved_bones(pb, con) <= baked_bones
    ]


def assign_baked(obj, source, baked):
    """Make ``baked`` (a bake of ``source``) the action of ``obj`` in place of ``source``, which
    gets a fake user so it stays in the file, and mute the constraints the baked keys hold.
    Returns the muted ``[(bone name, constraint name)]``."""
    source.use_fake_user = True
    assign_action(obj, baked)
    muted = redundant_constraints(obj, bone_rotation_curves(obj, baked))
    for _, con in muted:
        con.mute = True
    return [(pb.name, con.name) for pb, con in muted]
