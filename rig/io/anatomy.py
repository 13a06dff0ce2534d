# SPDX-License-Identifier: GPL-3.0-or-later
"""A humanoid rig's anatomy as the human envelope reads it: which bone is which joint, the
neutral posture its frames rest on (the rest pose, or a frame of its action when the rest pose is
not a standing one), which way its elbows and knees bend, and what was assumed, in words.

:func:`rig_anatomy` is what the human preset and a reach cone's fit read
(:mod:`...limits.body.retarget`, :mod:`...limits.body.neutral`, :mod:`...limits.body.envelope`).
"""

from dataclasses import dataclass, field

import numpy as np

from ...limits.body import envelope
from ...limits.body.bone_names import match_joints
from ...limits.body.neutral import motion_frames
from ...limits.body.preset import bone_samples, is_humanoid, load_preset
from ...limits.body.retarget import RigFrames
from .actions import action_frames, keyed_rotations
from .skeleton_io import skeleton_from_armature

#: At most this many frames of the rig's action are read for its neutral posture and its hinges.
MOTION_FRAMES = 2000


@dataclass
class RigAnatomy:
    """``frames`` (:class:`...limits.body.retarget.RigFrames`), ``unmatched`` ``{bone: why}``,
    ``rest_is_neutral`` and ``assumed``: what the frames rest on, in words."""

    frames: RigFrames
    unmatched: dict
    rest_is_neutral: bool
    assumed: list = field(default_factory=list)

    def joint_of(self, name):
        """The anatomical joint bone ``name`` moves, or None."""
        match = self.frames.matches.get(name)
        return None if match is None else match.joint

    @property
    def humanoid(self):
        """Whether the rig is a humanoid (:func:`...limits.body.preset.is_humanoid`)."""
        return is_humanoid(self.frames.matches)

    def human_samples(self, name):
        """``(joint, basis rotations (N, 4))``: the human preset's rotations of bone ``name``'s
        joint (the envelope joined with what real motion showed) in its own axes, or None when
        the rig is no humanoid or the bone no joint of it."""
        joint = self.joint_of(name)
        if joint is None or not self.humanoid:
            return None
        q = bone_samples(self.frames, name, load_preset("human"), self.rest_is_neutral)
        return None if q is None else (joint, q)

    def cone_frames(self, name):
        """``(frame_left, frame_right)`` of a reach cone on bone ``name``'s basis rotations in its
        joint's envelope terms (:func:`...limits.body.envelope.cone_frames`), or None for a bone
        that is no joint the envelope knows."""
        joint = self.joint_of(name)
        if joint is None or envelope.base_of(joint) not in envelope.RANGES:
            return None
        return envelope.cone_frames(joint, *self.frames.frames_of(name))


def action_motion(obj, skeleton):
    """``(local rotations (F, n, 4), action name, frames (F,))`` of every bone through the rig's
    action (at most :data:`MOTION_FRAMES` frames; unkeyed bones at rest); Nones without an
    action."""
    data = obj.animation_data
    action = data.action if data is not None else None
    if action is None:
        return None, None, None
    frames = action_frames(action)
    frames = frames[:: max(1, -(-len(frames) // MOTION_FRAMES))]
    q, _ = keyed_rotations(obj, action, skeleton.names, frames)
    bad = ~np.all(np.isfinite(q), axis=-1)
    q[bad] = (1.0, 0.0, 0.0, 0.0)
    return q, action.name, frames


def rig_anatomy(obj):
    """The :class:`RigAnatomy` of armature object ``obj`` (its action, if any, read for a
    neutral posture and the hinges)."""
    skeleton = skeleton_from_armature(obj)
    matches, unmatched = match_joints(skeleton.names, skeleton.parents)
    motion, action, numbers = action_motion(obj, skeleton)
    frames, rest_is_neutral, assumed = motion_frames(
        skeleton, matches, motion, source=f"the action {action!r}", frame_numbers=numbers
    )
    return RigAnatomy(frames, unmatched, rest_is_neutral, assumed)
