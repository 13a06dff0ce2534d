# SPDX-License-Identifier: GPL-3.0-or-later
"""A learned limit approximated by the joint limits game and physics engines offer.

Engines limit a joint with a few numbers: a swing cone (circular or elliptical) or pyramid
around a cone axis, and a twist range about the bone. This module fits those numbers to a
bone's samples and says how faithful each is (:mod:`.fidelity`: the share of the samples it
accepts, and its volume against the learned limit's).

Conventions
-----------
Rotations are the pose bone's *local* rotations ``q (..., 4)`` (relative to its rest
orientation, ``(w, x, y, z)``), in Blender's bone axes: the bone points along +Y, so +Y is the
twist axis. A region is placed by two joint frames, as engines place a joint:

- the *parent frame* ``C`` (a rotation in the bone's rest axes, fixed to the parent): its +Y
  is the cone axis (the samples' middle direction), its X and Z the swing limits' axes (the
  samples' principal spread);
- the *child frame* ``T_y(tau)`` (fixed to the bone): the bone's rest axes turned by
  ``twist_offset`` ``tau`` about +Y, so the twist range is symmetric about 0.

The joint's rotation is then ``p = C^-1 q T_y(tau)``, split as ``p = swing * twist`` about +Y
(twist applied first, :func:`..geometry.swing_twist.swing_twist_from_quaternion`). ``swing`` holds
``(w, sx, 0, sz)`` with ``w >= 0``: ``sx`` turns about the frame's X, ``sz`` about its Z.

Engines whose twist axis is X (PhysX, Unreal, Jolt, USD with ``axis = "X"``) name the same
axes differently: engine X = bone Y (twist), engine Y = bone Z, engine Z = bone X (a right-
handed relabelling, :data:`BONE_FROM_ENGINE`, the 120 degree turn about (1, 1, 1)). So a limit
about the frame's Z (``swing[1]``) is the engine's limit about Y (PhysX ``yAngle``, Unreal
Swing2, Jolt plane half cone, USD ``coneAngle1Limit``), and one about the frame's X
(``swing[0]``) the engine's limit about Z (PhysX ``zAngle``, Unreal Swing1, Jolt normal half
cone, USD ``coneAngle0Limit``). Godot's ``JointLimitationCone3D`` and the VRM spring-bone cone
point along +Y, the bone's own axis: only the cone axis is exported for them.

Swing shapes (each as its engine measures it)
--------------------------------------------
``quarter_angle`` ellipse ``(ux / a)^2 + (uz / b)^2 <= 1`` on ``ux = 4 atan2(sx, 1 + w)`` (the
                 angle for a swing about one axis): PhysX 4.1 and 5's ``PxJointLimitCone``
                 (``Cm::ConeLimitHelperTanLess``), so also Unreal's physics assets (built on
                 PhysX; UE5's Chaos has its own solver, not modelled) and Omniverse's USD
                 Physics
``tan_quarter``  ellipse ``(tx / tan(a / 4))^2 + (tz / tan(b / 4))^2 <= 1`` on the tangents of
                 the quarter angles, ``tx = sx / (1 + w)``: PhysX 3's ``ConeLimitHelper``
``sin_half``     ellipse on the swing quaternion's components, semi-axes ``sin(a / 2)``:
                 Jolt's ``SwingTwistConstraint`` with ``ESwingType::Cone``
``pyramid``      ``|2 atan2(sx, w)| <= a`` and ``|2 atan2(sz, w)| <= b`` independently: Jolt's
                 ``ESwingType::Pyramid``
``circle``       swing angle ``<= a`` (``a == b``): Godot, VRM, the USD spherical joint with
                 equal cone angles

The fit rule
------------
Fitted to the samples the learned limit accepts (all of them without one), the region accepts
at least ``target`` (default :data:`TARGET_SHARE`) of them, not the farthest: a cone around
every sample would open to the worst outlier. The cone axis is the samples' mean direction,
moved to the middle of their central range along each swing axis; the swing axes are the
principal axes of the swings (exp map, about the cone axis); the twist offset is the middle of
the twists' central range. The ``1 - target`` left out is shared between the parts (swing
shape and twist; for the pyramid each swing axis and twist), each part leaving out at most its
share, so the whole accepts at least ``target`` (a union bound). An ellipse keeps the ratio of
the samples' spread along its axes and is scaled to hold its share.

Bullet (Blender's rigid body *Generic* constraint) limits Euler angles instead, in its own reading
(:func:`bullet_euler_from_quaternion`): :class:`EulerRegion` is that box, fitted the same way.
"""

