# SPDX-License-Identifier: GPL-3.0-or-later
"""Input checks and row tests shared by every limit model (shapes, Euler box, SDF grid,
sinus texture, quaternion surface). Quaternions are ``(w, x, y, z)`` like mathutils."""

import numpy as np

from .constants import MIN_PADDING
from .geometry.quaternion import as_quaternions, check_finite


def check_cloud(rotations):
    """The rotation cloud as a finite ``(N, 4)`` array with ``N >= 1``; ``ValueError`` otherwise."""
    q = as_quaternions(rotations, "rotation cloud")
    if q.ndim != 2 or len(q) == 0:
        raise ValueError(f"the rotation cloud is empty or not (N, 4): shape {q.shape}")
    check_finite(q, "rotation cloud")
    return q


def check_padding(padding):
    """``padding`` as a float of at least :data:`.constants.MIN_PADDING` radians."""
    try:
        padding = float(padding)
    except (TypeError, ValueError):
        raise ValueError(f"padding must be a number of radians, got {padding!r}") from None
    if not np.isfinite(padding) or padding < 0:
        raise ValueError(f"padding must be a finite, non-negative number of radians, got {padding!r}")
    return max(padding, MIN_PADDING)


def finite_rows(q):
    """``(...,)`` bool: every component of the last axis of ``q`` is finite.

    Written out per component: much faster than ``np.isfinite(q).all(axis=-1)`` for short rows.
    """
    finite = np.isfinite(q)
    out = finite[..., 0]
    for i in range(1, q.shape[-1]):
        out = out & finite[..., i]
    return out
