# SPDX-License-Identifier: GPL-3.0-or-later
"""Holden's rectangular limit: an axis-aligned box around the rotation cloud's points.

In ``"FULL"`` mode the box bounds the scaled angle-axis vector (radians) of the rotation, in
the joint's reference frame; in ``"SWING_TWIST"`` mode one box bounds the swing vector and one
the twist angle, both in the twist frame (see :mod:`.shape_limit`).

Parameters (per shape; concatenated ``[swing, twist]`` in SWING_TWIST mode): ``mins (3,)`` and
``maxs (3,)`` in radians, plus the twist ``axis (3,)``.

Projection clamps each coordinate: for a box this is exactly the nearest point (Euclidean).
"""

import numpy as np

from .model import register_model
from .quaternion import exp_map_into, quaternion_from_exp_map, quaternion_from_exp_map_into
from .shape_limit import ShapeLimit, clamp_rows


def _clamp_moved(points, mins, maxs, clamped, moved, differ):
    """Clamp the point components ``points[i]`` into ``clamped[i]`` and flag in ``moved`` the
    rows where a component changed (as ``clamp_rows`` and ``rows_differ``, per component)."""
    for i in range(3):
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
        if not _all_finite(q):
            return False  # non-finite rows: the generic path
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
            _restore_rows(out, q, np.flatnonzero(~moved))
        return True


def _all_finite(q):
    """Every entry of the rows ``q (n, 4)`` is finite (False also when their squares
    overflow): one dot product (BLAS) of the contiguous rows, faster than ``isfinite``."""
    if not q.flags.c_contiguous:
        return bool(np.isfinite(q).all())
    flat = q.reshape(-1)
    return bool(np.isfinite(np.dot(flat, flat)))


_ROW = np.dtype((np.void, 32))


def _restore_rows(out, q, index):
    """``out[index] = q[index]`` for contiguous ``(n, 4)`` float rows, moved as 32-byte
    records (fancy indexing of short float rows is several times slower)."""
    if out.flags.c_contiguous and q.flags.c_contiguous:
        np.put(out.view(_ROW).reshape(-1), index, np.take(q.view(_ROW).reshape(-1), index))
    else:
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
        if self.config["mode"] == "FULL":
            return _FullProjection(shapes[0], rows)
        return None

    @classmethod
    def _shape_radius(cls, shape):
        """Distance of the farthest corner from the origin."""
        return np.sqrt(np.sum(np.maximum(shape["mins"] ** 2, shape["maxs"] ** 2), axis=-1))

    @classmethod
    def _validate_shape(cls, shape):
        if np.any(shape["mins"] > shape["maxs"]):
            raise ValueError(f"{cls.kind} limit: 'mins' must not exceed 'maxs'")
