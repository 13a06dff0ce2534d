# SPDX-License-Identifier: GPL-3.0-or-later
"""Swing-twist decomposition about a bone axis.

``q = swing * twist``: ``twist`` turns about ``axis`` (the bone's own length), ``swing`` turns
about an axis perpendicular to it and so sets where the bone points.
"""

import numpy as np

from .constants import BONE_AXIS, EPS
from .quaternion import as_quaternions, as_vectors, quaternion_conjugate, quaternion_multiply


def unit_axis(axis=BONE_AXIS):
    """``axis`` normalized; a zero-length axis is an error naming it."""
    axis = as_vectors(axis, "axis")
    n = np.linalg.norm(axis, axis=-1, keepdims=True)
    if np.any(n <= EPS):
        raise ValueError(f"twist axis must not have zero length, got {axis.tolist()}")
    return axis / n


def swing_twist_from_quaternion(q, axis=BONE_AXIS):
    """Split ``q (..., 4)`` into ``(swing, twist)`` about ``axis (..., 3)``, ``q = swing * twist``.

    The twist keeps the cover of ``q`` (its ``w`` has the sign of ``q``'s); at a 180 degree swing
    the twist is undefined and the identity is returned for it.
    """
    q = as_quaternions(q)
    axis = unit_axis(axis)
    proj = np.sum(q[..., 1:] * axis, axis=-1, keepdims=True) * axis
    twist = np.concatenate((q[..., :1], proj), axis=-1)
    n = np.linalg.norm(twist, axis=-1, keepdims=True)
    degenerate = n <= EPS
    twist = np.where(degenerate, np.array([1.0, 0.0, 0.0, 0.0]), twist / np.where(degenerate, 1.0, n))
    swing = quaternion_multiply(q, quaternion_conjugate(twist))
    return swing, twist


def quaternion_from_swing_twist(swing, twist):
    """Recompose ``swing * twist``."""
    return quaternion_multiply(swing, twist)


def twist_axis_from_children(child_heads, default=BONE_AXIS):
    """Holden's twist axis: mean direction to the child bones' heads in the bone's frame.

    ``child_heads`` is ``(n, 3)`` (bone space, relative to the bone head). With no child, or
    when the children sit on the head (zero-length offsets), ``default`` is returned.
    """
    child_heads = np.asarray(child_heads, dtype=float).reshape(-1, 3)
    lengths = np.linalg.norm(child_heads, axis=-1)
    keep = lengths > 1e-6
    if not keep.any():
        return np.array(default, dtype=float)
    mean = (child_heads[keep] / lengths[keep, None]).mean(axis=0)
    n = np.linalg.norm(mean)
    return mean / n if n > 1e-6 else np.array(default, dtype=float)
