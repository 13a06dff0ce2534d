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

Joining rigs (Ctrl+J) moves bones, with their keys, into another rig and deletes theirs: their
entries are then in a store nobody uses. Lookups fall back to such orphaned stores, and before
a save (which drops orphans) the entries are adopted into the rig's own store. A cleared entry
leaves a marker, so an orphan never brings back what was cleared.
"""

import uuid

import bpy
from bpy.app.handlers import persistent

from .app_handlers import install, uninstall

FIELDS = ("limit", "cloud")
NAME_PREFIX = ".JointLimits "  # names starting with "." are hidden from ID search lists
EXPLANATION = (
    "Joint Limits keeps the rotation clouds and fitted limits of this armature's bones in this\n"
    "text block's custom properties. Do not edit or delete it: use the Joint Limits panels.\n"
)


def _entry(key, field):
    return f"{key}/{field}"


def _cleared(entry):
    return entry + "!"


def _holder(obj, key, field):
    """The store holding the bone's ``field``: the rig's own, else an orphaned store (the rig
    the bone was joined from), else None."""
    entry = _entry(key, field)
    own = obj.joint_limits_data
    if own is not None and (entry in own or _cleared(entry) in own):
        return own if entry in own else None
    for text in bpy.data.texts:
        if text.users == 0 and text.name.startswith(NAME_PREFIX) and entry in text:
            return text
    return None


def get(settings, field):
    """The stored text of ``field`` for the bone owning ``settings`` ("" when there is none)."""
    key = settings.data_key
    text = _holder(settings.id_data, key, field) if key else None
    value = text.get(_entry(key, field), "") if text is not None else ""
    return value if isinstance(value, str) else ""


def has(settings, field):
    """Whether the bone has ``field`` (without copying the text out: it can be megabytes;
    :func:`put` deletes emptied entries)."""
    return bool(settings.data_key) and _holder(settings.id_data, settings.data_key, field) is not None


def put(settings, field, value):
    """Store ``value`` as the bone's ``field``, copying shared stores and keys first."""
    if field not in FIELDS:
        raise KeyError(field)
    obj = settings.id_data
    text = _own_text(obj, create=bool(value))
    if text is None:
        return
    key = _own_key(obj, settings, text)
    _adopt(obj, text, key)
    entry = _entry(key, field)
    if value:
        text[entry] = value
        if _cleared(entry) in text:
            del text[_cleared(entry)]
    else:
        if entry in text:
            del text[entry]
        text[_cleared(entry)] = 1
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
        # the copy's bones own exactly what it holds now: should the other rig be deleted, its
        # store (orphaned, with the same keys) must not lend them what it gains later
        keys = {name.split("/")[0] for name in text.keys() if "/" in name}
        for key in keys:
            for field in FIELDS:
                if _entry(key, field) not in text:
                    text[_cleared(_entry(key, field))] = 1
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
        holder = _holder(obj, key, field) if key else None
        if holder is not None:
            text[_entry(new, field)] = holder[_entry(key, field)]
    settings.data_key = new
    return new


def _adopt(obj, text, key):
    """Copy the bone's entries that only an orphaned store holds into ``text`` (its own)."""
    for field in FIELDS:
        holder = _holder(obj, key, field)
        if holder is not None and holder != text:
            text[_entry(key, field)] = holder[_entry(key, field)]


def adopt_all():
    """Move every joined bone's entries into its rig's own store (before orphans are dropped)."""
    for obj in bpy.data.objects:
        if obj.type != "ARMATURE" or obj.pose is None or obj.library is not None:
            continue
        for pose_bone in obj.pose.bones:
            settings = pose_bone.joint_limit
            key = settings.data_key
            if key and any(_holder(obj, key, f) not in (None, obj.joint_limits_data) for f in FIELDS):
                text = _own_text(obj, create=True)
                _adopt(obj, text, _own_key(obj, settings, text))


@persistent
def on_save_pre(*_args):
    try:
        adopt_all()
    except Exception as err:  # noqa: BLE001 - never raise into Blender
        print(f"Joint Limits: could not keep the data of joined bones ({err})")


HANDLERS = ((bpy.app.handlers.save_pre, on_save_pre),)


def register():
    bpy.types.Object.joint_limits_data = bpy.props.PointerProperty(
        type=bpy.types.Text, name="Joint Limits Data", description="Text block holding this rig's rotation clouds and fitted limits", options={"HIDDEN"}
    )
    install(HANDLERS, __name__)


def unregister():
    uninstall(HANDLERS, __name__)
    del bpy.types.Object.joint_limits_data
