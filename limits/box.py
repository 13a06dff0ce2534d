# SPDX-License-Identifier: GPL-3.0-or-later
"""Holden's rectangular limit: an axis-aligned box around the rotation cloud's points.

In ``"FULL"`` mode the box bounds the scaled angle-axis vector (radians) of the rotation, in
the joint's reference frame; in ``"SWING_TWIST"`` mode one box bounds the swing vector and one
the twist angle, both in the twist frame (see :mod:`.shape_limit`).

Parameters (per shape; concatenated ``[swing, twist]`` in SWING_TWIST mode): ``mins (3,)`` and
``maxs (3,)`` in radians, plus the twist ``axis (3,)``.

Projection clamps each coordinate: for a box this is exactly the nearest point (Euclidean).
Large batches (unbatched models, FULL mode or SWING_TWIST about +Y) take a fused projection
(:meth:`BoxLimit._lean_projection`) that gives the generic pipeline's results bit for bit.
"""

import numpy as np

from .constants import BONE_AXIS, EPS
from .model import register_model
from .quaternion import exp_map_into, half_angle_cos_sin, quaternion_from_exp_map, quaternion_from_exp_map_into
from .shape_limit import ShapeLimit, _bone_axis_rotations, _general_swing_twist_points, _is_bone_axis, clamp_rows


def _clamp_moved(points, mins, maxs, clamped, moved, differ):
    """Clamp the point components ``points[i]`` into ``clamped[i]`` and flag in ``moved`` the
    rows where a component changed (as ``clamp_rows`` and ``rows_differ``, per component)."""
    for i in range(len(points)):
        np.maximum(points[i], mins[i], out=clamped[i])
        np.minimum(clamped[i], maxs[i], out=clamped[i])
        np.not_equal(clamped[i], points[i], out=moved if i == 0 else differ)
        if i:
            moved |= differ


class _FullProjection:
    """The FULL-mode box projection of one batch of finite rows, fused: exp map, clamp, moved
    flags and rotations on contiguous component arrays in reused buffers (the generic path
    goes through ``(n, 3)`` point arrays, strided per component, and fresh temporaries).
    Bit-identical to it: the same operations in the same order."""

    def __init__(self, shape, rows):
        self.mins = [float(v) for v in shape["mins"]]
        self.maxs = [float(v) for v in shape["maxs"]]
        # Padded rows: numpy's fast (SIMD) arctan2 / tan treat arrays that merely touch as
        # overlapping and fall back to libm, whose last bits differ.
        self.buffers = np.empty((7, rows + 8))
        self.flags = np.empty(rows, dtype=bool)

    def __call__(self, q, out, moved):
        if q.strides[0] > 4096 or not _all_finite(q):
            # Non-finite rows, or rows so far apart that numpy's overlap test (which counts
            # a whole stride past a strided input's last element) could reach the buffers:
            # the generic path.
            return False
        n = len(q)
        b = self.buffers[:, :n]
        points, clamped = b[0:3], b[3:6]
        exp_map_into(q[:, 0], q[:, 1], q[:, 2], q[:, 3], tuple(points), work=(b[3], b[4]))
        _clamp_moved(points, self.mins, self.maxs, clamped, moved, self.flags[:n])
        count = int(np.count_nonzero(moved))
        if 4 * count < n:  # few rows moved (live use): rotations only for those
            out[...] = q
            if count:
                index = np.flatnonzero(moved)
                out[index] = quaternion_from_exp_map(clamped[:, index].T)
            return True
        quaternion_from_exp_map_into(clamped[0], clamped[1], clamped[2], out, work=(b[0], b[1], b[2], b[6]))
        if count < n:
            _restore_rows(out, q, ~moved)
        return True


