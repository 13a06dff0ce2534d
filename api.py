# SPDX-License-Identifier: GPL-3.0-or-later
"""For scripts: check poses against the bones' limits without filling a text block.

Import it from the installed extension, e.g.
``from bl_ext.user_default.joint_limits import api`` (the repository's module name may differ).
Every function takes Blender data and returns plain Python values; bones without a fitted,
enabled limit are left out. Angles are in degrees.
"""

import math

import numpy as np

from .rig.io.pose_io import PoseArrays
from .rig.io.storage import read_limit
from .rig.live.evaluate import bone_parents, decompose, local_from_pose, pose_matrices, rest_matrices
from .rig.tasks.bake import limited_bones
from .rig.tasks.report import violation_report


def limit(pose_bone):
    """The bone's fitted :class:`limits.joint.JointLimit` (``contains``, ``project``,
    ``violation`` on local rotations ``(w, x, y, z)``), or ``None`` when it has none.
    ``ValueError`` when its stored limit is unreadable."""
    return read_limit(pose_bone)


def pose_violations(obj, bone_names=None, evaluated=True):
    """``{bone name: degrees}`` by which each limited bone's current rotation leaves its limit
    (0.0 inside). ``evaluated``: the pose Blender shows, constraints and IK included (as the
    last depsgraph update left it); otherwise the bones' own channels (the pose basis).
    ``bone_names`` limits the check to those bones."""
    limits = limited_bones(obj, bone_names)
    rows = np.array([obj.pose.bones.find(name) for name in limits], dtype=np.intp)
    if evaluated:
        local = local_from_pose(pose_matrices(obj), rest_matrices(obj), bone_parents(obj))
        rotations = decompose(local[rows])[1]
    else:
        rotations = PoseArrays(obj.pose.bones).local_quaternions(rows)
    return {name: math.degrees(float(lim.violation(q))) for (name, lim), q in zip(limits.items(), rotations, strict=True)}


def bones_outside(obj, bone_names=None, evaluated=True, tolerance=0.01):
    """Names of the limited bones whose current rotation leaves its limit by more than
    ``tolerance`` degrees (see :func:`pose_violations`)."""
    return [name for name, degrees in pose_violations(obj, bone_names, evaluated).items() if degrees > tolerance]


def action_report(obj, scene, action, frames, bone_names=None):
    """Per limited bone, over ``frames`` of ``action`` evaluated with constraints and IK (live
    enforcement paused): ``[{bone, model, frames, frames_out, worst_deg, worst_frame}, ...]``,
    the rows the Violation Report prints. The current frame is restored."""
    return violation_report(obj, scene, action, frames, bone_names)
