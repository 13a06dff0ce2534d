# SPDX-License-Identifier: GPL-3.0-or-later
"""The geometry of a two-bone limb (upper arm and forearm, thigh and shin) seen from its root:
where the end points, the *swivel* of the middle joint about the root->end axis, the middle
joint's position from those, and evenly spread directions to sample them on.

All positions are in one frame fixed to the limb root's parent; angles are radians. The swivel
is measured from the pole reference carried by the shortest rotation from the rest direction to
the root->end direction, so it has one singular direction (opposite the rest direction), not
two (:func:`swivel_frame`). :mod:`.limb_rom` learns a limb's range of motion in these terms.
"""

import numpy as np

from ..constants import BONE_AXIS, EPS

#: Default pole reference: the bone's Z axis (in the root bone's rest frame, a limb at rest
#: points along +Y, :data:`..constants.BONE_AXIS`).
DEFAULT_POLE_REFERENCE = np.array([0.0, 0.0, 1.0])


def fibonacci_sphere(count):
    """``count`` unit directions ``(count, 3)`` spread evenly (equal area) over the sphere: the
    Fibonacci lattice about the Y axis, point ``i`` at height ``y = 1 - (2 i + 1) / count`` and
    azimuth ``i`` golden angles. Point ``i`` is the same for every use: models store indices."""
    i = np.arange(int(count)) + 0.5
    y = 1.0 - 2.0 * i / count
    r = np.sqrt(np.maximum(1.0 - y * y, 0.0))
    phi = (np.pi * (3.0 - np.sqrt(5.0))) * i
    return np.stack((r * np.cos(phi), y, r * np.sin(phi)), axis=-1)


def _vectors(v, name, shape=None):
    v = np.asarray(v, dtype=float)
    if v.ndim == 0 or v.shape[-1] != 3 or (shape is not None and v.shape != shape):
        want = shape if shape is not None else "(..., 3)"
        raise ValueError(f"{name} must have shape {want}, got {v.shape}")
    return v


def _unit(v, name):
    """A unit vector ``(3,)`` from ``v``; ``ValueError`` for zero length or non-finite values."""
    v = _vectors(v, name, (3,))
    n = np.linalg.norm(v)
    if not np.isfinite(n) or n <= EPS:
        raise ValueError(f"{name} must be a finite non-zero vector, got {v.tolist()}")
    return v / n


def _pole_axis(pole_reference, rest_direction):
    """The pole reference made perpendicular to the rest direction (both unit)."""
    a = _unit(rest_direction, "rest_direction")
    p = _unit(pole_reference, "pole_reference")
    p = p - np.dot(p, a) * a
    n = np.linalg.norm(p)
    if n <= 1e-6:
        raise ValueError("pole_reference must not be parallel to rest_direction")
    return p / n, a


def swivel_frame(direction, pole_reference=DEFAULT_POLE_REFERENCE, rest_direction=BONE_AXIS):
    """The swivel reference ``(u, v)``, two ``(..., 3)`` unit vectors perpendicular to the unit
    root->end ``direction (..., 3)``: ``u`` is the pole reference carried by the shortest rotation
    from ``rest_direction`` to ``direction``, ``v = direction x u``. At ``-rest_direction`` (the
    one singular direction) ``u`` is the pole reference."""
    p, a = _pole_axis(pole_reference, rest_direction)
    n = np.asarray(direction, dtype=float)
    c = n @ a
    k = np.cross(a, n)  # the rotation a -> n: R = c I + [k]x + k k^T / (1 + c)
    one_plus = 1.0 + c
    safe = np.where(one_plus > 1e-12, one_plus, 1.0)
    u = c[..., None] * p + np.cross(k, p) + ((k @ p) / safe)[..., None] * k
    u = np.where((one_plus > 1e-12)[..., None], u, p)
    u = u - np.sum(u * n, axis=-1, keepdims=True) * n  # (exactly perpendicular, against rounding)
    u /= np.maximum(np.linalg.norm(u, axis=-1, keepdims=True), 1e-300)
    return u, np.cross(n, u)


