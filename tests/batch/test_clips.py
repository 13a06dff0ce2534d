# SPDX-License-Identifier: GPL-3.0-or-later
"""``joint_limits batch`` beyond BVH: the actions of a .blend (checked, cleaned into a .blend
whose untouched channels keep their keys exactly), FBX through Blender's importer, fit onto a
rig (bone names matched, a rest orientation that differs handled), and fit resumed from the
samples it kept."""

import json

import bpy
import numpy as np
import pytest
from clip_library import _library
from rigs import chain_rig, cone_motion

pytestmark = pytest.mark.blender42

BONES = ("root", "upper", "lower")


def _takes(addon, path, fps=24):
    """A .blend with one armature ('upper' keyed as quaternions, 'lower' as XYZ Euler) and two
    actions: 'ROM' ('upper' sweeping a cone, 'lower' bending like a knee about its X axis) and
    'Wide' (wider, and 'lower' also swinging sideways)."""
    bpy.ops.wm.read_homefile(use_empty=True)
    q_lib = addon.limits.geometry.quaternion
    obj = chain_rig(BONES, name="Actor")
    obj.pose.bones["lower"].rotation_mode = "XYZ"
    bpy.context.scene.render.fps = fps
    t = np.linspace(0, 1, 120)
    for name, angle, twist, side in (("ROM", 0.5, 0.3, 0.05), ("Wide", 1.3, 0.9, 0.6)):
        motion = np.tile([1.0, 0, 0, 0], (120, 3, 1))
        motion[:, 1] = cone_motion(q_lib, 120, half_angle=angle, twist=twist, seed=1)
        bend = np.stack((2 * angle * np.abs(np.sin(5 * t)), 0.3 * twist * np.sin(7 * t), side * np.sin(3 * t)), -1)
        motion[:, 2] = q_lib.quaternion_from_exp_map(bend)
        addon.rig.io.humanoid.key_rotations(obj, motion, name, assign=name == "ROM")
    bpy.ops.object.mode_set(mode="OBJECT")
    bpy.ops.wm.save_as_mainfile(filepath=str(path))
    return path


def _keys(addon, path, action_name):
    """``{(data path, index): keyframe co (2K,)}`` of an action in a .blend (opened here)."""
    bpy.ops.wm.open_mainfile(filepath=str(path), load_ui=False)
    obj = bpy.data.objects["Actor"]
    out = {}
    for fc in addon.rig.io.actions.action_fcurves(obj, bpy.data.actions[action_name]):
        co = np.empty(2 * len(fc.keyframe_points), dtype=np.float32)
        fc.keyframe_points.foreach_get("co", co)
        out[(fc.data_path, fc.array_index)] = co
    return out, bpy.context.scene.render.fps


def test_blend_actions_are_checked_and_cleaned_into_a_blend(clean_file, addon, tmp_path):
    takes = _takes(addon, tmp_path / "takes.blend")
    main = addon.cli.main
    assert main(["batch", "fit", f"{takes}:ROM", "--output", str(tmp_path / "fit"), "--model", "ellipsoid"]) == 0
    limit_set = json.loads((tmp_path / "fit" / "limits.json").read_text())
    assert limit_set["clips"] == ["takes.blend:ROM"] and sorted(limit_set["bones"]) == ["lower", "upper"]
    assert "root" in limit_set["skipped"]
    limits = str(tmp_path / "fit" / "limits.json")

    assert main(["batch", "check", str(takes), "--output", str(tmp_path / "check"), "--limits", limits]) == 0
    summary = json.loads((tmp_path / "check" / "summary.json").read_text())
    out = {c["clip"]: c["frames_out"] for c in summary["clips"]}
    assert out["takes.blend:ROM"] == 0 and out["takes.blend:Wide"] > 10, out
    report = json.loads((tmp_path / "check" / "reports" / "takes.Wide.blend.json").read_text())
    assert report["first_frame"] == 1 and report["frame_time"] == pytest.approx(1 / 24)

    assert main(["batch", "clean", f"{takes}:Wide", "--output", str(tmp_path / "clean"), "--limits", limits]) == 0
    cleaned = tmp_path / "clean" / "clips" / "takes.Wide.blend"
    before, fps_before = _keys(addon, takes, "Wide")
    after, fps_after = _keys(addon, cleaned, "Wide")
    assert fps_after == fps_before == 24 and before.keys() == after.keys()
    report = json.loads((tmp_path / "clean" / "reports" / "takes.Wide.blend.json").read_text())
    out_bones = {r["bone"] for r in report["bones"] if r["frames_out"]}
    changed_frames = set()
    for (path, index), co in before.items():
        bone = path.split('"')[1]
        if bone not in out_bones:
            assert np.array_equal(co, after[(path, index)]), f"{path}[{index}] untouched: the same keys"
        else:
            assert np.array_equal(co[0::2], after[(path, index)][0::2]), "keys stay on their frames"
            changed_frames |= set(co[0::2][co[1::2] != after[(path, index)][1::2]].tolist())
    assert 0 < len(changed_frames) <= report["frames_out"]
    assert main(["batch", "check", str(cleaned), "--output", str(tmp_path / "again"), "--limits", limits]) == 0
    again = json.loads((tmp_path / "again" / "summary.json").read_text())
    wide = next(c for c in again["clips"] if c["clip"] == "takes.Wide.blend:Wide")
    assert wide["frames_out"] == 0, "the cleaned action stays inside"


