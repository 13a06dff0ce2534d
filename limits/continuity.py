# SPDX-License-Identifier: GPL-3.0-or-later
"""Limiting motion rather than poses: each frame's limited pose follows from the previous one.

Projecting every frame on its own makes non-convex limits *pop*: where the input runs along or
through a limit, the nearest allowed rotation can switch sides (Holden's open problem, seed
001) and the limited pose jumps far more than the input moved. Kelly (seed 003) projects along
the path from the last valid pose instead. This module does that for every model through the
model interface (:meth:`.model.LimitModel.projection_candidates`,
:meth:`~.model.LimitModel.project_near` and :meth:`~.model.LimitModel.slide`); it never
changes what a single pose projects to when the motion allows it.

For one bone, input rotations ``q_t`` and limited rotations ``p_t`` (model space), the input's
step ``s_t = angle(q_{t-1}, q_t)`` and the step the limited pose may take
``cap_t = max(2 s_t, s_t + CATCH_UP)`` (radians):

1. the plain projection of ``q_t`` when it lies within ``cap_t`` of ``p_{t-1}`` (so a motion whose
   projection is continuous is limited exactly as frame by frame);
2. else the other candidate projections of ``q_t`` within ``cap_t`` (the Euler box's other
   Euler decomposition, ...), the one nearest ``q_t``;
3. else *slide*: from ``x = p_{t-1}`` move toward ``q_t`` (at most ``cap_t``, less if that jumps) and take the
   model's projection of that point near ``x``; repeat while it gets nearer ``q_t``, moves no more
   than ``JUMP`` substeps at once and stays within ``cap_t`` of ``p_{t-1}``. This is a projected
   descent of the distance to ``q_t``: it follows the boundary the previous pose is on
   (:func:`descend`; a model may slide its own way, :meth:`.model.LimitModel.slide`: the
   quaternion surface walks along its tangent planes, one field evaluation a step).

Every result is a projection of the model, the previous result or a model's slide: it is inside
the limit when those are. The limited pose never moves more than ``cap_t`` in a frame, so it
never *pops* (:func:`pops`: moves more than 3x the input's step and more than 5 degrees beyond it). The first
frame, and a frame after a cut, is the plain projection.

Shapes: ``q (T, ..., 4)`` in frame order; the middle axes broadcast against a stacked model's
bone axes the way ``project`` does. Rotations are unit ``(w, x, y, z)``; either cover.
"""

import bisect

import numpy as np

from .geometry.quaternion import quaternion_angle, quaternion_toward, slerp

#: Frames projected at a time as a motion is advanced (:class:`Motion`).
CHUNK_FRAMES = 32
#: Radians the limited pose may move in a frame beyond the input's own step (2.5 degrees): how
#: fast it catches up with a projection it could not follow at once.
CATCH_UP = np.radians(2.5)
#: Shortest move toward the input a slide tries (radians).
MIN_SUBSTEP = np.radians(0.25)
#: Slide steps per frame at most: later steps bring the pose little nearer the input for much
#: of the cost, and fewer steps hold poses away from an input inside on fewer frames.
MAX_SUBSTEPS = 3
#: A slide step whose projection moves more than this many steps' lengths jumped (across a
#: gap or a medial axis): the slide stops before it.
JUMP = 3.0
#: Progress below this (radians) ends a slide.
STALL = 1e-7


#: A *pop*: the limited pose moves more than ``POP_RATIO`` times the input's step and more than
#: ``POP_MARGIN`` radians beyond it (what an animator sees as a jump).
POP_RATIO = 3.0
POP_MARGIN = np.radians(5.0)


def pops(q, limited):
    """``(T - 1,)`` bool: which frames of a motion ``q (T, ..., 4)`` and its limited version
    ``limited`` pop (see :data:`POP_RATIO`), per row of the middle axes."""
    steps = quaternion_angle(q[1:], q[:-1])
    limited_steps = quaternion_angle(limited[1:], limited[:-1])
    return (limited_steps > POP_RATIO * steps) & (limited_steps > steps + POP_MARGIN)


class MotionState:
    """Where a limited motion stands after a frame, to continue it from there: ``input`` and
    ``limited`` ``(..., 4)`` model-space rotations of that frame. With a leading frame axis it
    is a motion's trail, and ``trail[f]`` the state after frame ``f``."""

    __slots__ = ("input", "limited")

    def __init__(self, input, limited):  # noqa: A002 - the input rotation
        self.input = np.asarray(input, dtype=float)
        self.limited = np.asarray(limited, dtype=float)

    def __getitem__(self, frame):
        return MotionState(self.input[frame], self.limited[frame])

    def lagging(self, tolerance=1e-5):
        """``(...,)`` bool: rows whose limited pose is not the input (it was moved)."""
        return quaternion_angle(self.input, self.limited) > tolerance


def step_caps(steps):
    """How far the limited pose may move in a frame, for input steps ``steps`` (radians)."""
    return np.maximum(2.0 * steps, steps + CATCH_UP)


