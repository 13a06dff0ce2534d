# SPDX-License-Identifier: GPL-3.0-or-later
"""An armature object's bones as a :class:`~...limits.body.skeleton.Skeleton` (rest pose arrays)."""

import numpy as np

from ...limits.body.skeleton import Skeleton
from ...limits.geometry.quaternion import quaternion_from_matrix


def skeleton_from_armature(obj):
    """Rest skeleton of ``obj`` in ``pose.bones`` order (armature space)."""
    bones = [pb.bone for pb in obj.pose.bones]
    index = {b.name: i for i, b in enumerate(bones)}
    return Skeleton(
        names=[b.name for b in bones],
        parents=np.array([index[b.parent.name] if b.parent else -1 for b in bones], dtype=int),
        heads=np.array([b.head_local for b in bones], dtype=float).reshape(-1, 3),
        tails=np.array([b.tail_local for b in bones], dtype=float).reshape(-1, 3),
        rest_rotations=quaternion_from_matrix(np.array([b.matrix_local.to_3x3() for b in bones], dtype=float).reshape(-1, 3, 3)),
    )