class _SwingTwistProjection:
    """The SWING_TWIST-mode box projection (twist axis +Y) of one batch of finite rows, fused
    like :class:`_FullProjection`: the swing-twist split of ``_bone_axis_swing_twist_points``,
    the clamp and the recomposition of ``_bone_axis_rotations``, the same operations in the
    same order on contiguous component buffers. Only the components that can change are
    computed: the swing's x and z and the twist angle (the flattening of the generic path keeps
    the swing's y and the twist's x and z at zero, so they never move a row), and products
    with the swing quaternion's zero y component are left out (exact, see ``__call__``)."""

    def __init__(self, shapes, rows):
        swing, twist = shapes
        self.mins = [float(swing["mins"][0]), float(swing["mins"][2]), float(twist["mins"][1])]
        self.maxs = [float(swing["maxs"][0]), float(swing["maxs"][2]), float(twist["maxs"][1])]
        self.buffers = np.empty((7, rows + 8))  # padded rows, see _FullProjection
        self.flags = np.empty((2, rows), dtype=bool)
        self.twist_bound_near_zero = min(abs(self.mins[2]), abs(self.maxs[2])) < 1e-200

    def __call__(self, q, out, moved):
        n = len(q)
        A, B, C, D, E, F, G = self.buffers[:, :n]
        regular, differ = self.flags[:, :n]
        x, z = q[:, 1], q[:, 3]
        w, y = G, F  # read five times or more: contiguous copies
        np.copyto(w, q[:, 0])
        np.copyto(y, q[:, 2])
        # The split (see _bone_axis_swing_twist_points): swing x, z in B, C, twist angle in F.
        with np.errstate(all="ignore"):  # non-finite rows go to the generic path, quietly
            n2 = np.multiply(w, w, out=A)
            y2_min = np.minimum.reduce(np.multiply(y, y, out=E))
            n2 += E
            ux = np.multiply(x, w, out=B)
            ux += np.multiply(z, y, out=E)
            uz = np.multiply(z, w, out=C)
            uz -= np.multiply(x, y, out=E)
            u = np.multiply(ux, ux, out=D)
            u += np.multiply(uz, uz, out=E)
            np.sqrt(u, out=u)
            n2_min, n2_max = np.minimum.reduce(n2), np.maximum.reduce(n2)
            if not (np.isfinite(n2_max) and np.isfinite(np.maximum.reduce(u))):
                # w^2 + y^2 is finite only for finite w and y, and then u only for finite x, z
                # (an infinite x or z makes u infinite or NaN); large finite rows overflow too.
                return False
        scale = np.arctan2(u, n2, out=E)
        scale += scale
        # Regular rows have n = sqrt(n2) EPS > EPS^2, u > n and |y| > n. sqrt and the product
        # round monotonically, so bounds from the extreme n2 certify every row at once;
        # |y| > n_max follows from min(y * y) > (n_max^2)(1 + 1e-9) (two roundings).
        n_min, n_max = np.sqrt(n2_min) * EPS, np.sqrt(n2_max) * EPS
        irregular = None
        if not (n_min > EPS * EPS and np.minimum.reduce(u) > n_max and y2_min > n_max * n_max * (1.0 + 1e-9)):
            nn = np.sqrt(n2) * EPS
            ok = (nn > EPS * EPS) & (u > nn) & (np.abs(y) > nn)
            if not ok.all():
                irregular = np.nonzero(~ok)
                u[irregular] = 1.0
        scale /= u
        ux *= scale
        uz *= scale
        angle = np.arctan2(y, w, out=F)
        angle += angle
        if irregular is not None:
            swing_points, twist_points = _general_swing_twist_points(q[irregular], BONE_AXIS)
            ux[irregular], uz[irregular], angle[irregular] = swing_points[:, 0], swing_points[:, 2], twist_points[:, 1]
        # The clamp: swing x, z and twist angle into A, D, E.
        sx, sz, ta = A, D, E
        _clamp_moved((ux, uz, angle), self.mins, self.maxs, (sx, sz, ta), moved, differ)
        count = int(np.count_nonzero(moved))
        if 4 * count < n:  # few rows moved (live use): rotations only for those
            out[...] = q
            if count:
                index = np.flatnonzero(moved)
                swing_points = np.zeros((count, 3))
                swing_points[:, 0], swing_points[:, 2] = sx[index], sz[index]
                twist_points = np.zeros((count, 3))
                twist_points[:, 1] = ta[index]
                out[index] = _bone_axis_rotations(swing_points, twist_points)
            return True
        # The swing quaternion (a, b, 0, d) (see quaternion_from_exp_map_into; the zero y
        # component adds +0.0 to the squared angle, which changes nothing): a in F, b in B,
        # d in G.
        sangle = np.multiply(sx, sx, out=B)
        sangle += np.multiply(sz, sz, out=C)
        np.sqrt(sangle, out=sangle)
        a, t = half_angle_cos_sin(sangle, F, (C, F, G))
        if np.minimum.reduce(sangle) > EPS:
            t /= sangle
        else:  # tiny angles: the limit 1/2
            regular = sangle > EPS
            t[regular] /= sangle[regular]
            t[~regular] = 0.5
        b = np.multiply(sx, t, out=B)
        d = np.multiply(sz, t, out=G)
        # The twist (c, 0, s, 0) from its tangent half-angle formula: c in A, s in C.
        c, s = half_angle_cos_sin(ta, A, (C, A, D))
        # swing * twist. The swing's y component e is +0.0 (its angle factor is positive), and
        # a >= 5e-17 (the clamped swing lies below a half turn; 1 - t^2 is a multiple of
        # 2^-53) while c is +0.0 or |c| > 1e-17: so a c - e s is a c (never -0.0), and a s + e c
        # is a s unless that is -0.0, which needs a twist angle within 1e-290 of zero. Regular
        # rows have |twist angle| > 1e-9, clamped ones a bound's: only irregular rows and
        # bounds near zero need the check.
        np.multiply(a, c, out=out[:, 0])
        np.multiply(a, s, out=out[:, 2])
        if irregular is not None or self.twist_bound_near_zero:
            zero = np.flatnonzero(out[:, 2] == 0.0)
            if len(zero):
                out[zero, 2] = a[zero] * s[zero] + 0.0 * c[zero]
        np.subtract(np.multiply(b, c, out=D), np.multiply(d, s, out=E), out=out[:, 1])
        np.add(np.multiply(b, s, out=D), np.multiply(d, c, out=E), out=out[:, 3])
        if count < n:
            _restore_rows(out, q, ~moved)
        return True


