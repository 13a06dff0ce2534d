# SPDX-License-Identifier: GPL-3.0-or-later
"""Synthetic motion: a range-of-motion take with known joint regions, and an impossible one.

Tests and the README demo use these instead of motion capture. Every rotation is a Blender
local rotation: relative to the bone's rest frame (pose = rest * local), bone axis +Y. The
regions are written for the frames of :func:`~limits.skeleton.humanoid_skeleton` (spine and
legs: X lateral, knee and spine flexion positive about X; arms rolled so that on the left X
points down and Z forward, elbow flexion positive about X, raising the arm positive about Z).
Regions are defined for the left side; a right bone's rotation is checked after
:func:`~limits.skeleton.mirror_local_rotation`, which is how right-side data is generated.

Each bone gets one of three region kinds, each with a membership test and a parametrization
by points of a unit box or ball (so generated data lies inside by construction):

* :class:`Ellipsoid` - an ellipsoid in exp-map space (spine, neck, head, clavicles, wrists,
  ankles, toes, root).
* :class:`Hinge` - flexion about local X in a range, a little off-axis swing about Z and a
  little twist about Y (elbows, knees).
* :class:`ConeTwist` - coupled swing-twist (shoulders, hips): the swing direction of the bone
  must lie in a non-convex spherical region (a cone whose radius depends on the azimuth, wider
  forward than backward, with a notch), and the allowed twist range depends on the swing.
"""

from dataclasses import dataclass

import numpy as np

from ..constants import BONE_AXIS
from ..geometry.quaternion import (
    as_quaternions,
    exp_map_from_quaternion,
    quaternion_from_exp_map,
    quaternion_multiply,
    quaternion_rotate,
    quaternion_short_way,
)
from ..geometry.swing_twist import swing_twist_from_quaternion
from .skeleton import SIDED_BONES, bone_category, mirror_local_rotation

_DEG = np.pi / 180.0


def _wrap(angle):
    """Angles wrapped to ``[-pi, pi)``."""
    return (np.asarray(angle) + np.pi) % (2.0 * np.pi) - np.pi


def _axis_rotation(axis, angle):
    """Quaternions ``(..., 4)`` rotating ``angle (...)`` radians about unit ``axis (3,)``."""
    angle = np.asarray(angle, dtype=float)
    return np.concatenate((np.cos(0.5 * angle)[..., None], np.sin(0.5 * angle)[..., None] * np.asarray(axis, float)), -1)


def twist_angle(q):
    """Twist ``(...)`` in radians about the bone axis +Y of rotations ``q (..., 4)``, in
    ``(-pi, pi]``, with ``q = swing * twist``."""
    _, twist = swing_twist_from_quaternion(quaternion_short_way(q), BONE_AXIS)
    return _wrap(2.0 * np.arctan2(twist[..., 2], twist[..., 0]))


def swing_direction(q):
    """Where rotations ``q (..., 4)`` point the bone: ``rotate(q, +Y)`` ``(..., 3)``."""
    return quaternion_rotate(as_quaternions(q), np.broadcast_to(BONE_AXIS, np.shape(q)[:-1] + (3,)))


def swing_from_direction(direction):
    """Minimal-arc swings ``(..., 4)`` taking +Y to unit ``direction (..., 3)`` (no twist)."""
    d = np.asarray(direction, dtype=float)
    d = d / np.linalg.norm(d, axis=-1, keepdims=True)
    # Half-way quaternion: q = (1 + y.d, y x d) normalized; y x d = (d_z, 0, -d_x).
    q = np.stack((1.0 + d[..., 1], d[..., 2], np.zeros_like(d[..., 0]), -d[..., 0]), axis=-1)
    n = np.linalg.norm(q, axis=-1, keepdims=True)
    return np.where(n > 1e-12, q / np.where(n > 1e-12, n, 1.0), np.array([0.0, 0.0, 0.0, 1.0]))


# -- regions -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Ellipsoid:
    """Rotations whose exp map (short way, radians) lies in an ellipsoid.

    ``centre`` and ``radii`` are ``(3,)`` radians along the bone's local X, Y (twist), Z.
    Sampling parameters: points of the unit ball ``(..., 3)``.
    """

    centre: tuple
    radii: tuple

    n_params = 3

    def level(self, q):
        """``(...)`` ellipsoidal norm: ``<= 1`` inside."""
        v = exp_map_from_quaternion(quaternion_short_way(q))
        return np.linalg.norm((v - np.asarray(self.centre)) / np.asarray(self.radii), axis=-1)

    def contains(self, q, tol=1e-9):
        return self.level(q) <= 1.0 + tol

    def sample(self, u):
        return quaternion_from_exp_map(np.asarray(self.centre) + np.asarray(self.radii) * u)


