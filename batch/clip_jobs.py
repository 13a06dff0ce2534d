# SPDX-License-Identifier: GPL-3.0-or-later
"""What one clip costs: its samples for a fit, its check against limits, its cleaned copy.

These run in worker processes (:mod:`.runner`); each returns plain data (dicts, arrays) and
writes nothing but a cleaned clip, atomically. Frames are numbered as Blender's importer keys
them (the file's first frame is frame 1).
"""

import math
import os
from pathlib import Path

import numpy as np

from ..rig.report import INSIDE_TOLERANCE
from .bvh_file import read_bvh
from .limit_set import read_limit_set

#: Test hook: a worker given a clip of this name ends its process (a crash the batch survives).
CRASH_ENV = "JOINT_LIMITS_BATCH_TEST_CRASH"

_limit_sets = {}


def _limits(path):
    """The limit set at ``path``, read once per worker (and again if the file changes)."""
    stat = os.stat(path)
    key = (str(path), stat.st_mtime_ns, stat.st_size)
    if key not in _limit_sets:
        _limit_sets.clear()
        _limit_sets[key] = read_limit_set(path)
    return _limit_sets[key]


def write_atomic(path, data):
    """Write ``data`` (bytes) to ``path`` through a temporary file and a rename, so ``path``
    holds either nothing or all of it."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.partial")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def _crash_hook(path):
    if os.environ.get(CRASH_ENV) and Path(path).name == os.environ[CRASH_ENV]:
        os._exit(70)


def fit_samples(path):
    """``{"frames": F, "bones": {joint: (N, 4) finite local rotations}, "heading": [joints
    that carry the heading or travel]}`` of the clip at ``path``."""
    _crash_hook(path)
    clip = read_bvh(path)
    q = clip.local_rotations()
    bones = {}
    for j, name in enumerate(clip.names):
        if clip.rotation_columns(j) is None:
            continue
        rows = q[:, j]
        bones[name] = rows[np.isfinite(rows).all(axis=1)]
    heading = [name for j, name in enumerate(clip.names) if clip.carries_heading(j)]
    return {"frames": clip.frame_count, "bones": bones, "heading": heading}


def _violations(clip, limits):
    """Per limited joint ``(index, name, limit, rotations (F, 4), violation (F,) radians; NaN
    where the file is not finite)``, and the clip's joints without a limit."""
    q = clip.local_rotations()
    rows, unlimited = [], []
    for j, name in enumerate(clip.names):
        if name not in limits or clip.rotation_columns(j) is None:
            unlimited.append(name)
            continue
        finite = np.isfinite(q[:, j]).all(axis=1)
        v = np.full(clip.frame_count, np.nan)
        if finite.any():
            v[finite] = limits[name].violation(q[finite, j])
        rows.append((j, name, limits[name], q[:, j], v))
    if not rows:
        raise ValueError(f"no joint of {clip.name} has a limit ({', '.join(clip.names[:5])}, ...: names must match)")
    return rows, unlimited


def _report(clip, rows, unlimited, job):
    bones, out_any, worst = [], np.zeros(clip.frame_count, dtype=bool), None
    for _, name, _, _, v in rows:
        out = v > INSIDE_TOLERANCE
        out_any |= out
        row = {"bone": name, "frames_out": int(out.sum()), "not_finite_frames": int(np.isnan(v).sum())}
        if out.any():
            f = int(np.nanargmax(v))
            row["worst_degrees"] = round(math.degrees(float(v[f])), 6)
            row["worst_frame"] = f + 1
            if worst is None or (row["worst_degrees"], worst["bone"]) > (worst["degrees"], name):
                worst = {"bone": name, "degrees": row["worst_degrees"], "frame": f + 1}
        bones.append(row)
    bones.sort(key=lambda r: (-r.get("worst_degrees", 0.0), r["bone"]))
    return {
        "clip": clip.name,
        "job": job,
        "frames": clip.frame_count,
        "first_frame": 1,
        "frame_time": clip.frame_time,
        "bones_checked": len(rows),
        "bones_out": sum(1 for r in bones if r["frames_out"]),
        "frames_out": int(out_any.sum()),
        "worst": worst,
        "bones": bones,
        "joints_without_limit": sorted(unlimited),
    }


def check_clip(path, limits_path):
    """The check report of the clip at ``path`` against the limit set at ``limits_path``: per
    limited bone the frames out of its limit and the worst violation (degrees) and its frame;
    over the clip the frames with any bone out, the bones out, and the worst violation."""
    _crash_hook(path)
    clip = read_bvh(path)
    rows, unlimited = _violations(clip, _limits(limits_path))
    return _report(clip, rows, unlimited, "check")


def clean_clip(path, limits_path, out_path):
    """Limit the clip at ``path`` and write it to ``out_path`` (same skeleton, channels and
    frame rate; only the rotation channels of the frames out of a limit are rewritten).
    Returns the check report of the input, with ``"output"``."""
    _crash_hook(path)
    clip = read_bvh(path)
    rows, unlimited = _violations(clip, _limits(limits_path))
    changes = {}
    for j, _, limit, q, v in rows:
        frames = np.flatnonzero(v > INSIDE_TOLERANCE)
        if len(frames):
            changes[j] = (frames, limit.project(q[frames]))
    write_atomic(out_path, clip.limited_text(changes).encode("utf-8"))
    report = _report(clip, rows, unlimited, "clean")
    report["output"] = Path(out_path).name
    return report


def peak_memory_mb():
    """This process's peak resident memory in MB (Linux and macOS; 0 where unknown)."""
    try:
        import resource
    except ImportError:
        return 0.0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / (1024 * 1024) if os.uname().sysname == "Darwin" else peak / 1024
