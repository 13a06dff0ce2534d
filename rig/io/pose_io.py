# SPDX-License-Identifier: GPL-3.0-or-later
"""Pose-bone rotations in every rotation mode, read and written in bulk with foreach_get/set."""

import numpy as np

from ...limits.constants import EULER_ORDERS
from ...limits.geometry.quaternion import (
    axis_angle_from_quaternion,
    euler_compatible,
    euler_from_quaternion,
    quaternion_from_axis_angle,
    quaternion_from_euler,
    quaternion_toward,
)

#: ``PoseBone.rotation_mode`` as foreach_get reports it.
MODE_QUATERNION = 0
MODE_AXIS_ANGLE = -1
EULER_CODES = {order: i + 1 for i, order in enumerate(EULER_ORDERS)}


#: Blender's rotation channels and the :class:`PoseArrays` attribute holding each.
CHANNEL_ARRAYS = {"rotation_quaternion": "quaternion", "rotation_euler": "euler", "rotation_axis_angle": "axis_angle"}


def channel_of(code):
    """The channel a bone in rotation mode ``code`` (see :func:`mode_code`) is posed with."""
    return (
        "rotation_quaternion"
        if code == MODE_QUATERNION
        else "rotation_axis_angle"
        if code == MODE_AXIS_ANGLE
        else "rotation_euler"
    )


def mode_code(mode):
    """Integer code of a rotation mode name (``'QUATERNION'``, ``'XYZ'``..., ``'AXIS_ANGLE'``)."""
    if mode == "QUATERNION":
        return MODE_QUATERNION
    if mode == "AXIS_ANGLE":
        return MODE_AXIS_ANGLE
    return EULER_CODES[mode]


class PoseArrays:
    """A snapshot of every pose bone's rotation channels of one armature object.

    The channel arrays are ``(n, k)`` float32, or ``(F, n, k)`` for poses over frames (see
    :meth:`over_frames`); only the channels some bone's rotation mode uses are read (the
    others stay zero).
    """

    def __init__(self, pose_bones):
        n = len(pose_bones)
        self.pose_bones = pose_bones
        self.modes = np.zeros(n, dtype=np.int32)
        self.quaternion = np.zeros((n, 4), dtype=np.float32)
        self.euler = np.zeros((n, 3), dtype=np.float32)
        self.axis_angle = np.zeros((n, 4), dtype=np.float32)
        pose_bones.foreach_get("rotation_mode", self.modes)
        self.read(self.channels_read())

    def channels_read(self):
        """The channels the bones' rotation modes use (the ones :meth:`read` reads)."""
        lo, hi = int(self.modes.min(initial=0)), int(self.modes.max(initial=0))
        if lo == hi == MODE_QUATERNION:
            return {"rotation_quaternion"}
        return {channel_of(code) for code in set(self.modes.tolist())}

    def over_frames(self, count):
        """A copy whose channels repeat this snapshot over ``count`` frames (``(F, n, k)``), to
        be filled with animated values; it cannot read or write Blender."""
        out = object.__new__(PoseArrays)
        out.pose_bones, out.modes = None, self.modes
        for name in ("quaternion", "euler", "axis_angle"):
            setattr(out, name, np.repeat(getattr(self, name)[None], count, axis=0))
        return out

    def frames(self, start, stop):
        """Frames ``start`` to ``stop`` of an :meth:`over_frames` snapshot, sharing its arrays
        (writes land in it)."""
        out = object.__new__(PoseArrays)
        out.pose_bones, out.modes = None, self.modes
        for name in ("quaternion", "euler", "axis_angle"):
            setattr(out, name, getattr(self, name)[start:stop])
        return out

    def read(self, channels):
        """Read the named channels from Blender (foreach_get)."""
        for name in channels:
            self.pose_bones.foreach_get(name, getattr(self, CHANNEL_ARRAYS[name]).ravel())

    def local_quaternions(self, rows):
        """Local rotations of bones ``rows`` as quaternions ``(..., len(rows), 4)``, whatever
        their mode."""
        rows = np.asarray(rows, dtype=np.intp)
        modes = self.modes[rows]
        out = np.empty(self.quaternion.shape[:-2] + (len(rows), 4))
        sel = modes == MODE_QUATERNION
        out[..., sel, :] = self.quaternion[..., rows[sel], :]
        sel = modes == MODE_AXIS_ANGLE
        if sel.any():
            out[..., sel, :] = quaternion_from_axis_angle(self.axis_angle[..., rows[sel], :])
        for order, code in EULER_CODES.items():
            sel = modes == code
            if sel.any():
                out[..., sel, :] = quaternion_from_euler(self.euler[..., rows[sel], :], order)
        return out

    def set_local_quaternions(self, rows, q, where=None):
        """Store rotations ``q (..., len(rows), 4)`` into each bone's own channel (only where
        ``where (..., len(rows))`` is true, when given); returns the set of channel names
        changed (pass it to :meth:`write`). Euler values stay continuous with the current ones;
        quaternions keep their current sign."""
        rows = np.asarray(rows, dtype=np.intp)
        modes = self.modes[rows]
        changed = set()

        def store(channel, name, sel, new):
            r = rows[sel]
            mask = np.ones(new.shape[:-1], dtype=bool) if where is None else where[..., sel]
            if mask.any():
                channel[..., r, :] = np.where(mask[..., None], new, channel[..., r, :])
                changed.add(name)

        sel = modes == MODE_QUATERNION
        if sel.any():
            store(
                self.quaternion,
                "rotation_quaternion",
                sel,
                quaternion_toward(q[..., sel, :], self.quaternion[..., rows[sel], :].astype(float)),
            )
        sel = modes == MODE_AXIS_ANGLE
        if sel.any():
            store(self.axis_angle, "rotation_axis_angle", sel, axis_angle_from_quaternion(q[..., sel, :]))
        for order, code in EULER_CODES.items():
            sel = modes == code
            if sel.any():
                new = euler_from_quaternion(q[..., sel, :], order)
                store(
                    self.euler, "rotation_euler", sel, euler_compatible(new, self.euler[..., rows[sel], :].astype(float), order)
                )
        return changed

    def key(self, frame=...):
        """Bytes identifying this snapshot (rotation modes and every channel's values), or
        frame ``frame`` of an :meth:`over_frames` one."""
        return b"".join(
            (
                self.modes.tobytes(),
                self.quaternion[frame].tobytes(),
                self.euler[frame].tobytes(),
                self.axis_angle[frame].tobytes(),
            )
        )

    def values(self, channels, frame=...):
        """Copies of the named channels' arrays ``{channel: array}`` (of frame ``frame`` of an
        :meth:`over_frames` snapshot)."""
        return {name: getattr(self, CHANNEL_ARRAYS[name])[frame].copy() for name in channels}

    def write(self, channels):
        """Write the named channels back to Blender (foreach_set)."""
        self.write_values(self.values(channels))

    def write_values(self, values):
        """Write ``{channel: array}`` to Blender (foreach_set)."""
        for name, array in values.items():
            self.pose_bones.foreach_set(name, array.ravel())


def local_quaternion(pose_bone):
    """One pose bone's local rotation as a numpy quaternion (slow path, for UI)."""
    return np.array(pose_bone.matrix_basis.to_quaternion(), dtype=float)
