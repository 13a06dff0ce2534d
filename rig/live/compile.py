# SPDX-License-Identifier: GPL-3.0-or-later
"""Compiling a rig for live enforcement: its limited bones grouped into stacked models (one numpy
projection per group), its held IK chains and its corrected bones, cached until something changes."""

import numpy as np

from ...limits.constants import IDENTITY_QUATERNION
from ...limits.geometry.quaternion import slerp
from ...limits.joint import JointLimit
from ..io.bone_errors import describe
from ..io.storage import prefetch_limits, read_limb, read_limit
from . import corrective, limited_ik, played, state


class Group:
    """Bones whose limits are stacked into one model; ``members`` keeps each bone's own
    ``(row, name, limit, influence, identity)`` so a failing group can be split bone by bone.
    ``state`` is where the bones' limited motion stands (:class:`...limits.continuity.MotionState`,
    ``None`` after a cut): the next pose limited one at a time continues from it."""

    __slots__ = ("rows", "names", "limit", "influence", "members", "state")

    def __init__(self, members, reuse=None):
        rows, names, limits, influence, identities = zip(*members)
        self.members = members
        self.rows = np.asarray(rows, dtype=np.intp)
        self.names = list(names)
        self.influence = np.asarray(influence, dtype=float)
        self.state = None
        self.limit = (reuse or Reuse()).get(("stack",) + identities, lambda: JointLimit.stack(limits))


def groups_of(members, reuse):
    """One group for ``members`` if their limits stack, else one group per bone."""
    try:
        return [Group(members, reuse)]
    except Exception:  # noqa: BLE001 - models that cannot stack are limited one by one
        return [Group([m], reuse) for m in members]


class Reuse:
    """Stacked limits of an object's previous compile, kept through :func:`invalidate`: dragging
    a slider recompiles the rig on every step, and stacking a big rig's limits (a sinus texture
    is megabytes) would stall each one. Parsing is the store's (:func:`..io.storage.read_limit`).
    Only the previous compile is kept, so memory holds one generation."""

    def __init__(self, previous=None):
        self.previous = previous or {}
        self.used = {}

    def get(self, key, make):
        if None in key:  # not identifiable (a limit stored without a token): never shared
            return make()
        value = self.used.get(key)
        if value is None:
            value = self.previous.get(key)
        if value is None:
            value = make()
        self.used[key] = value
        return value


class CompiledRig:
    def __init__(self, bone_names, groups, corrected=None, chains=()):
        #: ``obj.pose.bones.keys()`` when compiled: rows are indices into this order
        self.bone_names = bone_names
        self.groups = groups
        #: constraint-driven bones, limited through correctives (:class:`.corrective.Corrected`)
        self.corrected = corrected
        #: IK chains holding limited bones, solved by enforcement (:mod:`.limited_ik`)
        self.chains = chains
        #: input pose bytes -> (bones moved, {channel: written values}, ``(group, motion state
        #: after it)`` pairs or None to keep theirs): a keyed frame's limited pose, however it is reached
        #: (played, scrubbed, jumped to), is the one the look-ahead gave it limiting the action
        #: in frame order; looping playback and scrubbing replay it for free.
        self.memo = {}
        #: the frame and action of the last pose limited or looked up: a pose limited one at a
        #: time continues the groups' motion unless the frame jumped or the action changed (a cut)
        self.last = None
        #: the action (:func:`.lookahead.action_identity`) whose frames are in the memo
        self.looked_ahead = None
        #: the look-ahead still limiting that action's frames (:class:`Ahead`), or None
        self.ahead = None
        #: poses limited one at a time (not found in the memo): for tests and benchmarks
        self.computed = 0


def _limbs(obj):
    """``{middle bone: limb range of motion}`` of ``obj``'s enabled bones that have one (an
    unreadable one is reported and skipped)."""
    limbs = {}
    for pose_bone in obj.pose.bones:
        settings = pose_bone.joint_limit
        if not settings.enabled or not settings.limb_token:
            continue
        try:
            model = read_limb(pose_bone)
        except Exception as err:  # noqa: BLE001 - a corrupt model must not stop the rig
            state.report_once(
                (obj.name, pose_bone.name, "limb"),
                f"{obj.name}: limb range of {pose_bone.name!r} skipped, it is unreadable ({describe(err)})",
            )
            continue
        if model is not None:
            limbs[pose_bone.name] = model
    return limbs