def test_an_fbx_clip_is_read_through_blenders_importer(clean_file, addon, tmp_path):
    takes = _takes(addon, tmp_path / "takes.blend")
    main = addon.cli.main
    assert main(["batch", "fit", f"{takes}:ROM", "--output", str(tmp_path / "fit"), "--model", "ellipsoid"]) == 0
    bpy.ops.wm.open_mainfile(filepath=str(takes), load_ui=False)
    obj = bpy.data.objects["Actor"]
    addon.rig.io.actions.assign_action(obj, bpy.data.actions["Wide"])
    bpy.ops.export_scene.fbx(
        filepath=str(tmp_path / "wide.fbx"), bake_anim_use_all_actions=False, bake_anim_use_nla_strips=False, add_leaf_bones=False
    )
    limits = str(tmp_path / "fit" / "limits.json")
    code = main(["batch", "clean", str(tmp_path / "wide.fbx"), "--output", str(tmp_path / "c"), "--limits", limits])
    assert code == 0, (tmp_path / "c" / "summary.md").read_text()
    report = json.loads((tmp_path / "c" / "reports" / "wide.fbx.json").read_text())
    assert report["bones_checked"] == 2 and report["frames_out"] > 10
    assert (tmp_path / "c" / "clips" / "wide.fbx.blend").is_file(), "an FBX clip is cleaned into a .blend"


def test_fit_onto_a_rig_matches_names_and_refits_in_its_bone_space(clean_file, addon, tmp_path, capsys):
    takes = _takes(addon, tmp_path / "takes.blend")
    bpy.ops.wm.read_homefile(use_empty=True)
    chain_rig(("mixamorig:Root", "mixamorig:Upper", "mixamorig:Lower"), name="Target", roll_deg=90.0)
    bpy.ops.object.mode_set(mode="OBJECT")
    rig = tmp_path / "target.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(rig))
    main = addon.cli.main
    args = ["batch", "fit", f"{takes}:ROM", "--model", "ellipsoid", "--rig", str(rig)]
    assert main([*args, "--output", str(tmp_path / "fit")]) == 0
    summary = json.loads((tmp_path / "fit" / "summary.json").read_text())
    assert summary["rig"]["bones"] == {"mixamorig:Lower": "lower", "mixamorig:Upper": "upper"}
    assert summary["rig"]["refitted_in_rig_space"] == ["mixamorig:Lower", "mixamorig:Upper"], "the roll differs"
    assert "| mixamorig:Lower | lower |" in (tmp_path / "fit" / "summary.md").read_text()

    samples = addon.batch.sample_cache.read_samples(
        tmp_path / "fit" / "samples" / "takes.ROM.blend.npz",
        addon.batch.sample_cache.clip_key(addon.batch.clips.collect_clips([f"{takes}:ROM"])[0]),
    )
    bpy.ops.wm.open_mainfile(filepath=str(rig), load_ui=False)
    target = bpy.data.objects["Target"]
    pb = target.pose.bones["mixamorig:Lower"]
    limit = addon.rig.io.storage.read_limit(pb)
    assert limit is not None and pb.joint_limit.model == "ellipsoid"
    q = samples["bones"]["lower"]
    rest_rig = addon.limits.geometry.quaternion.quaternion_from_matrix(np.array(pb.bone.matrix_local.to_3x3(), dtype=float))
    in_rig = addon.batch.onto_rig.rig_space_rotations(q, samples["rest"]["lower"], rest_rig)
    assert np.mean(limit.violation(in_rig) < 1e-4) > 0.99, "the samples, as the rig's bone sees them, are inside"
    assert np.mean(limit.violation(q) < 1e-4) < 0.5, "the clip's own rotations (another roll) mostly are not"


