# SPDX-License-Identifier: GPL-3.0-or-later
"""Live enforcement: handlers that keep every limited bone inside its limit.

``frame_change_post`` limits the pose after animation was evaluated for a frame, and a guarded
``depsgraph_update_post`` limits interactive posing. A limited bone that a live constraint
drives (not IK) is limited on its evaluated pose instead, by a corrective constraint at the end
of its stack (:mod:`.rig.corrective`); its basis is never written. Each armature's limits are compiled once
(until a setting changes, undo, a file load, or an edit of the bones) into groups of same-kind
models stacked along a bone axis, so a frame costs a few foreach_get/foreach_set calls and one
numpy projection per model kind. Nothing here raises into Blender: a broken bone is reported once and skipped.
"""

import functools
import time

import bpy
import numpy as np
from bpy.app.handlers import persistent

from .limits.constants import IDENTITY_QUATERNION
from .limits.joint import JointLimit
from .limits.quaternion import slerp
from .rig import corrective, limited_ik
from .rig.app_handlers import install, uninstall
from .rig.bone_errors import describe
from .rig.limb import read_limb
from .rig.lookahead import action_identity, action_poses
from .rig.pose_io import PoseArrays, channel_of
from .rig.storage import prefetch_limits, read_limit

#: Poses remembered per rig (about 3 kB each for 60 bones).
MEMO_SIZE = 4096
#: Frames of an action limited ahead of playback (each remembers two poses).
LOOK_AHEAD_FRAMES = 1500

_cache = {}
_reported = set()
_messages = []
_state = {"busy": False, "scene_objects": -1, "armatures": (), "ik_targets": frozenset()}
#: rigs seen in Edit Mode since they were compiled (object pointers)
_edited = set()


class _Group:
    """Bones whose limits are stacked into one model; ``members`` keeps each bone's own
    ``(row, name, limit, influence, identity)`` so a failing group can be split bone by bone.
    ``state`` is where the bones' limited motion stands (:class:`.limits.continuity.MotionState`,
    ``None`` after a cut): the next pose limited one at a time continues from it."""

    __slots__ = ("rows", "names", "limit", "influence", "members", "state")

    def __init__(self, members, reuse=None):
        rows, names, limits, influence, identities = zip(*members)
        self.members = members
        self.rows = np.asarray(rows, dtype=np.intp)
        self.names = list(names)
        self.influence = np.asarray(influence, dtype=float)
        self.state = None
        self.limit = (reuse or _Reuse()).get(("stack",) + identities, lambda: JointLimit.stack(limits))


def _groups(members, reuse):
    """One group for ``members`` if their limits stack, else one group per bone."""
    try:
        return [_Group(members, reuse)]
    except Exception:  # noqa: BLE001 - models that cannot stack are limited one by one
        return [_Group([m], reuse) for m in members]


class _Reuse:
    """Parsed and stacked limits of an object's previous compile, kept through
    :func:`invalidate`: dragging a slider recompiles the rig on every step, and parsing and
    stacking a big rig's limits (a sinus texture is megabytes) would stall each one. Only the
    previous compile is kept, so memory holds one generation."""

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


#: object pointer -> what its last compile parsed and stacked (``_Reuse.used``)
_reuse = {}


class _CompiledRig:
    def __init__(self, bone_names, groups, corrected=None, chains=()):
        #: ``obj.pose.bones.keys()`` when compiled: rows are indices into this order
        self.bone_names = bone_names
        self.groups = groups
        #: constraint-driven bones, limited through correctives (:class:`.rig.corrective.Corrected`)
        self.corrected = corrected
        #: IK chains holding limited bones, solved by enforcement (:mod:`.rig.limited_ik`)
        self.chains = chains
        #: input pose bytes -> (bones moved, {channel: written values}, ``(group, motion state
        #: after it)`` pairs or None to keep theirs): a keyed frame's limited pose, however it is reached
        #: (played, scrubbed, jumped to), is the one the look-ahead gave it limiting the action
        #: in frame order; looping playback and scrubbing replay it for free.
        self.memo = {}
        #: the frame and action of the last pose limited or looked up: a pose limited one at a
        #: time continues the groups' motion unless the frame jumped or the action changed (a cut)
        self.last = None
        #: the action (:func:`.rig.lookahead.action_identity`) whose frames are in the memo
        self.looked_ahead = None
        #: the look-ahead still limiting that action's frames (:class:`_Ahead`), or None
        self.ahead = None
        #: poses limited one at a time (not found in the memo): for tests and benchmarks
        self.computed = 0