def project_sequence(model, q, previous=None):
    """``(limited (T, ..., 4), state)``: ``q (T, ..., 4)`` limited frame after frame (see the
    module docstring). ``previous`` (a :class:`MotionState`) continues an earlier motion; without
    one the first frame is a cut. ``state`` continues this one. (:class:`Motion` does the work.)"""
    motion = Motion(model, q, previous)
    motion.advance(len(motion.out))
    if len(motion.out) == 0:
        return motion.out, previous
    return motion.out, motion.state(len(motion.out) - 1)


class Motion:
    """A motion ``q (T, ..., 4)`` being limited frame after frame, as far as asked
    (:meth:`advance`): ``out`` holds the limited frames, final below :attr:`ready`.

    The plain projections come first, batched over :data:`CHUNK_FRAMES` frames at a time as the
    motion is advanced (turning live enforcement on limits the frame shown, not the whole
    action); a row (bone) keeps its plain projection up to the first frame where it leaves the
    reach of the previous frame's, and from there on only the rows that left it or are still
    catching up are limited, frame after frame, on the model's
    :meth:`~.model.LimitModel.subset` for them. Each row follows its own frames: one step limits
    every row that needs one at that row's next such frame, so advancing many frames at once
    costs as many steps as the busiest row needs. A motion whose projection is continuous costs
    batched projections and a comparison of angles. Chunks and steps change nothing in the
    result: a row's projection does not depend on the other rows or frames projected with it."""

    def __init__(self, model, q, previous=None):
        q = np.asarray(q, dtype=float)
        if q.ndim < 2 or q.shape[-1] != 4:
            raise ValueError(f"a motion must be (T, ..., 4) rotations, got shape {q.shape}")
        self.model = model
        frames = len(q)
        first = model.project(q[:CHUNK_FRAMES])  # (C, ..., 4): its shape says the rest's
        self.q = q = np.broadcast_to(q, (frames,) + first.shape[1:])
        self.out = np.empty(q.shape)
        self._lead = q.shape[1:-1]
        self._q = q.reshape(frames, -1, 4)
        rows = self._q.shape[1]
        self._plain = np.empty((frames, rows, 4))  # each frame's plain projection
        self._out = self.out.reshape(frames, -1, 4)  # (a view: rows written here land in ``out``)
        self._caps = step_caps(quaternion_angle(self._q[1:], self._q[:-1]))  # (T - 1, n)
        # frame t + 1's plain projection out of reach of frame t's, known for t + 1 < _projected
        self._broken = np.zeros((max(frames - 1, 0), rows), dtype=bool)
        self._pending = []  # frames where some row breaks, in order
        self._projected = 0
        self._take(first)
        # rows whose limited pose at frame ``_next - 1`` is not its plain projection
        self._held = np.zeros(rows, dtype=bool)
        self._next = 1
        if frames and previous is not None:
            prev_in = np.broadcast_to(previous.input, q.shape[1:]).reshape(-1, 4)
            prev_out = np.broadcast_to(previous.limited, q.shape[1:]).reshape(-1, 4)
            cap = step_caps(quaternion_angle(self._q[0], prev_in))
            rows = np.flatnonzero(quaternion_angle(self._plain[0], prev_out) > cap)
            if rows.size:
                self._out[0, rows], plain = _step(
                    model.subset(self._lead, rows), self._q[0, rows], self._plain[0, rows], cap[rows], prev_out[rows]
                )
                self._held[rows] = ~plain
        self._skip()

    def _take(self, plain):
        """Store the plain projections ``(C, ..., 4)`` of the next ``C`` frames."""
        start, stop = self._projected, self._projected + len(plain)
        self._plain[start:stop] = plain.reshape(stop - start, -1, 4)
        self._out[start:stop] = self._plain[start:stop]
        first = max(start, 1)
        if first < stop:
            step = quaternion_angle(self._plain[first:stop], self._plain[first - 1 : stop - 1])
            broken = step > self._caps[first - 1 : stop - 1]
            self._broken[first - 1 : stop - 1] = broken
            self._pending.extend((np.flatnonzero(broken.any(axis=1)) + first).tolist())
        self._projected = stop

    def _project(self, stop):
        """Project the frames up to ``stop`` (exclusive), a chunk at a time."""
        while self._projected < min(stop, len(self.out)):
            start = self._projected
            self._take(self.model.project(self.q[start : start + CHUNK_FRAMES]))

    @property
    def ready(self):
        """Frames below this are limited (final)."""
        return self._next

    def _skip(self):
        """Move :attr:`ready` over the frames projected so far that keep their plain projection."""
        if not self._held.any():
            i = bisect.bisect_right(self._pending, self._next - 1)
            self._next = self._pending[i] if i < len(self._pending) else max(self._next, self._projected)

    def advance(self, stop):
        """Limit the frames up to ``stop`` (exclusive), each row in frame order.

        Rows do not depend on each other, so each row runs on through its own frames: one
        :func:`_step` takes every row that needs one at that row's next such frame (a row
        held behind its projection at its next frame, any other row at its next frame that
        breaks). A call costs as many steps as the busiest row needs up to ``stop``, not one
        per frame where any row needs one; the result is the same as frame after frame."""
        stop = min(stop, len(self.out))
        self._project(stop + 1)  # (whether frame ``stop`` breaks needs its projection, for _skip)
        self._skip()
        start = self._next
        if start >= stop:
            return
        # ahead[i, r]: the first frame >= start + i where row r breaks, minus start (``stop -
        # start``: none before ``stop``)
        span = stop - start
        frames = np.arange(span)[:, None]
        ahead = np.where(self._broken[start - 1 : stop - 1], frames, span)
        ahead = np.minimum.accumulate(ahead[::-1], axis=0)[::-1]
        ahead = np.concatenate((ahead, np.full((1, ahead.shape[1]), span)))  # (a row past ``stop``)
        cursor = np.zeros(ahead.shape[1], dtype=np.intp)  # each row's next frame, minus start
        everyone = np.arange(ahead.shape[1])
        held = self._held
        while True:
            due = np.where(held, cursor, ahead[cursor, everyone])  # each row's next frame to step
            rows = np.flatnonzero(due < span)
            if not rows.size:
                break
            t = due[rows] + start
            self._out[t, rows], plain = _step(
                self.model.subset(self._lead, rows),
                self._q[t, rows],
                self._plain[t, rows],
                self._caps[t - 1, rows],
                self._out[t - 1, rows],
            )
            held[rows] = ~plain
            cursor[rows] = due[rows] + 1
        self._next = stop
        self._skip()

    def state(self, frame):
        """:class:`MotionState` after ``frame`` (or frames, a slice) limited."""
        return MotionState(self.q[frame].copy(), self.out[frame].copy())


