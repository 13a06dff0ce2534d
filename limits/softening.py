# SPDX-License-Identifier: GPL-3.0-or-later
"""Holden's tanh softening, on rotations so it works with every limit model."""

import numpy as np

from .geometry.quaternion import quaternion_angle, slerp


def soften(original, projected, radius=0.1, falloff=1.0):
    """Let a projected rotation give way toward the original one, by at most ``radius``.

    A rotation that was moved by ``d`` radians is placed ``tanh(falloff * d) * radius`` back
    toward where it came from (never past it), so the limit is met smoothly instead of
    locking, and rotations inside the limit (``d = 0``) are unchanged. Shapes ``(..., 4)``.
    """
    if np.any(np.asarray(radius) < 0) or np.any(np.asarray(falloff) < 0):
        raise ValueError(f"softening radius and falloff must not be negative, got {radius}, {falloff}")
    d = quaternion_angle(original, projected)
    give = np.minimum(np.tanh(falloff * d) * radius, d)
    t = np.where(d > 1e-9, give / np.where(d > 1e-9, d, 1.0), 0.0)
    return slerp(projected, original, t)
