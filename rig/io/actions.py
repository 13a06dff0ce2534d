# SPDX-License-Identifier: GPL-3.0-or-later
"""Reading bone rotations out of actions and writing new actions, for Blender 4.2-5.x.

Blender 4.4 introduced slotted (layered) actions and 5.0 removed ``Action.fcurves``; both
layouts are handled here so the rest of the add-on only sees F-curves.
"""

import bpy
import numpy as np

from ...limits.geometry.quaternion import (
    axis_angle_from_quaternion,
    euler_from_quaternion,
    quaternion_from_axis_angle,
    quaternion_from_euler,
    quaternion_normalize,
    quaternion_unroll,
)

ROTATION_CHANNELS = (("rotation_quaternion", 4), ("rotation_euler", 3), ("rotation_axis_angle", 4))


def is_slotted(action):
    return hasattr(action, "slots") and hasattr(action, "layers")


def action_slot_for(obj, action):
    """The slot of ``action`` that animates ``obj`` (its assigned slot, else the first object slot)."""
    anim = obj.animation_data
    if anim is not None and anim.action == action and getattr(anim, "action_slot", None) is not None:
        return anim.action_slot
    for slot in action.slots:
        if slot.target_id_type in {"OBJECT", "UNSPECIFIED"}:
            return slot
    return None


def action_fcurves(obj, action):
    """The F-curves of ``action`` that apply to ``obj`` (empty list when there are none)."""
    if not is_slotted(action):
        return list(action.fcurves)
    slot = action_slot_for(obj, action)
    if slot is None:
        return []
    curves = []
    for layer in action.layers:
        for strip in layer.strips:
            bag = strip.channelbag(slot) if hasattr(strip, "channelbag") else None
            if bag is not None:
                curves.extend(bag.fcurves)
    if not curves and hasattr(action, "fcurves"):  # 4.4: legacy API still present
        try:
            curves = list(action.fcurves)
        except (AttributeError, RuntimeError):
            pass
    return curves


def bone_rotation_curves(obj, action):
    """``{bone_name: {channel: {index: fcurve}}}`` for the rotation channels in ``action``."""
    out = {}
    for fc in action_fcurves(obj, action):
        path = fc.data_path
        if not path.startswith('pose.bones["'):
            continue
        name, _, prop = path[len('pose.bones["') :].partition('"].')
        name = bpy.utils.unescape_identifier(name)
        if prop in {"rotation_quaternion", "rotation_euler", "rotation_axis_angle"}:
            out.setdefault(name, {}).setdefault(prop, {})[fc.array_index] = fc
    return out


def curve_values(fc, frames):
    """Values of ``fc`` at ``frames``: keyframe arrays when keys sit exactly on the frames
    (the fast path), else ``fcurve.evaluate``."""
    n = len(fc.keyframe_points)
    if n == len(frames) and n:
        co = np.empty(2 * n, dtype=np.float32)
        fc.keyframe_points.foreach_get("co", co)
        if np.array_equal(co[0::2], frames.astype(np.float32)):
            return co[1::2].astype(float)
    return np.fromiter((fc.evaluate(float(f)) for f in frames), dtype=float, count=len(frames))


def keyed_rotations(obj, action, bone_names, frames):
    """Local rotations ``(F, n, 4)`` of ``bone_names`` at ``frames`` read from ``action``.

    Returns ``(rotations, keyed)`` where ``keyed (n,)`` says which bones have rotation keys;
    unkeyed bones get NaN rows. The channel matching the bone's rotation mode is preferred;
    missing components of a channel take the bone's current value.
    """
    frames = np.asarray(frames, dtype=float)
    curves = bone_rotation_curves(obj, action)
    out = np.full((len(frames), len(bone_names), 4), np.nan)
    keyed = np.zeros(len(bone_names), dtype=bool)
    for b, name in enumerate(bone_names):
        channels = curves.get(name)
        pb = obj.pose.bones.get(name)
        if not channels or pb is None:
            continue
        mode = pb.rotation_mode
        own = {"QUATERNION": "rotation_quaternion", "AXIS_ANGLE": "rotation_axis_angle"}.get(mode, "rotation_euler")
        channel = own if own in channels else next(c for c, _ in ROTATION_CHANNELS if c in channels)
        size = dict(ROTATION_CHANNELS)[channel]
        current = np.array(getattr(pb, channel)[:], dtype=float)
        values = np.repeat(current[None, :], len(frames), axis=0)
        for index, fc in channels[channel].items():
            if index < size:
                values[:, index] = curve_values(fc, frames)
        if channel == "rotation_quaternion":
            q = quaternion_normalize(values)
        elif channel == "rotation_axis_angle":
            q = quaternion_from_axis_angle(values)
        else:
            q = quaternion_from_euler(values, mode if mode not in {"QUATERNION", "AXIS_ANGLE"} else "XYZ")
        out[:, b] = q
        keyed[b] = True
    return out, keyed


