# SPDX-License-Identifier: GPL-3.0-or-later
"""BVH motion capture onto a rig: import with Blender's own importer, retarget by name.

Files are checked first (:func:`check_bvh`), so a malformed one is refused with one line naming
the file and the problem instead of the importer's traceback, and nothing is left behind.
"""

import math
from dataclasses import dataclass, field
from pathlib import Path

import bpy
import numpy as np

from ...limits.body.skeleton import match_bone_names, retarget_local_rotations
from ...limits.constants import IDENTITY_QUATERNION
from .actions import action_fcurves, action_frames, keyed_rotations
from .bvh_file import is_number
from .skeleton_io import skeleton_from_armature

#: BVH channel names (case-insensitive, as Blender's importer reads them).
POSITION_CHANNELS = ("xposition", "yposition", "zposition")
ROTATION_CHANNELS = ("xrotation", "yrotation", "zrotation")


@dataclass
class BvhCheck:
    """What :func:`check_bvh` found: the joints in file order, the motion's size, and which
    frames (0-based) of which joints hold NaN or infinite rotation values."""

    joints: list
    frame_count: int
    frame_time: float
    bad_rotation_frames: dict = field(default_factory=dict)


def _numbers(tokens, count, what):
    if len(tokens) != count:
        raise ValueError(f"{what} needs {count} numbers, got {len(tokens)}")
    try:
        values = [float(t) for t in tokens]
    except ValueError:
        raise ValueError(f"{what} holds {' '.join(tokens)!r}, not numbers") from None
    if not all(math.isfinite(v) for v in values):
        raise ValueError(f"{what} holds NaN or infinity")
    return values


def _check_hierarchy(lines):
    """Joints ``[(name, channel names)]`` from the HIERARCHY lines (``(number, tokens)``) up to
    MOTION; returns ``(joints, index of the MOTION line)``."""
    joints, depth, i = [], 0, 1
    while i < len(lines):
        number, tokens = lines[i]
        word = tokens[0].lower()
        if word in {"root", "joint"}:
            if (word == "root") != (depth == 0):
                raise ValueError(f"line {number}: {tokens[0]} {'outside a joint' if depth == 0 else 'inside a joint'}")
            if len(tokens) < 2:
                raise ValueError(f"line {number}: {tokens[0]} without a name")
            name = "_".join(tokens[1:])  # as Blender's importer names it
            body = lines[i + 1 : i + 4]
            if len(body) < 3 or body[0][1] != ["{"] or body[1][1][0].upper() != "OFFSET" or body[2][1][0].upper() != "CHANNELS":
                raise ValueError(f"line {number}: joint {name!r} needs '{{', OFFSET and CHANNELS lines")
            _numbers(body[1][1][1:], 3, f"line {body[1][0]}: OFFSET of {name!r}")
            channels = [c.lower() for c in body[2][1][2:]]
            declared = body[2][1][1] if len(body[2][1]) > 1 else ""
            if not declared.isdigit() or int(declared) != len(channels):
                raise ValueError(
                    f"line {body[2][0]}: CHANNELS of {name!r} declares {declared or 'no count'} but names {len(channels)}"
                )
            unknown = [c for c in channels if c not in POSITION_CHANNELS + ROTATION_CHANNELS]
            rotations = sum(c in ROTATION_CHANNELS for c in channels)
            if unknown or len(set(channels)) != len(channels) or rotations not in (0, 3):
                listed = " ".join(body[2][1][2:])
                raise ValueError(
                    f"line {body[2][0]}: joint {name!r} has channels {listed}; Blender reads positions and 0 or 3 rotations, each once"
                )
            joints.append((name, channels))
            depth += 1
            i += 4
        elif [t.lower() for t in tokens] == ["end", "site"]:
            body = lines[i + 1 : i + 4]
            if not joints or len(body) < 3 or body[0][1] != ["{"] or body[1][1][0].upper() != "OFFSET" or body[2][1] != ["}"]:
                raise ValueError(f"line {number}: End Site needs '{{', OFFSET and '}}' lines")
            _numbers(body[1][1][1:], 3, f"line {body[1][0]}: End Site OFFSET")
            i += 4
        elif tokens == ["}"]:
            depth -= 1
            if depth < 0:
                raise ValueError(f"line {number}: '}}' closes nothing")
            i += 1
        elif word == "motion":
            if depth != 0 or not joints:
                raise ValueError(f"line {number}: MOTION before the hierarchy is complete")
            return joints, i
        else:
            raise ValueError(f"line {number}: unexpected {' '.join(tokens)[:40]!r} in the hierarchy")
    raise ValueError("no MOTION section")


def _check_motion(lines, joints):
    """``(frame count, frame time, values (F, channels))`` of the MOTION section ``lines``."""
    if len(lines) < 3 or lines[1][1][:1] != ["Frames:"] or len(lines[1][1]) != 2 or not lines[1][1][1].isdigit():
        raise ValueError("MOTION needs a 'Frames: N' line")
    frame_count = int(lines[1][1][1])
    if frame_count == 0:
        raise ValueError("the file holds no motion (Frames: 0)")
    time = lines[2][1]
    if [t.lower() for t in time[:2]] != ["frame", "time:"] or len(time) != 3:
        raise ValueError("MOTION needs a 'Frame Time: seconds' line")
    (frame_time,) = _numbers(time[2:], 1, f"line {lines[2][0]}: Frame Time")
    if frame_time <= 0.0:
        raise ValueError(f"line {lines[2][0]}: Frame Time must be positive, got {frame_time}")
    rows = lines[3:]
    if len(rows) != frame_count:
        raise ValueError(f"'Frames: {frame_count}' but the file holds {len(rows)} frames")
    width = sum(len(channels) for _, channels in joints)
    for number, tokens in rows:
        if len(tokens) != width:
            raise ValueError(f"line {number}: {len(tokens)} numbers, the hierarchy has {width} channels")
    try:
        values = np.array([tokens for _, tokens in rows], dtype=float)
    except ValueError:
        number, bad = next((n, t) for n, tokens in rows for t in tokens if not is_number(t))
        raise ValueError(f"line {number}: {bad[:20]!r} is not a number") from None
    return frame_count, frame_time, values