def test_a_bone_map_names_what_matching_misses(clean_file, addon, tmp_path, capsys):
    takes = _takes(addon, tmp_path / "takes.blend")
    bpy.ops.wm.read_homefile(use_empty=True)
    chain_rig(("base", "bicep", "wrist"), name="Target")
    bpy.ops.object.mode_set(mode="OBJECT")
    rig = tmp_path / "target.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(rig))
    main = addon.cli.main
    args = ["batch", "fit", f"{takes}:ROM", "--model", "ellipsoid", "--rig", str(rig), "--output", str(tmp_path / "fit")]
    assert main(args) == 2
    assert "no bone of Target" in capsys.readouterr().err
    (tmp_path / "map.json").write_text(json.dumps({"upper": "bicep", "lower": "wrist"}))
    assert main([*args, "--bone-map", str(tmp_path / "map.json")]) == 0
    summary = json.loads((tmp_path / "fit" / "summary.json").read_text())
    assert summary["rig"]["bones"] == {"bicep": "upper", "wrist": "lower"}
    assert summary["rig"]["refitted_in_rig_space"] == [], "same rest orientations: the limit set's limits"
    bpy.ops.wm.open_mainfile(filepath=str(rig), load_ui=False)
    stored = {pb.name: pb.joint_limit.has_limit for pb in bpy.data.objects["Target"].pose.bones}
    assert stored == {"base": False, "bicep": True, "wrist": True}

    (tmp_path / "bad.json").write_text(json.dumps({"upper": "elbow"}))
    assert main([*args, "--bone-map", str(tmp_path / "bad.json")]) == 2
    err = capsys.readouterr().err
    assert "bone map names bones" in err and "elbow" in err and "Traceback" not in err


def test_common_naming_conventions_are_matched(addon):
    match = addon.batch.onto_rig.match_bones
    clip = ["Hips", "LeftUpLeg", "RightUpLeg", "LeftForeArm", "Spine"]
    rig = ["mixamorig:Hips", "mixamorig:LeftUpLeg", "mixamorig:RightUpLeg", "mixamorig:LeftForeArm", "mixamorig:Spine"]
    assert match(clip, rig) == dict(zip(rig, clip, strict=True))
    rig = ["hips", "upleg_l", "upleg_r", "forearm_l", "spine"]
    assert match(clip, rig) == dict(zip(rig, clip, strict=True))
    rig = ["Hips", "UpLeg.L", "UpLeg.R", "ForeArm.L", "Spine"]
    assert match(clip, rig) == dict(zip(rig, clip, strict=True))
    assert match(clip, rig, {"Spine": "Hips", "Hips": "Spine"})["Hips"] == "Spine", "the map wins"


def test_fit_resumes_from_the_samples_it_kept(clean_file, addon, tmp_path, capsys):
    lib = _library(addon, tmp_path / "lib")
    main = addon.cli.main
    out = tmp_path / "out"
    # a first run read two clips before it was cut short
    assert main(["batch", "fit", str(lib / "rom0.bvh"), str(lib / "rom1.bvh"), "--output", str(out), "--model", "ellipsoid"]) == 0
    kept = {p.name: p.stat().st_mtime_ns for p in (out / "samples").iterdir()}
    assert sorted(kept) == ["rom0.bvh.npz", "rom1.bvh.npz"]
    (lib / "rom1.bvh").write_bytes((lib / "rom1.bvh").read_bytes().replace(b"0.", b"1.", 3))  # changed since
    capsys.readouterr()
    args = ["batch", "fit", str(lib / "rom*.bvh"), "--model", "ellipsoid"]
    assert main([*args, "--output", str(out)]) == 0
    assert "1 of 3 clips already done, skipped" in capsys.readouterr().err, "rom0 kept; rom1 changed, rom2 new"
    assert (out / "samples" / "rom0.bvh.npz").stat().st_mtime_ns == kept["rom0.bvh.npz"]
    assert main([*args, "--output", str(tmp_path / "fresh")]) == 0
    for name in ("limits.json", "summary.json", "samples/rom1.bvh.npz"):
        assert (out / name).read_bytes() == (tmp_path / "fresh" / name).read_bytes(), name
