# SPDX-License-Identifier: GPL-3.0-or-later
"""A joint's limit as the rig sees it: a model in reference-pose space, plus softening.

Pose bones store *local* rotations (relative to the bone's rest orientation). A
:class:`JointLimit` turns them into rotations relative to its reference pose, picks the
quaternion cover nearest the fitted data, runs the model, softens, and turns the result back.
"""

import numpy as np

from .constants import IDENTITY_QUATERNION
from .continuity import Motion, MotionState
from .geometry.quaternion import (
    as_quaternions,
    check_finite,
    quaternion_angle,
    quaternion_mean,
    quaternion_multiply,
    quaternion_normalize,
    quaternion_relative,
    quaternion_toward,
    quaternion_unroll,
)
from .registry import model_class, model_from_dict
from .softening import soften

FORMAT = "joint_limits"
VERSION = 1


def relative_cloud(local_rotations, reference):
    """Local rotations ``(N, 4)`` relative to ``reference (4,)``, unrolled along N."""
    rel = quaternion_relative(reference, quaternion_normalize(local_rotations))
    return quaternion_unroll(rel)


def reference_rotation(local_rotations, how="MEAN", frame_rotation=None):
    """The reference pose of a joint: ``"MEAN"`` of the data, ``"REST"`` (identity) or
    ``"FRAME"`` (``frame_rotation``, the local rotation at a chosen frame)."""
    if how == "MEAN":
        return quaternion_mean(quaternion_normalize(local_rotations))
    if how == "REST":
        return IDENTITY_QUATERNION.copy()
    if how == "FRAME":
        if frame_rotation is None:
            raise ValueError("reference 'FRAME' needs the rotation at that frame")
        return quaternion_normalize(as_quaternions(frame_rotation))
    raise ValueError(f"reference must be 'MEAN', 'REST' or 'FRAME', got {how!r}")