def action_frames(action, start=None, end=None):
    """Integer frames from ``start`` to ``end`` (defaults: the action's own frame range)."""
    lo, hi = action.frame_range
    start = int(round(lo)) if start is None else int(start)
    end = int(round(hi)) if end is None else int(end)
    if end < start:
        raise ValueError(f"frame range is empty: {start}..{end}")
    return np.arange(start, end + 1)


def new_action(obj, name):
    """A new empty action assigned nowhere, with a slot for ``obj`` where slots exist.
    Returns ``(action, channel_container)`` where the container has ``fcurves.new``."""
    action = bpy.data.actions.new(name)
    return action, channels_of(obj, action)


def channels_of(obj, action):
    """The container of ``action``'s F-curves for ``obj`` (its channelbag where actions have
    slots, created if missing; else the action), with ``fcurves.new`` and ``fcurves.remove``."""
    if not is_slotted(action) or not hasattr(action.slots, "new"):
        return action
    slot = action_slot_for(obj, action)
    if slot is None:
        slot = action.slots.new(id_type="OBJECT", name=obj.name)
    if not len(action.layers):
        action.layers.new("Layer")
    layer = action.layers[0]
    strip = layer.strips[0] if len(layer.strips) else layer.strips.new(type="KEYFRAME")
    return strip.channelbag(slot, ensure=True)


def assign_action(obj, action):
    """Make ``action`` the active action of ``obj`` (and its slot, where slots exist)."""
    if obj.animation_data is None:
        obj.animation_data_create()
    obj.animation_data.action = action
    if is_slotted(action) and getattr(obj.animation_data, "action_slot", None) is None and len(action.slots):
        obj.animation_data.action_slot = action.slots[0]


#: Blender's keyframe interpolation enum as stored (``foreach_set`` takes the numbers).
INTERPOLATION = {"CONSTANT": 0, "LINEAR": 1, "BEZIER": 2}


def write_curve(container, data_path, index, frames, values, group=None, interpolation="LINEAR"):
    """One F-curve with a key on every frame (``frames (F,)``, ``values (F,)``), linear or as
    ``interpolation`` says."""
    try:
        fc = container.fcurves.new(data_path, index=index, group_name=group or "")
    except TypeError:  # Blender 4.2-4.4 legacy Action.fcurves
        fc = container.fcurves.new(data_path, index=index, action_group=group or "")
    n = len(frames)
    fc.keyframe_points.add(n)
    co = np.empty(2 * n, dtype=np.float32)
    co[0::2] = frames
    co[1::2] = values
    fc.keyframe_points.foreach_set("co", co)
    fc.keyframe_points.foreach_set("interpolation", np.full(n, INTERPOLATION[interpolation], dtype=np.int32))
    fc.update()
    return fc


def write_bone_transform(container, pose_bone, frames, loc, rot, scale):
    """Key ``pose_bone``'s location ``(F, 3)``, rotation ``(F, 4)`` quaternions (in the bone's
    own rotation mode, continuous in time) and scale ``(F, 3)`` on every one of ``frames``."""
    path = bone_path(pose_bone.name)
    channel, values = rotation_channel_values(pose_bone.rotation_mode, rot)
    for i in range(3):
        write_curve(container, f"{path}.location", i, frames, loc[:, i], pose_bone.name)
    for i in range(values.shape[1]):
        write_curve(container, f"{path}.{channel}", i, frames, values[:, i], pose_bone.name)
    for i in range(3):
        write_curve(container, f"{path}.scale", i, frames, scale[:, i], pose_bone.name)


def bone_path(name):
    """RNA path prefix of a pose bone, with Blender's escaping (names may hold quotes)."""
    return f'pose.bones["{bpy.utils.escape_identifier(name)}"]'


def rotation_channel_values(mode, q):
    """``(channel, values (F, k))`` that key rotations ``q (F, 4)`` in rotation ``mode``,
    continuous in time (unrolled quaternions, unwrapped Euler angles)."""
    q = quaternion_unroll(q)
    if mode == "QUATERNION":
        return "rotation_quaternion", q
    if mode == "AXIS_ANGLE":
        return "rotation_axis_angle", axis_angle_from_quaternion(q)
    return "rotation_euler", np.unwrap(euler_from_quaternion(q, mode), axis=0)
