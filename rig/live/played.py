# SPDX-License-Identifier: GPL-3.0-or-later
"""Played corrections: a rig's corrections over one whole play of the scene's frame range, kept so
that later plays cost about what the plain rig does.

Correcting a constraint-driven rig costs whole-rig evaluations on every frame (one per level of
:mod:`.corrective`, one for a held IK's start, Blender's second pass after the handler). So while
frames are played with nothing edited, each integer frame's correctives (the three angles and
the influence of every ``Joint Limit`` constraint) are recorded after the handler set them; once
every frame of the range is recorded they are written, one constant key a frame, to an action of
their own that an NLA track named ``Joint Limits`` plays on the rig. Its channels are only the
correctives', which the user's action never keys, so the user's action and NLA play as before.
From then on, on a recorded frame, Blender's first pass already gives the corrected pose.

The basis path's frames are kept as the values it wrote, and a recorded frame writes them back
without reading the pose first. They stay with the handler rather than going on the track: a
corrective per bone played from keys costs Blender more than the second evaluation the
handler's write causes (measured: BENCHMARKS.md, ``bench_frame_time``).

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
#: A corrective's channels kept per frame: its constant rotation (a stretch corrective's scale)
#: and its influence.
CHANNELS = ("to_min_x_rot", "to_min_y_rot", "to_min_z_rot", "influence")
STRETCH_CHANNELS = ("to_min_x_scale", "to_min_y_scale", "to_min_z_scale", "influence")


class Recording:
    """One rig's corrections over the frames played since the last edit: ``frames`` maps an
    integer frame to each corrective's :data:`CHANNELS` values, ``written`` to the basis
    values the handler wrote (``{channel: array}``, empty: none); ``trusted`` once they are
    played back, ``failed`` when they cannot be (an NLA strip in tweak mode, an error)."""

    def __init__(self, obj, names, span):
        #: ``(bone, corrective, its channels)`` of every corrective the handler sets
        self.correctives = [
            (n, con, CHANNELS if con.name == corrective.CORRECTIVE else STRETCH_CHANNELS)
            for n in names
            for con in (obj.pose.bones[n].constraints.get(c) for c in (corrective.CORRECTIVE, corrective.STRETCH))
            if con is not None and corrective.is_corrective(con)
        ]
        self.span = span
        self.frames = {}
        self.written = {}
        self.trusted = self.failed = False


def span_of(scene):
    """The frames a play goes through: the preview range when it is on, else the scene's."""
    if scene.use_preview_range:
        return scene.frame_preview_start, scene.frame_preview_end
    return scene.frame_start, scene.frame_end


def plays(obj, scene):
    """Whether the rig's corrections on the scene's current frame are played back: the track
    plays its correctives and this writes the basis values recorded for the frame."""
    recording = state.played.get(obj.as_pointer())
    if (
        recording is None
        or not recording.trusted
        or scene.frame_subframe != 0.0
        or scene.frame_current not in recording.frames
        or recording.span != span_of(scene)
    ):
        return False
    written = recording.written[scene.frame_current]
    if written:
        pose_bones = obj.pose.bones
        for name, array in written.items():
            pose_bones.foreach_set(name, array.ravel())
        obj.update_tag(refresh={"OBJECT"})
    return True


def corrected_names(obj, rig):
    """The bones whose correctives enforcement sets on ``rig`` (corrected bones, held chains)."""
    names = set(rig.corrected.names.values()) if rig.corrected is not None else set()
    names.update(n for chain in rig.chains for n in chain.names)
    return tuple(sorted(n for n in names if corrective.CORRECTIVE in obj.pose.bones[n].constraints))


def record(obj, rig, scene, written):
    """Remember the corrections of ``obj`` on the scene's current frame, after the handler made
    them (``written``: the basis values it wrote); when the range is complete, play them back."""
    if scene.frame_subframe != 0.0:
        return
    span = span_of(scene)
    frame = scene.frame_current
    if not span[0] <= frame <= span[1]:
        return
    key = obj.as_pointer()
    recording = state.played.get(key)
    if recording is not None and (recording.trusted or recording.failed) and recording.span == span:
        return  # (already played back, or it cannot be)
    if recording is None or recording.span != span:
        recording = state.played[key] = Recording(obj, corrected_names(obj, rig), span)
    recording.frames[frame] = [
        (*(getattr(c, a) for a in channels[:3]), 0.0 if c.mute else c.influence) for _, c, channels in recording.correctives
    ]
    recording.written[frame] = written
    if len(recording.frames) == span[1] - span[0] + 1:
        recording.failed = True  # (until the track is made: an error is not tried again each frame)
        try:
            recording.trusted = _make_track(obj, recording)
        except Exception as err:  # noqa: BLE001 - a linked or locked rig: frame by frame as before
            state.report_once((obj.name, None, "played"), f"{obj.name}: later plays are corrected frame by frame ({err})")
            return
        recording.failed = not recording.trusted


def _make_track(obj, recording):
    """Write the recording to a new action played by the rig's track (the old one removed);
    returns whether the track plays it."""
    if not recording.correctives:
        return True  # (the basis path alone: nothing for a track to play)
    anim = obj.animation_data
    if anim is None or anim.use_tweak_mode:
        return False  # (an NLA strip being edited: leave the stack alone)
    remove(obj)
    frames = sorted(recording.frames)
    rows = [recording.frames[f] for f in frames]
    action, container = new_action(obj, f"{TRACK}: {obj.name}")
    for i, (name, con, channels) in enumerate(recording.correctives):
        column = [row[i] for row in rows]
        if all(c[3] == 0.0 for c in column):
            continue  # never on: nothing to play
        path = f"{con.path_from_id()}."
        for j, channel in enumerate(channels):
            series = [c[j] for c in column]
            if series.count(series[0]) == len(series):
                setattr(con, channel, series[0])  # (each curve costs Blender a path lookup a frame)
            else:
                write_curve(container, path + channel, 0, frames, series, group=name, interpolation="CONSTANT")
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
