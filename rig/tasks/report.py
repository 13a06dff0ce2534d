# SPDX-License-Identifier: GPL-3.0-or-later
"""Violation reports: per bone, how many frames are out of limit and the worst violation."""

import math

import numpy as np

from ...limits.constants import INSIDE_TOLERANCE
from ...limits.model import STRESS
from ..io.bone_errors import NOT_FINITE, guarded
from ..live.evaluate import evaluated_local_transforms
from .bake import limited_bones
from .sample import temporarily_assigned


def violation_report(obj, scene, action, frames, bone_names=None, progress=None, skipped=None):
    """Rows ``{bone, frames_out, frames, worst_deg, worst_frame, model}`` for every limited bone,
    evaluated with constraints and IK (live enforcement paused). A bone whose limit cannot be
    read or gives NaN has no row and is added to ``skipped`` (a
    :class:`..io.bone_errors.SkippedBones`; without one, a ``ValueError`` naming it is raised)."""
    limits = limited_bones(obj, bone_names, skipped)
    if not limits:
        unreadable = f" that can be read ({skipped.summary()})" if skipped else ""
        raise ValueError(f"{obj.name} has no fitted, enabled limits{unreadable}")
    with temporarily_assigned(obj, action):
        _, rot, _ = evaluated_local_transforms(obj, scene, frames, progress)
    rows = []
    for name, limit in limits.items():
        with guarded(skipped, name):
            rows.append(_bone_row(name, limit, rot[:, obj.pose.bones.find(name)], frames))
    return rows


def _bone_row(name, limit, q, frames):
    """The report row of bone ``name`` whose rotations over ``frames`` are ``q (F, 4)``."""
    v = limit.violation(q)
    if not np.all(np.isfinite(v)):
        raise ValueError(NOT_FINITE)
    worst = int(np.argmax(v))
    row = {
        "bone": name,
        "model": limit.model.kind,
        "frames": len(frames),
        "frames_out": int(np.sum(v > INSIDE_TOLERANCE)),
        "worst_deg": math.degrees(float(v[worst])),
        "worst_frame": int(frames[worst]),
    }
    if limit.model.can(STRESS):
        stress = limit.model.stress(limit.to_relative(q))
        peak = int(np.argmax(stress))
        row["stress"], row["stress_frame"] = float(stress[peak]), int(frames[peak])
    return row


def report_text(obj, action, rows, skipped=None):
    """The report as text: what the columns mean, a line per row (bones out of their limit
    first, the worst violation first; then the bones that stay inside, by name), the bones
    ``skipped``, a summary."""
    lines = [
        f"Joint Limits report: {obj.name}, action {action.name!r}",
        "  out:   frames where the bone's rotation (constraints and IK included) leaves its limit, of all frames",
        "  worst: the largest violation, degrees from the rotation to the nearest allowed one, and its frame",
        f"{'bone':<20} {'model':<13} {'out':>9} {'worst':>9}  frame",
    ]
    outside = sorted((r for r in rows if r["frames_out"]), key=lambda r: (-r["worst_deg"], -r["frames_out"], r["bone"]))
    inside = sorted((r for r in rows if not r["frames_out"]), key=lambda r: r["bone"])
    for r in outside + inside:
        frame = r["worst_frame"] if r["frames_out"] else "-"
        stress = f"   stress {r['stress']:.2f} at frame {r['stress_frame']}" if "stress" in r else ""
        lines.append(
            f"{r['bone']:<20} {r['model']:<13} {r['frames_out']:>4}/{r['frames']:<4} {r['worst_deg']:>8.1f}°  {frame}{stress}"
        )
    for name, why in (skipped or {}).items():
        lines.append(f"{name:<20} skipped: {why}")
    lines.append(f"{len(outside)} of {len(rows)} limited bones leave their limits")
    return "\n".join(lines)