import dataclasses
import math

import numpy as np

from ..checks import check_cloud
from ..constants import BONE_AXIS, MIN_PADDING
from ..geometry.quaternion import (
    matrix_from_quaternion,
    quaternion_conjugate,
    quaternion_from_exp_map,
    quaternion_multiply,
    quaternion_normalize,
    quaternion_rotate,
)
from ..geometry.swing_twist import rotation_from_direction_twist, swing_twist_from_quaternion

#: Share of the learned limit's samples an approximation accepts at least (see the fit rule).
TARGET_SHARE = 0.99

#: Kelly's break margin (seed 003, "the degree to which the boundary could be exceeded before a
#: change of simulation would be required such as bone breakage"), in degrees beyond the limit,
#: for joints whose model carries none (no model of this add-on does yet: Kelly proposes to
#: paint it into the sinus texture beside the stress map, and gives no figure).
DEFAULT_BREAK_MARGIN_DEG = 10.0

#: Swing shapes, as their engines measure them (see the module docstring).
SWING_SHAPES = ("quarter_angle", "tan_quarter", "sin_half", "pyramid", "circle")

#: Engine joint axes in the bone's axes: engine X (twist) = bone Y, engine Y = bone Z,
#: engine Z = bone X, as a quaternion ``(w, x, y, z)`` (apply to an engine-axis vector to get
#: the bone-axis vector).
BONE_FROM_ENGINE = np.array([0.5, 0.5, 0.5, 0.5])

#: Smallest limit (radians) a fit writes: engines treat a zero range as locked or invalid.
MIN_ANGLE = MIN_PADDING

#: Largest swing or twist limit (radians) a fit writes: engines want them below a half turn.
MAX_ANGLE = math.pi - 1e-3

#: Relative slack of a fitted bound, so the sample the bound was taken from stays inside after
#: the rounding of the maths that reads it back.
BOUND_SLACK = 1e-9


def _twist_about_y(angle):
    angle = np.asarray(angle, dtype=float)
    return np.stack((np.cos(0.5 * angle), np.zeros_like(angle), np.sin(0.5 * angle), np.zeros_like(angle)), axis=-1)


def _wrap(angle):
    """Angles into ``(-pi, pi]``."""
    return np.pi - (np.pi - np.asarray(angle, dtype=float)) % (2.0 * np.pi)


def joint_swing_twist(q, frame, twist_offset):
    """``(sx, sz, w, twist)`` of the joint rotation ``p = C^-1 q T_y(tau)`` for local rotations
    ``q (..., 4)``, parent frame ``frame`` ``C (4,)`` and twist offset ``tau`` (radians): the
    swing quaternion's components (``w >= 0``) and the twist angle in ``(-pi, pi]``."""
    p = quaternion_multiply(quaternion_conjugate(frame), quaternion_multiply(q, _twist_about_y(twist_offset)))
    swing, twist = swing_twist_from_quaternion(p, BONE_AXIS)
    sign = np.where(swing[..., 0] < 0.0, -1.0, 1.0)
    swing = swing * sign[..., None]
    angle = _wrap(2.0 * np.arctan2(twist[..., 2], twist[..., 0]))
    return swing[..., 1], swing[..., 3], swing[..., 0], angle


def swing_coordinates(sx, sz, w, shape):
    """The swing's coordinates ``(u, v)`` in ``shape``'s measure (about the frame's X and Z):
    angles from the quarter-angle tangents, the tangents, quaternion components, or angles
    (pyramid, circle)."""
    if shape == "quarter_angle":
        return 4.0 * np.arctan2(sx, 1.0 + w), 4.0 * np.arctan2(sz, 1.0 + w)
    if shape == "tan_quarter":
        return sx / (1.0 + w), sz / (1.0 + w)
    if shape == "sin_half":
        return sx, sz
    if shape in ("pyramid", "circle"):
        return 2.0 * np.arctan2(sx, w), 2.0 * np.arctan2(sz, w)
    raise ValueError(f"swing shape must be one of {SWING_SHAPES}, got {shape!r}")


def angle_to_measure(angle, shape):
    """A limit angle (radians) as the bound ``shape`` compares its coordinates with."""
    angle = np.asarray(angle, dtype=float)
    if shape == "tan_quarter":
        return np.tan(0.25 * angle)
    if shape == "sin_half":
        return np.sin(0.5 * angle)
    return angle


