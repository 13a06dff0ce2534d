# SPDX-License-Identifier: GPL-3.0-or-later
"""Swing-twist decomposition about a bone axis.

``q = swing * twist``: ``twist`` turns about ``axis`` (the bone's own length), ``swing`` turns
about an axis perpendicular to it and so sets where the bone points. About the bone axis +Y the
swing is also written as its *direction* ``d = q (+Y) q*`` (where the bone points) with a twist
angle, the form the sinus texture looks rotations up by.
"""

import numpy as np

from ..constants import BONE_AXIS, EPS
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


# -- about +Y, as (direction, twist angle) ------------------------------------------------------
def direction_twist_components(w, x, y, z):
    """Swing direction components and twist angle of quaternions given by components
    (any norm > 0). Returns ``dx, dy, dz, twist``."""
    ww = w * w
    xx = x * x
    yy = y * y
    zz = z * z
    n2 = ww + xx
    n2 += yy
    n2 += zz
    inv = 2.0 / n2
    dx = x * y
    dx -= w * z
    dx *= inv
    dy = ww - xx
    dy += yy
    dy -= zz
    dy /= n2
    dz = y * z
    dz += w * x
    dz *= inv
    twist = np.arctan2(np.where(w < 0.0, -y, y), np.abs(w))
    twist *= 2.0
    return dx, dy, dz, twist


def direction_twist(q):
    """Split rotations ``q (..., 4)`` into swing directions ``(..., 3)`` (where +Y points, unit)
    and twist angles ``(...,)`` in radians, in ``(-pi, pi]``, about +Y."""
    q = as_quaternions(q)
    dx, dy, dz, twist = direction_twist_components(q[..., 0], q[..., 1], q[..., 2], q[..., 3])
    return np.stack((dx, dy, dz), axis=-1), twist


def rotation_from_direction_twist(d, twist):
    """Unit quaternions ``(..., 4)`` ``q = swing * twist``: ``twist (...)`` radians about +Y, then
    the shortest swing taking +Y to ``d (..., 3)``. ``d = -Y`` uses the half turn about X."""
    d = np.asarray(d, dtype=float)
    twist = np.asarray(twist, dtype=float)
    dx, dy, dz = d[..., 0], d[..., 1], d[..., 2]
    norm = np.sqrt(dx * dx + dy * dy + dz * dz)
    dx, dy, dz = dx / norm, dy / norm, dz / norm
    s2 = 2.0 * (1.0 + dy)
    degenerate = s2 <= 1e-24
    inv = 1.0 / np.sqrt(np.where(degenerate, 1.0, s2))
    a = np.where(degenerate, 0.0, (1.0 + dy) * inv)
    b = np.where(degenerate, 1.0, dz * inv)
    e = np.where(degenerate, 0.0, -dx * inv)
    c = np.cos(0.5 * twist)
    s = np.sin(0.5 * twist)
    shape = np.broadcast_shapes(a.shape, c.shape)
    out = np.empty(shape + (4,))
    out[..., 0] = a * c
    out[..., 1] = b * c - e * s
    out[..., 2] = a * s
    out[..., 3] = b * s + e * c
    return out


def compose_direction_twist(dx, dy, dz, twist):
    """:func:`rotation_from_direction_twist` for unit direction components ``(n,)`` arrays,
    with the twist's half-angle cosine and sine from one tangent."""
    s2 = 1.0 + dy
    s2 *= 2.0
    degenerate = s2 <= 1e-24
    if degenerate.any():
        s2[degenerate] = 1.0
    inv = 1.0 / np.sqrt(s2)
    a = (1.0 + dy) * inv
    b = dz * inv
    e = -dx * inv
    if degenerate.any():
        a[degenerate], b[degenerate], e[degenerate] = 0.0, 1.0, 0.0
    t = np.tan(0.25 * twist)
    t2 = t * t
    k = 1.0 / (1.0 + t2)
    c = (1.0 - t2) * k
    s = 2.0 * t * k
    out = np.empty(dx.shape + (4,))
    out[:, 0] = a * c
    out[:, 1] = b * c - e * s
    out[:, 2] = a * s
    out[:, 3] = b * s + e * c
    return out
