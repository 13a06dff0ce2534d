# SPDX-License-Identifier: GPL-3.0-or-later
"""Where a bone's big data lives: a hidden Text datablock per armature.

Rotation clouds and fitted limits can be megabytes per bone (a sinus texture, an SDF grid).
Kept on the bone, Blender would copy them whenever the bone's data is: a pose bone's custom
properties on every re-evaluation of the pose (every frame live enforcement limits), a bone's
with every edit of the armature. A Text datablock is never evaluated, so its custom properties
are copied only when saved or undone. ``Armature.joint_limits_data`` points at it (the armature
is its only user: it goes with the armature) and each bone's ``joint_limit.data_key`` names its
entries. Rigs that share an armature (Alt+D) share its store, as they share its bones.

Like Blender's own data, a store is shared until written: a duplicated armature (Shift+D) or
bone keeps pointing at the same entries, and the first write makes it its own copy.

Joining rigs (Ctrl+J) moves bones, with their keys, into another armature and leaves theirs
unused: their entries are then in a store no rig uses. Lookups fall back to such orphaned
stores, and before a save (which drops unused armatures) the entries are adopted into the
armature's own store and the orphaned stores let go, so they are dropped too. A cleared entry
leaves a marker, so an orphan never brings back what was cleared.

The store is the only copy of the user's fitted work, and Blender lets it go: the Outliner's
Blender File view or ``bpy.data.texts.remove`` deletes it, a script can point the armature at
another text. No flag prevents an explicit delete, and a fake user would keep it after its
armature is deleted, so instead the loss is noticed: each bone's settings say what it has
(``cloud_count``, ``limit_token``), :func:`health` lists the bones whose store does not hold
that, and panels, operators and the CLI say so. A store that was only detached (the pointer
cleared or changed; it stays in memory, unused, until the file is saved) is re-linked by
:func:`relink`, which operators, the CLI and every save and load run first.
"""

import uuid
from typing import NamedTuple

import bpy
from bpy.app.handlers import persistent

from .app_handlers import install, uninstall

#: The setting that names each stored field's current version: a new token on every write tells
#: caches the entry changed (undo restores text and token together).
TOKENS = {"limit": "limit_token", "limb": "limb_token"}

FIELDS = ("limit", "cloud", "limb")
NAME_PREFIX = ".JointLimits "  # names starting with "." are hidden from ID search lists
EXPLANATION = (
    "Joint Limits keeps the rotation clouds and fitted limits of this armature's bones in this\n"
    "text block's custom properties. Do not edit or delete it: use the Joint Limits panels.\n"
)


def _entry(key, field):
    return f"{key}/{field}"


def _cleared(entry):
    return entry + "!"


def _orphaned(text):
    """No armature in use points at the store ``text``."""
    return not any(a.users > 0 and a.joint_limits_data == text for a in bpy.data.armatures)


def _holder(armature, key, field):
    """The store holding the bone's ``field``: the armature's own, else an orphaned store (the
    armature the bone was joined from), else None."""
    entry = _entry(key, field)
    own = armature.joint_limits_data
    if own is not None and (entry in own or _cleared(entry) in own):
        return own if entry in own else None
    for text in bpy.data.texts:
        if text.name.startswith(NAME_PREFIX) and text != own and entry in text and _orphaned(text):
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
    armature = settings.id_data
    text = _own_text(armature, create=bool(value))
    if text is None:
        return
    key = _own_key(armature, settings, text)
    _adopt(armature, text, key)
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


def _own_text(armature, create):
    text = armature.joint_limits_data
    if text is None:
        if not create:
            return None
        text = bpy.data.texts.new(NAME_PREFIX + armature.name)
        text.write(EXPLANATION)
    elif text.users > 1:  # shared with a duplicated armature: write to a copy
        text = text.copy()
        # the copy's bones own exactly what it holds now: should the other rig be deleted, its
        # store (orphaned, with the same keys) must not lend them what it gains later
        keys = {name.split("/")[0] for name in text.keys() if "/" in name}
        for key in keys:
            for field in FIELDS:
                if _entry(key, field) not in text:
                    text[_cleared(_entry(key, field))] = 1
    else:
        _name_after(text, armature)  # follow a renamed armature
        return text
    text.user_clear()  # the armature's pointer is its only user, so it goes with the armature
    _name_after(text, armature)
    armature.joint_limits_data = text
    return text