def measure_to_angle(bound, shape):
    """Inverse of :func:`angle_to_measure`."""
    bound = np.asarray(bound, dtype=float)
    if shape == "tan_quarter":
        return 4.0 * np.arctan(bound)
    if shape == "sin_half":
        return 2.0 * np.arcsin(np.clip(bound, 0.0, 1.0))
    return bound


@dataclasses.dataclass(frozen=True)
class SwingTwistRegion:
    """An engine's swing-twist limit on local rotations (see the module docstring).

    ``frame`` ``(4,)``: the parent frame ``C`` in the bone's rest axes; ``twist_offset``: ``tau``
    (radians) of the child frame; ``swing`` ``(2,)``: the limit angles (radians) about the
    frame's X and Z; ``twist`` ``(2,)``: the twist range (radians, after the offset), ``None``
    when twist is free; ``shape``: one of :data:`SWING_SHAPES`."""

    frame: np.ndarray
    twist_offset: float
    swing: np.ndarray
    twist: np.ndarray | None
    shape: str

    def __post_init__(self):
        if self.shape not in SWING_SHAPES:
            raise ValueError(f"swing shape must be one of {SWING_SHAPES}, got {self.shape!r}")
        frame = quaternion_normalize(np.asarray(self.frame, dtype=float))
        swing = np.asarray(self.swing, dtype=float)
        if frame.shape != (4,) or swing.shape != (2,) or not np.all(np.isfinite(frame)) or not np.all(np.isfinite(swing)):
            raise ValueError(f"a swing-twist region needs a finite frame (4,) and swing (2,), got {frame.shape}, {swing.shape}")
        if np.any(swing < 0) or np.any(swing > math.pi):
            raise ValueError(f"swing limits must lie in [0, pi] radians, got {swing.tolist()}")
        object.__setattr__(self, "frame", frame)
        object.__setattr__(self, "swing", swing)
        object.__setattr__(self, "twist_offset", float(self.twist_offset))
        if self.twist is not None:
            twist = np.asarray(self.twist, dtype=float)
            if twist.shape != (2,) or not np.all(np.isfinite(twist)) or twist[0] > twist[1]:
                raise ValueError(f"a twist range must be finite (low, high) with low <= high, got {self.twist!r}")
            object.__setattr__(self, "twist", twist)

    def contains(self, q, tolerance=0.0):
        """``(...,)`` bool: the region holds local rotations ``q (..., 4)`` (every limit widened
        by ``tolerance`` radians)."""
        sx, sz, w, twist = joint_swing_twist(quaternion_normalize(np.asarray(q, dtype=float)), self.frame, self.twist_offset)
        u, v = swing_coordinates(sx, sz, w, self.shape)
        if self.shape == "circle":
            inside = 2.0 * np.arctan2(np.hypot(sx, sz), w) <= self.swing[0] + tolerance
        elif self.shape == "pyramid":
            inside = (np.abs(u) <= self.swing[0] + tolerance) & (np.abs(v) <= self.swing[1] + tolerance)
        else:
            a, b = angle_to_measure(np.minimum(self.swing + tolerance, math.pi), self.shape)
            with np.errstate(divide="ignore", invalid="ignore"):
                inside = (
                    np.where(a > 0, u / a, np.where(u == 0, 0.0, np.inf)) ** 2
                    + np.where(b > 0, v / b, np.where(v == 0, 0.0, np.inf)) ** 2
                    <= 1.0
                )
        if self.twist is not None:
            inside &= (twist >= self.twist[0] - tolerance) & (twist <= self.twist[1] + tolerance)
        return inside

    @property
    def cone_axis(self):
        """``(3,)`` the cone axis in the bone's rest axes (the frame's +Y)."""
        return quaternion_rotate(self.frame, BONE_AXIS)

    def child_frame(self):
        """``(4,)`` the child frame ``T_y(tau)`` in the bone's own axes."""
        return _twist_about_y(self.twist_offset)


def _quantile(values, share):
    """The smallest value with at least ``share`` of ``values`` at or below it."""
    return float(np.quantile(values, share, method="higher"))


def _bound(value):
    return min(max(value * (1.0 + BOUND_SLACK) + 1e-12, MIN_ANGLE), MAX_ANGLE)


def _centre_frame(q):
    """``C (4,)``: +Y to the samples' middle direction, X and Z along the principal axes of the
    swings about it."""
    directions = quaternion_rotate(q, BONE_AXIS)
    mean = directions.mean(axis=0)
    norm = np.linalg.norm(mean)
    centre = mean / norm if norm > 1e-6 else BONE_AXIS.copy()
    frame = rotation_from_direction_twist(centre, 0.0)
    return _principal_turn(q, frame)


