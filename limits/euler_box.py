# SPDX-License-Identifier: GPL-3.0-or-later
"""The Euler box: a min/max range per Euler angle, the limit Blender, Maya and Houdini offer.

This is the baseline the shape limits are compared with, and it exports exactly to Blender's
*Limit Rotation* constraint (``min_x``/``max_x``... in radians, which accept -1000..1000).

Angles: the rotation is decomposed into Blender Euler angles for ``config["order"]`` (one of
:data:`~.constants.EULER_ORDERS`; ``"XYZ"`` means ``R = Rz @ Ry @ Rx``) with
:func:`~.quaternion.euler_from_quaternion`, which like Blender's ``mat3_normalized_to_eulO``
returns, of the two equivalent triples, the one with the smaller sum of absolute angles. Angles
are then in ``[-pi, pi]``.

Fitting wraps around: for each axis the range is the smallest circular arc holding all the
data's angles (the complement of the largest gap between consecutive sorted angles), grown by
the padding on both sides. ``mins``/``maxs`` are stored in radians with ``mins < maxs``; when the
arc crosses +-pi one bound lies beyond +-pi (e.g. ``[2.9, 3.4]``), which is how Blender's
constraint expresses such a range too. An arc of a full turn or more (``maxs - mins >= 2 pi``)
does not limit that axis.

Projection matches Blender's non-legacy Limit Rotation (``rotlimit_evaluate`` and its
``clamp_angle`` in ``source/blender/blenkernel/intern/constraint.cc``, Blender 4.2 and later,
i.e. without ``LIMIT_ROT_LEGACY_BEHAVIOR``): the decomposed triple is clamped angle by angle on
the circle; an angle outside its arc goes to whichever bound is closer around the circle
(``min`` on a tie), ``max - min >= 2 pi`` leaves the angle free and ``max <= min`` gives ``min``.
The clamped triple is turned back into a rotation. One deliberate difference: a rotation is
*allowed* when either of its two equivalent Euler triples lies in the box (Blender only looks at
the triple its decomposition picks), and allowed rotations are returned unchanged. Blender
would clamp the picked triple even then, moving a rotation the box allows; for disallowed
rotations the result is Blender's. This keeps ``project`` idempotent. At gimbal lock (middle
angle exactly +-pi/2) the decomposition sets the last angle to zero, as Blender does.

"Nearest" is measured in Euler-angle space, one angle at a time; the result is generally not
the geodesically nearest allowed rotation.

Reference pose: models receive rotations relative to the joint's reference pose (see
:mod:`.joint`), while Blender's constraint (owner space Local) sees rotations relative to the
rest pose. The Euler box therefore agrees exactly with the native constraint only when the
reference is the rest pose (``reference="REST"``).

Parameters: ``mins (3,)`` and ``maxs (3,)`` in radians, indexed by axis X, Y, Z (not by order).
There is no SWING_TWIST mode.
"""

import numpy as np

from .constants import EULER_ORDERS, IDENTITY_QUATERNION
from .model import LimitModel, MovedProjection, register_model
from .quaternion import (
    as_quaternions,
    euler_from_quaternion,
    quaternion_from_euler,
    quaternion_toward,
)
from .shape_limit import CONTAINS_TOLERANCE, check_cloud, check_padding, finite_rows

TWO_PI = 2.0 * np.pi

#: Largest magnitude of a bound, in radians (Blender's Limit Rotation range).
BOUND_LIMIT = 1000.0

_AXIS_INDEX = {"X": 0, "Y": 1, "Z": 2}


def wrap_angle(angle):
    """Angles wrapped to ``[-pi, pi)`` (Blender's ``wrap_rad_angle``)."""
    return angle - TWO_PI * np.floor(angle / TWO_PI + 0.5)


def clamp_angle(angle, lo, hi):
    """Blender's ``clamp_angle``, vectorized: clamp ``angle`` to the directed arc from ``lo`` to
    ``hi`` on the circle (radians, broadcasting). An angle outside goes to the circularly
    nearer bound (``lo`` on a tie)."""
    lo_rel = wrap_angle(lo - angle)
    hi_rel = wrap_angle(hi - angle)
    plain = angle + np.minimum(np.maximum(0.0, lo_rel), hi_rel)
    crossed_inside = (hi_rel >= 0.0) | (lo_rel <= 0.0)
    nearer = angle + np.where(np.abs(hi_rel) < np.abs(lo_rel), hi_rel, lo_rel)
    out = np.where(lo_rel < hi_rel, plain, np.where(crossed_inside, angle, nearer))
    out = np.where(hi <= lo, lo, out)
    return np.where(hi - lo >= TWO_PI, angle, out)


def angle_in_arc(angle, lo, hi, tolerance=0.0):
    """``angle`` lies on the directed arc from ``lo`` to ``hi`` (within ``tolerance`` radians)."""
    offset = np.mod(angle - lo, TWO_PI)
    return (hi - lo >= TWO_PI) | (offset <= hi - lo + tolerance) | (offset >= TWO_PI - tolerance)