def invalidate(*_args):
    """Forget compiled limits (a setting changed, undo, file load)."""
    _cache.clear()
    _edited.clear()
    _state["scene_objects"] = -1
    _state["ik_targets"] = frozenset()


def reset():
    """Forget everything, including which problems were already reported."""
    invalidate()
    _reuse.clear()
    _reported.clear()
    _messages.clear()


def messages():
    """Problems reported by the handlers since the last :func:`reset` (newest last)."""
    return list(_messages)


def report_once(key, text):
    if key in _reported:
        return
    _reported.add(key)
    _messages.append(text)
    print(f"Joint Limits: {text}")


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
            report_once(
                (obj.name, pose_bone.name, "limb"),
                f"{obj.name}: limb range of {pose_bone.name!r} skipped, it is unreadable ({describe(err)})",
            )
            continue
        if model is not None:
            limbs[pose_bone.name] = model
    return limbs


def _compile(obj, bone_names):
    reuse = _Reuse(_reuse.get(obj.as_pointer()))
    entries = []  # (row, pose bone, limit, group key, identity) of every readable limited bone
    prefetch_limits(
        [
            pb
            for pb in obj.pose.bones
            if pb.joint_limit.enabled and pb.joint_limit.has_limit and ("bone",) + _identity(pb.joint_limit) not in reuse.previous
        ]
    )
    for row, pose_bone in enumerate(obj.pose.bones):
        settings = pose_bone.joint_limit
        if not settings.enabled or not settings.has_limit:
            continue
        identity = _identity(settings)
        try:
            limit = reuse.get(("bone",) + identity, lambda pb=pose_bone: read_limit(pb))
            key = (limit.group_key(), bool(np.any(limit.soft_radius > 0)))
        except Exception as err:  # noqa: BLE001 - a corrupt limit must not stop the rig
            report_once(
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
    groups = [group for members in by_key.values() for group in _groups(members, reuse)]
    corrected = [group for members in by_key_corrected.values() for group in _groups(members, reuse)]
    keep = {name for group in corrected for name in group.names} | held
    corrective.remove_all(obj, keep)  # bones no longer limited, or no longer driven
    if keep:
        corrective.mark_added()
    _state["ik_targets"] = _state["ik_targets"] | limited_ik.targets(obj, chains)
    _reuse[obj.as_pointer()] = reuse.used
    return _CompiledRig(bone_names, groups, corrective.Corrected(obj, corrected) if corrected else None, chains)


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
    rig = _cache.get(key)
    names = obj.pose.bones.keys()
    if rig is None or rig.bone_names != names or key in _edited:
        _edited.discard(key)
        rig = _cache[key] = _compile(obj, names)
    return rig


def _group_rotations(obj, group, arrays):
    """``(q (..., R, 4), ok (..., R))``: the local rotations of ``group``'s ``R`` bones in
    ``arrays`` (one pose, or poses over frames), NaN and zero ones reported and replaced by the
    identity (``ok`` false)."""
    q = arrays.local_quaternions(group.rows)
    ok = np.all(np.isfinite(q), axis=-1) & (np.linalg.norm(q, axis=-1) > 1e-6)
    if not ok.all():
        for name in np.asarray(group.names)[~ok.reshape(-1, len(group.rows)).all(axis=0)]:
            report_once((obj.name, name, "nan"), f"{obj.name}: bone {name!r} has a NaN or zero rotation; left as it is")
        q = np.where(ok[..., None], q, IDENTITY_QUATERNION)
    return q, ok


def _limited(group, q, ok, moved, p):
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


def _project_group(obj, group, arrays, motion=False, previous=None):
    """``(moved (..., R), limited (..., R, 4))`` for the ``R`` bones of ``group`` in ``arrays``
    (one pose, or poses over frames): which rotations leave their limit, and every rotation
    after limiting (the others as they are). With ``motion`` the pose is the frame after
    ``previous`` (a :class:`.limits.continuity.MotionState` or ``None`` for a cut), limited as
    a motion, and a third item is the state after it."""
    q, ok = _group_rotations(obj, group, arrays)
    if motion:
        moved, p, trail = group.limit.project_sequence_outside(q[None], previous)
        moved = moved[0]
    else:
        moved, p = group.limit.project_outside(q)
    moved, limited = _limited(group, q, ok, moved, p)
    if motion:
        return moved, limited, trail[0]
    return moved, limited


def enforce_object(obj, depsgraph=None):
    """Project every enabled limited bone of ``obj``; returns how many bones were moved.
    Held IK chains are solved and constraint-driven bones corrected on ``depsgraph``'s
    evaluated pose (the active one by default), in that order: a corrected bone may hang below
    a chain."""
    rig = compiled(obj)
    scene = depsgraph.scene if depsgraph is not None else bpy.context.scene
    moved = _enforce_basis(obj, rig, scene.frame_current if scene is not None else None) if rig.groups else 0
    if rig.chains or rig.corrected is not None:
        if depsgraph is None:
            depsgraph = bpy.context.evaluated_depsgraph_get()
        stale = moved
        if rig.chains:
            # (solve evaluates the rig again, IK muted and the limited basis, only for a chain
            # it cannot look up)
            held = limited_ik.hold(obj, rig.chains)
            moved += limited_ik.solve(obj, depsgraph, rig.chains, held or stale, functools.partial(_limited_values, rig))
            stale = True
        if rig.corrected is not None:
            if stale:
                depsgraph.update()  # the corrected bones' evaluated pose under the limited basis
            moved += _correct(obj, rig, depsgraph)
    return moved


def _limited_values(rig, key):
    """The channel values the basis path writes for the input pose ``key`` (``{channel: (n, k)}``,
    empty: none), or None when it has not limited that pose: held IK chains are solved ahead on
    the limited poses of the action (:mod:`.rig.ik_lookahead`)."""
    if not rig.groups:
        return {}
    hit = rig.memo.get(key)
    if hit is _PENDING:
        hit = _resolve(rig, key)
    return None if hit is None else hit[1]


def _correct(obj, rig, depsgraph):
    def project(group, rotations):
        return _project_group(obj, group, rotations)

    return corrective.correct(obj, depsgraph, rig.corrected, project)


def _enforce_basis(obj, rig, frame=None):
    arrays = PoseArrays(obj.pose.bones)
    key = arrays.key()
    hit = rig.memo.get(key)
    if hit is None and _look_ahead(obj, rig, arrays):
        hit = rig.memo.get(key)
    if hit is _PENDING:
        hit = _resolve(rig, key)
    last, rig.last = rig.last, (frame, action_identity(obj))
    if hit is None:
        if len(rig.memo) > MEMO_SIZE:
            rig.memo.clear()
            rig.looked_ahead = rig.ahead = None
        rig.computed += 1
        cut = last is None or last[1] != rig.last[1] or frame is None or last[0] is None or abs(frame - last[0]) > 1
        hit = rig.memo[key] = _limit_pose(obj, rig, arrays, cut)
        if hit[1]:
            # the pose we are about to write is our own result: when an update hands it back
            # (depsgraph_update_post after our write), leave it alone, so influence and
            # softening apply once instead of compounding.
            rig.memo.setdefault(arrays.key(), (0, {}, None))
    moved, written, states = hit
    for group, state in states or ():
        group.state = state
    if written:
        arrays.write_values(written)
        # a transform tag re-evaluates the pose and what depends on it (skin, bone children)
        # for less than the geometry tag RNA pose edits use
        obj.update_tag(refresh={"OBJECT"})
    return moved


def _limit_pose(obj, rig, arrays, cut=True):
    """``(bones moved, written values, states)`` for the pose in ``arrays``: each group's bones
    limited as the frame after the group's last (``cut``: afresh)."""
    rows, values = [], []
    for group in list(rig.groups):
        try:
            moved, limited, state = _project_group(obj, group, arrays, True, None if cut else group.state)
        except Exception as err:  # noqa: BLE001 - isolate the broken bone, keep the rest
            rig.groups.remove(group)
            if len(group.rows) > 1:
                rig.groups.extend(_Group([m]) for m in group.members)
                return _limit_pose(obj, rig, arrays, True)
            report_once(
                (obj.name, group.names[0], "error"), f"{obj.name}: bone {group.names[0]!r} skipped ({type(err).__name__}: {err})"
            )
            continue
        group.state = state
        rows.append(group.rows[moved])
        values.append(limited[moved])
    states = tuple((group, group.state) for group in rig.groups)
    rows = np.concatenate(rows) if rows else np.zeros(0, dtype=np.intp)
    if len(rows) == 0:
        return 0, {}, states
    channels = arrays.set_local_quaternions(rows, np.concatenate(values))
    return len(rows), arrays.values(channels), states


def _look_ahead(obj, rig, arrays):
    """Limit every frame of the rig's action as one motion in frame order, batched per group,
    and remember the results (and each group's motion state after each frame), so playing,
    scrubbing or jumping to a frame looks up the same limited pose. Runs once per action (and
    after the memo was cleared); returns whether it did. Frames that keep their plain
    projection are remembered at once; the frames from the first where some bone's projection
    jumps are limited when first asked for (:class:`_Ahead`), all those before it in frame order.
    Any failure leaves the frame-by-frame path, which isolates broken bones, to do the work."""
    identity = action_identity(obj)
    if identity is None or identity == rig.looked_ahead:
        return False
    rig.looked_ahead = identity
    rig.ahead = None
    try:
        found = action_poses(obj, arrays, LOOK_AHEAD_FRAMES)
        if found is None:
            return False
        frames, poses = found
        ahead = _Ahead(obj, rig, poses, len(frames))
        ahead.remember(rig, 0)
    except Exception:  # noqa: BLE001 - see the docstring
        return False
    if ahead.done < len(frames):
        rig.ahead = ahead
        if not bpy.app.timers.is_registered(work_ahead):
            bpy.app.timers.register(work_ahead, first_interval=AHEAD_INTERVAL)
    return True


#: Seconds between the steps of :func:`work_ahead`, and the seconds of work in one step.
AHEAD_INTERVAL = 0.02
AHEAD_BUDGET = 0.02


def work_ahead():
    """A timer: while Blender waits for the user, limit the look-ahead's pending frames in
    frame order, about :data:`AHEAD_BUDGET` seconds at a time, so that playing or jumping
    later finds them remembered (the first play of a long action then costs what later plays
    do). Returns the seconds to the next step, or None when every rig is done (the timer
    ends). Never raises: a failure forgets the pending frames as :func:`_resolve` does."""
    start = time.perf_counter()
    pending = False
    for rig in list(_cache.values()):
        ahead = rig.ahead
        while ahead is not None and ahead.done < len(ahead.keys):
            if time.perf_counter() - start > AHEAD_BUDGET:
                return AHEAD_INTERVAL
            try:
                ahead.remember(rig, ahead.done + 1)
            except Exception:  # noqa: BLE001 - see _look_ahead
                _forget_ahead(rig)
                break
        pending = pending or (rig.ahead is not None and rig.ahead.done < len(rig.ahead.keys))
    return AHEAD_INTERVAL if pending else None


def _forget_ahead(rig):
    """Drop the look-ahead's pending frames (they are limited one at a time instead)."""
    for k in [k for k, v in rig.memo.items() if v is _PENDING]:
        del rig.memo[k]
    rig.ahead = None


#: a memo entry for a frame of the action the look-ahead has not limited yet
_PENDING = object()
#: Frames limited beyond a pending frame that is asked for (a first play started at once, a
#: jump): each bone runs on through its own frames (:meth:`.limits.continuity.Motion.advance`),
#: so a longer stretch costs few more steps than the frame alone, and the longer the stretch the
#: less a frame costs on average, but the longer that one frame takes (a freeze an animator
#: sees). So a stretch is sized to take about :data:`RESOLVE_BUDGET` seconds, from what the last
#: one cost a frame: ``(fewest, most)`` frames, the first stretch of an action the fewest (its
#: cost is not known yet, and a short first stretch keeps the play's first frame quick).
RESOLVE_AHEAD = (8, 240)
RESOLVE_BUDGET = 0.1
#: A stretch is at most this many times the last one's frames: a cheap stretch (the bones
#: inside their limits) says little of the next (where they slide along them).
RESOLVE_GROWTH = 2.0


class _Ahead:
    """The look-ahead of an action under way: each group's :class:`.limits.joint.LimitedMotion`
    over the action's frames, the frames remembered so far (``done``) and the frame of each
    input pose (the first, when two frames share one)."""

    def __init__(self, obj, rig, poses, count):
        self.poses = poses
        self.keys = [poses.key(f) for f in range(count)]
        self.frame = {}
        for f, key in enumerate(self.keys):
            self.frame.setdefault(key, f)
        self.parts = []
        for group in rig.groups:
            q, ok = _group_rotations(obj, group, poses)
            self.parts.append((group, q, ok, group.limit.motion(q)))
        self.rows = np.concatenate([group.rows for group in rig.groups])
        self.channels = [channel_of(code) for code in poses.modes[self.rows].tolist()]
        self.done = 0
        self.stretch = RESOLVE_AHEAD[0]
        for key in self.keys:
            rig.memo[key] = _PENDING

    def remember(self, rig, stop):
        """Limit the frames up to ``stop`` (and on while they need nothing) and remember them."""
        for *_, motion in self.parts:
            motion.advance(stop)
        start, stop = self.done, min(motion.ready for *_, motion in self.parts)
        if stop <= start:
            return
        results = []
        for group, q, ok, motion in self.parts:
            moved, p, trail = motion.outside(start, stop)
            results.append((group, *_limited(group, q[start:stop], ok[start:stop], moved, p), trail))
        moved = np.concatenate([m for _, m, _, _ in results], axis=-1)
        poses = self.poses.frames(start, stop)
        poses.set_local_quaternions(self.rows, np.concatenate([q for _, _, q, _ in results], axis=-2), where=moved)
        for i, f in enumerate(range(start, stop)):
            key = self.keys[f]
            if rig.memo.get(key) is not _PENDING or self.frame[key] != f:
                continue  # (an earlier frame with the same input pose gave its result)
            states = tuple((group, trail[i]) for group, _, _, trail in results)
            if not moved[i].any():
                rig.memo[key] = (0, {}, states)
                continue
            names = {self.channels[j] for j in np.flatnonzero(moved[i])}
            rig.memo[key] = (int(moved[i].sum()), poses.values(names, i), states)
            rig.memo.setdefault(poses.key(i), (0, {}, None))  # our own result, handed back
        self.done = stop


def _resolve(rig, key):
    """The memo entry of a pending frame: the look-ahead limits the frames up to it. On a
    failure the pending frames are forgotten (limited one at a time instead): ``None``."""
    ahead = rig.ahead
    try:
        done, began = ahead.done, time.perf_counter()
        ahead.remember(rig, ahead.frame[key] + 1 + ahead.stretch)
        spent, frames = time.perf_counter() - began, ahead.done - done
        if frames > 0:  # the next stretch: about RESOLVE_BUDGET at this stretch's cost a frame
            wanted = frames * RESOLVE_BUDGET / max(spent, 1e-6)
            ahead.stretch = int(np.clip(min(wanted, RESOLVE_GROWTH * frames), *RESOLVE_AHEAD))
        hit = rig.memo.get(key)
        if hit is not _PENDING:
            return hit
    except Exception:  # noqa: BLE001 - see _look_ahead
        pass
    _forget_ahead(rig)
    return None


def _armatures(scene):
    """The scene's armature objects (the list is rebuilt when objects are added, removed or
    renamed)."""
    objects = scene.objects
    if len(objects) != _state["scene_objects"] or any(name not in objects for name in _state["armatures"]):
        _state["scene_objects"] = len(objects)
        _state["armatures"] = tuple(o.name for o in objects if o.type == "ARMATURE")
    return [objects[name] for name in _state["armatures"]]


def enforce_scene(scene, depsgraph=None):
    """Limit every armature of ``scene``; never raises. Returns the number of bones moved."""
    if _state["busy"] or corrective.paused():
        return 0
    _state["busy"] = True
    moved = 0
    try:
        for obj in _armatures(scene):
            if obj.mode == "EDIT":
                _edited.add(obj.as_pointer())
                continue
            if obj.pose is None:
                continue
            try:
                moved += enforce_object(obj, depsgraph)
            except Exception as err:  # noqa: BLE001 - never raise into Blender
                report_once((obj.name, None, "object"), f"{obj.name}: enforcement failed ({type(err).__name__}: {err})")
    except Exception as err:  # noqa: BLE001
        report_once((None, None, "scene"), f"enforcement failed ({type(err).__name__}: {err})")
    finally:
        _state["busy"] = False
    return moved


@persistent
def on_frame_change_post(scene, depsgraph=None):
    try:
        if scene.joint_limits.enforce_live:
            enforce_scene(scene, depsgraph)
    except Exception as err:  # noqa: BLE001
        report_once((None, None, "frame"), f"frame handler failed ({err})")


@persistent
def on_depsgraph_update_post(scene, depsgraph=None):
    """Interactive posing: limit armatures the update touched (guarded against re-entry)."""
    try:
        if _state["busy"] or not scene.joint_limits.enforce_live:
            return
        if depsgraph is not None and not any(_concerns_limits(u.id) for u in depsgraph.updates):
            return
        enforce_scene(scene, depsgraph)
    except Exception as err:  # noqa: BLE001
        report_once((None, None, "depsgraph"), f"update handler failed ({err})")


def _concerns_limits(data):
    """Whether an update of ``data`` may move a limited bone: an armature, or an object a held
    IK chain aims at (a held IK is muted: Blender no longer re-evaluates the rig for it)."""
    return isinstance(data, bpy.types.Object) and (data.type == "ARMATURE" or data.name in _state["ik_targets"])


@persistent
def on_file_or_undo(*_args):
    invalidate()


@persistent
def on_save_pre(*_args):
    """Saved correctives stand at influence 0: opened without the add-on, a saved correction
    would pin a bone to the fix of the frame it was saved on."""
    try:
        corrective.neutralize_everywhere()
    except Exception as err:  # noqa: BLE001 - never raise into Blender
        report_once((None, None, "save"), f"could not reset the correctives before saving ({err})")


@persistent
def on_save_post(*_args):
    """Limit the pose again after the save (:func:`on_save_pre` reset the correctives)."""
    try:
        scene = bpy.context.scene
        if scene is not None and scene.joint_limits.enforce_live:
            depsgraph = bpy.context.evaluated_depsgraph_get()
            depsgraph.update()  # the pose with the correctives at 0, as they now are
            enforce_scene(scene, depsgraph)
    except Exception as err:  # noqa: BLE001
        report_once((None, None, "save"), f"could not limit the pose again after saving ({err})")


HANDLERS = (
    (bpy.app.handlers.frame_change_post, on_frame_change_post),
    (bpy.app.handlers.depsgraph_update_post, on_depsgraph_update_post),
    (bpy.app.handlers.load_post, on_file_or_undo),
    (bpy.app.handlers.undo_post, on_file_or_undo),
    (bpy.app.handlers.redo_post, on_file_or_undo),
    (bpy.app.handlers.save_pre, on_save_pre),
    (bpy.app.handlers.save_post, on_save_post),
)


def register():
    install(HANDLERS, __name__)


def unregister():
    uninstall(HANDLERS, __name__)
    if bpy.app.timers.is_registered(work_ahead):
        bpy.app.timers.unregister(work_ahead)
    corrective.remove_everywhere()
    reset()
