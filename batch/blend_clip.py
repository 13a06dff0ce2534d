# SPDX-License-Identifier: GPL-3.0-or-later
"""A clip that Blender reads: an action of a .blend file, or an FBX file through Blender's
importer (``bpy.ops.import_scene.fbx``).

Opening one replaces the file open in this process (a batch works on files, never on the open
one). :class:`BlendClip` offers what :mod:`.clip_jobs` asks of a clip, like
:class:`..rig.io.bvh_file.BvhClip`: bone names, frames, local rotations (the keyed values, read by
:func:`..rig.io.actions.keyed_rotations`), the bones that carry the heading, rest orientations,
and a limited copy written back: only the keys of the limited bones' rotation channels at the
frames out of their limits change; every other channel keeps its keys exactly.
"""

import os
from pathlib import Path

import bpy
import numpy as np

from ..limits.geometry.quaternion import (
    axis_angle_from_quaternion,
    euler_compatible,
    euler_from_quaternion,
    quaternion_from_matrix,
    quaternion_normalize,
)
from ..rig.io.actions import action_frames, bone_rotation_curves, curve_values, keyed_rotations
from ..rig.tasks.fit import carries_heading
from ..rig.tasks.sample import temporarily_assigned
from .blend_bytes import deterministic_blend


def _rotation_channel(pose_bone, channels):
    """The channel :func:`..rig.io.actions.keyed_rotations` reads for this bone."""
    own = {"QUATERNION": "rotation_quaternion", "AXIS_ANGLE": "rotation_axis_angle"}.get(
        pose_bone.rotation_mode, "rotation_euler"
    )
    if own in channels:
        return own
    return next(c for c in ("rotation_quaternion", "rotation_euler", "rotation_axis_angle") if c in channels)


class BlendClip:
    """The action ``action`` on the armature ``obj`` in the open file."""

    def __init__(self, name, obj, action):
        self.name, self.obj, self.action = name, obj, action
        curves = bone_rotation_curves(obj, action)
        self.names = [pb.name for pb in obj.pose.bones if pb.name in curves]
        if not self.names:
            raise ValueError(f"{name}: the action keys no bone rotation of {obj.name}")
        self.curves = {n: curves[n] for n in self.names}
        self.frame_numbers = action_frames(action)
        render = bpy.context.scene.render
        self.frame_time = float(render.fps_base) / float(render.fps)
        self._rotations = None

    @property
    def frame_count(self):
        return len(self.frame_numbers)

    def rotated(self, j):
        return True

    def local_rotations(self):
        """``(F, J, 4)`` the keyed local rotations (the pose bones' basis) per frame."""
        if self._rotations is None:
            self._rotations, _ = keyed_rotations(self.obj, self.action, self.names, self.frame_numbers)
        return self._rotations

    def carries_heading(self, j):
        with temporarily_assigned(self.obj, self.action):
            return carries_heading(self.obj, self.obj.pose.bones[self.names[j]])

    def skeleton(self):
        """The armature's rest skeleton (:class:`..limits.body.skeleton.Skeleton`, armature space)."""
        from ..rig.io.skeleton_io import skeleton_from_armature

        return skeleton_from_armature(self.obj)

    def world_rest_rotations(self):
        """``(J, 4)`` each bone's rest orientation in world space (object and bone rest)."""
        world = np.array(self.obj.matrix_world.to_3x3().normalized(), dtype=float)
        rest = np.array([np.array(self.obj.data.bones[n].matrix_local.to_3x3(), dtype=float) for n in self.names])
        return quaternion_from_matrix(world[None] @ rest)

    def write_limited(self, changes, out_path):
        """Key ``changes`` ``{joint index: (frame indices (N,), local rotations (N, 4))}``
        into the action and save a copy of the file at ``out_path`` (through a temporary file).
        Each rotation is written in the bone's channel, continuous with the values it replaces
        (the quaternion's sign, the Euler triple nearest the old one)."""
        for j, (rows, q) in sorted(changes.items()):
            if not len(rows):
                continue
            name = self.names[j]
            pb = self.obj.pose.bones[name]
            channel = _rotation_channel(pb, self.curves[name])
            curves = self.curves[name][channel]
            size = 4 if channel != "rotation_euler" else 3
            if sorted(curves) != list(range(size)):
                raise ValueError(f"{self.name}: bone {name!r} keys only some components of {channel}; clean needs all")
            frames = self.frame_numbers[rows]
            old = np.stack([curve_values(curves[i], frames) for i in range(size)], axis=-1)
            values = _channel_values(channel, pb.rotation_mode, q, old)
            for i in range(size):
                _key(curves[i], frames, values[:, i])
        out_path = Path(out_path)
        tmp = out_path.with_name(f".{out_path.stem}.partial.blend")
        bpy.ops.wm.save_as_mainfile(filepath=str(tmp), copy=True, check_existing=False)
        tmp.write_bytes(deterministic_blend(tmp.read_bytes()))  # the same bytes whatever process saves it
        os.replace(tmp, out_path)


