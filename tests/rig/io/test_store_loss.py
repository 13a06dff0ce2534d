# SPDX-License-Identifier: GPL-3.0-or-later
"""The hidden text block that holds a rig's clouds and limits is the only copy of the user's
fitted work. Losing it (deleted, or the armature pointed at another text) must be noticed and
said, by the panel, every operator and the CLI; a store that is only detached is re-linked."""

import bpy
import numpy as np
import pytest
from rigs import fitted_rig

pytestmark = pytest.mark.blender42


def _delete_store(obj):
    bpy.data.texts.remove(obj.data.joint_limits_data)


def test_a_deleted_store_is_detected_and_each_bone_says_what_it_lost(clean_file, addon):
    obj, pb, _ = fitted_rig(addon)
    datastore = addon.rig.io.datastore
    assert datastore.health(obj.data).ok
    bpy.ops.ed.undo_push(message="fitted")
    _delete_store(obj)
    health = datastore.health(obj.data)
    assert not health.ok
    assert health.limits == ("lower",) and health.clouds == ("lower",)
    text = " ".join(health.lines())
    assert "Rig" in text and "deleted" in text and "Undo" in text and "lower" in text
    line, icon = addon.ui.panels.limit_ui.samples_line(pb.joint_limit)
    assert "240" in line and "missing" in line and icon == "ERROR", "the count alone would say the samples are there"
    bpy.ops.ed.undo_push(message="deleted")
    bpy.ops.ed.undo()  # what the warning advises
    assert datastore.health(bpy.data.objects["Rig"].data).ok


def test_every_operator_reports_the_loss_in_the_status_bar(clean_file, addon, capfd):
    obj, _, _ = fitted_rig(addon)
    _delete_store(obj)
    capfd.readouterr()
    assert bpy.ops.pose.joint_limits_bake() == {"FINISHED"}
    assert bpy.ops.pose.joint_limits_enforce() in ({"FINISHED"}, {"CANCELLED"})
    out = capfd.readouterr().out
    assert out.count("Warning: Limit data of Rig is missing") == 2, out


def test_the_cli_warns_about_a_lost_store(clean_file, addon, tmp_path, capsys):
    obj, _, _ = fitted_rig(addon)
    _delete_store(obj)
    path = tmp_path / "lost.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(path))
    bpy.ops.wm.open_mainfile(filepath=str(path))
    settings = bpy.data.objects["Rig"].pose.bones["lower"].joint_limit
    assert settings.cloud_count == 240 and not settings.has_cloud, "the loss survives a save"
    capsys.readouterr()
    assert addon.cli.main(["report", "--object", "Rig"]) != 0
    assert "Limit data of Rig is missing" in capsys.readouterr().err
    # fitting again from the action is one way back
    assert addon.cli.main(["fit", "--object", "Rig", "--bones", "lower"]) == 0
    assert "missing" in capsys.readouterr().err, "fit warns before it samples again"
    assert settings.has_cloud and settings.has_limit


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


def test_the_next_operator_relinks_a_detached_store_and_says_so(clean_file, addon, capfd):
    obj, pb, _ = fitted_rig(addon)
    cloud = addon.rig.io.storage.read_cloud(pb)
    store = obj.data.joint_limits_data
    store.name = "Backup"
    obj.data.joint_limits_data = None
    health = addon.rig.io.datastore.health(obj.data)
    assert not health.ok and health.found == "Backup"
    assert "re-link" in " ".join(health.lines()), "the panel says a tool will re-link it"
    capfd.readouterr()
    assert bpy.ops.pose.joint_limits_fit() == {"FINISHED"}
    assert obj.data.joint_limits_data == store and store.name == ".JointLimits Rig"
    assert "Re-linked" in capfd.readouterr().out
    np.testing.assert_array_equal(addon.rig.io.storage.read_cloud(pb), cloud)
    assert [t for t in bpy.data.texts if t.name.startswith(".JointLimits")] == [store], "no second store"