def _name_after(text, armature):
    """Name the store after its armature (names are for people). Another armature's store
    holding that name (Blender renames the original's armature on Shift+D) is renamed after
    its own armature first."""
    name = NAME_PREFIX + armature.name
    if text.name == name:
        return
    other = bpy.data.texts.get(name)
    if other is not None:
        owner = next((a for a in bpy.data.armatures if a != armature and a.joint_limits_data == other), None)
        if owner is not None and owner.name != armature.name:
            other.name = NAME_PREFIX + owner.name
    text.name = name


def _own_key(armature, settings, text):
    """The bone's key, made unique: a bone duplicated in Edit Mode carries its source's key."""
    key = settings.data_key
    pointer = settings.as_pointer()
    shared = key and any(b.joint_limit.data_key == key and b.joint_limit.as_pointer() != pointer for b in armature.bones)
    if key and not shared:
        return key
    new = uuid.uuid4().hex[:16]
    for field in FIELDS:
        holder = _holder(armature, key, field) if key else None
        if holder is not None:
            text[_entry(new, field)] = holder[_entry(key, field)]
    settings.data_key = new
    return new


def _adopt(armature, text, key):
    """Copy the bone's entries that only an orphaned store holds into ``text`` (its own)."""
    for field in FIELDS:
        holder = _holder(armature, key, field)
        if holder is not None and holder != text:
            text[_entry(key, field)] = holder[_entry(key, field)]


def adopt_all():
    """Move every joined bone's entries into its armature's own store, then let unused
    armatures (which a save drops) release their stores, so those are dropped with them."""
    in_use = [a for a in bpy.data.armatures if a.users > 0 and a.library is None]
    for armature in in_use:
        for bone in armature.bones:
            settings = bone.joint_limit
            key = settings.data_key
            if key and any(_holder(armature, key, f) not in (None, armature.joint_limits_data) for f in FIELDS):
                text = _own_text(armature, create=True)
                _adopt(armature, text, _own_key(armature, settings, text))
    for armature in bpy.data.armatures:
        if armature.users == 0 and armature.library is None and armature.joint_limits_data is not None:
            armature.joint_limits_data = None


def short_list(names, most=3):
    """``"a, b, c +2 more"``: the first ``most`` distinct names (a status bar line is short)."""
    names = list(dict.fromkeys(names))
    more = f" +{len(names) - most} more" if len(names) > most else ""
    return ", ".join(names[:most]) + more


class StoreHealth(NamedTuple):
    """What an armature's store lacks (:func:`health`)."""

    armature: str
    store: str  # the text block the armature points at ("" for none)
    limits: tuple  # bones whose settings say they have a fitted limit (or limb range) no store holds
    clouds: tuple  # bones whose settings say they have samples no store holds
    found: str  # a detached text block with the bones' entries, which :func:`relink` re-links ("" for none)

    @property
    def ok(self):
        return not (self.limits or self.clouds)

    def lines(self):
        """What is missing, why and what to do, in short lines for a panel (none when all is there)."""
        if self.ok:
            return []
        bones = sorted({*self.limits, *self.clouds})
        return [
            f"Limit data of {self.armature} is missing",
            f"Limits lost: {len(self.limits)}, samples lost: {len(self.clouds)} ({short_list(bones)})",
            f"Text block {self.store!r} does not hold them" if self.store else "Its text block was deleted",
            f"Found in {self.found!r}: save, or run a Joint Limits tool, to re-link it"
            if self.found
            else "Undo (Ctrl+Z), File > Revert, or load limit files; else sample and fit again",
        ]

    @property
    def message(self):
        """:meth:`lines` as one line (status bar, CLI)."""
        return "; ".join(self.lines())


def health(armature):
    """:class:`StoreHealth` of ``armature``: the bones whose settings say they have a limit
    (``limit_token``), a limb range of motion (``limb_token``) or samples (``cloud_count``) that no store holds."""
    limits, clouds = [], []
    for bone in armature.bones:
        settings = bone.joint_limit
        if settings.limit_token and not has(settings, "limit"):
            limits.append(bone.name)
        if settings.limb_token and not has(settings, "limb"):
            limits.append(bone.name)
        if settings.cloud_count and not has(settings, "cloud"):
            clouds.append(bone.name)
    own = armature.joint_limits_data
    found = _detached_store(armature) if limits or clouds else None
    return StoreHealth(armature.name, own.name if own else "", tuple(limits), tuple(clouds), found.name if found else "")