def check_bvh(filepath):
    """Read and check a BVH file before Blender's importer sees it: HIERARCHY with a ROOT,
    joints with finite OFFSETs and known CHANNELS, End Sites, balanced braces, then MOTION with
    ``Frames: N`` (N > 0), a positive ``Frame Time`` and N lines of one number per channel.
    NaN and infinite motion values are allowed (Blender's importer turns them into the rest
    pose; :func:`import_bvh_armature` keeps them NaN so sampling drops them).

    Returns a :class:`BvhCheck`; ``ValueError`` naming the file, the line and the problem.
    """
    path = Path(filepath)
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise ValueError(f"{path.name} is not a BVH file (not text)") from None
    except OSError as err:
        raise ValueError(f"cannot read {path.name}: {err.strerror or err}") from None
    lines = [(n, line.split()) for n, line in enumerate(text.splitlines(), 1) if line.strip()]
    try:
        if not lines or lines[0][1][0].upper() != "HIERARCHY":
            raise ValueError("does not start with HIERARCHY")
        joints, motion = _check_hierarchy(lines)
        frame_count, frame_time, values = _check_motion(lines[motion:], joints)
    except ValueError as err:
        raise ValueError(f"{path.name} is not a valid BVH file: {err}") from None
    bad, column = {}, 0
    for name, channels in joints:
        rotation = [column + k for k, c in enumerate(channels) if c in ROTATION_CHANNELS]
        frames = np.flatnonzero(~np.isfinite(values[:, rotation]).all(axis=1)) if rotation else []
        if len(frames):
            bad[name] = frames
        column += len(channels)
    return BvhCheck(joints, frame_count, frame_time, bad)


def _mark_bad_frames(obj, check):
    """Write NaN into the imported rotation keys of the frames that were NaN or infinite in the
    file (the importer made them the rest pose). The importer groups each joint's curves under
    the joint's BVH name, which survives bone-name shortening."""
    if not check.bad_rotation_frames:
        return
    for fc in action_fcurves(obj, obj.animation_data.action):
        frames = check.bad_rotation_frames.get(fc.group.name if fc.group else None)
        if frames is not None and fc.data_path.endswith(".rotation_quaternion") and fc.array_index == 0:
            for f in frames:
                fc.keyframe_points[int(f)].co[1] = float("nan")


def import_bvh_armature(context, filepath):
    """Check ``filepath`` (:func:`check_bvh`) and import it with ``io_anim_bvh`` as a temporary
    armature; returns the object. ``ValueError`` naming the file and the problem when the file
    is malformed or the importer fails, and then nothing it created is left behind."""
    check = check_bvh(filepath)
    name = Path(filepath).name
    collections = (bpy.data.objects, bpy.data.armatures, bpy.data.actions)
    before = [set(c) for c in collections]
    try:
        result = bpy.ops.import_anim.bvh(
            filepath=str(filepath), rotate_mode="QUATERNION", update_scene_fps=False, use_fps_scale=False
        )
        new = [o for o in bpy.data.objects if o not in before[0] and o.type == "ARMATURE"]
        if "FINISHED" not in result or not new:
            raise ValueError(f"Blender's BVH importer did not import {name}")
        if new[0].animation_data is None or new[0].animation_data.action is None:
            raise ValueError(f"Blender's BVH importer made no action from {name}")
        _mark_bad_frames(new[0], check)
        return new[0]
    except Exception as err:
        for collection, old in zip(collections, before, strict=True):
            for block in [b for b in collection if b not in old]:
                collection.remove(block)
        if isinstance(err, ValueError) and name in str(err):
            raise
        last = (str(err).strip().splitlines() or [type(err).__name__])[-1]  # not the importer's traceback
        raise ValueError(f"could not import {name}: {last}") from None


def remove_armature(obj):
    action = obj.animation_data.action if obj.animation_data else None
    data = obj.data
    bpy.data.objects.remove(obj)
    if data.users == 0:
        bpy.data.armatures.remove(data)
    if action is not None and action.users == 0:
        bpy.data.actions.remove(action)


def bvh_rotations(source, target, bone_names=None):
    """Local rotations ``{target bone: (F, 4)}`` of ``target``'s bones matched by name to the
    imported ``source`` armature, retargeted through armature-space rotation deltas from rest."""
    action = source.animation_data.action if source.animation_data else None
    if action is None:
        raise ValueError("the BVH file holds no motion")
    src = skeleton_from_armature(source)
    dst = skeleton_from_armature(target)
    mapping = match_bone_names(dst.names, src.names)  # all bones: parents' poses matter
    wanted = [n for n in mapping if bone_names is None or n in set(bone_names)]
    if not wanted:
        raise ValueError(f"no bone of {target.name} matches a BVH joint by name ({', '.join(src.names[:6])}, ...)")
    frames = action_frames(action)
    q, keyed = keyed_rotations(source, action, src.names, frames)
    q = np.where(keyed[None, :, None], q, IDENTITY_QUATERNION)
    local = retarget_local_rotations(src, q, dst, mapping)
    return {name: local[:, dst.names.index(name)] for name in wanted}
