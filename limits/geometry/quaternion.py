# SPDX-License-Identifier: GPL-3.0-or-later
"""Batch quaternion algebra.

Every function takes arrays shaped ``(..., 4)`` in ``(w, x, y, z)`` order (the order of
``mathutils.Quaternion``) and broadcasts over the leading axes. Angles are radians. Rotation
matrices act on column vectors, ``v' = R @ v``, as in Blender.
"""

import numpy as np

from ..constants import EPS, EULER_ORDERS

_AXIS_INDEX = {"X": 0, "Y": 1, "Z": 2}


def as_quaternions(q, name="quaternions"):
    """Return ``q`` as a float array of shape ``(..., 4)``; raise ``ValueError`` otherwise."""
    q = np.asarray(q, dtype=float)
    if q.ndim == 0 or q.shape[-1] != 4:
        raise ValueError(f"{name} must have shape (..., 4) in (w, x, y, z) order, got {q.shape}")
    return q


def as_vectors(v, name="vectors"):
    """Return ``v`` as a float array of shape ``(..., 3)``; raise ``ValueError`` otherwise."""
    v = np.asarray(v, dtype=float)
    if v.ndim == 0 or v.shape[-1] != 3:
        raise ValueError(f"{name} must have shape (..., 3), got {v.shape}")
    return v


def check_finite(a, name="rotations"):
    """Raise ``ValueError`` naming how many entries of ``a`` are NaN or infinite."""
    bad = ~np.isfinite(a)
    if bad.any():
        rows = int(bad.reshape(-1, a.shape[-1]).any(axis=-1).sum()) if a.ndim else 1
        raise ValueError(f"{name} contain {rows} non-finite (NaN or infinite) entries")
    return a


def quaternion_normalize(q):
    """Unit quaternions ``(..., 4)``; a zero quaternion becomes the identity, a row holding NaN
    or infinity stays non-finite (so the callers' NaN filters still see it)."""
    q = as_quaternions(q)
    n = np.linalg.norm(q, axis=-1, keepdims=True)
    zero = n <= EPS  # (False for NaN)
    out = np.where(zero, 0.0, q / np.where(zero, 1.0, n))
    out[..., 0] = np.where(zero[..., 0], 1.0, out[..., 0])
    return out


def quaternion_conjugate(q):
    """Conjugate ``(w, -x, -y, -z)``: the inverse of a unit quaternion."""
    q = as_quaternions(q)
    return q * np.array([1.0, -1.0, -1.0, -1.0])


def quaternion_multiply(a, b):
    """Hamilton product ``a * b`` (apply ``b`` first, then ``a``), broadcasting ``(..., 4)``."""
    a = as_quaternions(a, "a")
    b = as_quaternions(b, "b")
    out = np.empty(np.broadcast_shapes(a.shape, b.shape))
    aw, ax, ay, az = a[..., 0], a[..., 1], a[..., 2], a[..., 3]
    bw, bx, by, bz = b[..., 0], b[..., 1], b[..., 2], b[..., 3]
    out[..., 0] = aw * bw - ax * bx - ay * by - az * bz
    out[..., 1] = aw * bx + ax * bw + ay * bz - az * by
    out[..., 2] = aw * by - ax * bz + ay * bw + az * bx
    out[..., 3] = aw * bz + ax * by - ay * bx + az * bw
    return out


def quaternion_relative(reference, q):
    """Rotation ``q`` expressed relative to ``reference``: ``inverse(reference) * q``."""
    return quaternion_multiply(quaternion_conjugate(reference), q)


def quaternion_short_way(q):
    """The cover with ``w >= 0``: the rotation taken the short way round (Holden's quat_abs)."""
    q = as_quaternions(q)
    return np.where(q[..., :1] < 0.0, -q, q)


def quaternion_toward(q, target):
    """The cover of ``q`` whose dot product with ``target`` is not negative."""
    q = as_quaternions(q)
    dot = _dot4(q, as_quaternions(target, "target"))
    return np.where(dot[..., None] < 0.0, -q, q)