def _compile(obj, bone_names):
    played.forget(obj)  # (its corrections were recorded under the settings that changed)
    reuse = Reuse(state.reuse.get(obj.as_pointer()))
    entries = []  # (row, pose bone, limit, group key, identity) of every readable limited bone
    prefetch_limits([pb for pb in obj.pose.bones if pb.joint_limit.enabled and pb.joint_limit.has_limit])
    for row, pose_bone in enumerate(obj.pose.bones):
        settings = pose_bone.joint_limit
        if not settings.enabled or not settings.has_limit:
            continue
        identity = _identity(settings)
        try:
            limit = read_limit(pose_bone, trust_token=True)
            key = (limit.group_key(), bool(np.any(limit.soft_radius > 0)))
        except Exception as err:  # noqa: BLE001 - a corrupt limit must not stop the rig
            state.report_once(
                (obj.name, pose_bone.name, "data"),
                f"{obj.name}: bone {pose_bone.name!r} skipped, its limit is unreadable ({describe(err)})",
            )
            continue
        entries.append((row, pose_bone, limit, key, identity))
    limits = {pose_bone.name: limit for _, pose_bone, limit, _, _ in entries}
    limbs = _limbs(obj)
    chains = limited_ik.find(
        obj, {**limited_ik.copied_limits(obj, limits), **limits}.get, {**limited_ik.copied_limits(obj, limbs), **limbs}.get
    )
    limited_ik.release(obj, keep=chains)  # chains no longer limited: Blender's IK again
    held = limited_ik.held_bones(chains)
    in_ik = corrective.ik_chain_bones(obj) | held
    by_key = {}
    by_key_corrected = {}
    for row, pose_bone, limit, key, identity in entries:
        if pose_bone.name in held:
            continue
        corrected = pose_bone.name not in in_ik and corrective.driven(pose_bone) and corrective.ensure(obj, pose_bone) is not None
        (by_key_corrected if corrected else by_key).setdefault(key, []).append(
            (row, pose_bone.name, limit, pose_bone.joint_limit.influence, identity)
        )
    groups = [group for members in by_key.values() for group in groups_of(members, reuse)]
    corrected = [group for members in by_key_corrected.values() for group in groups_of(members, reuse)]
    keep = {name for group in corrected for name in group.names} | held
    corrective.remove_all(obj, keep)  # bones no longer limited, or no longer driven
    if keep:
        corrective.mark_added()
    state.scene["ik_targets"] = state.scene["ik_targets"] | limited_ik.targets(obj, chains)
    state.reuse[obj.as_pointer()] = reuse.used
    return CompiledRig(bone_names, groups, corrective.Corrected(obj, corrected) if corrected else None, chains)


def _identity(settings):
    """What a bone's compiled limit depends on: the stored limit (its token changes with every
    write, and undo restores both) as read, and the softening settings."""
    return (settings.limit_token or None, settings.use_softening, settings.soft_radius, settings.soft_falloff)


def compiled(obj):
    """The compiled limits of ``obj`` (cached until the pose bones' names or order change).

    Rows index ``obj.pose.bones``, whose order follows the bone hierarchy: re-parenting in Edit
    Mode can reorder it and deleting one bone and adding another keeps its length, so the
    cache is checked against the names in order (``keys()``, one C call, cheap beside a
    frame; comparing the count alone would miss a bone replaced by another). A
    re-parent that keeps the order keeps every row valid. A rig seen in Edit Mode is compiled
    again when it leaves it, for a bone replaced by a new one of the same name."""
    key = obj.as_pointer()
    rig = state.cache.get(key)
    names = obj.pose.bones.keys()
    if rig is None or rig.bone_names != names or key in state.edited:
        state.edited.discard(key)
        rig = state.cache[key] = _compile(obj, names)
    return rig


def group_rotations(obj, group, arrays):
    """``(q (..., R, 4), ok (..., R))``: the local rotations of ``group``'s ``R`` bones in
    ``arrays`` (one pose, or poses over frames), NaN and zero ones reported and replaced by the
    identity (``ok`` false)."""
    q = arrays.local_quaternions(group.rows)
    ok = np.all(np.isfinite(q), axis=-1) & (np.linalg.norm(q, axis=-1) > 1e-6)
    if not ok.all():
        for name in np.asarray(group.names)[~ok.reshape(-1, len(group.rows)).all(axis=0)]:
            state.report_once((obj.name, name, "nan"), f"{obj.name}: bone {name!r} has a NaN or zero rotation; left as it is")
        q = np.where(ok[..., None], q, IDENTITY_QUATERNION)
    return q, ok


def blend_limited(group, q, ok, moved, p):
    """``(moved, limited)``: rotations ``q`` with the ``moved`` ones replaced by ``p`` (after
    the bones' influence), never the replaced NaN rows."""
    p = p[ok[moved]]  # NaN rows were replaced by the identity: never write them
    moved &= ok
    limited = q.copy()
    if moved.any():
        influence = np.broadcast_to(group.influence, moved.shape)[moved]
        if np.any(influence < 1.0):
            p = slerp(q[moved], p, influence)
        limited[moved] = p
    return moved, limited
