# SPDX-License-Identifier: GPL-3.0-or-later
"""The sphere of swing directions flattened into a disc, and a limit sampled on it: what the
viewport's swing sphere shows (``ui/viewport/overlay.py``), as data for a 2-D picture.

Directions are those of :mod:`.pose_helper`: where the bone's +Y axis points after a
reference-relative rotation, in the swing frame (+Y is the limit's reference direction). The
disc is Lambert's azimuthal equal-area projection centred on +Y: a direction ``theta`` radians
from +Y lands at radius ``2 sin(theta / 2)`` (0 at the centre, ``sqrt 2`` at 90 degrees, 2 on
the rim, which is the opposite direction -Y), toward its +X component horizontally and its
+Z component vertically. Equal areas on the sphere stay equal in the disc, so the size of a
region in the picture is the size of the range of directions it allows.
"""

import numpy as np

from ..geometry.swing_twist import direction_twist, rotation_from_direction_twist

#: Twist angles tried per direction by :func:`sample_swing_map` (7.5 degrees apart).
MAP_TWISTS = 48

#: Grid points per side of the disc in :func:`sample_swing_map`.
MAP_SIZE = 81


def disc_from_direction(d):
    """Disc coordinates ``(..., 2)`` of unit directions ``d (..., 3)`` (swing frame)."""
    d = np.asarray(d, dtype=float)
    if d.shape[-1:] != (3,):
        raise ValueError(f"directions must be (..., 3), got shape {d.shape}")
    d = d / np.linalg.norm(d, axis=-1, keepdims=True)
    k = np.sqrt(2.0 / np.maximum(1.0 + d[..., 1], 1e-12))
    p = np.stack((d[..., 0], d[..., 2]), axis=-1) * k[..., None]
    r = np.linalg.norm(p, axis=-1, keepdims=True)
    p = np.where(r > 2.0, p * (2.0 / np.maximum(r, 1e-12)), p)
    # -Y itself is the whole rim: put it at the rim's bottom, never at the centre
    pole = (r[..., 0] < 1e-9) & (d[..., 1] < 0.0)
    return np.where(pole[..., None], np.array([0.0, -2.0]), p)


def direction_from_disc(p):
    """Unit directions ``(..., 3)`` of disc points ``p (..., 2)`` (radius at most 2)."""
    p = np.asarray(p, dtype=float)
    if p.shape[-1:] != (2,):
        raise ValueError(f"disc points must be (..., 2), got shape {p.shape}")
    r2 = np.minimum(np.sum(p * p, axis=-1), 4.0)
    s = np.sqrt(1.0 - r2 / 4.0)
    return np.stack((p[..., 0] * s, 1.0 - r2 / 2.0, p[..., 1] * s), axis=-1)


def ring_radius(angle):
    """Disc radius of the directions ``angle`` radians from the centre direction."""
    return 2.0 * np.sin(0.5 * np.asarray(angle, dtype=float))


def twist_samples(twists=MAP_TWISTS):
    """The twist angles tried per direction: ``twists`` radians evenly over a full turn, ``(T,)``."""
    return np.linspace(-np.pi, np.pi, int(twists), endpoint=False) + np.pi / int(twists)


def allowed_twists(limit, directions, twists=MAP_TWISTS, tolerance=0.0):
    """Which of :func:`twist_samples` a :class:`~..joint.JointLimit` allows at each swing
    direction: ``(N, T)`` bool for unit ``directions (N, 3)`` in the limit's swing frame.

    With ``tolerance > 0`` (radians) a twist counts as allowed when its rotation is within
    ``tolerance`` of the limit (a projection per sample, dearer than ``contains``): for
    directions on the boundary itself, such as poses the limit was enforced on, where
    ``contains`` flickers with round-off."""
    d = np.asarray(directions, dtype=float).reshape(-1, 3)
    tw = twist_samples(twists)
    local = limit.from_relative(rotation_from_direction_twist(d[:, None, :], tw[None, :]).reshape(-1, 4))
    if tolerance > 0:
        ok = np.asarray(limit.violation(local)) <= tolerance
    else:
        ok = np.asarray(limit.contains(local), dtype=bool)
    return ok.reshape(len(d), len(tw))


def allowed_twist(limit, directions, twists=MAP_TWISTS):
    """How much twist a :class:`~..joint.JointLimit` allows at each swing direction: ``(N,)``
    degrees for unit ``directions (N, 3)`` (the allowed samples of :func:`allowed_twists` times
    their spacing; 0 where no twist is allowed, i.e. the bone may not point there)."""
    return allowed_twists(limit, directions, twists).sum(axis=1) * (360.0 / int(twists))


def sample_swing_map(limit, radius=2.0, size=MAP_SIZE, twists=MAP_TWISTS):
    """A limit sampled over the square ``[-radius, radius]^2`` of the disc.

    Returns
    -------
    axis : (size,) array
        Disc coordinates of the grid's columns (and rows).
    twist : (size, size) array
        Allowed twist in degrees (:func:`allowed_twist`) at each grid point, row ``i`` at
        ``axis[i]`` vertically. Points outside the disc repeat the value just inside its rim
        along their radius, so an outline drawn from the grid does not follow the rim (clip
        pictures to the disc).
    """
    axis = np.linspace(-float(radius), float(radius), int(size))
    p = np.stack(np.meshgrid(axis, axis), axis=-1)
    r = np.linalg.norm(p, axis=-1, keepdims=True)
    p = np.where(r > 1.995, p * (1.995 / np.maximum(r, 1e-12)), p)
    twist = allowed_twist(limit, direction_from_disc(p.reshape(-1, 2)), twists)
    return axis, twist.reshape(len(axis), len(axis))


def allowed_extent(limit, size=41, twists=24):
    """Disc radius (at most 2) that holds every direction a coarse sampling finds allowed."""
    axis, twist = sample_swing_map(limit, 2.0, size, twists)
    px, py = np.meshgrid(axis, axis)
    ok = twist > 0
    if not ok.any():
        return 0.0
    step = axis[1] - axis[0]
    return float(min(2.0, np.sqrt(px[ok] ** 2 + py[ok] ** 2).max() + step))


def swing_directions(limit, local):
    """``(directions (N, 3), twist (N,) radians)`` of local rotations ``(N, 4)`` in the
    limit's swing frame."""
    return direction_twist(limit.to_relative(local))
