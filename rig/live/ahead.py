# SPDX-License-Identifier: GPL-3.0-or-later
"""The look-ahead: an action's frames limited as one motion in frame order, remembered, so that
playing, scrubbing or jumping to a frame looks up the same limited pose; the frames not yet
limited are worked through while Blender waits (:func:`work_ahead`)."""

import time

import bpy
import numpy as np

from ..io.pose_io import channel_of
from . import state
from .compile import blend_limited, group_rotations
from .lookahead import action_identity, action_poses

#: Frames of an action limited ahead of playback (each remembers two poses).
LOOK_AHEAD_FRAMES = 1500


def look_ahead(obj, rig, arrays):
    """Limit every frame of the rig's action as one motion in frame order, batched per group,
    and remember the results (and each group's motion state after each frame), so playing,
    scrubbing or jumping to a frame looks up the same limited pose. Runs once per action (and
    after the memo was cleared); returns whether it did. Frames that keep their plain
    projection are remembered at once; the frames from the first where some bone's projection
    jumps are limited when first asked for (:class:`Ahead`), all those before it in frame order.
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
        ahead = Ahead(obj, rig, poses, len(frames))
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
    ends). Never raises: a failure forgets the pending frames as :func:`resolve` does."""
    start = time.perf_counter()
    pending = False
    for rig in list(state.cache.values()):
        ahead = rig.ahead
        while ahead is not None and ahead.done < len(ahead.keys):
            if time.perf_counter() - start > AHEAD_BUDGET:
                return AHEAD_INTERVAL
            try:
                ahead.remember(rig, ahead.done + 1)
            except Exception:  # noqa: BLE001 - see look_ahead
                forget_ahead(rig)
                break
        pending = pending or (rig.ahead is not None and rig.ahead.done < len(rig.ahead.keys))
    return AHEAD_INTERVAL if pending else None


def forget_ahead(rig):
    """Drop the look-ahead's pending frames (they are limited one at a time instead)."""
    for k in [k for k, v in rig.memo.items() if v is PENDING]:
        del rig.memo[k]
    rig.ahead = None


#: a memo entry for a frame of the action the look-ahead has not limited yet
PENDING = object()


#: Frames limited beyond a pending frame that is asked for (a first play started at once, a
#: jump): each bone runs on through its own frames (:meth:`...limits.continuity.Motion.advance`),
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


class Ahead:
    """The look-ahead of an action under way: each group's :class:`...limits.joint.LimitedMotion`
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
            q, ok = group_rotations(obj, group, poses)
            self.parts.append((group, q, ok, group.limit.motion(q)))
        self.rows = np.concatenate([group.rows for group in rig.groups])
        self.channels = [channel_of(code) for code in poses.modes[self.rows].tolist()]
        self.done = 0
        self.stretch = RESOLVE_AHEAD[0]
        for key in self.keys:
            rig.memo[key] = PENDING

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
            results.append((group, *blend_limited(group, q[start:stop], ok[start:stop], moved, p), trail))
        moved = np.concatenate([m for _, m, _, _ in results], axis=-1)
        poses = self.poses.frames(start, stop)
        poses.set_local_quaternions(self.rows, np.concatenate([q for _, _, q, _ in results], axis=-2), where=moved)
        for i, f in enumerate(range(start, stop)):
            key = self.keys[f]
            if rig.memo.get(key) is not PENDING or self.frame[key] != f:
                continue  # (an earlier frame with the same input pose gave its result)
            states = tuple((group, trail[i]) for group, _, _, trail in results)
            if not moved[i].any():
                rig.memo[key] = (0, {}, states)
                continue
            names = {self.channels[j] for j in np.flatnonzero(moved[i])}
            rig.memo[key] = (int(moved[i].sum()), poses.values(names, i), states)
            rig.memo.setdefault(poses.key(i), (0, {}, None))  # our own result, handed back
        self.done = stop


def resolve(rig, key):
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
        if hit is not PENDING:
            return hit
    except Exception:  # noqa: BLE001 - see look_ahead
        pass
    forget_ahead(rig)
    return None
