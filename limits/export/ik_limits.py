# SPDX-License-Identifier: GPL-3.0-or-later
"""Blender's own IK limits (``ik_min_*``, ``ik_max_*``, ``lock_ik_*`` on a pose bone) as the
Standard IK solver enforces them, fitted to a rotation cloud, and how faithful they are.

What the solver does with them (Blender's legacy "Standard" solver; iTaSC is not modelled):
``execute_posetree`` in ``source/blender/ikplugin/intern/iksolver_plugin.cc`` hands each chain
bone to the solver as a segment whose basis is the bone's *local* rotation (``basis =
rest^-1 * parent^-1 * pose``, the same rotation as the pose basis, relative to the rest pose)
and calls ``IK_SetLimit(seg, IK_X / IK_Y / IK_Z, limitmin[i], limitmax[i])`` for each axis with
``use_ik_limit_*``. In ``intern/iksolver/intern/IK_QSegment.cpp`` a bone free on all three axes
is an ``IK_QSphericalSegment``, which does *not* read Euler angles: ``UpdateAngle`` splits the
rotation with ``SphericalRangeParameters`` (``IK_Math.h``) into a swing and a twist about the
bone's Y axis, ``R = swing * twist``:

- Y: the twist angle ``2 atan2(w y, w^2)`` is clamped to ``[ik_min_y, ik_max_y]``;
- X and Z: ``SetLimit`` stores ``sin(limit / 2)``, bounds on the swing quaternion's x and z
  components (taken with ``w >= 0``). With both limited, ``EllipseClamp`` keeps ``(x, z)`` in a
  quarter ellipse per quadrant whose semi-axes are the bounds on that side: ``sin(max_x / 2)``
  for positive x, ``sin(-min_x / 2)`` for negative x, likewise for z. So the allowed swings are
  not a box: a swing at both the X and the Z bound at once is outside. The ellipse is centred
  on the rest pose, which is why Blender keeps ``min <= 0 <= max``.

A locked axis (``lock_ik_*``) drops that degree of freedom: two free axes give a swing segment
(Y locked: twist 0) or an "elbow" (X or Z locked: a rotation about the other swing axis, then
twist), one gives a hinge. Each is the region above with the locked angle fixed at 0, so one
model covers them. Stiffness (``ik_stiffness_*``) weighs how readily the solver turns an axis,
not where it stops; it is not part of the region and this module does not fit it.

Angles here: ``(..., 3)`` arrays indexed X, Y, Z in radians, X and Z being ``2 asin`` of the
swing components (for a rotation about X alone, its angle), Y the twist. The rotation mode of
the bone (Euler order, quaternion) plays no part: the solver works on matrices.
"""

import dataclasses
import math

import numpy as np

from ..checks import check_padding
from ..constants import EPS
from ..geometry.quaternion import as_quaternions, check_finite, quaternion_normalize
from .fidelity import VOLUME_ROTATIONS, VOLUME_SEED, Fidelity, fidelity, rotation_ball_share  # noqa: F401 (rotation_ball_share: kept importable here)

AXES = "XYZ"

#: An axis whose samples all stay within this many radians of the rest pose is locked
#: (``lock_ik_*``): the samples barely turn about it (0.1 degree).
LOCK_SPREAD = math.radians(0.1)

#: Slack of :meth:`IkLimits.contains` when judging samples (radians per angle): float32
#: storage and the locked axes' spread below :data:`LOCK_SPREAD` count as inside.
SAMPLE_TOLERANCE = LOCK_SPREAD

# (the volume estimate's draws, ball and seed are :mod:`.fidelity`'s, shared by every export)


def ik_angles_from_quaternion(q):
    """The angles Blender's Standard IK limits, for local rotations ``q (..., 4)``: ``(..., 3)``
    radians, X and Z the swing (``2 asin`` of the swing quaternion's x, z with ``w >= 0``), Y
    the twist about the bone's Y axis in ``(-pi, pi)``, from ``R = swing * twist``.

    The formulas are ``SphericalRangeParameters`` and ``ComputeTwist`` of Blender's
    ``IK_Math.h`` written on the quaternion; a swing of half a turn (singular there) gives
    ``(0, twist, -pi)`` as Blender's does."""
    q = quaternion_normalize(as_quaternions(q))
    w, x, y, z = np.moveaxis(q, -1, 0)
    root = np.sqrt(w * w + y * y)  # |swing w|
    regular = root > EPS
    safe = np.where(regular, root, 1.0)
    swing_x = np.where(regular, (w * x + y * z) / safe, 0.0)
    swing_z = np.where(regular, (w * z - x * y) / safe, -1.0)
    twist = 2.0 * np.arctan2(w * y, w * w)
    return np.stack(
        (2.0 * np.arcsin(np.clip(swing_x, -1.0, 1.0)), twist, 2.0 * np.arcsin(np.clip(swing_z, -1.0, 1.0))),
        axis=-1,
    )


