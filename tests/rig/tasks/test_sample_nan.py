# SPDX-License-Identifier: GPL-3.0-or-later
"""NaN and infinite rotations in keys and BVH files are dropped and counted, never sampled as
the rest pose (issue 11, item 3)."""

import bpy
import numpy as np
import pytest
from bvh_files import write_bvh
from rigs import chain_rig, cone_motion, select_only

pytestmark = pytest.mark.blender42

FRAMES = 60


def _nan_keyed_rig(addon):
    """Bone 'a' (quaternion) keyed with NaN w on 3 frames, bone 'b' (axis-angle) with a NaN
    axis on 2 frames; every other key is a cone motion away from the rest pose."""
    q = addon.limits.geometry.quaternion
    obj = chain_rig(("root", "a", "b"))
    obj.pose.bones["b"].rotation_mode = "AXIS_ANGLE"
    motion = np.tile(np.array([1.0, 0, 0, 0]), (FRAMES, 3, 1))
    motion[:, 1] = cone_motion(q, FRAMES, seed=1)
    motion[:, 2] = cone_motion(q, FRAMES, seed=2)
    action = addon.rig.io.humanoid.key_rotations(obj, motion, "ROM")
    curves = addon.rig.io.actions.bone_rotation_curves(obj, action)
    for frame in (5, 6, 30):
        curves["a"]["rotation_quaternion"][0].keyframe_points[frame].co[1] = float("nan")
    for frame in (10, 40):
        curves["b"]["rotation_axis_angle"][2].keyframe_points[frame].co[1] = float("nan")
    select_only(obj, ["a", "b"])
    return obj


def _identity_rows(addon, cloud):
    return int((addon.limits.geometry.quaternion.quaternion_angle(cloud, [1.0, 0, 0, 0]) < 1e-6).sum())


def test_nan_keys_are_dropped_and_counted_not_sampled_as_rest(clean_file, addon, capfd):
    obj = _nan_keyed_rig(addon)
    assert bpy.ops.pose.joint_limits_sample() == {"FINISHED"}
    for name, bad in (("a", 3), ("b", 2)):
        cloud = addon.rig.io.storage.read_cloud(obj.pose.bones[name])
        assert len(cloud) == FRAMES - bad, name
        assert np.isfinite(cloud).all() and _identity_rows(addon, cloud) == 0, name
    out = capfd.readouterr().out
    assert "Sampled 2 bones" in out and "dropped 5 NaN or zero rotations (a, b)" in out


def test_cli_fit_reports_dropped_nan_keys(clean_file, addon, tmp_path, capsys):
    _nan_keyed_rig(addon)
    assert addon.cli.main(["fit", "--object", "Rig", "--bones", "a", "b", "--save", str(tmp_path / "nan.blend")]) == 0
    out = capsys.readouterr().out
    assert "dropped 5 NaN or zero rotations (a, b)" in out and "fitted 2 bones" in out


def test_nan_and_inf_in_a_bvh_file_are_dropped_and_counted(clean_file, addon, tmp_path, capfd):
    path = write_bvh(tmp_path / "take.bvh", frames=FRAMES)
    lines = path.read_text().splitlines()
    first = lines.index("MOTION") + 3
    for frame, column, value in ((4, 3 + 3 * 3, "nan"), (20, 3 + 3 * 3 + 1, "inf"), (21, 3 + 3 * 3 + 2, "-inf")):
        row = lines[first + frame].split()
        row[column] = value  # the rotation of joint 3 in file order: LeftArm
        lines[first + frame] = " ".join(row)
    path.write_text("\n".join(lines) + "\n")
    target = addon.rig.io.bvh.import_bvh_armature(bpy.context, write_bvh(tmp_path / "clean.bvh", frames=FRAMES))
    bpy.context.view_layer.objects.active = target
    bpy.ops.object.mode_set(mode="POSE")
    select_only(target, ["LeftArm", "Spine"])
    assert bpy.ops.pose.joint_limits_import_bvh(filepath=str(path)) == {"FINISHED"}
    arm = addon.rig.io.storage.read_cloud(target.pose.bones["LeftArm"])
    spine = addon.rig.io.storage.read_cloud(target.pose.bones["Spine"])
    assert len(arm) == FRAMES - 3 and len(spine) == FRAMES, "only LeftArm's bad frames go"
    assert np.isfinite(arm).all() and _identity_rows(addon, arm) == 0
    assert "dropped 3 NaN or zero rotations (LeftArm)" in capfd.readouterr().out