def _step(model, q, plain, cap, previous):
    """One frame for ``n`` rows: ``(limited (n, 4), plain (n,) bool)``, continued from
    ``previous (n, 4)`` with the rows' plain projections ``plain (n, 4)``; ``plain`` (the
    result) says which rows took the plain projection."""
    out = plain.copy()
    taken = quaternion_angle(plain, previous) <= cap
    if taken.all():
        return out, taken
    # 2. another candidate within reach, the nearest the input (asked only for these rows)
    rest = np.flatnonzero(~taken)
    model = model.subset(taken.shape, rest)
    q, previous, cap = q[rest], previous[rest], cap[rest]
    others = model.projection_candidates(q, plain=plain[rest])[1:]  # (K - 1, m, 4)
    miss = np.where(quaternion_angle(others, previous) <= cap, quaternion_angle(others, q), np.inf)
    found = np.zeros(len(rest), dtype=bool)
    if len(others):
        best = np.argmin(miss, axis=0)
        found = np.isfinite(np.take_along_axis(miss, best[None], axis=0)[0])
        picked = np.take_along_axis(others, best[None, ..., None], axis=0)[0]
        out[rest[found]] = picked[found]
    # 3. slide from the previous pose
    slide = np.flatnonzero(~found)
    if slide.size:
        out[rest[slide]] = model.subset(found.shape, slide).slide(q[slide], previous[slide], cap[slide])
    return out, taken


def descend(model, q, start, cap):
    """Projected descent toward ``q (n, 4)`` from ``start`` (inside): see the module docstring
    (3); what :meth:`.model.LimitModel.slide` does unless a model slides its own way. Steps
    start as long as the frame's reach and halve when one jumps or leaves the reach; a step
    that brings the pose no nearer ``q`` (a local minimum of the distance on the boundary)
    ends the row's slide. Each step projects only the rows still sliding."""
    x = start.copy()
    h = np.array(cap, dtype=float)
    dist = quaternion_angle(x, q)
    active = np.flatnonzero(dist > 0.0)
    for _ in range(MAX_SUBSTEPS):
        if not active.size:
            break
        xa, qa, sa, ca, da = x[active], q[active], start[active], cap[active], dist[active]
        length = np.minimum(np.minimum(h[active], da), np.maximum(ca - quaternion_angle(xa, sa), 0.0))
        y = slerp(xa, qa, length / da)
        c = quaternion_toward(model.subset(dist.shape, active).project_near(y, xa), xa)
        new_dist = quaternion_angle(c, qa)
        closer = new_dist < da - STALL
        within = (quaternion_angle(c, xa) <= JUMP * np.maximum(length, STALL)) & (quaternion_angle(c, sa) <= ca)
        ok = closer & within
        x[active[ok]] = c[ok]
        dist[active[ok]] = new_dist[ok]
        halve = active[closer & ~within]
        h[halve] *= 0.5
        active = active[closer & (h[active] >= MIN_SUBSTEP) & (length >= MIN_SUBSTEP)]
    return x
