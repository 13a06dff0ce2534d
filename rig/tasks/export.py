# SPDX-License-Identifier: GPL-3.0-or-later
"""A rig's limits written for a game or physics engine (:mod:`...limits.export.engine_export`): the
Blender side gathers each bone's samples, learned limit and rest frames."""

import os
from pathlib import Path

import numpy as np

from ...limits.export import engine_export
from ...limits.export.engine_limits import TARGET_SHARE
from ..io.bone_errors import SkippedBones, guarded
from ..io.storage import read_cloud, read_limit

#: Text block the operator writes each bone's approximations and fidelity to.
TEXT_NAME = "Joint Limits Engine Export"


def bone_record(pose_bone):
    """The mapping :func:`...limits.export.engine_export.bone_entry` takes, for ``pose_bone``: its
    samples, its learned limit (or None) and its rest frames. ``ValueError`` when it has no
    samples."""
    samples = read_cloud(pose_bone)
    if len(samples) == 0:
        raise ValueError(f"{pose_bone.name}: no samples")
    limit = read_limit(pose_bone)
    bone = pose_bone.bone
    parent = bone.parent
    return {
        "name": pose_bone.name,
        "parent": None if parent is None else parent.name,
        "matrix": np.array(bone.matrix_local, dtype=float),
        "parent_matrix": None if parent is None else np.array(parent.matrix_local, dtype=float),
        "length": float(bone.length),
        "limit": limit,
        "samples": samples,
    }


def rig_export(obj, bone_names, engine, target=TARGET_SHARE, break_margin=None, skipped=None, progress=None):
    """The export data of armature ``obj``'s bones ``bone_names`` (those with samples; a bone
    whose data cannot be read is added to ``skipped``, a :class:`SkippedBones`, and left out).
    ``progress(done)`` after each bone exported. ``ValueError`` when no bone is left."""
    skipped = SkippedBones() if skipped is None else skipped
    records = []
    for name in bone_names:
        pose_bone = obj.pose.bones[name]
        if not pose_bone.joint_limit.cloud_count:
            continue
        with guarded(skipped, name):
            records.append(bone_record(pose_bone))
    if not records:
        why = f" ({skipped.summary()})" if skipped else ""
        raise ValueError(f"no bone of {obj.name} with samples to export{why}; run Sample Rotations first")
    return engine_export.rig_export(engine, obj.name, records, target=target, break_margin=break_margin, progress=progress)


def write_export(path, data):
    """Write ``data`` (:func:`rig_export`) to ``path`` in its engine's format, through a temporary
    file renamed at the end (a failed write leaves an older file as it was)."""
    path = Path(path)
    if not path.name:
        raise ValueError("no file to export to")
    text = engine_export.export_text(data)
    partial = path.with_name(path.name + ".partial")
    partial.write_text(text, encoding="utf-8")
    os.replace(partial, path)
    return path


def report_lines(data):
    """One line per bone and approximation: the engine's limits and the fidelity."""
    lines = []
    for entry in data["bones"]:
        for name, approx in entry["approximations"].items():
            fid = approx["fidelity"]
            ratio = fid["volume_ratio"]
            volume = f"volume {100 * fid['volume']:.2f}% of all rotations" + (
                f", {ratio:.2f}x the learned limit's" if ratio is not None else " (no learned limit to compare)"
            )
            lines.append(
                f"{entry['bone']} {name}: accepts {100 * fid['sample_share']:.1f}% of {fid['samples']} samples; "
                f"{volume}; break margin {entry['break_margin_deg']:g} deg"
            )
    return lines
