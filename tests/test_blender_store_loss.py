# SPDX-License-Identifier: GPL-3.0-or-later
"""The hidden text block that holds a rig's clouds and limits is the only copy of the user's
fitted work. Losing it (deleted, or the armature pointed at another text) must be noticed and
said, by the panel, every operator and the CLI; a store that is only detached is re-linked."""

import bpy
from rigs import fitted_rig


def _delete_store(obj):
    bpy.data.texts.remove(obj.data.joint_limits_data)


def test_a_deleted_store_is_detected_and_each_bone_says_what_it_lost(clean_file, addon):
    obj, pb, _ = fitted_rig(addon)
    datastore = addon.rig.datastore
    assert datastore.health(obj.data).ok
    _delete_store(obj)
    health = datastore.health(obj.data)
    assert not health.ok
    assert health.limits == ("lower",) and health.clouds == ("lower",)
    text = " ".join(health.lines())
    assert "Rig" in text and "deleted" in text and "Undo" in text and "lower" in text
    line, icon = addon.panels.limit_ui.samples_line(pb.joint_limit)
    assert "240" in line and "missing" in line and icon == "ERROR", "the count alone would say the samples are there"


def test_a_store_detached_by_pointing_at_another_text_is_relinked_on_save(clean_file, addon, tmp_path):
    obj, pb, _ = fitted_rig(addon)
    before = pb.joint_limit.limit_data
    store = obj.data.joint_limits_data
    store.name = "renamed by hand"
    obj.data.joint_limits_data = bpy.data.texts.new("Notes")
    path = tmp_path / "relinked.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(path))  # unrelinked, the store has no user: dropped
    bpy.ops.wm.open_mainfile(filepath=str(path))
    obj = bpy.data.objects["Rig"]
    assert obj.data.joint_limits_data.name == ".JointLimits Rig"
    assert obj.pose.bones["lower"].joint_limit.limit_data == before
    assert "Notes" in bpy.data.texts, "the user's own text is left alone"