def _held_keys(text, keys):
    """How many of ``keys`` have an entry (or a cleared marker) in ``text``."""
    names = {name.rstrip("!").split("/")[0] for name in text.keys() if "/" in name}
    return len(names & keys)


def _detached_store(armature):
    """The text block, used by no armature, that holds most of the bones' entries, when the
    armature's own store holds none of them (it was deleted or the pointer changed); else None.
    Any name: a store may have been renamed."""
    keys = {b.joint_limit.data_key for b in armature.bones if b.joint_limit.data_key}
    own = armature.joint_limits_data
    if not keys or (own is not None and _held_keys(own, keys)):
        return None
    held = {t: _held_keys(t, keys) for t in bpy.data.texts if t != own and t.library is None and _orphaned(t)}
    best = max(held, key=held.get, default=None)
    return best if best is not None and held[best] else None


def relink(armature):
    """Point ``armature`` back at its detached store (see :func:`_detached_store`), named after
    it again. Returns the re-linked text block, or None when there was nothing to re-link."""
    text = _detached_store(armature) if armature.library is None else None
    if text is not None:
        armature.joint_limits_data = text
        _name_after(text, armature)
    return text


def relink_all():
    """:func:`relink` every armature in use; returns the names of those re-linked."""
    return [a.name for a in bpy.data.armatures if a.users > 0 and relink(a) is not None]


def _registered(struct, create=False):
    """The custom properties Blender keeps for add-ons on ``struct`` (5.0 keeps them apart from
    the user's; before, they were one group). None when there are none."""
    if hasattr(struct, "bl_system_properties_get"):
        return struct.bl_system_properties_get(do_create=create)
    return struct


def adopt_pose_bone_settings():
    """Files saved by development builds kept each bone's settings on its pose bone and the
    store pointer on the object: move them to the bone and the armature (where nothing copies
    them every frame) and remove the old properties. Returns how many bones were moved."""
    moved = 0
    for obj in bpy.data.objects:
        if obj.type != "ARMATURE" or obj.pose is None or obj.library is not None or obj.data.library is not None:
            continue
        props = _registered(obj)
        if props is not None and "joint_limits_data" in props:
            store = props["joint_limits_data"]
            if obj.data.joint_limits_data is None and isinstance(store, bpy.types.Text):
                obj.data.joint_limits_data = store
            del props["joint_limits_data"]
        for pose_bone in obj.pose.bones:
            props = _registered(pose_bone)
            if props is None or "joint_limit" not in props:
                continue
            target = _registered(pose_bone.bone, create=True)
            if "joint_limit" not in target:
                target["joint_limit"] = {}
            settings = target["joint_limit"]  # (reading the settings creates them, empty)
            for name, value in props["joint_limit"].to_dict().items():
                if name not in settings:
                    settings[name] = value
            del props["joint_limit"]
            moved += 1
    return moved


def _report_relinked(names):
    for name in names:
        print(f"Joint Limits: re-linked the limit data of {name} (its text block had been detached)")


@persistent
def on_load_post(*_args):
    try:
        moved = adopt_pose_bone_settings()
        if moved:
            print(f"Joint Limits: moved the settings of {moved} bones from their pose bones to the bones")
        _report_relinked(relink_all())
    except Exception as err:  # noqa: BLE001 - never raise into Blender
        print(f"Joint Limits: could not read the settings of an older file ({err})")


@persistent
def on_save_pre(*_args):
    try:
        _report_relinked(relink_all())  # else the detached store, unused, is not saved
        adopt_all()
    except Exception as err:  # noqa: BLE001 - never raise into Blender
        print(f"Joint Limits: could not keep the data of joined bones ({err})")


HANDLERS = ((bpy.app.handlers.save_pre, on_save_pre), (bpy.app.handlers.load_post, on_load_post))


def register():
    bpy.types.Armature.joint_limits_data = bpy.props.PointerProperty(
        type=bpy.types.Text,
        name="Joint Limits Data",
        description="Text block holding the rotation clouds and fitted limits of this armature's bones",
        options={"HIDDEN"},
    )
    install(HANDLERS, __name__)


def unregister():
    uninstall(HANDLERS, __name__)
    del bpy.types.Armature.joint_limits_data