def swivel_angle(root, mid, end, pole_reference=DEFAULT_POLE_REFERENCE, rest_direction=BONE_AXIS):
    """Swivel angles ``(...,)`` in ``(-pi, pi]`` of limbs with joints ``root``, ``mid`` and ``end``
    (``(..., 3)``, broadcast): the turn of the middle joint about the root->end axis, from the
    reference of :func:`swivel_frame` (see the module docstring). 0 where the middle joint lies
    on the axis; NaN where ``end`` is ``root``."""
    root, mid, end = (_vectors(x, name) for x, name in ((root, "root"), (mid, "mid"), (end, "end")))
    axis = end - root
    length = np.linalg.norm(axis, axis=-1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        n = np.where(length > 0.0, axis / length, np.nan)
    u, v = swivel_frame(n, pole_reference, rest_direction)
    m = mid - root
    return np.arctan2(np.sum(m * v, axis=-1), np.sum(m * u, axis=-1))


def mid_position(root, end, swivel, upper_length, lower_length, pole_reference=DEFAULT_POLE_REFERENCE, rest_direction=BONE_AXIS):
    """The middle joint ``(..., 3)`` of a two-bone limb from ``root`` to ``end`` (``(..., 3)``)
    with bones of ``upper_length`` and ``lower_length`` at ``swivel (...,)`` radians: the inverse
    of :func:`swivel_angle`. An end beyond reach (or too near) puts the middle joint on the
    root->end line at ``upper_length`` from the root (straight or folded limb)."""
    root, end = _vectors(root, "root"), _vectors(end, "end")
    swivel = np.asarray(swivel, dtype=float)
    l1, l2 = float(upper_length), float(lower_length)
    if not (l1 > 0.0 and l2 > 0.0):
        raise ValueError(f"bone lengths must be positive, got {upper_length!r} and {lower_length!r}")
    axis = end - root
    length = np.linalg.norm(axis, axis=-1, keepdims=True)
    n = axis / np.where(length > 0.0, length, 1.0)
    along = (l1 * l1 - l2 * l2 + length * length) / (2.0 * np.maximum(length, 1e-300))
    along = np.clip(along, -l1, l1)
    out = np.sqrt(np.maximum(l1 * l1 - along * along, 0.0))
    u, v = swivel_frame(n, pole_reference, rest_direction)
    s = swivel[..., None]
    return root + along * n + out * (np.cos(s) * u + np.sin(s) * v)


def limb_joints(root_rotations, mid_rotations, mid_rest, mid_head, lower_length):
    """The middle joint and the end ``(mid (N, 3), end (N, 3))`` of a two-bone limb posed by
    local rotations, in the root bone's rest frame with the root's head at the origin (the
    frame :mod:`.limb_rom` models a limb in: fixed to the root's parent).

    ``root_rotations``, ``mid_rotations (N, 4)`` are the two bones' local (pose-basis) rotations
    ``(w, x, y, z)``; ``mid_rest (4,)`` and ``mid_head (3,)`` the middle bone's rest orientation
    and head relative to the root's rest frame (``inv(root.matrix_local) @ mid.matrix_local``;
    ``(0, upper_length, 0)`` for a connected bone); ``lower_length`` the middle bone's length
    (the end is its tail). Bone translations and scale are not modelled."""
    from ..geometry.quaternion import quaternion_multiply, quaternion_rotate

    q_root = np.asarray(root_rotations, dtype=float)
    q_mid = np.asarray(mid_rotations, dtype=float)
    if q_root.shape != q_mid.shape or q_root.ndim != 2 or q_root.shape[-1] != 4:
        raise ValueError(f"root and middle rotations must both have shape (N, 4), got {q_root.shape} and {q_mid.shape}")
    mid = quaternion_rotate(q_root, _vectors(mid_head, "mid_head", (3,)))
    lower = quaternion_multiply(q_root, quaternion_multiply(np.asarray(mid_rest, dtype=float), q_mid))
    end = mid + quaternion_rotate(lower, BONE_AXIS * float(lower_length))
    return mid, end
