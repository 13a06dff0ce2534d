# SPDX-License-Identifier: GPL-3.0-or-later
"""Where a limit's boundary lies, for displays and pictures: bisection along rays in
scaled angle-axis (exp map) space around the limit's centre. Works for every model through its
``contains``; exact for star-shaped regions, a good picture for the rest."""

import numpy as np

from .quaternion import exp_map_from_quaternion, quaternion_from_exp_map


def fibonacci_directions(n):
    """``n`` nearly uniform unit vectors ``(n, 3)``."""
    i = np.arange(n) + 0.5
    z = 1.0 - 2.0 * i / n
    r = np.sqrt(np.maximum(0.0, 1.0 - z * z))
    phi = i * np.pi * (3.0 - np.sqrt(5.0))
    return np.stack((r * np.cos(phi), r * np.sin(phi), z), axis=-1)


def boundary_exp_map(contains, centre, directions, max_radius=np.pi, iterations=30):
    """Boundary points ``(M, 3)`` in exp-map space along ``directions (M, 3)`` from the
    exp-map ``centre (3,)``, given ``contains(q (M, 4)) -> (M,) bool`` on relative rotations.
    Rays that never leave the region stop at ``max_radius`` (pi: beyond it the exp map wraps
    back toward the identity)."""
    centre = np.asarray(centre, dtype=float)
    d = np.asarray(directions, dtype=float)
    lo = np.zeros(len(d))
    hi = np.full(len(d), float(max_radius))
    inside_far = contains(quaternion_from_exp_map(centre + d * hi[:, None]))
    for _ in range(iterations):
        mid = 0.5 * (lo + hi)
        inside = contains(quaternion_from_exp_map(centre + d * mid[:, None]))
        lo = np.where(inside, mid, lo)
        hi = np.where(inside, hi, mid)
    r = np.where(inside_far, max_radius, lo)
    return centre + d * r[:, None]


def limit_boundary(limit, directions):
    """Boundary of a :class:`~..joint.JointLimit` in exp-map space of reference-relative rotations."""
    centre = exp_map_from_quaternion(limit.centre)
    return boundary_exp_map(limit.model.contains, centre, directions)