@dataclass(frozen=True)
class Hinge:
    """Flexion ``a`` about local X in ``flex``, off-axis swing ``c`` about Z in ``wobble``, twist
    ``b`` about Y in ``twist`` (all ``(lo, hi)`` radians): ``q = exp((a, 0, c)) * Ry(b)``.

    Sampling parameters: points of the unit cube ``[0, 1]^3`` ``(..., 3)`` = (a, c, b).
    """

    flex: tuple
    wobble: tuple
    twist: tuple

    n_params = 3

    def angles(self, q):
        """``(flex, wobble, twist)`` each ``(...)`` radians."""
        swing, _ = swing_twist_from_quaternion(quaternion_short_way(q), BONE_AXIS)
        v = exp_map_from_quaternion(quaternion_short_way(swing))
        return v[..., 0], v[..., 2], twist_angle(q)

    def contains(self, q, tol=1e-9):
        a, c, b = self.angles(q)
        ok = True
        for value, (lo, hi) in ((a, self.flex), (c, self.wobble), (b, self.twist)):
            ok = ok & (value >= lo - tol) & (value <= hi + tol)
        return ok

    def sample(self, u):
        u = np.asarray(u, dtype=float)
        a = self.flex[0] + u[..., 0] * (self.flex[1] - self.flex[0])
        c = self.wobble[0] + u[..., 1] * (self.wobble[1] - self.wobble[0])
        b = self.twist[0] + u[..., 2] * (self.twist[1] - self.twist[0])
        swing = quaternion_from_exp_map(np.stack((a, np.zeros_like(a), c), axis=-1))
        return quaternion_multiply(swing, _axis_rotation(BONE_AXIS, b))


@dataclass(frozen=True)
class ConeTwist:
    """Coupled swing-twist region about the bone axis +Y.

    The swing direction ``d = rotate(q, +Y)`` has polar angle ``theta`` from +Y and azimuth
    ``phi = atan2(d . up, d . front)`` (``front``, ``up`` unit ``(3,)`` perpendicular to Y). It
    is allowed when ``theta <= theta_max(phi)`` with

        theta_max = c0 + c1 cos(phi) + s1 sin(phi) + c2 cos(2 phi)
                    - notch_depth * exp(-(wrap(phi - notch_at) / notch_width)**2)

    (``fourier = (c0, c1, s1, c2)``; all radians), and then the twist about Y must lie in
    ``[twist_lo(d), twist_hi(d)]``, linear in ``e = d . twist_axis`` (a unit vector; ``e`` in
    ``[-1, 1]``): ``twist_lo = lo0 + lo1 * e``, ``twist_hi = hi0 + hi1 * e``.

    Sampling parameters: ``(..., 3)`` = (azimuth in radians, radial fraction ``s`` in
    ``[0, 1]``, twist fraction in ``[0, 1]``).
    """

    front: tuple
    up: tuple
    fourier: tuple
    notch_at: float
    notch_depth: float
    notch_width: float
    twist_axis: tuple
    twist_lo: tuple
    twist_hi: tuple

    n_params = 3

    def theta_max(self, phi):
        """Largest allowed swing angle ``(...)`` radians at azimuth ``phi (...)``."""
        c0, c1, s1, c2 = self.fourier
        notch = self.notch_depth * np.exp(-((_wrap(np.asarray(phi) - self.notch_at) / self.notch_width) ** 2))
        return c0 + c1 * np.cos(phi) + s1 * np.sin(phi) + c2 * np.cos(2.0 * phi) - notch

    def polar(self, direction):
        """``(theta, phi)`` of unit directions ``(..., 3)``."""
        d = np.asarray(direction, dtype=float)
        theta = np.arccos(np.clip(d[..., 1], -1.0, 1.0))
        phi = np.arctan2(d @ np.asarray(self.up), d @ np.asarray(self.front))
        return theta, phi

    def direction(self, theta, phi):
        """Unit directions ``(..., 3)`` from polar angle and azimuth."""
        theta, phi = np.broadcast_arrays(np.asarray(theta, float), np.asarray(phi, float))
        radial = np.cos(phi)[..., None] * np.asarray(self.front) + np.sin(phi)[..., None] * np.asarray(self.up)
        return np.cos(theta)[..., None] * BONE_AXIS + np.sin(theta)[..., None] * radial

    def swing_allowed(self, direction, tol=1e-9):
        theta, phi = self.polar(direction)
        return theta <= self.theta_max(phi) + tol

    def twist_range(self, direction):
        """``(lo, hi)`` allowed twist in radians, each ``(...)``, for swing ``direction``."""
        e = np.asarray(direction, dtype=float) @ np.asarray(self.twist_axis)
        return self.twist_lo[0] + self.twist_lo[1] * e, self.twist_hi[0] + self.twist_hi[1] * e

    def contains(self, q, tol=1e-9):
        d = swing_direction(quaternion_short_way(q))
        b = twist_angle(q)
        lo, hi = self.twist_range(d)
        return self.swing_allowed(d, tol) & (b >= lo - tol) & (b <= hi + tol)

    def sample(self, u):
        u = np.asarray(u, dtype=float)
        phi = u[..., 0]
        d = self.direction(u[..., 1] * self.theta_max(phi), phi)
        lo, hi = self.twist_range(d)
        b = lo + u[..., 2] * (hi - lo)
        return quaternion_multiply(swing_from_direction(d), _axis_rotation(BONE_AXIS, b))


