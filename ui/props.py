# SPDX-License-Identifier: GPL-3.0-or-later
"""Settings saved in the .blend: ``PoseBone.joint_limit`` (one per bone, like a constraint) and
``Scene.joint_limits`` (live enforcement and display).

A bone's settings are stored on its ``Bone`` (the armature data) and reached from the pose bone
through ``PoseBone.joint_limit``: whatever custom properties a pose bone carries, Blender copies
on every re-evaluation of the pose, and live enforcement re-evaluates it on every frame it
limits, so settings on the pose bones would slow every limited frame. Like the rest of the armature
data, the settings (and the armature's data store, :mod:`..rig.io.datastore`) are shared by rigs that
share their armature (Alt+D) and copied with it (Shift+D)."""

import uuid

import bpy
from bpy.props import BoolProperty, EnumProperty, FloatProperty, IntProperty, PointerProperty, StringProperty

from ..limits.registry import model_kinds
from ..rig import live
from ..rig.io import datastore
from ..rig.live import pause

MODEL_ITEMS = model_kinds()


def _owner_pose_bone(settings, context=None):
    """``(rig, pose bone)`` whose bone owns ``settings``: the active object when it uses the
    settings' armature, else the first rig that does."""
    armature = settings.id_data
    pointer = settings.as_pointer()
    bone = next(b for b in armature.bones if b.joint_limit.as_pointer() == pointer)
    active = getattr(context, "object", None)
    if active is None or active.data != armature:
        active = next(o for o in bpy.data.objects if o.data == armature and o.pose is not None)
    return active, active.pose.bones[bone.name]


def _pose_bone_settings(pose_bone):
    """``PoseBone.joint_limit``: the settings of the pose bone's bone."""
    return pose_bone.bone.joint_limit


def _refit(settings, context):
    """A fitting setting changed: refit from the stored cloud so the limit follows the UI."""
    live.invalidate()
    if not settings.has_cloud or not settings.has_limit:
        return
    from ..rig.tasks.fit import fit_pose_bone

    try:
        obj, pose_bone = _owner_pose_bone(settings, context)
        fit_pose_bone(obj, pose_bone)
        settings.last_error = ""
    except Exception as err:  # noqa: BLE001 - never raise out of an update callback
        settings.last_error = str(err)


def _changed(settings, context):
    live.invalidate()


def _stored(field):
    """``get``/``set`` for a field kept in the armature's data store (:mod:`..rig.io.datastore`), so
    scripts read and write ``joint_limit.limit_data`` as if it were on the bone."""

    def get(settings):
        return datastore.get(settings, field)

    def set(settings, value):
        datastore.put(settings, field, value)
        if field in datastore.TOKENS:  # a new token tells caches the data changed (undo restores both)
            setattr(settings, datastore.TOKENS[field], uuid.uuid4().hex if value else "")

    return {"get": get, "set": set}


