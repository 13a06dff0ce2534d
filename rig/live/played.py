# SPDX-License-Identifier: GPL-3.0-or-later
"""Played corrections: a rig's correctives over one whole play of the scene's frame range, kept as
animation data that Blender evaluates in its own first pass.

Correcting a constraint-driven rig costs whole-rig evaluations on every frame (one per level of
:mod:`.corrective`, one for a held IK's start, Blender's second pass after the handler). So while
frames are played with nothing edited, each integer frame's correctives (the three angles and
the influence of every ``Joint Limit`` constraint) are recorded after the handler set them; once
every frame of the range is recorded they are written, one constant key a frame, to an action of
their own that an NLA track named ``Joint Limits`` plays on the rig. Its channels are only the
correctives', which the user's action never keys, so the user's action and NLA play as before.
From then on, on a recorded frame, Blender's first pass already gives the limited pose and the
frame handler leaves the rig's correctives alone (the basis path still runs: it is a lookup).

Anything the user does shows as a depsgraph update (Blender sends none for a frame change, even
after the frame handler wrote): any update outside the handlers mutes the track and forgets the
recording, and the handler corrects frame by frame again until the next complete play. Between
recorded frames (a subframe) and outside the range the track keys nothing the handler cannot
override (constant keys, no extrapolation), and the handler corrects as usual: it recovers a
bone's uncorrected rotation from whatever correction was evaluated (:func:`.corrective.correct`).
The track is muted before a save and while bake or report evaluate the unlimited pose, and it
is removed with its action when enforcement is switched off.
"""

import bpy

from ..io.actions import new_action, write_curve
from . import corrective, state

#: The NLA track (and the prefix of its action's name) on a rig that plays its corrections.
TRACK = "Joint Limits"
#: The corrective's channels kept per frame: its constant rotation and its influence.
CHANNELS = ("to_min_x_rot", "to_min_y_rot", "to_min_z_rot", "influence")


class Recording:
    """One rig's correctives over the frames played since the last edit: ``frames`` maps an
    integer frame to each corrective's :data:`CHANNELS` values; ``trusted`` once the track
    plays them."""

    def __init__(self, obj, names, span):
        self.names = names
        self.constraints = [obj.pose.bones[n].constraints[corrective.CORRECTIVE] for n in names]
        self.span = span
        self.frames = {}
        self.trusted = False


def span_of(scene):
    """The frames a play goes through: the preview range when it is on, else the scene's."""
    if scene.use_preview_range:
        return scene.frame_preview_start, scene.frame_preview_end
    return scene.frame_start, scene.frame_end


def plays(obj, scene):
    """Whether the rig's track already plays its corrections on the scene's current frame."""
    recording = state.played.get(obj.as_pointer())
    return (
        recording is not None
        and recording.trusted
        and scene.frame_subframe == 0.0
        and scene.frame_current in recording.frames
        and recording.span == span_of(scene)
    )


def corrected_names(obj, rig):
    """The bones whose correctives enforcement sets on ``rig`` (corrected bones, held chains)."""
    names = set(rig.corrected.names.values()) if rig.corrected is not None else set()
    names.update(n for chain in rig.chains for n in chain.names)
    return tuple(sorted(n for n in names if corrective.CORRECTIVE in obj.pose.bones[n].constraints))


def record(obj, rig, scene):
    """Remember the correctives of ``obj`` on the scene's current frame (after the handler set
    them); when the range is complete, make the track that plays them."""
    if scene.frame_subframe != 0.0 or not (rig.chains or rig.corrected is not None):
        return
    span = span_of(scene)
    frame = scene.frame_current
    if not span[0] <= frame <= span[1]:
        return
    key = obj.as_pointer()
    recording = state.played.get(key)
    if recording is None or recording.span != span or recording.trusted:
        if recording is not None and recording.trusted:
            return  # (a frame of the span the track does not play: the track is current)
        recording = state.played[key] = Recording(obj, corrected_names(obj, rig), span)
    recording.frames[frame] = [
        (c.to_min_x_rot, c.to_min_y_rot, c.to_min_z_rot, 0.0 if c.mute else c.influence) for c in recording.constraints
    ]
    if len(recording.frames) == span[1] - span[0] + 1:
        recording.trusted = _make_track(obj, recording)


def _make_track(obj, recording):
    """Write the recording to a new action played by the rig's track (the old one removed);
    returns whether the track plays it."""
    anim = obj.animation_data
    if anim is None or anim.use_tweak_mode:
        return False  # (an NLA strip being edited: leave the stack alone)
    remove(obj)
    frames = sorted(recording.frames)
    values = [recording.frames[f] for f in frames]
    action, container = new_action(obj, f"{TRACK}: {obj.name}")
    for i, (name, con) in enumerate(zip(recording.names, recording.constraints)):
        column = [v[i] for v in values]
        if all(c[3] == 0.0 for c in column):
            continue  # never on: nothing to play
        path = f"{con.path_from_id()}."
        for j, channel in enumerate(CHANNELS):
            write_curve(container, path + channel, 0, frames, [c[j] for c in column], group=name, interpolation="CONSTANT")
    track = anim.nla_tracks.new()
    track.name = TRACK
    strip = track.strips.new(TRACK, int(frames[0]), action)
    strip.extrapolation = "NOTHING"
    track.lock = True
    return True


def _track(obj):
    anim = obj.animation_data
    return anim.nla_tracks.get(TRACK) if anim is not None else None


def forget(obj):
    """Mute the track of ``obj`` and forget its recording (edited, recompiled, paused, saved)."""
    state.played.pop(obj.as_pointer(), None)
    track = _track(obj)
    if track is not None and not track.mute:
        track.mute = True


def forget_all():
    """:func:`forget` every rig a recording or a playing track is known of."""
    if not state.played:
        return
    pointers = set(state.played)
    state.played.clear()
    for obj in bpy.data.objects:
        if obj.as_pointer() in pointers:
            forget(obj)


def remove(obj):
    """Remove the track of ``obj`` and its action (enforcement off, a new recording)."""
    track = _track(obj)
    if track is None:
        return
    actions = {strip.action for strip in track.strips if strip.action is not None}
    obj.animation_data.nla_tracks.remove(track)
    for action in actions:
        if action.name.startswith(TRACK) and action.users == 0:
            bpy.data.actions.remove(action)
