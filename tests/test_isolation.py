# SPDX-License-Identifier: GPL-3.0-or-later
"""One bone's broken data never takes out the rig: every path (live, report, bake, export,
limit files, the CLI) skips that bone, names it, and keeps working for the others."""

import io
import json
import math
import zipfile

import bpy
import numpy as np
import pytest
from rigs import chain_rig, cone_motion, evaluated_local_rotation, expect_error, select_only

pytestmark = pytest.mark.blender42

OUTSIDE = np.array([math.cos(0.87), math.sin(0.87), 0.0, 0.0])
FRAMES = 60
#: Stored entries no write of the add-on makes, as a damaged or hand-edited file could hold.
BROKEN = {
    "empty": "",
    "not text": 7,
    "garbage": "{not json",
    "deeply nested": "[" * 100_000 + "]" * 100_000,
}


def _rig(addon):
    """Chain root-a-b; a and b sampled from an action 'ROM' (kept assigned) and fitted."""
    q = addon.limits.geometry.quaternion
    obj = chain_rig(("root", "a", "b"))
    motion = np.tile(np.array([1.0, 0, 0, 0]), (FRAMES, 3, 1))
    motion[:, 1] = cone_motion(q, FRAMES, seed=1)
    motion[:, 2] = cone_motion(q, FRAMES, seed=2)
    motion[FRAMES // 2 :, 1:] = OUTSIDE  # half the action leaves the limits
    addon.rig.io.humanoid.key_rotations(obj, motion, "ROM")
    select_only(obj, ["a", "b"])
    assert bpy.ops.pose.joint_limits_sample() == {"FINISHED"}
    assert bpy.ops.pose.joint_limits_fit() == {"FINISHED"}
    return obj


def _store(obj, bone, value, field="limit"):
    """Overwrite the bone's stored ``field`` entry in the armature's data store."""
    key = obj.pose.bones[bone].joint_limit.data_key
    obj.data.joint_limits_data[f"{key}/{field}"] = value


@pytest.mark.parametrize("value", [BROKEN["empty"], BROKEN["not text"]], ids=["empty", "not text"])
def test_live_enforcement_skips_only_the_bone_with_an_empty_entry(clean_file, addon, value):
    obj = _rig(addon)
    limit_b = addon.rig.io.storage.read_limit(obj.pose.bones["b"])
    obj.animation_data.action = None
    _store(obj, "a", value)
    obj.pose.bones["b"].rotation_quaternion = OUTSIDE
    bpy.context.scene.joint_limits.enforce_live = True
    bpy.context.scene.frame_set(1)
    assert limit_b.violation(evaluated_local_rotation(obj, "b")) < 1e-3
    msgs = addon.rig.live.messages()
    assert any("'a'" in m and "unreadable" in m for m in msgs), msgs
    assert not [m for m in msgs if "enforcement failed" in m]


@pytest.mark.parametrize("value", [BROKEN["not text"], BROKEN["deeply nested"]], ids=["not text", "deeply nested"])
def test_report_and_bake_skip_only_the_broken_bone_and_name_it(clean_file, addon, capfd, value):
    obj = _rig(addon)
    limit_b = addon.rig.io.storage.read_limit(obj.pose.bones["b"])
    _store(obj, "a", value)
    capfd.readouterr()

    assert bpy.ops.pose.joint_limits_report() == {"FINISHED"}
    text = bpy.data.texts["Joint Limits Report"].as_string()
    assert "\nb " in text and "a                    skipped:" in text
    out = capfd.readouterr().out
    assert "skipped 1 bone: 'a'" in out

    assert bpy.ops.pose.joint_limits_bake() == {"FINISHED"}
    assert "skipped 1 bone: 'a'" in capfd.readouterr().out
    baked = bpy.data.actions["ROM_limited"]
    frames = np.arange(1, FRAMES + 1)
    keyed, ok = addon.rig.io.actions.keyed_rotations(obj, baked, ["a", "b"], frames)
    source, _ = addon.rig.io.actions.keyed_rotations(obj, bpy.data.actions["ROM"], ["a"], frames)
    assert ok.all()
    assert limit_b.violation(keyed[:, 1]).max() < 1e-4, "the healthy bone is limited"
    assert addon.limits.geometry.quaternion.quaternion_angle(keyed[:, 0], source[:, 0]).max() < 1e-4, (
        "the broken one is baked as it was"
    )


def test_a_limit_that_projects_to_nan_is_never_baked_and_is_named(clean_file, addon, capfd, monkeypatch):
    """A limit can read back valid and still give NaN (an overflow, a model's bug; here every
    ellipsoid's projection made to): bake keeps that bone's own rotations, report skips it,
    live enforcement writes no NaN. (Absurd stored values are refused on load instead.)"""
    obj = _rig(addon)
    storage = addon.rig.io.storage
    obj.pose.bones["a"].joint_limit.model = "ellipsoid"  # (refits)
    obj.pose.bones["b"].joint_limit.model = "kdop"
    assert storage.read_limit(obj.pose.bones["a"]).model.kind == "ellipsoid"
    broken = classmethod(lambda cls, shape, points: np.full(np.shape(points), np.nan))
    monkeypatch.setattr(addon.limits.models.ellipsoid.EllipsoidLimit, "_project_shape", broken)
    limit_b = storage.read_limit(obj.pose.bones["b"])
    capfd.readouterr()

    assert bpy.ops.pose.joint_limits_bake() == {"FINISHED"}
    assert "skipped 1 bone: 'a' (its limit gives NaN" in capfd.readouterr().out
    frames = np.arange(1, FRAMES + 1)
    keyed, ok = addon.rig.io.actions.keyed_rotations(obj, bpy.data.actions["ROM_limited"], ["a", "b"], frames)
    source, _ = addon.rig.io.actions.keyed_rotations(obj, bpy.data.actions["ROM"], ["a"], frames)
    assert ok.all() and np.all(np.isfinite(keyed)), "no NaN key is written"
    assert addon.limits.geometry.quaternion.quaternion_angle(keyed[:, 0], source[:, 0]).max() < 1e-4
    assert limit_b.violation(keyed[:, 1]).max() < 1e-4

    assert bpy.ops.pose.joint_limits_report() == {"FINISHED"}
    assert "skipped 1 bone: 'a'" in capfd.readouterr().out

    obj.animation_data.action = None
    for name in ("a", "b"):
        obj.pose.bones[name].rotation_quaternion = OUTSIDE
    bpy.context.scene.joint_limits.enforce_live = True
    bpy.context.scene.frame_set(1)
    assert np.all(np.isfinite(obj.pose.bones["a"].rotation_quaternion))
    assert limit_b.violation(evaluated_local_rotation(obj, "b")) < 1e-3


def test_fit_names_the_skipped_bone_in_its_status_line(clean_file, addon, capfd):
    obj = _rig(addon)
    _store(obj, "a", BROKEN["garbage"], field="cloud")
    capfd.readouterr()
    assert bpy.ops.pose.joint_limits_fit() == {"FINISHED"}
    last = capfd.readouterr().out.strip().splitlines()[-1]
    assert "Fitted 1 bone; skipped 1 bone: 'a' (stored rotation cloud is not in Joint Limits format)" in last
    assert obj.pose.bones["a"].joint_limit.last_error == "stored rotation cloud is not in Joint Limits format"


def test_export_native_skips_a_bone_with_a_broken_cloud(clean_file, addon, capfd):
    obj = _rig(addon)
    _store(obj, "a", "q4f32:not base64!", field="cloud")
    capfd.readouterr()
    assert bpy.ops.pose.joint_limits_export_native() == {"FINISHED"}
    assert "skipped 1 bone: 'a'" in capfd.readouterr().out
    assert "Joint Limit (native)" in obj.pose.bones["b"].constraints
    assert not obj.pose.bones["a"].constraints


def _huge_npz(path):
    """An .npz whose one array declares 10^10 float64 values (80 GB) and holds none."""
    with zipfile.ZipFile(path, "w") as archive:
        header = io.BytesIO()
        np.save(header, np.array(json.dumps({"format": "joint_limits", "version": 1})))
        archive.writestr("header.npy", header.getvalue())
        declared = io.BytesIO()
        np.lib.format.write_array_header_1_0(declared, {"descr": "<f8", "fortran_order": False, "shape": (10**10,)})
        archive.writestr("params/position.npy", declared.getvalue())


def test_limit_files_too_deep_or_too_big_are_refused_with_a_message(clean_file, addon, tmp_path):
    obj = _rig(addon)
    obj.data.bones.active = obj.data.bones["b"]
    before = obj.pose.bones["b"].joint_limit.limit_data
    deep = tmp_path / "deep.json"
    deep.write_text(BROKEN["deeply nested"])
    huge = tmp_path / "huge.npz"
    _huge_npz(huge)
    for path in (deep, huge):
        expect_error(bpy.ops.pose.joint_limits_load_file, "Could not load", filepath=str(path))
        assert obj.pose.bones["b"].joint_limit.limit_data == before
    _store(obj, "b", BROKEN["deeply nested"])
    expect_error(bpy.ops.pose.joint_limits_save_file, "bone 'b'", filepath=str(tmp_path / "out.json"))


def test_cli_report_and_bake_name_the_broken_bone_and_finish(clean_file, addon, tmp_path, capsys):
    obj = _rig(addon)
    _store(obj, "a", "")
    main = addon.cli.main
    assert main(["report", "--object", obj.name]) == 0
    out = capsys.readouterr().out
    assert "a                    skipped:" in out and "\nb " in out
    assert main(["bake", "--object", obj.name, "--save", str(tmp_path / "baked.blend")]) == 0
    assert "skipped: a:" in capsys.readouterr().out
