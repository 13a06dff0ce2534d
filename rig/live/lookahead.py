# SPDX-License-Identifier: GPL-3.0-or-later
"""The poses an armature's action will give, read ahead of playback.

Live enforcement limits a whole action at once with these (one batched projection per limit
group instead of one per frame), so even the first play of an action only looks its results
up. The poses are what :class:`~..io.pose_io.PoseArrays` will read at each frame: the action's
rotation curves on every integer frame, over the current values of everything not animated.
Anything else that moves the channels (NLA strips, drivers, curve modifiers on a subframe)
simply gives poses that are not found, and those are limited as they come.
"""

import numpy as np

from ..io.actions import action_frames, bone_rotation_curves, curve_values
from ..io.pose_io import CHANNEL_ARRAYS


def action_identity(obj):
    """What the look-ahead depends on: the assigned action, its slot and frame range, or ``None``."""
    animation = obj.animation_data
    action = animation.action if animation is not None else None
    if action is None:
        return None
    slot = getattr(animation, "action_slot", None)
    return (action.as_pointer(), slot.as_pointer() if slot is not None else 0, tuple(action.frame_range))


def action_poses(obj, snapshot, max_frames):
    """``(frames (F,), poses)``: ``snapshot`` (a :class:`~..io.pose_io.PoseArrays` of ``obj``) over
    the frames of its action with the animated rotation channels filled in, or ``None`` (no
    action, no rotation curves). At most ``max_frames`` frames, those nearest the current one."""
    animation = obj.animation_data
    action = animation.action if animation is not None else None
    if action is None:
        return None
    curves = bone_rotation_curves(obj, action)
    if not curves:
        return None
    frames = action_frames(action)
    if len(frames) > max_frames:
        start = np.clip(
            obj.users_scene[0].frame_current - max_frames // 2 if obj.users_scene else frames[0],
            frames[0],
            frames[-1] - max_frames + 1,
        )
        frames = np.arange(start, start + max_frames)
    read = snapshot.channels_read()  # the others stay zero in every key
    poses = snapshot.over_frames(len(frames))
    rows = {pb.name: i for i, pb in enumerate(obj.pose.bones)}
    float_frames = frames.astype(float)
    for name, channels in curves.items():
        row = rows.get(name)
        if row is None:
            continue
        for channel, components in channels.items():
            if channel not in read:
                continue
            target = getattr(poses, CHANNEL_ARRAYS[channel])
            for index, fc in components.items():
                if index < target.shape[-1] and not fc.mute:
                    target[:, row, index] = curve_values(fc, float_frames)
    return frames, poses