def _deg(*values):
    return tuple(v * _DEG for v in values)


#: Shoulder (``upper_arm.L`` frame: X down, Y lateral, Z forward). Swing limit: 140 degrees
#: forward (across the chest), 120 up (overhead), 45 back, 100 down, with a notch behind and
#: below (the hand cannot reach far behind the lower back). Twist narrows as the arm rises:
#: [-70, 90] degrees with the arm down, [-35, 36] with it straight up.
SHOULDER = ConeTwist(
    front=(0.0, 0.0, 1.0),
    up=(-1.0, 0.0, 0.0),
    fourier=_deg(101.25, 47.5, 10.0, -8.75),
    notch_at=225.0 * _DEG,
    notch_depth=30.0 * _DEG,
    notch_width=20.0 * _DEG,
    twist_axis=(-1.0, 0.0, 0.0),
    twist_lo=_deg(-52.5, 17.5),
    twist_hi=_deg(63.0, -27.0),
)

#: Hip (``thigh.L`` frame: X lateral, Y down, Z backward). Swing limit: 120 degrees forward
#: (flexion), 50 lateral (abduction), 25 back (extension), 25 medial (adduction), with a
#: notch forward-medial (the thigh meets the belly and the other leg). Twist widens with
#: flexion: [-30, 35] degrees standing, [-45, 45] with the thigh raised forward.
HIP = ConeTwist(
    front=(0.0, 0.0, -1.0),
    up=(1.0, 0.0, 0.0),
    fourier=_deg(55.0, 47.5, 12.5, 17.5),
    notch_at=-45.0 * _DEG,
    notch_depth=35.0 * _DEG,
    notch_width=20.0 * _DEG,
    twist_axis=(0.0, 0.0, -1.0),
    twist_lo=_deg(-30.0, -15.0),
    twist_hi=_deg(35.0, 10.0),
)

ELBOW = Hinge(flex=_deg(0.0, 145.0), wobble=_deg(-3.0, 3.0), twist=_deg(-20.0, 20.0))
KNEE = Hinge(flex=_deg(0.0, 140.0), wobble=_deg(-2.0, 2.0), twist=_deg(-8.0, 8.0))

#: Exp-map ellipsoids (centre, radii) in degrees about local X, Y, Z.
REGIONS = {
    "hips": Ellipsoid(_deg(0.0, 0.0, 0.0), _deg(15.0, 20.0, 10.0)),
    "spine": Ellipsoid(_deg(10.0, 0.0, 0.0), _deg(35.0, 30.0, 25.0)),
    "chest": Ellipsoid(_deg(5.0, 0.0, 0.0), _deg(25.0, 25.0, 20.0)),
    "neck": Ellipsoid(_deg(10.0, 0.0, 0.0), _deg(30.0, 40.0, 25.0)),
    "head": Ellipsoid(_deg(5.0, 0.0, 0.0), _deg(30.0, 40.0, 20.0)),
    "shoulder": Ellipsoid(_deg(5.0, 0.0, 10.0), _deg(20.0, 10.0, 20.0)),
    "upper_arm": SHOULDER,
    "forearm": ELBOW,
    "hand": Ellipsoid(_deg(-7.5, 0.0, -5.0), _deg(27.5, 15.0, 65.0)),
    "thigh": HIP,
    "shin": KNEE,
    "foot": Ellipsoid(_deg(12.5, 0.0, 0.0), _deg(32.5, 10.0, 20.0)),
    "toe": Ellipsoid(_deg(-15.0, 0.0, 0.0), _deg(35.0, 5.0, 5.0)),
}
#: Region of bones with an unknown name.
DEFAULT_REGION = Ellipsoid((0.0, 0.0, 0.0), _deg(20.0, 20.0, 20.0))