def quaternion_unroll(q, axis=0):
    """Consistent double cover along ``axis`` (time).

    The first sample is taken the short way round; each later sample is flipped when it lies
    on the other hemisphere from its predecessor, so rotations beyond 180 degrees survive only
    where the data really travels there (Holden, "quaternion unrolling"). Vectorized: the
    number of sign changes up to each sample decides its sign.
    """
    q = np.moveaxis(as_quaternions(q), axis, 0)
    if q.shape[0] == 0:
        return np.moveaxis(q.copy(), 0, axis)
    first = quaternion_short_way(q[:1])
    dots = np.sum(q[1:] * q[:-1], axis=-1)
    flips = np.cumsum(dots < 0.0, axis=0) % 2
    sign = np.concatenate((np.ones_like(q[:1, ..., 0]), np.where(flips == 1, -1.0, 1.0)), axis=0)
    sign = sign * np.where(q[:1, ..., 0] < 0.0, -1.0, 1.0)
    out = q * sign[..., None]
    out[:1] = first
    return np.moveaxis(out, 0, axis)


def _dot4(a, b):
    return a[..., 0] * b[..., 0] + a[..., 1] * b[..., 1] + a[..., 2] * b[..., 2] + a[..., 3] * b[..., 3]


def quaternion_dot(a, b):
    """Four-dimensional dot product ``(...,)``."""
    return _dot4(as_quaternions(a, "a"), as_quaternions(b, "b"))


def quaternion_angle(a, b):
    """Geodesic angle in radians between the unit rotations ``a`` and ``b`` (covers ignored).

    ``4 atan2(|a - b|, |a + b|)`` with ``b`` on ``a``'s side (the 4-D angle between them is
    half of that, the rotation angle twice the 4-D one): accurate for tiny angles, where
    ``2 acos(|a . b|)`` loses half the digits.
    """
    a = as_quaternions(a, "a")
    b = as_quaternions(b, "b")
    sign = np.where(_dot4(a, b) < 0.0, -1.0, 1.0)
    diff = np.zeros(())
    total = np.zeros(())
    for i in range(4):
        flipped = sign * b[..., i]
        d = a[..., i] - flipped
        s = a[..., i] + flipped
        diff = diff + d * d
        total = total + s * s
    return 4.0 * np.arctan2(np.sqrt(diff), np.sqrt(total))


def vector_cross(a, b):
    """``a x b`` over the last axis (3,), broadcast: numpy's ``cross`` spends most of a small
    call on axis bookkeeping (a limited IK solve makes tens of thousands of them)."""
    a, b = np.broadcast_arrays(a, b)
    out = np.empty(a.shape, dtype=np.result_type(a, b, float))
    out[..., 0] = a[..., 1] * b[..., 2] - a[..., 2] * b[..., 1]
    out[..., 1] = a[..., 2] * b[..., 0] - a[..., 0] * b[..., 2]
    out[..., 2] = a[..., 0] * b[..., 1] - a[..., 1] * b[..., 0]
    return out


def quaternion_rotate(q, v):
    """Rotate vectors ``v (..., 3)`` by unit quaternions ``q (..., 4)``."""
    q = as_quaternions(q)
    v = as_vectors(v)
    w = q[..., :1]
    u = q[..., 1:]
    t = 2.0 * vector_cross(u, v)
    return v + w * t + vector_cross(u, t)


def _norm3(x, y, z):
    """``sqrt(x^2 + y^2 + z^2)`` from components (much faster than ``np.linalg.norm`` over a
    short last axis)."""
    return np.sqrt(x * x + y * y + z * z)


def exp_map_from_quaternion_components(w, x, y, z):
    """:func:`exp_map_from_quaternion` on components: the exp map ``(vx, vy, vz)`` of the
    quaternions with components ``w, x, y, z`` (arrays of one shape)."""
    s = _norm3(x, y, z)
    regular = s > EPS  # tiny vector parts (and NaN): the limit 2 (w ~ 1)
    scale = np.where(regular, 2.0 * np.arctan2(s, w) / np.where(regular, s, 1.0), 2.0)
    return x * scale, y * scale, z * scale


