# SPDX-License-Identifier: GPL-3.0-or-later
"""Where a bone's big data lives: a hidden Text datablock per armature object.

Rotation clouds and fitted limits can be megabytes per bone (a sinus texture, an SDF grid).
Kept on the pose bone, Blender would copy them every time the pose changes: any edit of an
object's pose copies the object, its pose and every custom property on it for evaluation, so
live enforcement on a 60-bone rig with real mocap clouds would copy tens of megabytes per
frame. A Text datablock is never evaluated, so its custom properties are copied only when
saved or undone. ``Object.joint_limits_data`` points at it (the object is its only user: it is
purged with the rig) and each pose bone's ``joint_limit.data_key`` names its entries.

Like Blender's own data, a store is shared until written: a duplicated rig or bone keeps
pointing at the same entries, and the first write makes it its own copy.
"""

import uuid

import bpy

FIELDS = ("limit", "cloud")
NAME_PREFIX = ".JointLimits "  # names starting with "." are hidden from ID search lists
EXPLANATION = (
    "Joint Limits keeps the rotation clouds and fitted limits of this armature's bones in this\n"
    "text block's custom properties. Do not edit or delete it: use the Joint Limits panels.\n"
)


def _entry(key, field):
    return f"{key}/{field}"


def get(settings, field):
    """The stored text of ``field`` for the bone owning ``settings`` ("" when there is none)."""
    text = settings.id_data.joint_limits_data
    key = settings.data_key
    if text is None or not key:
        return ""
    value = text.get(_entry(key, field), "")
    return value if isinstance(value, str) else ""


def has(settings, field):
    """Whether the bone has ``field`` (without copying the text out: it can be megabytes;
    :func:`put` deletes emptied entries)."""
    text = settings.id_data.joint_limits_data
    return bool(text is not None and settings.data_key and _entry(settings.data_key, field) in text)


def put(settings, field, value):
    """Store ``value`` as the bone's ``field``, copying shared stores and keys first."""
    if field not in FIELDS:
        raise KeyError(field)
    obj = settings.id_data
    text = _own_text(obj, create=bool(value))
    if text is None:
        return
    key = _own_key(obj, settings, text)
    if value:
        text[_entry(key, field)] = value
    elif _entry(key, field) in text:
        del text[_entry(key, field)]
    # custom-property writes tag nothing; untagged, an undo across steps that hold no file
    # state (Texture Paint's image steps) would keep this edit instead of restoring the store
    text.update_tag()


def _own_text(obj, create):
    text = obj.joint_limits_data
    if text is None:
        if not create:
            return None
        text = bpy.data.texts.new(NAME_PREFIX + obj.name)
        text.write(EXPLANATION)
    elif text.users > 1:  # shared with a duplicated rig: write to a copy
        text = text.copy()
    else:
        if text.name != NAME_PREFIX + obj.name:  # follow a renamed rig (names are for people)
            text.name = NAME_PREFIX + obj.name
        return text
    text.user_clear()  # the object's pointer is its only user, so it goes with the rig
    text.name = NAME_PREFIX + obj.name
    obj.joint_limits_data = text
    return text


def _own_key(obj, settings, text):
    """The bone's key, made unique: a bone duplicated in Edit Mode carries its source's key."""
    key = settings.data_key
    pointer = settings.as_pointer()
    shared = key and any(pb.joint_limit.data_key == key and pb.joint_limit.as_pointer() != pointer for pb in obj.pose.bones)
    if key and not shared:
        return key
    new = uuid.uuid4().hex[:16]
    for field in FIELDS:
        if key and _entry(key, field) in text:
            text[_entry(new, field)] = text[_entry(key, field)]
    settings.data_key = new
    return new


def register():
    bpy.types.Object.joint_limits_data = bpy.props.PointerProperty(
        type=bpy.types.Text, name="Joint Limits Data", description="Text block holding this rig's rotation clouds and fitted limits", options={"HIDDEN"}
    )


def unregister():
    del bpy.types.Object.joint_limits_data