def bone_region(name):
    """``(region, mirrored)`` of a bone: its region and whether rotations must be mirrored
    (right side) before testing against it."""
    side, category, _ = bone_category(name)
    return REGIONS.get(category, DEFAULT_REGION), side == "R" and category in SIDED_BONES


def shoulder_swing_allowed(direction):
    """Whether upper-arm swing directions ``(..., 3)`` (left upper-arm rest frame) are allowed."""
    return SHOULDER.swing_allowed(direction)


def shoulder_twist_range(direction):
    """Allowed ``(lo, hi)`` upper-arm twist (radians) for swing directions ``(..., 3)``."""
    return SHOULDER.twist_range(direction)


def hip_swing_allowed(direction):
    """Whether thigh swing directions ``(..., 3)`` (left thigh rest frame) are allowed."""
    return HIP.swing_allowed(direction)


def hip_twist_range(direction):
    """Allowed ``(lo, hi)`` thigh twist (radians) for swing directions ``(..., 3)``."""
    return HIP.twist_range(direction)


def in_range_of_motion(skeleton, local_rotations, tol=1e-6):
    """``(..., n)`` bool: which local rotations ``(..., n, 4)`` lie in their bone's region."""
    local = as_quaternions(local_rotations)
    out = np.empty(local.shape[:-1], dtype=bool)
    for b, name in enumerate(skeleton.names):
        region, mirrored = bone_region(name)
        q = local[..., b, :]
        out[..., b] = region.contains(mirror_local_rotation(q) if mirrored else q, tol)
    return out


# -- generators ----------------------------------------------------------------------------------


def _smooth_unit(rng, t, cycles, dims):
    """``(F, dims)`` smooth waves in ``[-1, 1]``: each a sum of two sines, ~``cycles`` per take."""
    out = np.zeros((len(t), dims))
    for k in range(dims):
        f1, f2 = cycles * rng.uniform(0.7, 1.3, size=2) * (0.6 + 0.2 * k)
        p1, p2 = rng.uniform(0, 2 * np.pi, size=2)
        out[:, k] = 0.75 * np.sin(2 * np.pi * f1 * t + p1) + 0.25 * np.sin(2 * np.pi * f2 * t + p2)
    return out


def _sweep(rng, t, cycles):
    """``(F,)`` smooth path in ``[0, 1]`` that reaches both ends in every cycle."""
    p1, p2 = rng.uniform(0, 2 * np.pi, size=2)
    wave = 0.7 * np.sin(2 * np.pi * cycles * t + p1) + 0.1 * np.sin(2 * np.pi * 1.7 * cycles * t + p2)
    return np.clip(0.5 + wave, 0.0, 1.0)


def _ball_path(rng, t, cycles):
    """A smooth path in the unit ball that now and then passes near the centre and often
    slides along the boundary."""
    breathe = 0.2 + 1.3 * _sweep(rng, t, 0.5 * cycles * rng.uniform(0.8, 1.2))
    v = breathe[:, None] * _smooth_unit(rng, t, cycles, 3)
    n = np.linalg.norm(v, axis=-1, keepdims=True)
    return v / np.maximum(n, 1.0)


def _cube_path(rng, t, cycles, dims=3):
    """A smooth path in ``[0, 1]^dims`` that dwells at the faces (the range ends)."""
    return np.clip(0.5 + 0.75 * _smooth_unit(rng, t, cycles, dims), 0.0, 1.0)


def _region_path(region, rng, t, scale):
    if isinstance(region, Ellipsoid):
        return region.sample(_ball_path(rng, t, 3.0 * scale))
    if isinstance(region, Hinge):  # flexion from straight to fully bent three times
        u = _cube_path(rng, t, 3.0 * scale)
        u[:, 0] = _sweep(rng, t, 3.0 * scale * rng.uniform(0.9, 1.1))
        return region.sample(u)
    # ConeTwist: the azimuth turns three times per take while the swing mostly follows the
    # limit, now and then diving toward the rest direction.
    phi = rng.uniform(0, 2 * np.pi) + 2.0 * np.pi * 3.0 * scale * t + 0.4 * np.sin(2 * np.pi * 1.5 * scale * t)
    phi = phi * rng.choice((-1.0, 1.0))
    dive = np.maximum(np.cos(2 * np.pi * 4.0 * scale * t + rng.uniform(0, 2 * np.pi)), 0.0) ** 2
    s = 1.0 - rng.uniform(0.8, 0.95) * dive
    twist = _sweep(rng, t, 2.0 * scale * rng.uniform(0.9, 1.1))
    return region.sample(np.stack((phi, s, twist), axis=-1))


