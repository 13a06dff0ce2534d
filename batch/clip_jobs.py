# SPDX-License-Identifier: GPL-3.0-or-later
"""What one clip costs: its samples for a fit, its check against limits, its cleaned copy.

These run in worker processes (:mod:`.runner`) or on Dask workers; each takes a clip as a
:class:`.clips.ClipRef` tuple, returns plain data (dicts, arrays) and writes nothing but a
cleaned clip, atomically. A BVH clip is read with numpy (:mod:`..rig.io.bvh_file`, no Blender needed;
frames numbered as Blender's importer keys them, from 1); a .blend action or an FBX file with
Blender (:mod:`.blend_clip`, imported only then; frames are the action's).
"""

import math
import os
from pathlib import Path

import numpy as np

from ..limits.body.bone_names import match_joints
from ..limits.body.preset import load_preset, preset_limits
from ..limits.constants import INSIDE_TOLERANCE
from ..rig.io.bvh_file import read_bvh
from .clips import ClipRef
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


#: A limits path of this form checks each clip against a preset fitted to its own skeleton.
PRESET_PREFIX = "preset:"


def clip_limits(clip, limits_path):
    """``(limits {joint: JointLimit}, assumed)`` to check ``clip`` against: the limit set at
    ``limits_path``, or for ``"preset:<name>"`` the preset on the clip's own skeleton (its frames
    read from its rest pose, or from its motion when the rest pose is not a standing one)."""
    if not str(limits_path).startswith(PRESET_PREFIX):
        return _limits(limits_path), []
    preset = load_preset(str(limits_path)[len(PRESET_PREFIX) :])
    skeleton = clip.skeleton()
    motion = clip.local_rotations()
    motion[~np.all(np.isfinite(motion), axis=-1)] = (1.0, 0.0, 0.0, 0.0)
    matches, _ = match_joints(skeleton.names, skeleton.parents)
    return preset_limits(skeleton, matches, preset, motion)


def write_atomic(path, data):
    """Write ``data`` (bytes) to ``path`` through a temporary file and a rename, so ``path``
    holds either nothing or all of it."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.partial")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def open_clip(ref):
    """The clip of ``ref`` (a :class:`.clips.ClipRef` or its tuple), read."""
    ref = ClipRef(*ref)
    if os.environ.get(CRASH_ENV) and ref.name == os.environ[CRASH_ENV]:
        os._exit(70)
    if ref.kind == "bvh":
        return read_bvh(ref.path)
    from . import blend_clip  # Blender: imported only for clips that need it

    if ref.kind == "blend":
        return blend_clip.open_blend_clip(ref.name, ref.path, ref.action)
    return blend_clip.import_fbx_clip(ref.name, ref.path)


def fit_samples(ref):
    """``{"frames": F, "bones": {joint: (N, 4) finite local rotations}, "heading": [joints
    that carry the heading or travel], "rest": {joint: (4,) rest orientation in world
    space}, "skeleton": the rest skeleton as plain arrays (:func:`skeleton_arrays`)}`` of the
    clip ``ref``."""
    clip = open_clip(ref)
    q = clip.local_rotations()
    rest = clip.world_rest_rotations()
    bones, rests = {}, {}
    for j, name in enumerate(clip.names):
        if not clip.rotated(j):
            continue
        rows = q[:, j]
        bones[name] = rows[np.isfinite(rows).all(axis=1)]
        rests[name] = rest[j]
    heading = [name for j, name in enumerate(clip.names) if clip.carries_heading(j)]
    return {
        "frames": clip.frame_count,
        "bones": bones,
        "heading": heading,
        "rest": rests,
        "skeleton": skeleton_arrays(clip.skeleton()),
    }


def skeleton_arrays(skeleton):
    """A :class:`..limits.body.skeleton.Skeleton` as plain data (what crosses processes and is cached):
    ``{"names": [...], "parents": (J,), "heads": (J, 3), "tails": (J, 3), "rest": (J, 4)}``."""
    return {
        "names": list(skeleton.names),
        "parents": skeleton.parents,
        "heads": skeleton.heads,
        "tails": skeleton.tails,
        "rest": skeleton.rest_rotations,
    }


def _violations(clip, limits):
    """Per limited joint ``(index, name, limit, rotations (F, 4), violation (F,) radians; NaN
    where the file is not finite)``, and the clip's joints without a limit."""
    q = clip.local_rotations()
    rows, unlimited = [], []
    for j, name in enumerate(clip.names):
        if name not in limits or not clip.rotated(j):
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


def _report(clip, rows, unlimited, job, assumed=()):
    bones, out_any, worst = [], np.zeros(clip.frame_count, dtype=bool), None
    for _, name, _, _, v in rows:
        out = v > INSIDE_TOLERANCE
        out_any |= out
        row = {"bone": name, "frames_out": int(out.sum()), "not_finite_frames": int(np.isnan(v).sum())}
        if out.any():
            f = int(np.nanargmax(v))
            row["worst_degrees"] = round(math.degrees(float(v[f])), 6)
            row["worst_frame"] = int(clip.frame_numbers[f])
            if worst is None or (row["worst_degrees"], worst["bone"]) > (worst["degrees"], name):
                worst = {"bone": name, "degrees": row["worst_degrees"], "frame": row["worst_frame"]}
        bones.append(row)
    bones.sort(key=lambda r: (-r.get("worst_degrees", 0.0), r["bone"]))
    return {
        "clip": clip.name,
        "job": job,
        "frames": clip.frame_count,
        "first_frame": int(clip.frame_numbers[0]),
        "frame_time": clip.frame_time,
        "bones_checked": len(rows),
        "bones_out": sum(1 for r in bones if r["frames_out"]),
        "frames_out": int(out_any.sum()),
        "worst": worst,
        "bones": bones,
        "joints_without_limit": sorted(unlimited),
        **({"assumed": list(assumed)} if assumed else {}),
    }


def check_clip(ref, limits_path):
    """The check report of the clip ``ref`` against the limit set at ``limits_path``: per
    limited bone the frames out of its limit and the worst violation (degrees) and its frame;
    over the clip the frames with any bone out, the bones out, and the worst violation."""
    clip = open_clip(ref)
    limits, assumed = clip_limits(clip, limits_path)
    rows, unlimited = _violations(clip, limits)
    return _report(clip, rows, unlimited, "check", assumed)


def clean_clip(ref, limits_path, out_path):
    """Limit the clip ``ref`` and write it to ``out_path`` (same skeleton, channels and frame
    rate; only the rotation channels of the frames out of a limit are rewritten). Returns the
    check report of the input, with ``"output"``."""
    clip = open_clip(ref)
    limits, assumed = clip_limits(clip, limits_path)
    rows, unlimited = _violations(clip, limits)
    changes = {}
    for j, _, limit, q, v in rows:
        frames = np.flatnonzero(v > INSIDE_TOLERANCE)
        if len(frames):
            changes[j] = (frames, limit.project(q[frames]))
    clip.write_limited(changes, out_path)
    report = _report(clip, rows, unlimited, "clean", assumed)
    report["output"] = Path(out_path).name
    return report


def peak_memory_mb():
    """This process's peak resident memory in MB (0 where unknown). On Linux from
    ``/proc/self/status`` (``VmHWM``, this program's own): ``getrusage`` would also count the
    memory of the process a spawned worker was forked from."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        import resource
    except ImportError:
        return 0.0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / (1024 * 1024) if os.uname().sysname == "Darwin" else peak / 1024
