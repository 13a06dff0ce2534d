# SPDX-License-Identifier: GPL-3.0-or-later
"""Holden's oriented bounding box: a box aligned with the principal axes of the cloud.

The frame comes from numpy's SVD of the covariance of the points (not power iteration): the
box is centred on their mean (``position``) and turned by ``rotation``, whose columns are the
principal axes (orthonormal, determinant +1). ``mins``/``maxs`` bound the points' coordinates
in that frame, grown by the padding.

Parameters (per shape; concatenated ``[swing, twist]`` in SWING_TWIST mode, see
:mod:`.shape_limit`): ``position (3,)``, ``rotation (3, 3)``, ``mins (3,)``, ``maxs (3,)``
(radians), plus the twist ``axis (3,)``.

Projection clamps the frame coordinates; since the frame is orthonormal this is exactly the
nearest point of the box.
"""

import numpy as np

from .shape_limit import (
    ShapeLimit,
    check_rotation_matrices,
    clamp_rows,
    from_local,
    principal_frame,
    rows_differ,
    select_rows,
    to_local,
)


class OrientedBoxLimit(ShapeLimit):
    kind = "oriented_box"
    label = "Oriented Box"
    description = "Box turned to the principal axes of the sampled rotations; tighter than the plain box"
    SHAPE_PARAMS = {"position": (3,), "rotation": (3, 3), "mins": (3,), "maxs": (3,)}

    @classmethod
    def _fit_shape(cls, points, padding, fixed_axis=None):
        position, rotation = principal_frame(points, fixed_axis)
        local = to_local(points, position, rotation)
        return {
            "position": position,
            "rotation": rotation,
            "mins": local.min(axis=0) - padding,
            "maxs": local.max(axis=0) + padding,
        }

    @classmethod
    def _contains_shape(cls, shape, points, tolerance):
        local = to_local(points, shape["position"], shape["rotation"])
        inside = (local >= shape["mins"] - tolerance) & (local <= shape["maxs"] + tolerance)
        return np.all(inside, axis=-1)

    @classmethod
    def _project_shape(cls, shape, points):
        local = to_local(points, shape["position"], shape["rotation"])
        clamped = clamp_rows(local, shape["mins"], shape["maxs"])
        outside = rows_differ(clamped, local)
        # Points inside keep their exact coordinates (no round trip through the frame).
        return select_rows(outside, from_local(clamped, shape["position"], shape["rotation"]), points)

    @classmethod
    def _shape_radius(cls, shape):
        """The centre's distance plus the farthest corner's distance from the centre."""
        reach = np.sqrt(np.sum(np.maximum(shape["mins"] ** 2, shape["maxs"] ** 2), axis=-1))
        return np.linalg.norm(shape["position"], axis=-1) + reach

    @classmethod
    def _validate_shape(cls, shape):
        check_rotation_matrices(shape["rotation"], f"{cls.kind} limit: 'rotation'")
        if np.any(shape["mins"] > shape["maxs"]):
            raise ValueError(f"{cls.kind} limit: 'mins' must not exceed 'maxs'")