class JointLimitSettings(bpy.types.PropertyGroup):
    """A bone's joint limit: like a constraint, with the fitted shape and its data (stored on the
    ``Bone``, used as ``PoseBone.joint_limit``)."""

    enabled: BoolProperty(name="Enabled", description="Enforce this bone's limit", default=True, update=_changed)
    model: EnumProperty(
        name="Model", description="Shape of the allowed rotation region", items=MODEL_ITEMS, default="auto", update=_refit
    )
    mode: EnumProperty(
        name="Space",
        description="Fit one shape to the whole rotation, or separate shapes to swing and twist",
        items=(
            ("FULL", "Full Rotation", "One shape over the scaled angle-axis of the whole rotation"),
            ("SWING_TWIST", "Swing-Twist", "Separate shapes for where the bone points and its twist"),
        ),
        default="FULL",
        update=_refit,
    )
    influence: FloatProperty(
        name="Influence",
        description="How much of the correction to apply",
        default=1.0,
        min=0.0,
        max=1.0,
        subtype="FACTOR",
        update=_changed,
    )
    padding: FloatProperty(
        name="Padding",
        description="Grow the fitted shape by this angle",
        default=0.05,
        min=0.0,
        max=1.0,
        subtype="ANGLE",
        update=_refit,
    )
    calibrate_padding: BoolProperty(
        name="Calibrate Padding",
        description="Choose the padding by cross-validation over the sampled clips so that held-out motion meets the "
        "target recall (Auto always does)",
        default=False,
        update=_refit,
    )
    target_recall: FloatProperty(
        name="Target Recall",
        description="Share of held-out motion (clips left out of the fit) the limit must accept, per held-out clip",
        default=0.99,
        min=0.5,
        max=1.0,
        subtype="FACTOR",
        update=_refit,
    )
    human_envelope: BoolProperty(
        name="Human Envelope",
        description="On a humanoid rig's joint, Auto fits this bone's samples joined with the human envelope (the "
        "published ranges of motion, as a reach cone in the joint's anatomical frame), so that a few clips of one "
        "style do not reject the next. Off: Auto chooses a model for the samples alone",
        default=True,
        update=_refit,
    )
    use_symmetry: BoolProperty(
        name="Learn From Both Sides",
        description="Fit from this bone's samples and from its mirror bone's (left/right, found by name and checked on "
        "the rest pose) seen in the mirror; a bone on the symmetry plane (spine, neck) also learns from its own "
        "samples mirrored. Off: each side is fitted from its own samples only",
        default=True,
        update=_refit,
    )
    fit_report: StringProperty(
        name="Fit Report",
        description="Cross-validated recall and volume of every model tried (JSON)",
        default="",
        options={"HIDDEN"},
    )
    use_softening: BoolProperty(
        name="Softening", description="Let the limit give way smoothly (tanh) instead of locking", default=False, update=_changed
    )
    soft_radius: FloatProperty(
        name="Radius", description="Most the limit gives way", default=0.1, min=0.0, max=1.0, subtype="ANGLE", update=_changed
    )
    soft_falloff: FloatProperty(
        name="Falloff", description="How quickly the give reaches its radius", default=1.0, min=0.0, max=100.0, update=_changed
    )
    reference: EnumProperty(
        name="Reference",
        description="Pose the limit is centred on",
        items=(
            ("MEAN", "Data Mean", "The mean rotation of the samples (robust for mocap rigs)"),
            ("REST", "Rest Pose", "The bone's rest orientation"),
            ("FRAME", "Frame", "The pose at a chosen frame of the active action"),
        ),
        default="MEAN",
        update=_refit,
    )
    reference_frame: IntProperty(
        name="Reference Frame", description="Frame whose pose is the reference", default=1, update=_refit
    )
    twist_axis: EnumProperty(
        name="Twist Axis",
        description="Axis the swing-twist split turns about",
        items=(
            ("BONE_Y", "Bone Y", "The bone's own length axis"),
            ("CHILDREN", "Children", "Mean direction to the child bones"),
        ),
        default="BONE_Y",
        update=_refit,
    )
    limit_data: StringProperty(
        name="Fitted Limit", description="Fitted limit parameters (JSON)", options={"HIDDEN"}, update=_changed, **_stored("limit")
    )
    cloud_data: StringProperty(
        name="Rotation Cloud", description="Sampled local rotations", options={"HIDDEN"}, **_stored("cloud")
    )
    limb_data: StringProperty(
        name="Limb Range",
        description="Range of motion of the limb this bone is the middle of (JSON; rig/tasks/limb.py)",
        options={"HIDDEN"},
        update=_changed,
        **_stored("limb"),
    )
    has_limb: BoolProperty(
        name="Limb Range", description="The bone has a fitted limb range of motion", get=lambda s: datastore.has(s, "limb")
    )
    limb_token: StringProperty(
        name="Limb Token",
        description="Changes whenever the limb range of motion does (cache key)",
        default="",
        options={"HIDDEN"},
    )
    has_limit: BoolProperty(name="Fitted", description="The bone has a fitted limit", get=lambda s: datastore.has(s, "limit"))
    has_cloud: BoolProperty(
        name="Has Samples", description="The bone has a stored rotation cloud", get=lambda s: datastore.has(s, "cloud")
    )
    data_key: StringProperty(
        name="Data Key", description="Names this bone's entries in the armature's data store", default="", options={"HIDDEN"}
    )
    limit_token: StringProperty(
        name="Limit Token", description="Changes whenever the fitted limit does (cache key)", default="", options={"HIDDEN"}
    )
    cloud_count: IntProperty(name="Samples", description="Number of sampled rotations", default=0, min=0)
    last_error: StringProperty(name="Last Error", default="", options={"HIDDEN"})
    held_ik: StringProperty(
        name="Held IK",
        description="The IK constraint of this bone that live enforcement mutes and solves within the limits (rig/live/limited_ik.py)",
        default="",
        options={"HIDDEN"},
    )
    held_ik_driver: BoolProperty(
        name="Held IK Driver",
        description="Live enforcement muted the driver of the held IK constraint's mute (a rig such as Rigify drives it), to unmute on release",
        default=False,
        options={"HIDDEN"},
    )


def _enforce_live_changed(settings):
    """Switching live enforcement off gives back the plain rigs (an update callback returns None)."""
    if not settings.enforce_live:
        pause.remove_everywhere()


class JointLimitsSceneSettings(bpy.types.PropertyGroup):
    """Scene-wide Joint Limits state."""

    enforce_live: BoolProperty(
        name="Live Enforcement",
        description="Project limited bones into their limits on every frame change and edit",
        default=False,  # compiled limits stay valid while it is off (a big rig takes seconds to compile)
        update=lambda settings, _context: _enforce_live_changed(settings),
    )
    display_scale: FloatProperty(
        name="Display Scale", description="Metres per radian for rotation-space displays", default=0.25, min=0.01, max=10.0
    )


classes = (JointLimitSettings, JointLimitsSceneSettings)


def register():
    datastore.register()
    for cls in classes:
        bpy.utils.register_class(cls)
    bpy.types.Bone.joint_limit = PointerProperty(type=JointLimitSettings)
    bpy.types.PoseBone.joint_limit = property(_pose_bone_settings, doc="The bone's joint limit settings (stored on its Bone)")
    bpy.types.Scene.joint_limits = PointerProperty(type=JointLimitsSceneSettings)


def unregister():
    del bpy.types.Scene.joint_limits
    del bpy.types.PoseBone.joint_limit
    del bpy.types.Bone.joint_limit
    for cls in reversed(classes):
        bpy.utils.unregister_class(cls)
    datastore.unregister()
