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
from .shape_limit import ShapeLimit, clamp_rows


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

    @classmethod
    def _shape_radius(cls, shape):
        """Distance of the farthest corner from the origin."""
        return np.sqrt(np.sum(np.maximum(shape["mins"] ** 2, shape["maxs"] ** 2), axis=-1))

    @classmethod
    def _validate_shape(cls, shape):
        if np.any(shape["mins"] > shape["maxs"]):
            raise ValueError(f"{cls.kind} limit: 'mins' must not exceed 'maxs'")