def _all_finite(q):
    """Every entry of the rows ``q (n, 4)`` is finite (False also when their squares
    overflow): one dot product (BLAS) of the contiguous rows, faster than ``isfinite``."""
    if not q.flags.c_contiguous:
        return bool(np.isfinite(q).all())
    flat = q.reshape(-1)
    return bool(np.isfinite(np.dot(flat, flat)))


_ROW = np.dtype((np.void, 32))


def _restore_rows(out, q, keep):
    """``out[keep] = q[keep]`` for ``(n, 4)`` float rows and a boolean mask ``keep``: one
    masked copy of 32-byte records (much faster than indexing short float rows)."""
    if out.flags.c_contiguous and q.flags.c_contiguous:
        np.copyto(out.view(_ROW).reshape(-1), q.view(_ROW).reshape(-1), where=keep)
    else:
        index = np.flatnonzero(keep)
        out[index] = np.take(q, index, axis=0)


@register_model
class BoxLimit(ShapeLimit):
    kind = "box"
    ui_order = 20
    label = "Box"
    description = "Axis-aligned box around the sampled rotations (scaled angle-axis); simple and loose"
    SHAPE_PARAMS = {"mins": (3,), "maxs": (3,)}

    @classmethod
    def _fit_shape(cls, points, padding, fixed_axis=None):
        """``mins``/``maxs (3,)``: the data's per-axis range grown by ``padding`` radians."""
        return {"mins": points.min(axis=0) - padding, "maxs": points.max(axis=0) + padding}

    @classmethod
    def _contains_shape(cls, shape, points, tolerance):
        inside = (points >= shape["mins"] - tolerance) & (points <= shape["maxs"] + tolerance)
        return np.all(inside, axis=-1)

    @classmethod
    def _project_shape(cls, shape, points):
        return clamp_rows(points, shape["mins"], shape["maxs"])

    def _lean_projection(self, shapes, rows):
        """:class:`_FullProjection`, or :class:`_SwingTwistProjection` for the +Y twist axis."""
        if self.config["mode"] == "FULL":
            return _FullProjection(shapes[0], rows)
        if _is_bone_axis(self.params["axis"]):
            return _SwingTwistProjection(shapes, rows)
        return None

    @classmethod
    def _shape_radius(cls, shape):
        """Distance of the farthest corner from the origin."""
        return np.sqrt(np.sum(np.maximum(shape["mins"] ** 2, shape["maxs"] ** 2), axis=-1))

    @classmethod
    def _validate_shape(cls, shape):
        if np.any(shape["mins"] > shape["maxs"]):
            raise ValueError(f"{cls.kind} limit: 'mins' must not exceed 'maxs'")
