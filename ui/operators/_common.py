# SPDX-License-Identifier: GPL-3.0-or-later
"""Shared bits of the operators: polls that explain themselves, selection, progress."""

import contextlib

from bpy.props import BoolProperty, IntProperty

from ...rig.io import datastore
from ...rig.io.actions import action_frames
from ...rig.io.bone_errors import describe


def armature_in_pose_mode(cls, context, need_selection=True):
    """Poll: an armature in Pose Mode (with selected bones); sets the poll message otherwise."""
    obj = context.object
    if obj is None or obj.type != "ARMATURE":
        cls.poll_message_set("Select an armature")
        return False
    if context.mode != "POSE":
        cls.poll_message_set("Switch the armature to Pose Mode")
        return False
    if need_selection and not context.selected_pose_bones:
        cls.poll_message_set("Select one or more pose bones")
        return False
    return True


def active_bone_in_pose_mode(cls, context):
    """Poll: an armature in Pose Mode with an active pose bone."""
    if not armature_in_pose_mode(cls, context, need_selection=False):
        return False
    if context.active_pose_bone is None:
        cls.poll_message_set("Make a pose bone active")
        return False
    return True


def bone_with_limit_or_samples(cls, context):
    """Poll: Pose Mode, an active bone with a limit or samples (something to export)."""
    if not armature_in_pose_mode(cls, context, need_selection=False):
        return False
    pb = context.active_pose_bone
    if pb is None:
        cls.poll_message_set("Make a bone active")
        return False
    if not (pb.joint_limit.has_limit or pb.joint_limit.cloud_count):
        cls.poll_message_set(f"{pb.name} has no limit or samples; sample an action first")
        return False
    return True


def exported_to_rebuild(context, *, object_type, modes, noun, where, find, source, missing, foreign):
    """``(object, None)`` an export-edit-rebuild operator reads, or ``(None, why not)``: the
    active bone's exported ``object_type`` object in Pose Mode (``find(armature, bone)``), or the
    active object itself in ``modes`` when ``source(obj)`` ties it to a bone. The texts name
    the object (``noun``), the allowed modes (``where``), what the bone lacks (``missing``) and
    what a foreign object is not (``foreign``)."""
    obj = context.object
    if obj is None:
        return None, f"Select an armature in Pose Mode, or an {noun}"
    if obj.type == "ARMATURE":
        if context.mode != "POSE":
            return None, f"Switch the armature to Pose Mode, or select the {noun}"
        pb = context.active_pose_bone
        if pb is None:
            return None, "Make a bone active"
        found = find(obj, pb)
        if found is None:
            return None, f"{pb.name} has no {missing}"
        return found, None
    if obj.type != object_type or context.mode not in modes:
        return None, f"Select an armature in Pose Mode, or an {noun} in {where}"
    if source(obj) is None:
        return None, f"{obj.name} {foreign}"
    return obj, None


def armature_with_action(cls, context):
    if not armature_in_pose_mode(cls, context, need_selection=False):
        return False
    anim = context.object.animation_data
    if anim is None or anim.action is None:
        cls.poll_message_set("The armature has no action")
        return False
    return True


def selected_bones(context):
    return list(context.selected_pose_bones or ())


def selected_bones_with_samples(context):
    """The selected pose bones that have samples; ``ValueError`` (a status-bar error) when none has."""
    bones = [pb for pb in selected_bones(context) if pb.joint_limit.cloud_count]
    if not bones:
        raise ValueError("No selected bone has samples; run Sample Rotations first")
    return bones


@contextlib.contextmanager
def progress(context, total):
    """``update(i)`` callback driving the window manager's progress indicator."""
    wm = context.window_manager
    wm.progress_begin(0, max(int(total), 1))
    try:
        yield wm.progress_update
    finally:
        wm.progress_end()


def plural(n, word):
    return f"{n} {word}{'' if n == 1 else 's'}"


#: What an operator's work raises for bad input (a wrong setting, a corrupt limit, a foreign
#: file, no room): reported in the status bar, never as a traceback.
INPUT_ERRORS = (ValueError, OSError, RuntimeError, RecursionError, MemoryError)


def checked_operator(cls):
    """``cls`` (an operator class) with an ``execute`` that

    - re-links its armature's detached data store first and, after running, warns in the
      status bar when limit data is missing (:func:`...rig.io.datastore.health`);
    - reports what it raises for bad input (:data:`INPUT_ERRORS`) as one status-bar error and
      cancels, so an operator's own code raises ``ValueError`` with a sentence for the animator
      instead of catching and reporting it itself.

    One wrapper for every operator, applied where they are registered. Returns ``cls``."""
    execute = getattr(cls, "execute", None)
    if execute is None or getattr(execute, "checked", False):  # modal only, or done
        return cls

    def checked(self, context):
        obj = context.object
        armature = obj.data if obj is not None and obj.type == "ARMATURE" else None
        if armature is not None and datastore.relink(armature) is not None:
            self.report({"WARNING"}, f"Re-linked the limit data of {armature.name}: its text block had been detached")
        try:
            result = execute(self, context)
        except INPUT_ERRORS as err:
            self.report({"ERROR"}, describe(err))
            return {"CANCELLED"}
        if armature is not None and not (health := datastore.health(armature)).ok:
            self.report({"WARNING"}, health.message)
        return result

    checked.checked = True
    checked.__doc__ = execute.__doc__
    cls.execute = checked
    return cls


def report_done(operator, text, skipped, level="INFO"):
    """Report what ``operator`` did in one status-bar line that also names the bones it
    ``skipped`` (a :class:`~...rig.io.bone_errors.SkippedBones`), as a warning when there are any."""
    if skipped:
        level, text = "WARNING", f"{text}; {skipped.summary()}"
    operator.report({level}, text)


class ActionFramesMixin:
    """Operators that walk the active action's frames: optional frame range, and a poll that
    needs an armature with an action."""

    use_frame_range: BoolProperty(name="Frame Range", description="Use a frame range instead of the whole action", default=False)
    frame_start: IntProperty(name="Start", description="First frame of the range (with Frame Range)", default=1)
    frame_end: IntProperty(name="End", description="Last frame of the range (with Frame Range)", default=250)

    @classmethod
    def poll(cls, context):
        return armature_with_action(cls, context)

    def frames(self, action):
        """Frames to walk (``ValueError`` for an empty range)."""
        return action_frames(action, *((self.frame_start, self.frame_end) if self.use_frame_range else (None, None)))