def half_angle_cos_sin(angle):
    """``(cos(angle / 2), sin(angle / 2))`` from one tangent instead of a sine and a cosine
    (half their cost): with ``t = tan(angle / 4)``, ``(1 - t^2) / (1 + t^2)`` and
    ``2 t / (1 + t^2)``, both accurate to a few units in the last place for every angle."""
    t = np.tan(0.25 * angle)
    t2 = t * t
    inv = 1.0 / (1.0 + t2)
    return (1.0 - t2) * inv, 2.0 * t * inv


def quaternion_from_exp_map_components(x, y, z):
    """:func:`quaternion_from_exp_map` on components: the unit quaternions ``(w, x, y, z)`` of
    the exp maps with components ``x, y, z`` (arrays of one shape)."""
    angle = _norm3(x, y, z)
    cos, sin = half_angle_cos_sin(angle)
    regular = angle > EPS  # tiny angles (and NaN): the limit 1/2
    scale = np.where(regular, sin / np.where(regular, angle, 1.0), 0.5)
    return cos, x * scale, y * scale, z * scale


def exp_map_from_quaternion(q):
    """Scaled angle-axis vectors ``(..., 3)`` (quaternion log times two).

    Keeps the cover: ``w < 0`` gives angles between pi and 2 pi, so an unrolled cloud stays
    continuous.
    """
    q = as_quaternions(q)
    return np.stack(exp_map_from_quaternion_components(q[..., 0], q[..., 1], q[..., 2], q[..., 3]), axis=-1)


def quaternion_from_exp_map(v):
    """Unit quaternions from scaled angle-axis vectors ``(..., 3)``."""
    v = as_vectors(v)
    return np.stack(quaternion_from_exp_map_components(v[..., 0], v[..., 1], v[..., 2]), axis=-1)


def quaternion_from_axis_angle(axis_angle):
    """Quaternions from Blender's ``rotation_axis_angle`` layout ``(..., 4) = (angle, x, y, z)``.

    A zero-length axis gives the identity, as in Blender; a NaN or infinite angle or axis gives
    a non-finite quaternion.
    """
    aa = as_quaternions(axis_angle, "axis_angle")
    axis = aa[..., 1:]
    n = np.linalg.norm(axis, axis=-1, keepdims=True)
    zero = n <= EPS  # (False for NaN)
    unit = np.where(zero, 0.0, axis / np.where(zero, 1.0, n))
    angle = np.where(zero, 0.0, aa[..., :1])
    return quaternion_from_exp_map(unit * angle)


def axis_angle_from_quaternion(q):
    """Blender's ``(angle, x, y, z)`` layout; the identity gives ``(0, 0, 1, 0)`` like Blender."""
    v = exp_map_from_quaternion(quaternion_short_way(q))
    angle = np.linalg.norm(v, axis=-1, keepdims=True)
    axis = np.where(angle > EPS, v / np.where(angle > EPS, angle, 1.0), np.array([0.0, 1.0, 0.0]))
    return np.concatenate((angle, axis), axis=-1)


def slerp(a, b, t):
    """Spherical interpolation from ``a`` to ``b`` at ``t`` (broadcast ``(...,)``), shortest arc."""
    a = as_quaternions(a, "a")
    b = quaternion_toward(as_quaternions(b, "b"), a)
    t = np.asarray(t, dtype=float)[..., None]
    d = np.clip(np.sum(a * b, axis=-1, keepdims=True), -1.0, 1.0)
    theta = np.arccos(d)
    s = np.sin(theta)
    linear = s < 1e-6
    safe = np.where(linear, 1.0, s)
    wa = np.where(linear, 1.0 - t, np.sin((1.0 - t) * theta) / safe)
    wb = np.where(linear, t, np.sin(t * theta) / safe)
    return quaternion_normalize(wa * a + wb * b)


def matrix_from_quaternion(q):
    """Rotation matrices ``(..., 3, 3)`` from (not necessarily unit) quaternions."""
    w, x, y, z = np.moveaxis(quaternion_normalize(q), -1, 0)
    return np.stack(
        (
            np.stack((1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)), -1),
            np.stack((2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)), -1),
            np.stack((2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)), -1),
        ),
        axis=-2,
    )