def range_of_motion(skeleton, frames=600, seed=0):
    """A range-of-motion take: every bone sweeps its region (see :func:`bone_region`).

    Parameters
    ----------
    skeleton : Skeleton
        Bones are recognised by name (:func:`~limits.skeleton.bone_category`); regions assume
        :func:`~limits.skeleton.humanoid_skeleton`'s bone frames.
    frames : int
        Number of frames ``F``. The sweeps scale with it (600 frames: each angle passes its
        range a few times, the shoulder and hip swing azimuth turns three times).
    seed : int

    Returns
    -------
    ndarray, shape (F, n, 4)
        Local rotations, inside each bone's region at every frame, continuous in time (a few
        degrees per frame at 600 frames) and on a continuous cover.
    """
    rng = np.random.default_rng(seed)
    t = np.linspace(0.0, 1.0, frames)
    scale = frames / 600.0
    out = np.empty((frames, len(skeleton), 4))
    for b, name in enumerate(skeleton.names):
        region, mirrored = bone_region(name)
        q = _region_path(region, rng, t, scale)
        out[:, b] = mirror_local_rotation(q) if mirrored else q
    return out


def _impossible_path(category, rng, t):
    """Left-side local rotations ``(F, 4)`` of an impossible action for a bone category."""
    wave = _smooth_unit(rng, t, 1.5, 3)

    def exp(x, y, z):
        return quaternion_from_exp_map(np.stack(np.broadcast_arrays(x, y, z), axis=-1) * _DEG)

    if category == "forearm":  # hyper-extended elbow
        return exp(-45.0 + 12.0 * wave[:, 0], 0.0, 5.0 * wave[:, 1])
    if category == "shin":  # knee bent backward
        return exp(-60.0 + 15.0 * wave[:, 0], 0.0, 3.0 * wave[:, 1])
    if category == "upper_arm":  # arm out to the side, twisted about 150 degrees
        d = SHOULDER.direction((40.0 + 20.0 * wave[:, 0]) * _DEG, (90.0 + 30.0 * wave[:, 1]) * _DEG)
        twist = (150.0 + 10.0 * wave[:, 2]) * _DEG
        return quaternion_multiply(swing_from_direction(d), _axis_rotation(BONE_AXIS, twist))
    if category == "thigh":  # leg thrown far backward, twisted
        d = HIP.direction((100.0 + 15.0 * wave[:, 0]) * _DEG, (180.0 + 20.0 * wave[:, 1]) * _DEG)
        twist = (120.0 + 10.0 * wave[:, 2]) * _DEG
        return quaternion_multiply(swing_from_direction(d), _axis_rotation(BONE_AXIS, twist))
    table = {
        "head": (0.0, 170.0, 0.0),  # head turned 170 degrees
        "neck": (0.0, 0.0, 90.0),  # neck bent sideways
        "spine": (-90.0, 0.0, 0.0),  # spine folded backward
        "chest": (0.0, 100.0, 0.0),  # chest twisted
        "hips": (120.0, 0.0, 0.0),  # pelvis tipped over
        "shoulder": (0.0, 0.0, 80.0),  # clavicle raised to the ear and beyond
        "hand": (0.0, 0.0, 120.0),  # wrist bent back
        "foot": (-100.0, 0.0, 0.0),  # ankle dorsiflexed to the shin
        "toe": (-110.0, 0.0, 0.0),  # toes bent up
    }
    x, y, z = table.get(category, (0.0, 120.0, 0.0))
    return exp(x + 8.0 * wave[:, 0], y + 8.0 * wave[:, 1], z + 8.0 * wave[:, 2])


def impossible_motion(skeleton, frames=120, seed=1):
    """A deliberately impossible action, far outside :func:`range_of_motion`'s regions.

    Knees bent backward, elbows hyper-extended, shoulders twisted about 150 degrees, head
    turned 170 degrees, spine folded backward, wrists, ankles and toes bent far past their
    range, and so on; every bone is outside its region at every frame, by tens of degrees.
    Smooth in time (each angle wobbles slowly about its extreme).

    Returns
    -------
    ndarray, shape (frames, n, 4)
        Local rotations.
    """
    rng = np.random.default_rng(seed)
    t = np.linspace(0.0, 1.0, frames)
    out = np.empty((frames, len(skeleton), 4))
    for b, name in enumerate(skeleton.names):
        side, category, _ = bone_category(name)
        q = _impossible_path(category, rng, t)
        out[:, b] = mirror_local_rotation(q) if side == "R" and category in SIDED_BONES else q
    return out
