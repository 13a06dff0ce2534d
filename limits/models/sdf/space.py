# SPDX-License-Identifier: GPL-3.0-or-later
"""The parameter spaces of the SDF grid limit (:mod:`.grid`): where a rotation sits in the
grid, and how differences and grid windows work on the periodic axes.

Spaces (``config["space"]``)
----------------------------
``"EXP_MAP"`` (default)
    Scaled angle-axis vector of the reference-relative rotation (radians). The reference pose
    is the data's mean, so the data sit around the origin, where the exp map is locally an
    isometry: parameter distance equals the geodesic angle to first order, and within a turn
    of ``theta`` it stretches distances by at most ``(theta / 2) / sin(theta / 2)`` (1.57 at a
    half turn). The tube is therefore a nearly uniform band of rotations and the projection is
    close to the geodesically nearest allowed rotation.
``"ZYZ"``
    Seed 000's proper Z-Y-Z Euler angles ``(a, b, c)`` (:func:`~...geometry.quaternion.zyz_from_quaternion`),
    ``a`` and ``c`` periodic. Kept for comparison. Its chart is singular at ``b = 0`` and
    ``b = pi``, and ``b = 0`` is the reference pose itself, i.e. the middle of the data: there
    a tiny rotation moves ``a`` and ``c`` by up to ``pi`` in opposite directions, so the tube is
    far too thin in some directions and far too wide in others, and densified tracks cannot be
    made continuous. ``bench/bench_sdf_grid.py`` measures the difference (parameter distance
    over geodesic angle, and the geodesic error of projections); this is why ``EXP_MAP`` is the
    default.

    The periodic axes have no seam: each is read on the circle. The grid window along ``a``
    (``c``) is the smallest arc holding the data (the complement of the largest gap between
    sorted angles) grown by the margin, and a query angle is taken on the turn that puts it in
    the window, or nearest to it. When the grown arc covers the whole circle the axis is
    *closed*: ``n`` nodes spaced ``2 pi / n`` around it, with wrap-around lookups, distance
    transform, flood fill and gradients.
"""

import numpy as np

from ...geometry.quaternion import exp_map_from_quaternion, quaternion_from_exp_map, quaternion_from_zyz, zyz_from_quaternion

#: The parameter spaces, default first.
SPACES = ("EXP_MAP", "ZYZ")

TWO_PI = 2.0 * np.pi

#: Axes that are angles with period 2 pi, per space.
_WRAP = {"EXP_MAP": np.zeros(3, dtype=bool), "ZYZ": np.array([True, False, True])}


def coordinates_from_quaternion(q, space):
    """Parameter-space points ``(..., 3)`` of unit quaternions ``q (..., 4)`` (radians)."""
    if space == "EXP_MAP":
        return exp_map_from_quaternion(q)
    return zyz_from_quaternion(q)


def quaternion_from_coordinates(p, space):
    """Unit quaternions ``(..., 4)`` of parameter-space points ``p (..., 3)``."""
    if space == "EXP_MAP":
        return quaternion_from_exp_map(p)
    return quaternion_from_zyz(p)


def _check_space(space):
    if space not in SPACES:
        raise ValueError(f"space must be one of {SPACES}, got {space!r}")
    return space


def _circular_arc(angles):
    """``(start, length)`` of the smallest arc holding all ``angles (N,)`` (radians)."""
    return _arc_of_sorted(np.sort(np.mod(angles, TWO_PI)))


def _arc_of_sorted(a):
    """:func:`_circular_arc` of angles ``a (N,)`` already reduced to ``[0, 2 pi]`` and sorted."""
    gaps = np.diff(np.append(a, a[0] + TWO_PI))
    widest = int(np.argmax(gaps))
    start = a[(widest + 1) % len(a)]
    return float(start), float(TWO_PI - gaps[widest])


def _to_window(p, lower, spacing, closed, n, wrap):
    """Angles on the periodic axes of ``p (R, 3)`` moved by whole turns into (or nearest to) each
    row's grid window; ``lower``/``spacing``/``closed`` broadcast against ``p``."""
    if not wrap.any():
        return p
    p = p.copy()
    for axis in np.flatnonzero(wrap):
        lo = lower[..., axis]
        x = lo + np.mod(p[..., axis] - lo, TWO_PI)
        upper = lo + (n - 1) * spacing[..., axis]
        below = (x > upper) & (lo + TWO_PI - x < x - upper) & (closed[..., axis] == 0)
        p[..., axis] = np.where(below, x - TWO_PI, x)
    return p


def _difference(a, b, closed):
    """``a - b`` for points ``(..., 3)``, closed axes the short way round."""
    d = a - b
    if np.any(closed):
        d = d - np.where(closed, TWO_PI * np.round(d / TWO_PI), 0.0)
    return d