def quaternion_from_matrix(m):
    """Unit quaternions (``w >= 0``) from rotation matrices ``(..., 3, 3)`` (Shepperd's method)."""
    m = np.asarray(m, dtype=float)
    if m.shape[-2:] != (3, 3):
        raise ValueError(f"matrices must have shape (..., 3, 3), got {m.shape}")
    m00, m11, m22 = m[..., 0, 0], m[..., 1, 1], m[..., 2, 2]
    trace = m00 + m11 + m22
    cands = np.stack(
        (
            np.stack((1 + trace, m[..., 2, 1] - m[..., 1, 2], m[..., 0, 2] - m[..., 2, 0], m[..., 1, 0] - m[..., 0, 1]), -1),
            np.stack(
                (m[..., 2, 1] - m[..., 1, 2], 1 + m00 - m11 - m22, m[..., 0, 1] + m[..., 1, 0], m[..., 0, 2] + m[..., 2, 0]), -1
            ),
            np.stack(
                (m[..., 0, 2] - m[..., 2, 0], m[..., 0, 1] + m[..., 1, 0], 1 - m00 + m11 - m22, m[..., 1, 2] + m[..., 2, 1]), -1
            ),
            np.stack(
                (m[..., 1, 0] - m[..., 0, 1], m[..., 0, 2] + m[..., 2, 0], m[..., 1, 2] + m[..., 2, 1], 1 - m00 - m11 + m22), -1
            ),
        ),
        axis=-2,
    )
    pick = np.argmax(np.stack((trace, m00, m11, m22), -1), axis=-1)
    q = np.take_along_axis(cands, pick[..., None, None], axis=-2)[..., 0, :]
    return quaternion_short_way(quaternion_normalize(q))


def _axis_quaternion(axis_index, angle):
    angle = np.asarray(angle, dtype=float)
    q = np.zeros(angle.shape + (4,))
    q[..., 0] = np.cos(0.5 * angle)
    q[..., 1 + axis_index] = np.sin(0.5 * angle)
    return q


def _check_order(order):
    if order not in EULER_ORDERS:
        raise ValueError(f"Euler order must be one of {EULER_ORDERS}, got {order!r}")
    return [_AXIS_INDEX[c] for c in order]


def quaternion_from_euler(euler, order="XYZ"):
    """Quaternions from Blender Euler angles ``(..., 3)`` (indexed by axis X, Y, Z).

    ``order`` names the axes in the order they are applied, so ``"XYZ"`` is ``Rz @ Ry @ Rx``
    exactly like ``mathutils.Euler(angles, "XYZ")``.
    """
    euler = as_vectors(euler, "euler")
    i, j, k = _check_order(order)
    qi = _axis_quaternion(i, euler[..., i])
    qj = _axis_quaternion(j, euler[..., j])
    qk = _axis_quaternion(k, euler[..., k])
    return quaternion_multiply(qk, quaternion_multiply(qj, qi))


def euler_from_matrix(m, order="XYZ"):
    """Blender Euler angles ``(..., 3)`` indexed by axis, from rotation matrices.

    Of the two equivalent solutions the one with the smaller sum of absolute angles is chosen,
    as Blender does.
    """
    m = np.asarray(m, dtype=float)
    i, j, k = _check_order(order)
    parity = 1.0 if (j - i) % 3 == 1 else -1.0
    cy = np.hypot(m[..., i, i], m[..., j, i])
    tj = np.arctan2(-parity * m[..., k, i], cy)
    regular = cy > 1e-8  # ~sqrt(eps): near gimbal lock the general branch loses eps / cy
    ti = np.where(regular, np.arctan2(parity * m[..., k, j], m[..., k, k]), np.arctan2(-parity * m[..., j, k], m[..., j, j]))
    tk = np.where(regular, np.arctan2(parity * m[..., j, i], m[..., i, i]), 0.0)
    alt_i = np.where(regular, np.arctan2(-parity * m[..., k, j], -m[..., k, k]), ti)
    alt_j = np.where(regular, np.arctan2(-parity * m[..., k, i], -cy), tj)
    alt_k = np.where(regular, np.arctan2(-parity * m[..., j, i], -m[..., i, i]), tk)
    first = np.abs(ti) + np.abs(tj) + np.abs(tk)
    second = np.abs(alt_i) + np.abs(alt_j) + np.abs(alt_k)
    use_alt = second < first
    out = np.empty(m.shape[:-2] + (3,))
    out[..., i] = np.where(use_alt, alt_i, ti)
    out[..., j] = np.where(use_alt, alt_j, tj)
    out[..., k] = np.where(use_alt, alt_k, tk)
    return out