def _ratio(value, bound):
    """``value / bound`` for ``value, bound >= 0``, with ``0 / 0 = 0`` and ``x / 0 = inf``."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(bound > 0, value / np.where(bound > 0, bound, 1.0), np.where(value > 0, np.inf, 0.0))


@dataclasses.dataclass(frozen=True)
class IkLimits:
    """One bone's IK limits: ``mins (3,)`` in ``[-pi, 0]``, ``maxs (3,)`` in ``[0, pi]``
    (radians, X, Y, Z), ``locked (3,)`` bool (a locked axis's range is 0). After :meth:`fit`,
    ``sample_mins``/``sample_maxs (3,)`` hold the samples' own angle ranges."""

    mins: np.ndarray
    maxs: np.ndarray
    locked: np.ndarray
    sample_mins: np.ndarray | None = None
    sample_maxs: np.ndarray | None = None

    def __post_init__(self):
        for name in ("mins", "maxs", "locked"):
            value = np.asarray(getattr(self, name), dtype=bool if name == "locked" else float)
            if value.shape != (3,):
                raise ValueError(f"IK limit {name!r} must have shape (3,), got {value.shape}")
            object.__setattr__(self, name, value)
        if not (np.all(np.isfinite(self.mins)) and np.all(np.isfinite(self.maxs))):
            raise ValueError("IK limits must be finite")
        if np.any(self.mins > 0) or np.any(self.maxs < 0) or np.any(self.mins < -np.pi) or np.any(self.maxs > np.pi):
            raise ValueError(f"IK limits need -pi <= min <= 0 <= max <= pi, got mins {self.mins} maxs {self.maxs}")

    @classmethod
    def fit(cls, rotations, padding=0.05):
        """The IK limits holding every local rotation of ``rotations (N, 4)`` (rest-relative,
        i.e. pose basis rotations), ``padding`` radians added to each bound.

        Twist (Y): the samples' range, widened to hold 0 (the rest pose). Swing (X, Z): the
        samples' extremes on each side, then for each quadrant whose quarter ellipse misses
        samples both of its semi-axes grow by the same factor (the ellipse keeps its shape)
        until it holds them. An axis whose samples stay within :data:`LOCK_SPREAD` of 0 is
        locked.
        """
        q = as_quaternions(rotations, "rotation cloud")
        if q.ndim != 2 or len(q) == 0:
            raise ValueError(f"the rotation cloud is empty or not (N, 4): shape {q.shape}")
        check_finite(q, "rotation cloud")
        padding = check_padding(padding)
        angles = ik_angles_from_quaternion(q)
        sample_mins, sample_maxs = angles.min(axis=0), angles.max(axis=0)
        locked = np.maximum(np.abs(sample_mins), np.abs(sample_maxs)) < LOCK_SPREAD

        mins = np.minimum(sample_mins, 0.0) - padding
        maxs = np.maximum(sample_maxs, 0.0) + padding
        swing = np.sin(0.5 * angles[:, [0, 2]])  # the swing quaternion's (x, z)
        swing[:, locked[[0, 2]]] = 0.0
        negative, positive = _swing_semi_axes(swing)
        mins[[0, 2]] = -2.0 * np.arcsin(negative) - padding
        maxs[[0, 2]] = 2.0 * np.arcsin(positive) + padding
        mins = np.where(locked, 0.0, np.clip(mins, -np.pi, 0.0))
        maxs = np.where(locked, 0.0, np.clip(maxs, 0.0, np.pi))
        return cls(mins, maxs, locked, sample_mins, sample_maxs)

    def bounds(self):
        """``(mins, maxs)`` with the locked axes' range at 0."""
        return np.where(self.locked, 0.0, self.mins), np.where(self.locked, 0.0, self.maxs)

    def contains(self, q, tolerance=0.0):
        """``(...,)`` bool: Blender's Standard IK leaves local rotations ``q (..., 4)`` as they
        are (each bound widened by ``tolerance`` radians)."""
        angles = ik_angles_from_quaternion(q)
        mins, maxs = self.bounds()
        lo, hi = mins - tolerance, maxs + tolerance
        twist = angles[..., 1]
        inside = (twist >= lo[1]) & (twist <= hi[1])
        sx, sz = np.sin(0.5 * angles[..., 0]), np.sin(0.5 * angles[..., 2])
        semi = np.sin(0.5 * np.clip(np.stack((-lo, hi)), 0.0, np.pi))  # (side, axis): - then +
        ax = np.where(sx >= 0, semi[1, 0], semi[0, 0])
        az = np.where(sz >= 0, semi[1, 2], semi[0, 2])
        rx, rz = _ratio(np.abs(sx), ax), _ratio(np.abs(sz), az)
        # EllipseClamp: a quarter ellipse, or a box when a semi-axis is zero
        flat = (ax <= 0) | (az <= 0)
        with np.errstate(invalid="ignore"):
            swing_ok = np.where(flat, (rx <= 1) & (rz <= 1), rx * rx + rz * rz <= 1.0 + 1e-12)
        return inside & swing_ok

    def widened(self):
        """``{axis: (sample_min, sample_max)}`` (radians) for the axes whose samples do not
        reach the rest pose's 0: their IK range had to be stretched to 0."""
        if self.sample_mins is None:
            return {}
        return {
            AXES[i]: (float(self.sample_mins[i]), float(self.sample_maxs[i]))
            for i in range(3)
            if not self.locked[i] and (self.sample_mins[i] > 0 or self.sample_maxs[i] < 0)
        }


def _swing_semi_axes(swing):
    """Semi-axes ``(negative (2,), positive (2,))`` for x and z (swing quaternion components,
    ``>= 0``) of the four quarter ellipses holding every ``swing (N, 2)`` point: the extremes,
    then each quadrant's two semi-axes grown by one factor until it holds its points. Growing a
    semi-axis only shrinks the other quadrants' ratios, so one pass over the quadrants ends
    with all of them holding their points."""
    semi = np.zeros((2, 2))  # (side: 0 negative / 1 positive, axis: x / z)
    for axis in range(2):
        values = swing[:, axis]
        semi[0, axis] = max(0.0, float(-values.min()))
        semi[1, axis] = max(0.0, float(values.max()))
    for side_x in range(2):
        for side_z in range(2):
            rows = ((swing[:, 0] >= 0) == bool(side_x)) & ((swing[:, 1] >= 0) == bool(side_z))
            if not rows.any():
                continue
            x, z = np.abs(swing[rows, 0]), np.abs(swing[rows, 1])
            a, b = semi[side_x, 0], semi[side_z, 1]
            if a <= 0 or b <= 0:  # a box there (EllipseClamp's flat case): the extremes hold
                continue
            worst = float(np.max((x / a) ** 2 + (z / b) ** 2))
            if worst <= 1.0:
                continue
            a = min(a * math.sqrt(worst), 1.0)
            b = min(b * math.sqrt(worst), 1.0)
            # a capped semi-axis (a swing of half a turn) leaves the other to make up for it
            b = min(max(b, float(np.max(z / np.sqrt(np.maximum(1.0 - (x / a) ** 2, EPS))))), 1.0)
            a = min(max(a, float(np.max(x / np.sqrt(np.maximum(1.0 - (z / b) ** 2, EPS))))), 1.0)
            semi[side_x, 0], semi[side_z, 1] = a, b
    return semi[0], semi[1]


@dataclasses.dataclass(frozen=True)
class IkFidelity:
    """How faithful IK limits are. ``sample_share``: share of the bone's samples they accept
    (within :data:`SAMPLE_TOLERANCE`); ``box_volume`` and ``limit_volume``: shares of uniformly
    random rotations accepted by the IK limits and by the learned limit (``None`` without
    one), from :data:`.fidelity.VOLUME_ROTATIONS` seeded draws; ``widened``: :meth:`IkLimits.widened`;
    ``locked``: the locked axes' names (a locked axis leaves a volume of 0)."""

    samples: int
    sample_share: float
    box_volume: float
    limit_volume: float | None
    widened: dict
    locked: tuple = ()

    @property
    def _shared(self):
        return Fidelity(self.samples, self.sample_share, self.box_volume, self.limit_volume)

    @property
    def volume_ratio(self):
        """IK limits' volume over the learned limit's (``None`` without a learned limit, ``inf``
        when the learned limit accepts none of the random rotations)."""
        return self._shared.volume_ratio

    def summary(self):
        """One line: ``accepts 100.0% of 240 samples; volume 2.10x the learned limit's (0.99% vs
        0.47% of all rotations); Y: samples 10..40 deg, widened to hold the rest pose``."""
        parts = [self._shared.summary()]
        if self.locked:
            parts.append(f"locked: {', '.join(self.locked)} (no volume)")
        for axis, (lo, hi) in self.widened.items():
            parts.append(f"{axis}: samples {math.degrees(lo):.0f}..{math.degrees(hi):.0f} deg, widened to hold the rest pose")
        return "; ".join(parts)


def ik_fidelity(ik, rotations, limit=None, count=VOLUME_ROTATIONS, seed=VOLUME_SEED):
    """:class:`IkFidelity` of ``ik`` (:class:`IkLimits`) for the local rotations ``rotations
    (N, 4)`` it was fitted to and, when given, the learned ``limit`` (anything with
    ``contains(q (M, 4)) -> (M,) bool`` on local rotations, e.g. a
    :class:`~..joint.JointLimit`).

    The volumes are shares of all rotations, estimated from ``count`` draws with ``seed`` (the
    same draws for both shapes) in a ball around the rest pose, first just wider than the
    samples' largest angle (:func:`.fidelity.fidelity`, the measure every export reports)."""
    shared = fidelity(ik, rotations, limit, SAMPLE_TOLERANCE, count, seed)
    return IkFidelity(
        samples=shared.samples,
        sample_share=shared.sample_share,
        box_volume=shared.volume,
        limit_volume=shared.limit_volume,
        widened=ik.widened(),
        locked=tuple(axis for axis, locked in zip(AXES, ik.locked) if locked),
    )
