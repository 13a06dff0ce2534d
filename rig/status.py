# SPDX-License-Identifier: GPL-3.0-or-later
"""The live state of one bone for panels: inside or outside, and by how much."""

import math

from .pose_io import local_quaternion
from .storage import read_limit

_parsed = {}


def bone_status(pose_bone):
    """``(text, is_inside)`` for the bone's current local rotation, or ``(reason, None)``."""
    settings = pose_bone.joint_limit
    if not settings.limit_data:
        return ("Not fitted", None)
    key = (settings.limit_data, settings.use_softening, settings.soft_radius, settings.soft_falloff)
    limit = _parsed.get(key)
    if limit is None:
        try:
            limit = read_limit(pose_bone)
        except ValueError as err:
            return (f"Unreadable limit: {err}", None)
        if len(_parsed) > 256:
            _parsed.clear()
        _parsed[key] = limit
    q = local_quaternion(pose_bone)
    v = float(limit.violation(q))
    if v <= 1e-4:
        return ("Inside", True)
    return (f"Outside by {math.degrees(v):.1f}°", False)