def _channel_values(channel, mode, q, old):
    """``q (N, 4)`` as values of ``channel`` closest to ``old (N, k)``."""
    if channel == "rotation_quaternion":
        sign = np.where(np.sum(q * quaternion_normalize(old), axis=-1, keepdims=True) < 0, -1.0, 1.0)
        return q * sign
    if channel == "rotation_axis_angle":
        values = axis_angle_from_quaternion(q)
        flip = np.sum(old[..., 1:] * values[..., 1:], axis=-1) < 0  # -angle about -axis: the same rotation
        values[flip] *= -1.0
        return values
    order = mode if mode not in {"QUATERNION", "AXIS_ANGLE"} else "XYZ"
    return euler_compatible(euler_from_quaternion(q, order), old, order)


def _key(fc, frames, values):
    """Set the keys of ``fc`` at ``frames`` to ``values`` (inserting keys where there are none)."""
    points = fc.keyframe_points
    co = np.empty(2 * len(points), dtype=np.float32)
    points.foreach_get("co", co)
    where = {float(x): k for k, x in enumerate(co[0::2])}
    for f, v in zip(frames.tolist(), values.tolist(), strict=True):
        k = where.get(float(np.float32(f)))
        if k is None:
            points.insert(float(f), v)
        else:
            points[k].co[1] = v
    fc.update()


def _armature_for(action, name):
    """The armature object that plays ``action``: the one it is assigned to, else the one whose
    bones it keys most (ties: by name)."""
    armatures = sorted((o for o in bpy.data.objects if o.type == "ARMATURE"), key=lambda o: o.name)
    for obj in armatures:
        if obj.animation_data is not None and obj.animation_data.action == action:
            return obj
    best, count = None, 0
    for obj in armatures:
        with temporarily_assigned(obj, action):
            keyed = sum(1 for n in bone_rotation_curves(obj, action) if n in obj.pose.bones)
        if keyed > count:
            best, count = obj, keyed
    if best is None:
        raise ValueError(f"{name}: no armature in the file has the bones the action keys")
    return best


def open_blend_clip(name, path, action_name):
    """Open the .blend at ``path`` (replacing the open file) and return its action
    ``action_name`` as a :class:`BlendClip`."""
    if action_name is None:
        raise ValueError(f"{Path(path).name} holds no action")
    try:
        bpy.ops.wm.open_mainfile(filepath=str(path), load_ui=True)
    except RuntimeError as err:
        raise ValueError(f"cannot open {Path(path).name}: {str(err).strip().splitlines()[-1]}") from None
    action = bpy.data.actions.get(action_name)
    if action is None:
        raise ValueError(f"{Path(path).name} holds no action {action_name!r}")
    return BlendClip(name, _armature_for(action, name), action)


def import_fbx_clip(name, path):
    """Import the FBX at ``path`` into an empty file with Blender's importer; the clip is the
    action of its armature (one armature expected)."""
    bpy.ops.wm.read_homefile(use_empty=True)
    if not hasattr(bpy.ops.import_scene, "fbx"):
        raise ValueError("Blender's FBX importer (io_scene_fbx) is not available in this Blender")
    try:
        bpy.ops.import_scene.fbx(filepath=str(path))
    except RuntimeError as err:
        raise ValueError(f"could not import {Path(path).name}: {str(err).strip().splitlines()[-1]}") from None
    armatures = [o for o in bpy.data.objects if o.type == "ARMATURE" and o.animation_data and o.animation_data.action]
    if len(armatures) != 1:
        raise ValueError(f"{Path(path).name}: {len(armatures)} animated armatures imported (one is read)")
    return BlendClip(name, armatures[0], armatures[0].animation_data.action)
