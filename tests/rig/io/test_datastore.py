# SPDX-License-Identifier: GPL-3.0-or-later
"""Clouds and fitted limits live in one hidden Text datablock per armature, and the small
settings on the bones, never on the pose bones: every pose edit copies the object's pose (with
its custom properties) for evaluation, and live enforcement edits the pose every frame. The
store must still behave like data on the bone: saved, undone, carried through renames, and
copied (not shared) when a rig or a bone is duplicated."""

import bpy
import numpy as np
import pytest
from rigs import fitted_rig, select_only

pytestmark = pytest.mark.blender42


def _entries(obj):
    text = obj.data.joint_limits_data
    return {} if text is None else {k: len(v) for k, v in text.items()}


def _registered_properties(struct):
    """What Blender stores for add-on properties on ``struct`` (5.0 keeps them apart from the
    user's custom properties)."""
    if hasattr(struct, "bl_system_properties_get"):
        return struct.bl_system_properties_get() or {}
    return struct


def test_bones_keep_only_small_keys_and_pose_bones_nothing(clean_file, addon):
    obj, pb, _ = fitted_rig(addon, model="sinus_texture")
    pb.joint_limit.influence = 0.5  # a setting edited through the pose bone
    for pose_bone in obj.pose.bones:  # copied on every re-evaluation of the pose: nothing of ours
        assert "joint_limit" not in _registered_properties(pose_bone)
        assert not pose_bone.keys()
    stored = _registered_properties(pb.bone)["joint_limit"]
    assert stored["influence"] == 0.5
    sizes = {k: len(v) if isinstance(v, str) else 0 for k, v in stored.items()}
    assert max(sizes.values()) < 64, sizes
    assert len(pb.joint_limit.limit_data) > 100_000  # a sinus texture: the big data is in the store
    assert obj.data.joint_limits_data.name.startswith(".JointLimits")
    assert sorted(_entries(obj)) == sorted(f"{pb.joint_limit.data_key}/{f}" for f in ("cloud", "limit"))
    assert pb.joint_limit.has_limit and pb.joint_limit.has_cloud


def test_duplicated_rig_gets_its_own_copy_when_written(clean_file, addon):
    obj, pb, _ = fitted_rig(addon)
    before = pb.joint_limit.limit_data
    bpy.ops.object.mode_set(mode="OBJECT")
    with bpy.context.temp_override(selected_objects=[obj], selected_editable_objects=[obj], active_object=obj, object=obj):
        assert bpy.ops.object.duplicate() == {"FINISHED"}
    copy = next(o for o in bpy.data.objects if o != obj and o.type == "ARMATURE")
    assert copy.data.joint_limits_data == obj.data.joint_limits_data  # shared until written
    assert copy.pose.bones["lower"].joint_limit.limit_data == before

    copy.pose.bones["lower"].joint_limit.limit_data = ""
    assert copy.data.joint_limits_data != obj.data.joint_limits_data
    assert copy.data.joint_limits_data.name == f".JointLimits {copy.data.name}"  # named after its armature
    assert not copy.pose.bones["lower"].joint_limit.has_limit
    assert copy.pose.bones["lower"].joint_limit.has_cloud  # the rest of the store was copied
    assert pb.joint_limit.limit_data == before
    assert obj.data.joint_limits_data.users == 1 and copy.data.joint_limits_data.users == 1


def test_bone_duplicated_in_edit_mode_stops_sharing_on_write(clean_file, addon):
    obj, pb, _ = fitted_rig(addon)
    before = pb.joint_limit.limit_data
    bpy.ops.object.mode_set(mode="EDIT")
    for eb in obj.data.edit_bones:
        eb.select = eb.select_head = eb.select_tail = eb.name == "lower"
    obj.data.edit_bones.active = obj.data.edit_bones["lower"]
    assert bpy.ops.armature.duplicate() == {"FINISHED"}
    bpy.ops.object.mode_set(mode="POSE")
    twin = obj.pose.bones["lower.001"]
    pb = obj.pose.bones["lower"]
    assert twin.joint_limit.data_key == pb.joint_limit.data_key  # Blender copied the settings

    twin.joint_limit.limit_data = ""
    assert twin.joint_limit.data_key != pb.joint_limit.data_key
    assert pb.joint_limit.limit_data == before
    assert twin.joint_limit.has_cloud and not twin.joint_limit.has_limit


