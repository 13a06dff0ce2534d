# SPDX-License-Identifier: GPL-3.0-or-later
"""The live state of one bone for panels: inside or outside, and by how much."""

import math

from ...limits.model import SIGNED_DISTANCE, STRESS
from ..io.pose_io import local_quaternion
from ..io.storage import read_limit


def _fitted_limit(pose_bone):
    """The bone's limit for display, or ``None`` (not fitted, or unreadable)."""
    if not pose_bone.joint_limit.has_limit:
        return None
    try:
        return read_limit(pose_bone, trust_token=True)
    except ValueError:
        return None


def model_details(pose_bone):
    """Extra lines for the panel: the signed distance phi at the current pose (models that
    have one, e.g. the SDF grid) and the memory the limit takes."""
    limit = _fitted_limit(pose_bone)
    if limit is None:
        return []
    lines = []
    if limit.model.can(SIGNED_DISTANCE):
        phi = float(limit.model.signed_distance(limit.to_relative(local_quaternion(pose_bone))))
        lines.append(f"phi {math.degrees(phi):+.1f}° ({'inside' if phi <= 0 else 'outside'})")
    size = sum(v.nbytes for v in limit.model.params.values())
    lines.append(f"Memory {size / 1024:.1f} kB")
    return lines


def bone_status(pose_bone):
    """``(text, is_inside)`` for the bone's current local rotation, or ``(reason, None)``."""
    if not pose_bone.joint_limit.has_limit:
        return ("Not fitted", None)
    try:
        limit = read_limit(pose_bone, trust_token=True)
    except ValueError as err:
        return (f"Unreadable limit: {err}", None)
    q = local_quaternion(pose_bone)
    v = float(limit.violation(q))
    if v <= 1e-4:
        return ("Inside", True)
    return (f"Outside by {math.degrees(v):.1f}°", False)


def texture_details(pose_bone):
    """Panel lines for a sinus texture: stress at the current pose, share allowed, islands."""
    limit = _fitted_limit(pose_bone)
    if limit is None or not limit.model.can(STRESS):
        return []
    model = limit.model
    stress = float(model.stress(limit.to_relative(local_quaternion(pose_bone))))
    allowed = float(model.params["image"][..., 0].mean())
    return [f"Stress {stress:.2f}", f"{100 * allowed:.0f}% of swings allowed, {model.config['islands']} island(s)"]