class JointLimit:
    """``model`` applied to local rotations through ``reference`` (rest-relative, ``(4,)``).

    ``centre`` is the mean of the fitted relative cloud; incoming rotations take the cover on
    its side. ``soft_radius`` 0 disables softening. All arrays may carry a leading bone axis
    (see :meth:`stack`).
    """

    def __init__(self, model, reference=IDENTITY_QUATERNION, centre=IDENTITY_QUATERNION, soft_radius=0.0, soft_falloff=1.0):
        self.model = model
        self.reference = quaternion_normalize(as_quaternions(reference, "reference"))
        self.centre = quaternion_normalize(as_quaternions(centre, "centre"))
        self.soft_radius = np.asarray(soft_radius, dtype=float)
        self.soft_falloff = np.asarray(soft_falloff, dtype=float)
        self.calibration = None

    @classmethod
    def fit(
        cls, local_rotations, kind="box", reference="MEAN", frame_rotation=None, soft_radius=0.0, soft_falloff=1.0, **options
    ):
        """Fit a ``kind`` model to a cloud of local rotations ``(N, 4)`` (time-ordered).

        ``kind="auto"`` (:mod:`.fitting.cross_validation`) picks the model and padding; its table of
        candidates is kept as the limit's ``calibration`` (``None`` for other kinds; not stored).
        """
        local = as_quaternions(local_rotations, "rotation cloud")
        if local.ndim != 2 or len(local) == 0:
            raise ValueError(f"the rotation cloud is empty or not (N, 4): shape {local.shape}")
        check_finite(local, "rotation cloud")
        ref = reference_rotation(local, reference, frame_rotation)
        rel = relative_cloud(local, ref)
        model = model_class(kind).fit(rel, **options)
        centre = quaternion_mean(rel)
        if np.sum(rel @ centre) < 0:
            centre = -centre
        limit = cls(model, ref, centre, soft_radius, soft_falloff)
        limit.calibration = model.calibration
        return limit

    # -- local-space operations -----------------------------------------------------------
    def to_relative(self, local):
        rel = quaternion_relative(self.reference, quaternion_normalize(as_quaternions(local)))
        return quaternion_toward(rel, self.centre)

    def from_relative(self, rel):
        return quaternion_multiply(self.reference, rel)

    def contains(self, local):
        return self.model.contains(self.to_relative(local))

    def project(self, local, soften_result=True):
        """Nearest allowed local rotation (softened when ``soft_radius > 0``)."""
        rel = self.to_relative(local)
        out = self.model.project(rel)
        if soften_result and np.any(self.soft_radius > 0):
            out = soften(rel, out, self.soft_radius, self.soft_falloff)
        return self.from_relative(out)

    def project_outside(self, local, tolerance=1e-5):
        """For a stacked limit and one rotation per bone ``(B, 4)`` (or ``(..., B, 4)``, e.g. every
        frame of an action): ``(moved (..., B) bool, projected (k, 4))`` for the ``k`` rotations that leave their limit by more than
        ``tolerance`` radians (rotations on the boundary, e.g. float32 round-off of an earlier
        projection, count as inside). The live handler's fast path: when every rotation is
        inside, the cost is one ``contains``. When any is outside the whole stack is projected
        (models may cache per-stack structures, which a subset would invalidate)."""
        rel = self.to_relative(local)
        outside = ~self.model.contains(rel)
        if not outside.any():
            return outside, rel[:0]
        hard = self.model.project(rel)
        moved = outside & (quaternion_angle(rel, hard) > tolerance)
        out = hard[moved]
        radius = np.broadcast_to(self.soft_radius, moved.shape)[moved]
        if np.any(radius > 0):
            out = soften(rel[moved], out, radius, np.broadcast_to(self.soft_falloff, moved.shape)[moved])
        reference = np.broadcast_to(self.reference, moved.shape + (4,))[moved]
        return moved, quaternion_multiply(reference, out)

    def project_sequence(self, local, previous=None, soften_result=True, return_state=False):
        """A motion limited: local rotations ``(T, ..., 4)`` in frame order (the middle axes as
        for :meth:`project`, e.g. ``(T, B, 4)`` for a stacked limit) give ``(T, ..., 4)``, each
        frame's limited pose following from the previous one's, so where the motion is
        continuous so is its limited version (:mod:`.continuity`: no pops where a non-convex
        limit would switch sides). The first frame is limited as by :meth:`project`;
        ``previous`` (the state a call with ``return_state=True`` returned with its result)
        continues that call's motion instead. Softening applies per frame."""
        local = as_quaternions(local)
        if local.ndim < 2:
            raise ValueError(f"a motion must be (T, ..., 4) rotations in frame order, got shape {local.shape}")
        rel = self.to_relative(local)
        hard, state = self.model.project_sequence(rel, previous)
        out = self._soften(rel, hard) if soften_result else hard
        out = self.from_relative(out)
        return (out, state) if return_state else out

    def project_sequence_outside(self, local, previous=None, tolerance=1e-5):
        """:meth:`project_sequence` the way :meth:`project_outside` reports it, for the live
        handler: ``(moved (T, ...) bool, projected (k, 4), trail)`` for the rotations moved by
        more than ``tolerance`` radians; ``trail[f]`` (a :class:`.continuity.MotionState`)
        continues the motion from frame ``f``. When every rotation is inside and ``previous``
        left no bone behind its input, the cost is one ``contains``."""
        motion = self.motion(local, previous)
        motion.advance(len(motion.rel))
        return motion.outside(0, len(motion.rel), tolerance)

    def motion(self, local, previous=None):
        """A :class:`LimitedMotion` of local rotations ``(T, ..., 4)`` in frame order, limited
        as far as it is asked (the look-ahead limits an action's frames as they are needed)."""
        return LimitedMotion(self, local, previous)

    def _soften(self, rel, hard, rows=None):
        """Softening of ``hard`` toward ``rel``; ``rows`` (bool over the lead axes) when the
        rotations are those rows only."""
        radius, falloff = self.soft_radius, self.soft_falloff
        if not np.any(radius > 0):
            return hard
        if rows is not None:
            radius = np.broadcast_to(radius, rows.shape)[rows]
            falloff = np.broadcast_to(falloff, rows.shape)[rows]
        return soften(rel, hard, radius, falloff)

    def violation(self, local):
        """Radians between ``local`` and the nearest allowed rotation (0 inside)."""
        rel = self.to_relative(local)
        return quaternion_angle(rel, self.model.project(rel))

    # -- batching and plain data ----------------------------------------------------------
    def group_key(self):
        return self.model.group_key()

    @classmethod
    def stack(cls, limits):
        limits = list(limits)
        return cls(
            type(limits[0].model).stack([lim.model for lim in limits]),
            np.stack([lim.reference for lim in limits]),
            np.stack([lim.centre for lim in limits]),
            np.array([lim.soft_radius for lim in limits]),
            np.array([lim.soft_falloff for lim in limits]),
        )

    def to_dict(self):
        return {
            "format": FORMAT,
            "version": VERSION,
            "reference": self.reference.copy(),
            "centre": self.centre.copy(),
            "soft_radius": float(self.soft_radius),
            "soft_falloff": float(self.soft_falloff),
            "model": self.model.to_dict(),
        }

    @classmethod
    def from_dict(cls, data):
        """Validate and rebuild; ``ValueError`` says what is wrong with foreign or corrupt data."""
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            raise ValueError("not a Joint Limits limit (missing format 'joint_limits')")
        if data.get("version") != VERSION:
            raise ValueError(f"unsupported Joint Limits format version {data.get('version')!r} (this build reads {VERSION})")
        out = []
        for name in ("reference", "centre"):
            try:
                value = np.asarray(data.get(name), dtype=float)
            except (TypeError, ValueError):
                raise ValueError(f"limit {name!r} is not numeric") from None
            if value.shape != (4,) or not np.all(np.isfinite(value)) or np.linalg.norm(value) < 1e-6:
                raise ValueError(f"limit {name!r} must be a finite non-zero quaternion (4,), got {value.shape}")
            out.append(value)
        soft = []
        for name in ("soft_radius", "soft_falloff"):
            value = data.get(name, 0.0)
            if not isinstance(value, (int, float)) or not np.isfinite(value) or value < 0:
                raise ValueError(f"limit {name!r} must be a non-negative number, got {value!r}")
            soft.append(float(value))
        model = model_from_dict(data.get("model"))
        return cls(model, out[0], out[1], *soft)

    def __repr__(self):
        return f"<JointLimit {self.model!r} ref={np.round(self.reference, 3).tolist()}>"