def test_rename_keeps_data_and_deleting_the_rig_purges_the_store(clean_file, addon, tmp_path):
    obj, pb, _ = fitted_rig(addon)
    limit = addon.rig.io.storage.read_limit(pb)
    pb.name = "forearm"
    path = str(tmp_path / "store.blend")
    bpy.ops.wm.save_as_mainfile(filepath=path)
    bpy.ops.wm.open_mainfile(filepath=path)
    obj = bpy.data.objects["Rig"]
    probe = addon.limits.geometry.quaternion.quaternion_random(500, np.random.default_rng(1))
    reloaded = addon.rig.io.storage.read_limit(obj.pose.bones["forearm"])
    np.testing.assert_array_equal(reloaded.contains(probe), limit.contains(probe))

    bpy.data.objects.remove(obj)
    bpy.ops.wm.save_as_mainfile(filepath=path)
    bpy.ops.wm.open_mainfile(filepath=path)
    assert not [t.name for t in bpy.data.texts if t.name.startswith(".JointLimits")]


def test_undo_brings_a_cleared_limit_back(clean_file, addon, tmp_path):
    obj, pb, _ = fitted_rig(addon)
    before = pb.joint_limit.limit_data
    bpy.ops.wm.save_as_mainfile(filepath=str(tmp_path / "undo.blend"))
    bpy.ops.wm.open_mainfile(filepath=str(tmp_path / "undo.blend"))  # starts the undo stack here
    obj = bpy.data.objects["Rig"]
    bpy.ops.ed.undo_push(message="fitted")
    select_only(obj, ["lower"])
    # as from the UI: the operator's own undo step (bl_options UNDO) is pushed after it runs
    assert bpy.ops.pose.joint_limits_clear("EXEC_DEFAULT", True, what="BOTH") == {"FINISHED"}
    assert not bpy.data.objects["Rig"].pose.bones["lower"].joint_limit.has_limit
    bpy.ops.ed.undo()
    pb = bpy.data.objects["Rig"].pose.bones["lower"]
    assert pb.joint_limit.limit_data == before
    assert pb.joint_limit.has_cloud


def _join(active, other):
    bpy.ops.object.mode_set(mode="OBJECT")
    with bpy.context.temp_override(
        active_object=active, object=active, selected_objects=[active, other], selected_editable_objects=[active, other]
    ):
        assert bpy.ops.object.join() == {"FINISHED"}


def test_bones_joined_from_another_rig_keep_their_limits_through_save(clean_file, addon, tmp_path):
    storage = addon.rig.io.storage
    a, _, _ = fitted_rig(addon)
    bpy.ops.object.mode_set(mode="OBJECT")
    b, pb, _ = fitted_rig(addon, model="ellipsoid")
    b.name = "Other"
    limit = storage.read_limit(pb)
    _join(a, b)  # Ctrl+J: b's bones move into a (lower -> lower.001) and b is deleted
    joined = a.pose.bones["lower.001"].joint_limit
    assert joined.has_limit and joined.has_cloud
    probe = addon.limits.geometry.quaternion.quaternion_random(500, np.random.default_rng(2))
    np.testing.assert_array_equal(storage.read_limit(a.pose.bones["lower.001"]).contains(probe), limit.contains(probe))

    path = str(tmp_path / "joined.blend")
    bpy.ops.wm.save_as_mainfile(filepath=path)  # drops the orphaned store: its entries were adopted
    bpy.ops.wm.open_mainfile(filepath=path)
    a = bpy.data.objects["Rig"]
    assert [t.name for t in bpy.data.texts if t.name.startswith(".JointLimits")] == [".JointLimits Rig"]
    reloaded = storage.read_limit(a.pose.bones["lower.001"])
    np.testing.assert_array_equal(reloaded.contains(probe), limit.contains(probe))
    assert a.pose.bones["lower"].joint_limit.has_limit and a.pose.bones["lower.001"].joint_limit.cloud_data


