# SPDX-License-Identifier: GPL-3.0-or-later
"""Malformed BVH files are refused with one line naming the file and the problem, and leave no
armature, armature data or action behind (issue 11, item 9). The files are written here."""

import re

import bpy
import pytest
from bvh_files import write_bvh

pytestmark = pytest.mark.blender42


def _mangle(path, old, new, count=1):
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, count))


def _motion_line(path, frame, change):
    lines = path.read_text().splitlines()
    i = lines.index("MOTION") + 3 + frame
    lines[i] = change(lines[i])
    path.write_text("\n".join(lines) + "\n")


BROKEN = [
    ("frames_zero", lambda p: _mangle(p, "Frames: 30", "Frames: 0"), "holds no motion \\(Frames: 0\\)"),
    (
        "short_line",
        lambda p: _motion_line(p, 7, lambda line: " ".join(line.split()[:-4])),
        "line \\d+: 26 numbers, the hierarchy has 30 channels",
    ),
    ("not_a_number", lambda p: _motion_line(p, 3, lambda line: line.replace(" ", " abc ", 1)), "numbers|not a number"),
    (
        "word_in_motion",
        lambda p: _motion_line(p, 3, lambda line: "1.0x " + " ".join(line.split()[1:])),
        "line \\d+: '1.0x' is not a number",
    ),
    ("frame_count", lambda p: _mangle(p, "Frames: 30", "Frames: 31"), "'Frames: 31' but the file holds 30 frames"),
    ("no_motion", lambda p: p.write_text(p.read_text().split("MOTION")[0]), "no MOTION section"),
    ("no_frame_time", lambda p: _mangle(p, "Frame Time: 0.0333333", "Frame Rate: 30"), "Frame Time"),
    (
        "channel_count",
        lambda p: _mangle(p, "CHANNELS 3 Zrotation", "CHANNELS 4 Zrotation"),
        "CHANNELS of 'Spine' declares 4 but names 3",
    ),
    ("nan_offset", lambda p: _mangle(p, "OFFSET 0.0 10.0 0.0", "OFFSET 0.0 nan 0.0"), "OFFSET of 'Spine' holds NaN or infinity"),
    ("unbalanced", lambda p: _mangle(p, "  }\n}\nMOTION", "  }\nMOTION"), "MOTION before the hierarchy is complete"),
    ("not_bvh", lambda p: p.write_text("hello\n"), "does not start with HIERARCHY"),
    ("binary", lambda p: p.write_bytes(b"\x89PNG\r\n\x1a\n\xff\xfe"), "not text"),
]


@pytest.mark.parametrize("mangle, message", [b[1:] for b in BROKEN], ids=[b[0] for b in BROKEN])
def test_malformed_bvh_is_refused_in_one_line_and_leaves_nothing(clean_file, addon, tmp_path, mangle, message):
    skel = addon.limits.body.skeleton.humanoid_skeleton()
    rig = addon.rig.io.humanoid.build_armature(skel, "Humanoid")
    bpy.ops.pose.select_all(action="SELECT")
    path = write_bvh(tmp_path / "take.bvh")
    mangle(path)
    before = [set(c) for c in (bpy.data.objects, bpy.data.armatures, bpy.data.actions)]
    with pytest.raises(RuntimeError) as info:
        bpy.ops.pose.joint_limits_import_bvh(filepath=str(path))
    text = str(info.value).strip()
    assert "take.bvh" in text and "Traceback" not in text and len(text.splitlines()) == 1, text
    assert re.search(message, text), text
    assert [set(c) for c in (bpy.data.objects, bpy.data.armatures, bpy.data.actions)] == before, "nothing left behind"
    assert bpy.context.object == rig and bpy.context.mode == "POSE"
    assert all(pb.joint_limit.cloud_count == 0 for pb in rig.pose.bones)


def test_checked_file_still_imports_and_names_its_joints(clean_file, addon, tmp_path):
    check = addon.rig.io.bvh.check_bvh(write_bvh(tmp_path / "take.bvh"))
    assert check.frame_count == 30 and check.joints[0] == (
        "Hips",
        ["xposition", "yposition", "zposition", "zrotation", "xrotation", "yrotation"],
    )
    assert not check.bad_rotation_frames
    with pytest.raises(ValueError, match="cannot read no.bvh"):
        addon.rig.io.bvh.check_bvh(tmp_path / "no.bvh")
