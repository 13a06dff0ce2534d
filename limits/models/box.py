# SPDX-License-Identifier: GPL-3.0-or-later
"""Holden's rectangular limit: an axis-aligned box around the rotation cloud's points.

In ``"FULL"`` mode the box bounds the scaled angle-axis vector (radians) of the rotation, in
the joint's reference frame; in ``"SWING_TWIST"`` mode one box bounds the swing vector and one
the twist angle, both in the twist frame (see :mod:`.shape_limit`).

Parameters (per shape; concatenated ``[swing, twist]`` in SWING_TWIST mode): ``mins (3,)`` and
``maxs (3,)`` in radians, plus the twist ``axis (3,)``.

Projection clamps each coordinate: for a box this is exactly the nearest point (Euclidean).
Large unstacked SWING_TWIST batches about +Y clamp the three coordinates that can move on
their own arrays (:func:`_clamp_bone_axis_swing_twist`, the generic path's results, to the last bit
but for numpy's vector and scalar loops):
the generic path's ``(n, 3)`` point arrays would keep that case under the 5 M rotations/s on
one core the projection benchmark asks for.
"""

import numpy as np

from .shape_limit import ShapeLimit, _bone_axis_compose, _bone_axis_split, _is_bone_axis, clamp_rows


def _clamp_bone_axis_swing_twist(q, swing, twist):
    """``(projected (n, 4), moved (n,))`` for finite rows ``q (n, 4)``, the ``swing`` and
    ``twist`` boxes of an unstacked model with twist axis +Y lying in their balls: the swing's
    ``x``, ``z`` and the twist angle clamped (the swing's ``y`` and the twist's ``x``, ``z`` are
    zero, inside both boxes) and recomposed for the rows that moved."""
    swing_x, swing_z, angle = _bone_axis_split(q)
    clamped_x = np.minimum(np.maximum(swing_x, swing["mins"][0]), swing["maxs"][0])
    clamped_z = np.minimum(np.maximum(swing_z, swing["mins"][2]), swing["maxs"][2])
    clamped_angle = np.minimum(np.maximum(angle, twist["mins"][1]), twist["maxs"][1])
    moved = (clamped_x != swing_x) | (clamped_z != swing_z) | (clamped_angle != angle)
    index = np.flatnonzero(moved)
    out = q.copy()
    out[index] = _bone_axis_compose(clamped_x[index], np.zeros(len(index)), clamped_z[index], clamped_angle[index])
    return out, moved


class BoxLimit(ShapeLimit):
    kind = "box"
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

    def _project_rows(self, q, shapes, in_ball=None):
        """:func:`_clamp_bone_axis_swing_twist` where it applies (see the module docstring)."""
        if (
            self.config["mode"] == "SWING_TWIST"
            and in_ball is not None
            and all(in_ball)
            and q.ndim == 2
            and self._unbatched()
            and _is_bone_axis(self.params["axis"])
            and np.isfinite(q).all()
        ):
            return _clamp_bone_axis_swing_twist(q, *shapes)
        return super()._project_rows(q, shapes, in_ball)

    @classmethod
    def _shape_radius(cls, shape):
        """Distance of the farthest corner from the origin."""
        return np.sqrt(np.sum(np.maximum(shape["mins"] ** 2, shape["maxs"] ** 2), axis=-1))

    @classmethod
    def _validate_shape(cls, shape):
        if np.any(shape["mins"] > shape["maxs"]):
            raise ValueError(f"{cls.kind} limit: 'mins' must not exceed 'maxs'")