def test_an_orphaned_store_never_brings_back_what_was_cleared(clean_file, addon):
    obj, pb, _ = fitted_rig(addon)
    one = addon.rig.io.storage.cloud_to_text(np.tile([1.0, 0, 0, 0], (5, 1)))
    obj.pose.bones["upper"].joint_limit.cloud_data = one  # a key with a cloud and no limit
    bpy.ops.object.mode_set(mode="OBJECT")
    with bpy.context.temp_override(selected_objects=[obj], selected_editable_objects=[obj], active_object=obj, object=obj):
        assert bpy.ops.object.duplicate() == {"FINISHED"}
    copy = next(o for o in bpy.data.objects if o != obj and o.type == "ARMATURE")
    copy.pose.bones["lower"].joint_limit.limit_data = ""  # cleared in the copy only
    obj.pose.bones["upper"].joint_limit.limit_data = pb.joint_limit.limit_data  # gained by the original only
    bpy.data.objects.remove(obj)  # the original's store is orphaned, still holding both
    assert not copy.pose.bones["lower"].joint_limit.has_limit
    assert copy.pose.bones["lower"].joint_limit.has_cloud
    assert copy.pose.bones["upper"].joint_limit.has_cloud and not copy.pose.bones["upper"].joint_limit.has_limit


def test_files_with_settings_on_pose_bones_are_moved_to_the_bones(clean_file, addon, tmp_path):
    """Development builds kept the settings on the pose bones and the store pointer on the
    object; opening such a file moves them, and the limit still works."""
    obj, pb, _ = fitted_rig(addon)
    pb.joint_limit.influence = 0.25
    limit = addon.rig.io.storage.read_limit(pb)
    # write the file the way those builds did
    old = _registered_properties(pb.bone)["joint_limit"].to_dict()
    del _registered_properties(pb.bone)["joint_limit"]
    pose_props = pb.bl_system_properties_get(do_create=True) if hasattr(pb, "bl_system_properties_get") else pb
    pose_props["joint_limit"] = old
    obj_props = obj.bl_system_properties_get(do_create=True) if hasattr(obj, "bl_system_properties_get") else obj
    obj_props["joint_limits_data"] = obj.data.joint_limits_data
    obj.data.joint_limits_data = None
    assert not pb.joint_limit.has_limit
    path = str(tmp_path / "old.blend")
    bpy.ops.wm.save_as_mainfile(filepath=path)
    bpy.ops.wm.open_mainfile(filepath=path)

    obj = bpy.data.objects["Rig"]
    pb = obj.pose.bones["lower"]
    assert pb.joint_limit.influence == 0.25 and pb.joint_limit.has_limit and pb.joint_limit.has_cloud
    assert obj.data.joint_limits_data is not None and obj.data.joint_limits_data.users == 1
    assert "joint_limit" not in _registered_properties(pb)
    assert "joint_limits_data" not in (_registered_properties(obj) or {})
    probe = addon.limits.geometry.quaternion.quaternion_random(500, np.random.default_rng(3))
    np.testing.assert_array_equal(addon.rig.io.storage.read_limit(pb).contains(probe), limit.contains(probe))


def test_limits_read_or_written_in_the_session_are_parsed_once(clean_file, addon):
    """The store keeps text; what was written or read is remembered parsed, by the entry's token
    and text, so turning enforcement on again parses nothing. An entry changed behind the token's
    back is read anew, never served from memory."""
    storage = addon.rig.io.storage
    obj, pb, _ = fitted_rig(addon)  # fitting wrote the limit: remembered
    first = storage.read_limit(pb)
    assert storage.read_limit(pb).model is first.model  # shared, not parsed again
    storage.read_limit(pb).soft_radius = np.asarray(0.5)  # each read is its own wrapper
    assert not np.any(storage.read_limit(pb).soft_radius)
    other = addon.limits.joint.JointLimit.fit(addon.limits.geometry.quaternion.quaternion_random(50, 3), kind="box")
    store = obj.data.joint_limits_data
    entry = pb.joint_limit.data_key + "/limit"
    store[entry] = addon.limits.serialize.limit_to_json(other)  # not through the settings: same token
    assert storage.read_limit(pb).model.kind == "box"
    store[entry] = "{not json"
    with pytest.raises(ValueError):
        storage.read_limit(pb)
    storage.forget_parsed()
    store[entry] = addon.limits.serialize.limit_to_json(first)
    assert storage.read_limit(pb).model is not first.model
