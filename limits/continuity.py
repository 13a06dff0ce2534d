# SPDX-License-Identifier: GPL-3.0-or-later
"""Limiting motion rather than poses: each frame's limited pose follows from the previous one.

Projecting every frame on its own makes non-convex limits *pop*: where the input runs along or
through a limit, the nearest allowed rotation can switch sides (Holden's open problem, seed
001) and the limited pose jumps far more than the input moved. Kelly (seed 003) projects along
the path from the last valid pose instead. This module does that for every model through the
model interface (:meth:`.model.LimitModel.projection_candidates` and
:meth:`~.model.LimitModel.project_near`); it never changes what a single pose projects to
when the motion allows it.

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
   descent of the distance to ``q_t``: it follows the boundary the previous pose is on.

Every result is a projection of the model, or the previous result: it is inside the limit when
the model's projections are. The limited pose never moves more than ``cap_t`` in a frame, so it
never *pops* (:func:`pops`: moves more than 3x the input's step and more than 5 degrees beyond it). The first
frame, and a frame after a cut, is the plain projection.

Shapes: ``q (T, ..., 4)`` in frame order; the middle axes broadcast against a stacked model's
bone axes the way ``project`` does. Rotations are unit ``(w, x, y, z)``; either cover.
"""

import numpy as np

from .quaternion import quaternion_angle, quaternion_toward, slerp

#: Radians the limited pose may move in a frame beyond the input's own step (2.5 degrees): how
#: fast it catches up with a projection it could not follow at once.
CATCH_UP = np.radians(2.5)
#: Shortest move toward the input a slide tries (radians).
MIN_SUBSTEP = np.radians(0.25)
#: Slide steps per frame at most.
MAX_SUBSTEPS = 6
#: A slide step whose projection moves more than this many steps' lengths jumped (across a
#: gap or a medial axis): the slide stops before it.
JUMP = 3.0
#: Progress below this (radians) ends a slide.
STALL = 1e-7


#: A *pop*: the limited pose moves more than ``POP_RATIO`` times the input's step and more than
#: ``POP_MARGIN`` radians beyond it (issue 16's measure).
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
    one the first frame is a cut. ``state`` continues this one."""
    q = np.asarray(q, dtype=float)
    if q.ndim < 2 or q.shape[-1] != 4:
        raise ValueError(f"a motion must be (T, ..., 4) rotations, got shape {q.shape}")
    candidates = model.projection_candidates(q)  # (K, T, ..., 4)
    q = np.broadcast_to(q, candidates.shape[1:])
    out = candidates[0].copy()
    if len(q) == 0:
        return out, previous
    steps = quaternion_angle(q[1:], q[:-1])
    caps = step_caps(steps)
    # where frame t's plain projection is within reach of frame t-1's (both plain)
    chain = quaternion_angle(candidates[0, 1:], candidates[0, :-1]) <= caps
    if previous is None:
        plain = np.ones(q.shape[1:-1], dtype=bool)
    else:
        prev_in = np.broadcast_to(previous.input, q.shape[1:])
        prev_out = np.broadcast_to(previous.limited, q.shape[1:])
        out[0], plain = _step(model, q[0], candidates[:, 0], step_caps(quaternion_angle(q[0], prev_in)), prev_out)
    chain_all = chain.reshape(len(chain), -1).all(axis=1) if chain.size else np.ones(len(chain), dtype=bool)
    for t in range(1, len(q)):
        if chain_all[t - 1] and plain.all():
            continue  # out[t] is the plain projection already
        todo = ~(plain & chain[t - 1])
        out[t], took = _step(model, q[t], candidates[:, t], caps[t - 1], out[t - 1], todo)
        plain = np.where(todo, took, True)
    return out, MotionState(q[-1].copy(), out[-1].copy())


def _step(model, q, candidates, cap, previous, rows=None):
    """One frame: ``(limited (..., 4), plain (...,) bool)``, the rows given by ``rows`` (bool,
    default all) continued from ``previous``, the others the plain projection. ``plain`` says
    which rows took the plain projection."""
    out = candidates[0].copy()
    lead = q.shape[:-1]
    rows = np.ones(lead, dtype=bool) if rows is None else rows
    reach = quaternion_angle(candidates, previous)  # (K, ...)
    within = reach <= cap
    plain = within[0] | ~rows
    if plain.all():
        return out, plain
    # 2. another candidate within reach, the nearest the input
    miss = np.where(within, quaternion_angle(candidates, q), np.inf)
    best = np.argmin(miss, axis=0)
    found = ~plain & np.isfinite(np.take_along_axis(miss, best[None], axis=0)[0])
    picked = np.take_along_axis(candidates, best[None, ..., None], axis=0)[0]
    out[found] = picked[found]
    # 3. slide from the previous pose
    slide = ~plain & ~found
    if slide.any():
        out[slide] = _slide(model, q, np.broadcast_to(previous, q.shape), np.broadcast_to(cap, lead), slide)[slide]
    return out, plain


def _slide(model, q, start, cap, rows):
    """Projected descent toward ``q`` from ``start`` (inside) for ``rows``: see the module
    docstring (3). Steps start as long as the frame's reach and halve when one jumps or leaves
    the reach; a step that brings the pose no nearer ``q`` (a local minimum of the distance on
    the boundary) ends the row's slide. Returns ``(..., 4)``; rows not asked for hold ``start``."""
    x = start.copy()
    active = rows.copy()
    h = np.array(cap, dtype=float)
    dist = quaternion_angle(x, q)
    for _ in range(MAX_SUBSTEPS):
        if not active.any():
            break
        length = np.minimum(np.minimum(h, dist), np.maximum(cap - quaternion_angle(x, start), 0.0))
        t = np.where(active & (dist > 0.0), length / np.where(dist > 0.0, dist, 1.0), 0.0)
        y = np.where(active[..., None], slerp(x, q, t), x)
        c = quaternion_toward(model.project_near(y, x), x)
        new_dist = quaternion_angle(c, q)
        closer = new_dist < dist - STALL
        within = (quaternion_angle(c, x) <= JUMP * np.maximum(length, STALL)) & (quaternion_angle(c, start) <= cap)
        ok = active & closer & within
        x = np.where(ok[..., None], c, x)
        dist = np.where(ok, new_dist, dist)
        h = np.where(active & closer & ~within, 0.5 * h, h)
        active = active & closer & (h >= MIN_SUBSTEP) & (length > STALL)
    return x
