# SPDX-License-Identifier: GPL-3.0-or-later
"""Characters that come in through Blender's own importers: the embedded humanoid exported with
Mixamo names to FBX and with the Unreal mannequin's names to glTF, imported back, given the human
preset, and posed at random with live enforcement on."""

import bpy
import humanoid_variants as hv
import numpy as np
import pytest
from rigs import worst_degrees_out

pytestmark = pytest.mark.blender42

TOLERANCE_DEG = 0.5


def _export_and_import(addon, tmp_path, fmt, rename):
    skeleton, _, _ = hv.humanoid_variant(addon.limits, rename=rename)
    addon.rig.io.humanoid.build_armature(skeleton, name="Character")
    bpy.ops.object.mode_set(mode="OBJECT")
    path = tmp_path / f"character.{'fbx' if fmt == 'FBX' else 'glb'}"
    if fmt == "FBX":
        bpy.ops.export_scene.fbx(filepath=str(path), add_leaf_bones=False, bake_anim=False)
    else:
        bpy.ops.export_scene.gltf(filepath=str(path), export_format="GLB", export_animations=False)
    bpy.ops.wm.read_homefile(use_empty=True)
    addon.rig.live.reset()
    if fmt == "FBX":
        bpy.ops.import_scene.fbx(filepath=str(path))
    else:
        bpy.ops.import_scene.gltf(filepath=str(path))
    rig = next(o for o in bpy.context.scene.objects if o.type == "ARMATURE")
    bpy.context.view_layer.objects.active = rig
    bpy.ops.object.mode_set(mode="POSE")
    return rig, list(addon.limits.body.skeleton.humanoid_skeleton().names)


@pytest.mark.parametrize("fmt, rename", [("FBX", hv.mixamo_name), ("glTF", hv.unreal_name)], ids=["fbx-mixamo", "gltf-unreal"])
def test_an_imported_character_gets_the_preset_and_stays_inside_it(clean_file, addon, tmp_path, fmt, rename):
    rig, names = _export_and_import(addon, tmp_path, fmt, rename)
    assert {rename(n) for n in names} <= set(rig.pose.bones.keys())
    assert bpy.ops.pose.joint_limits_apply_preset() == {"FINISHED"}
    limited = [pb.name for pb in rig.pose.bones if pb.joint_limit.has_limit and pb.joint_limit.enabled]
    for joint in ("upper_arm.L", "forearm.R", "thigh.L", "shin.R", "foot.L"):
        assert rename(joint) in limited, (joint, limited)
    rng = np.random.default_rng(3)
    q_lib = addon.limits.geometry.quaternion

    def worst(enforce):
        bpy.context.scene.joint_limits.enforce_live = enforce
        out = 0.0
        for _ in range(12):
            for name in limited:
                pb = rig.pose.bones[name]
                pb.rotation_mode = "QUATERNION"
                pb.rotation_quaternion = q_lib.quaternion_from_exp_map(rng.normal(size=3) * 1.0)
            bpy.context.view_layer.update()
            out = max(out, worst_degrees_out(addon, rig, limited))
        return out

    assert worst(False) > 5.0
    assert worst(True) < TOLERANCE_DEG
    assert not [m for m in addon.rig.live.messages() if "failed" in m]