def circular_ranges(angles, padding):
    """Per column, the smallest circular arc holding all ``angles (N, k)`` (radians), padded.

    Returns ``(mins, maxs)`` of shape ``(k,)`` with ``mins < maxs``, the arc's middle in
    ``[-pi, pi)``; an arc of a full turn or more gives ``(-pi, pi)``.
    """
    a = np.sort(wrap_angle(np.asarray(angles, dtype=float)), axis=0)
    gaps = np.diff(a, axis=0, append=a[:1] + TWO_PI)  # gap after each sorted angle; last wraps
    largest = np.argmax(gaps, axis=0)
    cols = np.arange(a.shape[1])
    start = a[(largest + 1) % len(a), cols]
    width = TWO_PI - gaps[largest, cols]
    mins = start - padding
    maxs = start + width + padding
    shift = TWO_PI * np.floor((0.5 * (mins + maxs)) / TWO_PI + 0.5)
    mins, maxs = mins - shift, maxs - shift
    full = maxs - mins >= TWO_PI
    return np.where(full, -np.pi, mins), np.where(full, np.pi, maxs)


def _check_order(order):
    if order not in EULER_ORDERS:
        raise ValueError(f"Euler order must be one of {EULER_ORDERS}, got {order!r}")
    return order


@register_model
class EulerBoxLimit(MovedProjection, LimitModel):
    kind = "euler_box"
    ui_order = 10
    FIT_OPTIONS = ("padding", "order")
    label = "Euler Box"
    description = "Min/max per Euler angle, like Blender's Limit Rotation constraint (the usual baseline)"
    PARAM_SHAPES = {"mins": (3,), "maxs": (3,)}

    @classmethod
    def fit(cls, rotations, order="XYZ", padding=0.05, mode="FULL", twist_axis=None):
        """Fit per-axis circular ranges to reference-relative rotations ``(N, 4)``.

        ``order`` is the Blender Euler order; ``padding`` radians are added on both sides.
        ``mode`` may only be ``"FULL"`` and ``twist_axis`` is ignored (accepted so every model
        can be fitted with the same options).
        """
        q = check_cloud(rotations)
        order = _check_order(order)
        if mode != "FULL":
            raise ValueError(f"the Euler box has no {mode!r} mode (only 'FULL')")
        mins, maxs = circular_ranges(euler_from_quaternion(q, order), check_padding(padding))
        return cls({"mins": mins, "maxs": maxs}, {"order": order})

    # -- the two Euler triples of a rotation ------------------------------------------------------
    def _triples(self, q):
        order = self.config["order"]
        euler = euler_from_quaternion(q, order)
        i, j, k = (_AXIS_INDEX[c] for c in order)
        alternative = euler.copy()
        alternative[..., i] += np.pi
        alternative[..., j] = np.pi - alternative[..., j]
        alternative[..., k] += np.pi
        return euler, alternative

    def _inside(self, euler, tolerance):
        return np.all(angle_in_arc(euler, self.params["mins"], self.params["maxs"], tolerance), axis=-1)

    # -- the interface ---------------------------------------------------------------------------
    def contains(self, q, tolerance=CONTAINS_TOLERANCE):
        """``(...,)`` bool: either Euler triple of ``q (..., 4)`` is in the box (``tolerance``
        radians per angle). Non-finite rows are not contained."""
        q = as_quaternions(q)
        finite = finite_rows(q)
        euler, alternative = self._triples(np.where(finite[..., None], q, IDENTITY_QUATERNION))
        return finite & (self._inside(euler, tolerance) | self._inside(alternative, tolerance))

    def _project(self, q):
        q = as_quaternions(q)
        finite = finite_rows(q)
        safe = np.where(finite[..., None], q, IDENTITY_QUATERNION)
        euler, alternative = self._triples(safe)
        allowed = self._inside(euler, 0.0) | self._inside(alternative, 0.0)
        clamped = clamp_angle(euler, self.params["mins"], self.params["maxs"])
        limited = quaternion_toward(quaternion_from_euler(clamped, self.config["order"]), safe)
        moved = finite & ~allowed
        return np.where(moved[..., None], limited, q), moved

    # -- validation ------------------------------------------------------------------------------
    def validate(self):
        order = self.config.get("order")
        if order not in EULER_ORDERS:
            raise ValueError(f"{self.kind} limit: config 'order' must be one of {EULER_ORDERS}, got {order!r}")
        extra = set(self.config) - {"order"}
        if extra:
            raise ValueError(f"{self.kind} limit: unknown config entries {sorted(extra)}")
        mins, maxs = self.params["mins"], self.params["maxs"]
        if np.any(mins > maxs):
            raise ValueError(f"{self.kind} limit: 'mins' must not exceed 'maxs'")
        if np.any(np.abs(mins) > BOUND_LIMIT) or np.any(np.abs(maxs) > BOUND_LIMIT):
            raise ValueError(f"{self.kind} limit: bounds must lie within +-{BOUND_LIMIT:g} radians (Blender's range)")