def _swing_angles(q, frame):
    """``(N, 2)`` the swings' exp-map components about the frame's X and Z (radians)."""
    sx, sz, w, _ = joint_swing_twist(q, frame, 0.0)
    half = np.arctan2(np.hypot(sx, sz), w)
    with np.errstate(invalid="ignore", divide="ignore"):
        scale = np.where(half > 1e-12, 2.0 * half / np.maximum(np.hypot(sx, sz), 1e-300), 2.0)
    return np.stack((sx * scale, sz * scale), axis=-1)


def _principal_turn(q, frame):
    """``frame`` turned about its +Y so its X and Z follow the principal axes of the swings."""
    points = _swing_angles(q, frame)
    cov = np.cov(points.T) if len(points) > 1 else np.eye(2)
    values, vectors = np.linalg.eigh(cov)
    major = vectors[:, -1]
    turn = math.atan2(float(major[1]), float(major[0]))  # from the frame's X toward its Z
    # a turn about +Y by psi takes X to (cos psi, 0, -sin psi): X goes toward Z for psi < 0
    return quaternion_multiply(frame, _twist_about_y(-turn))


def _recentre(q, frame, share):
    """``frame`` moved so its +Y sits in the middle of the swings' central range along X and Z."""
    points = _swing_angles(q, frame)
    tail = 0.5 * (1.0 - share)
    middle = 0.5 * (np.quantile(points, tail, axis=0) + np.quantile(points, 1.0 - tail, axis=0))
    shift = quaternion_from_exp_map(np.array([middle[0], 0.0, middle[1]]))
    return quaternion_normalize(quaternion_multiply(frame, shift))


def _twist_offset(q, frame, share):
    """``tau`` putting the middle of the twists' central range at 0."""
    _, _, _, twist = joint_swing_twist(q, frame, 0.0)
    mean = math.atan2(float(np.mean(np.sin(twist))), float(np.mean(np.cos(twist))))
    rel = _wrap(twist - mean)
    tail = 0.5 * (1.0 - share)
    middle = 0.5 * (np.quantile(rel, tail) + np.quantile(rel, 1.0 - tail))
    return -float(_wrap(mean + middle))


def accepted_samples(rotations, limit=None):
    """The local rotations ``(M, 4)`` of ``rotations (N, 4)`` the learned ``limit`` accepts (all
    of them without a limit, or when it accepts none)."""
    q = quaternion_normalize(check_cloud(rotations))
    if limit is None:
        return q
    inside = np.asarray(limit.contains(q), dtype=bool)
    return q[inside] if inside.any() else q


def fit_swing_twist(rotations, shape="quarter_angle", limit=None, target=TARGET_SHARE, twist=True):
    """The :class:`SwingTwistRegion` of ``shape`` for a bone's local rotations ``rotations
    (N, 4)``, holding at least ``target`` of the samples ``limit`` accepts (see the fit rule);
    ``twist=False`` leaves the twist free (a cone alone: Godot, VRM)."""
    if not 0.0 < float(target) <= 1.0:
        raise ValueError(f"target share must be in (0, 1], got {target!r}")
    if shape not in SWING_SHAPES:
        raise ValueError(f"swing shape must be one of {SWING_SHAPES}, got {shape!r}")
    q = accepted_samples(rotations, limit)
    parts = (3 if shape == "pyramid" else 2) if twist else (2 if shape == "pyramid" else 1)
    share = 1.0 - (1.0 - float(target)) / parts
    frame = _centre_frame(q)
    for _ in range(2):
        frame = _principal_turn(q, _recentre(q, frame, share))
    offset = _twist_offset(q, frame, share) if twist else 0.0
    sx, sz, w, angle = joint_swing_twist(q, frame, offset)
    u, v = swing_coordinates(sx, sz, w, shape)
    if shape == "circle":
        limit_angle = _bound(_quantile(np.hypot(u, v), share))
        swing = (limit_angle, limit_angle)
    elif shape == "pyramid":
        swing = (_bound(_quantile(np.abs(u), share)), _bound(_quantile(np.abs(v), share)))
    else:
        floor = float(angle_to_measure(MIN_ANGLE, shape))
        a0 = max(_quantile(np.abs(u), share), floor)
        b0 = max(_quantile(np.abs(v), share), floor)
        scale = _quantile(np.hypot(u / a0, v / b0), share)
        swing = tuple(_bound(float(measure_to_angle(scale * s, shape))) for s in (a0, b0))
    twist_range = None
    if twist:
        half = _bound(_quantile(np.abs(angle), share))
        twist_range = (-half, half)
    return SwingTwistRegion(frame, offset, swing, twist_range, shape)