def euler_from_quaternion(q, order="XYZ"):
    """Blender Euler angles ``(..., 3)`` from quaternions; see :func:`euler_from_matrix`."""
    return euler_from_matrix(matrix_from_quaternion(q), order)


def euler_compatible(euler, previous, order="XYZ"):
    """The Euler triple equal in rotation to ``euler`` that lies closest to ``previous``.

    Like ``mathutils.Euler.make_compatible``: tries both equivalent solutions and whole turns,
    so writing a projected rotation back into an Euler channel does not flip the curve.
    """
    euler = as_vectors(euler, "euler")
    previous = as_vectors(previous, "previous")
    i, j, k = _check_order(order)
    alt = euler.copy()
    alt[..., i] += np.pi
    alt[..., j] = np.pi - alt[..., j]
    alt[..., k] += np.pi
    best = []
    for cand in (euler, alt):
        cand = previous + (cand - previous + np.pi) % (2 * np.pi) - np.pi
        best.append(cand)
    d0 = np.sum((best[0] - previous) ** 2, axis=-1, keepdims=True)
    d1 = np.sum((best[1] - previous) ** 2, axis=-1, keepdims=True)
    return np.where(d1 < d0, best[1], best[0])


def zyz_from_quaternion(q):
    """Proper Z-Y-Z Euler angles ``(..., 3) = (a, b, c)`` with ``R = Rz(a) @ Ry(b) @ Rz(c)``.

    The space of Engell-Norregard et al. (seed 000): ``a, c`` in ``[0, 2 pi)``, ``b`` in
    ``[0, pi]``. At the poles (``b = 0`` or ``pi``) ``c`` is set to zero.
    """
    m = matrix_from_quaternion(q)
    s = np.hypot(m[..., 0, 2], m[..., 1, 2])
    b = np.arctan2(s, m[..., 2, 2])
    regular = s > 1e-12
    a = np.where(regular, np.arctan2(m[..., 1, 2], m[..., 0, 2]), 0.0)
    c = np.where(regular, np.arctan2(m[..., 2, 1], -m[..., 2, 0]), 0.0)
    pole_a = np.where(m[..., 2, 2] > 0, np.arctan2(m[..., 1, 0], m[..., 0, 0]), np.arctan2(-m[..., 0, 1], m[..., 1, 1]))
    a = np.where(regular, a, pole_a)
    two_pi = 2.0 * np.pi
    return np.stack((a % two_pi, b, c % two_pi), axis=-1)


def quaternion_from_zyz(angles):
    """Quaternions from Z-Y-Z Euler angles ``(..., 3)``; inverse of :func:`zyz_from_quaternion`."""
    angles = as_vectors(angles, "zyz angles")
    qa = _axis_quaternion(2, angles[..., 0])
    qb = _axis_quaternion(1, angles[..., 1])
    qc = _axis_quaternion(2, angles[..., 2])
    return quaternion_multiply(qa, quaternion_multiply(qb, qc))


def quaternion_mean(q, weights=None):
    """Average rotation of ``q (N, 4)`` (Markley: top eigenvector of sum q q^T), ``w >= 0``.

    Insensitive to the cover of each sample.
    """
    q = as_quaternions(q)
    if q.ndim != 2 or len(q) == 0:
        raise ValueError(f"quaternion_mean needs a non-empty (N, 4) array, got {q.shape}")
    w = np.ones(len(q)) if weights is None else np.asarray(weights, dtype=float)
    m = (q * w[:, None]).T @ q
    _, vecs = np.linalg.eigh(m)
    return quaternion_short_way(vecs[:, -1])


def quaternion_random(n, rng=None):
    """``n`` uniformly distributed unit quaternions ``(n, 4)`` (Shoemake), ``w >= 0`` not enforced."""
    rng = np.random.default_rng(rng)
    q = rng.normal(size=(n, 4))
    return q / np.linalg.norm(q, axis=-1, keepdims=True)
