# SPDX-License-Identifier: GPL-3.0-or-later
"""BVH motion sampled onto a rig through Blender's own importer (the BVH is written by the test)."""

import bpy
import numpy as np
import pytest
from rigs import expect_error, select_only

pytestmark = pytest.mark.blender42

JOINTS = (  # name, parent, offset (BVH is Y up, centimetres)
    ("Hips", None, (0, 90, 0)),
    ("Spine", "Hips", (0, 10, 0)),
    ("Head", "Spine", (0, 50, 0)),
    ("LeftArm", "Spine", (15, 45, 0)),
    ("LeftForeArm", "LeftArm", (28, 0, 0)),
    ("LeftHand", "LeftForeArm", (25, 0, 0)),
    ("LeftUpLeg", "Hips", (9, -5, 0)),
    ("LeftLeg", "LeftUpLeg", (0, -42, 0)),
    ("LeftFoot", "LeftLeg", (0, -40, 0)),
)


def write_bvh(path, frames=30, seed=0):
    children = {}
    for name, parent, _ in JOINTS:
        children.setdefault(parent, []).append(name)
    offsets = {name: off for name, _, off in JOINTS}
    lines = ["HIERARCHY"]

    def joint(name, depth):
        pad = "  " * depth
        kind = "ROOT" if depth == 0 else "JOINT"
        lines.append(f"{pad}{kind} {name}")
        lines.append(f"{pad}{{")
        lines.append(f"{pad}  OFFSET {' '.join(str(float(v)) for v in offsets[name])}")
        chans = (
            "6 Xposition Yposition Zposition Zrotation Xrotation Yrotation" if depth == 0 else "3 Zrotation Xrotation Yrotation"
        )
        lines.append(f"{pad}  CHANNELS {chans}")
        for child in children.get(name, []):
            joint(child, depth + 1)
        if name not in children:
            lines.append(f"{pad}  End Site")
            lines.append(f"{pad}  {{")
            lines.append(f"{pad}    OFFSET 0.0 -10.0 0.0")
            lines.append(f"{pad}  }}")
        lines.append(f"{pad}}}")

    joint("Hips", 0)
    rng = np.random.default_rng(seed)
    t = np.linspace(0, 1, frames)[:, None]
    amp = rng.uniform(10, 60, size=(1, 3 * len(JOINTS)))
    phase = rng.uniform(0, 6, size=(1, 3 * len(JOINTS)))
    angles = amp * np.sin(2 * np.pi * t + phase)
    order = [name for name, _, _ in JOINTS]
    seq = []

    def walk(name):
        seq.append(name)
        for child in children.get(name, []):
            walk(child)

    walk("Hips")
    lines += ["MOTION", f"Frames: {frames}", "Frame Time: 0.0333333"]
    for f in range(frames):
        row = [0.0, 90.0, 0.0]
        for name in seq:
            i = order.index(name)
            row += angles[f, 3 * i : 3 * i + 3].tolist()
        lines.append(" ".join(f"{v:.5f}" for v in row))
    path.write_text("\n".join(lines) + "\n")
    return path


def test_bvh_onto_its_own_skeleton_reproduces_the_rotations(clean_file, addon, tmp_path):
    path = write_bvh(tmp_path / "take.bvh")
    target = addon.rig.io.bvh.import_bvh_armature(bpy.context, path)
    bpy.context.view_layer.objects.active = target
    bpy.ops.object.mode_set(mode="POSE")
    names = ["LeftArm", "LeftForeArm", "LeftUpLeg", "Spine"]
    select_only(target, names)
    objects_before = set(bpy.data.objects)
    assert bpy.ops.pose.joint_limits_import_bvh(filepath=str(path)) == {"FINISHED"}
    assert set(bpy.data.objects) == objects_before, "the temporary armature is removed"
    assert bpy.context.object == target and bpy.context.mode == "POSE"
    q = addon.limits.geometry.quaternion
    frames = addon.rig.io.actions.action_frames(target.animation_data.action)
    own, keyed = addon.rig.io.actions.keyed_rotations(target, target.animation_data.action, names, frames)
    assert keyed.all()
    for i, name in enumerate(names):
        cloud = addon.rig.io.storage.read_cloud(target.pose.bones[name])
        assert len(cloud) == len(frames) == 30
        assert q.quaternion_angle(cloud, own[:, i]).max() < 1e-4, name


def test_bvh_onto_a_differently_named_rig(clean_file, addon, tmp_path):
    path = write_bvh(tmp_path / "take.bvh", seed=3)
    skel = addon.limits.body.skeleton.humanoid_skeleton()
    rig = addon.rig.io.humanoid.build_armature(skel, "Humanoid")
    bpy.ops.pose.select_all(action="SELECT")
    assert bpy.ops.pose.joint_limits_import_bvh(filepath=str(path)) == {"FINISHED"}
    sampled = {pb.name for pb in rig.pose.bones if pb.joint_limit.cloud_count == 30}
    assert {"upper_arm.L", "forearm.L", "thigh.L", "shin.L", "head"} <= sampled
    assert "upper_arm.R" not in sampled, "no right arm in the file"


def test_bad_bvh_file_is_refused_cleanly(clean_file, addon, tmp_path):
    skel = addon.limits.body.skeleton.humanoid_skeleton()
    rig = addon.rig.io.humanoid.build_armature(skel, "Humanoid")
    bpy.ops.pose.select_all(action="SELECT")
    bad = tmp_path / "bad.bvh"
    bad.write_text("HIERARCHY\nROOT Hips\n{ broken")
    objects = set(bpy.data.objects)
    expect_error(bpy.ops.pose.joint_limits_import_bvh, "BVH", filepath=str(bad))
    assert set(bpy.data.objects) == objects
    assert bpy.context.object == rig and bpy.context.mode == "POSE"
    assert all(pb.joint_limit.cloud_count == 0 for pb in rig.pose.bones)