class LimitedMotion:
    """A motion being limited by a :class:`JointLimit` frame after frame
    (:class:`.continuity.Motion`): frames below :attr:`ready` are limited; :meth:`advance`
    limits more, :meth:`outside` reports a range of them as :meth:`JointLimit.project_outside`
    does. Its frames are projected a chunk at a time as it advances
    (:data:`.continuity.CHUNK_FRAMES`)."""

    def __init__(self, limit, local, previous=None):
        self.limit = limit
        self.rel = limit.to_relative(local)
        self._motion = Motion(limit.model, self.rel, previous)

    @property
    def ready(self):
        return self._motion.ready

    def advance(self, stop):
        self._motion.advance(stop)

    def outside(self, start, stop, tolerance=1e-5):
        """``(moved (n, ...) bool, projected (k, 4), trail)`` for frames ``start`` to ``stop``
        (limited already): the rotations moved by more than ``tolerance`` radians, their limited
        local rotations (softened), and the motion's state after each frame."""
        rel = self.rel[start:stop]
        hard = self._motion.out[start:stop]
        moved = quaternion_angle(rel, hard) > tolerance
        limit = self.limit
        out = limit._soften(rel[moved], hard[moved], moved)
        reference = np.broadcast_to(limit.reference, moved.shape + (4,))[moved]
        return moved, quaternion_multiply(reference, out), MotionState(rel, hard)