# -- Bullet (Blender's rigid body Generic constraint) -------------------------------------------
def bullet_euler_from_quaternion(q):
    """The angles ``(..., 3)`` (radians, indexed X, Y, Z) Bullet's ``btGeneric6DofConstraint``
    (Blender's *Generic* rigid body constraint) limits, for joint rotations ``q (..., 4)``.

    Bullet reads the frames' relative rotation ``R`` with ``matrixToEulerXYZ``, which indexes the
    matrix column first: its angles are those of ``R^-1 = Rx(x) Ry(y) Rz(z)``, so
    ``R = Rz(-z) Ry(-y) Rx(-x)`` (Blender's ``'XYZ'`` Euler of ``R``, negated), the branch with
    ``y`` in ``[-pi/2, pi/2]``. Measured in Blender: a body held by asymmetric limits comes to
    rest on them in this reading (tests/rig/tasks/test_export.py)."""
    m = np.swapaxes(matrix_from_quaternion(q), -1, -2)  # R^-1
    y = np.arcsin(np.clip(m[..., 0, 2], -1.0, 1.0))
    regular = np.abs(m[..., 0, 2]) < 1.0 - 1e-12
    x = np.where(regular, np.arctan2(-m[..., 1, 2], m[..., 2, 2]), np.arctan2(m[..., 2, 1], m[..., 1, 1]))
    z = np.where(regular, np.arctan2(-m[..., 0, 1], m[..., 0, 0]), 0.0)
    return np.stack((x, y, z), axis=-1)


@dataclasses.dataclass(frozen=True)
class EulerRegion:
    """Bullet's Generic constraint limits: ``lower``, ``upper`` ``(3,)`` radians per axis of
    :func:`bullet_euler_from_quaternion` of the local rotation (the constraint frame is the
    bone's rest frame at both ends, so the joint rotation is the local rotation)."""

    lower: np.ndarray
    upper: np.ndarray

    def __post_init__(self):
        lower, upper = np.asarray(self.lower, dtype=float), np.asarray(self.upper, dtype=float)
        if lower.shape != (3,) or upper.shape != (3,) or np.any(lower > upper) or not np.all(np.isfinite(lower + upper)):
            raise ValueError(f"Euler limits need finite lower <= upper (3,), got {lower.tolist()}, {upper.tolist()}")
        object.__setattr__(self, "lower", lower)
        object.__setattr__(self, "upper", upper)

    def contains(self, q, tolerance=0.0):
        angles = bullet_euler_from_quaternion(np.asarray(q, dtype=float))
        return np.all((angles >= self.lower - tolerance) & (angles <= self.upper + tolerance), axis=-1)


def fit_euler(rotations, limit=None, target=TARGET_SHARE):
    """The :class:`EulerRegion` holding at least ``target`` of the samples ``limit`` accepts:
    per axis the central range of the angles, each axis leaving out a third of ``1 - target``.
    The middle (Y, the twist) is Bullet's angle of at most a quarter turn."""
    if not 0.0 < float(target) <= 1.0:
        raise ValueError(f"target share must be in (0, 1], got {target!r}")
    angles = bullet_euler_from_quaternion(accepted_samples(rotations, limit))
    tail = (1.0 - float(target)) / 6.0
    lower = np.quantile(angles, tail, axis=0, method="lower")
    upper = np.quantile(angles, 1.0 - tail, axis=0, method="higher")
    lower = lower - np.abs(lower) * BOUND_SLACK - MIN_ANGLE
    upper = upper + np.abs(upper) * BOUND_SLACK + MIN_ANGLE
    return EulerRegion(np.maximum(lower, -math.pi), np.minimum(upper, math.pi))


def break_margin_deg(limit, default=DEFAULT_BREAK_MARGIN_DEG):
    """Kelly's break margin of a joint in degrees: the model's ``break_margin_deg`` setting when
    it has one, else ``default`` (see :data:`DEFAULT_BREAK_MARGIN_DEG`)."""
    value = None if limit is None else getattr(limit, "model", None) and limit.model.config.get("break_margin_deg")
    value = default if value is None else value
    if not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        raise ValueError(f"a break margin must be a non-negative number of degrees, got {value!r}")
    return float(value)
