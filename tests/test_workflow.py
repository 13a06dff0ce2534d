# SPDX-License-Identifier: GPL-3.0-or-later
"""Sample -> fit -> enforce / bake / report on real Blender (bpy from PyPI), add-on loaded as an
extension from the checkout."""

import math

import bpy
import numpy as np
import pytest
from rigs import cone_motion, evaluated_local_rotation, expect_error, fitted_rig, select_only, set_local_rotation

pytestmark = pytest.mark.blender42

MODES = ("QUATERNION", "XYZ", "XZY", "YXZ", "YZX", "ZXY", "ZYX", "AXIS_ANGLE")
#: A swing of ~100 degrees: far outside the ~34 degree cone the rig is trained on.
IMPOSSIBLE = np.array([math.cos(0.87), math.sin(0.87), 0.0, 0.0])


def _rig_with_limit(addon, mode="QUATERNION", model="kdop", fit_mode="FULL", frames=240):
    return fitted_rig(addon, mode, model, fit_mode, frames)


def _limit(addon, pb):
    return addon.rig.io.storage.read_limit(pb)


@pytest.mark.parametrize("mode", MODES)
def test_enforce_moves_impossible_pose_inside_in_every_rotation_mode(clean_file, addon, mode):
    obj, pb, _ = _rig_with_limit(addon, mode)
    assert pb.joint_limit.cloud_count == 240
    limit = _limit(addon, pb)
    obj.animation_data.action = None
    set_local_rotation(pb, IMPOSSIBLE, addon.limits.geometry.quaternion)
    bpy.context.scene.frame_set(1)
    before = evaluated_local_rotation(obj, "lower")
    assert not limit.contains(before), "the test pose must start outside"
    assert limit.violation(before) > 0.5

    bpy.context.scene.joint_limits.enforce_live = True
    bpy.context.scene.frame_set(1)
    after = evaluated_local_rotation(obj, "lower")
    assert limit.violation(after) < 1e-3
    # the correction is the nearest allowed rotation, not just anything inside
    assert addon.limits.geometry.quaternion.quaternion_angle(after, limit.project(before)) < 1e-3
    # the channel of the bone's own mode holds the result (no silent mode change)
    assert pb.rotation_mode == mode


def test_skinned_mesh_and_bone_children_follow_the_limited_pose(clean_file, addon):
    """Enforcement tags the rig with the cheapest update that still re-evaluates the pose; what
    depends on the pose (Armature modifier, bone parenting) must see the limited rotation."""
    obj, pb, _ = _rig_with_limit(addon)
    limit = _limit(addon, pb)
    obj.animation_data.action = None
    mesh = bpy.data.meshes.new("Skin")
    mesh.from_pydata([(0.0, 0.0, 2.0), (0.0, 0.0, 3.0)], [], [])
    skin = bpy.data.objects.new("Skin", mesh)
    child = bpy.data.objects.new("Child", None)
    for o in (skin, child):
        bpy.context.scene.collection.objects.link(o)
    skin.vertex_groups.new(name="lower").add([0, 1], 1.0, "REPLACE")
    skin.modifiers.new("Armature", "ARMATURE").object = obj
    child.parent, child.parent_type, child.parent_bone = obj, "BONE", "lower"
    pb.rotation_quaternion = IMPOSSIBLE
    bpy.context.scene.frame_set(3)
    unlimited = np.array(skin.evaluated_get(bpy.context.evaluated_depsgraph_get()).data.vertices[1].co)
    bpy.context.scene.joint_limits.enforce_live = True
    bpy.context.scene.frame_set(4)

    depsgraph = bpy.context.evaluated_depsgraph_get()
    matrix = np.array(obj.evaluated_get(depsgraph).pose.bones["lower"].matrix)
    assert limit.violation(evaluated_local_rotation(obj, "lower")) < 1e-3
    tail = matrix[:3, :3] @ [0.0, 1.0, 0.0] + matrix[:3, 3]  # 1 m bone: its evaluated tail
    np.testing.assert_allclose(np.array(child.evaluated_get(depsgraph).matrix_world.translation), tail, atol=1e-5)
    rest = np.linalg.inv(np.array(obj.data.bones["lower"].matrix_local))
    expected = (matrix @ rest @ [0.0, 0.0, 3.0, 1.0])[:3]
    limited = np.array(skin.evaluated_get(depsgraph).data.vertices[1].co)
    np.testing.assert_allclose(limited, expected, atol=1e-5)
    assert np.linalg.norm(limited - unlimited) > 0.1


def test_influence_blends_the_correction(clean_file, addon):
    q = addon.limits.geometry.quaternion
    obj, pb, _ = _rig_with_limit(addon)
    limit = _limit(addon, pb)
    obj.animation_data.action = None
    pb.joint_limit.influence = 0.5
    pb.rotation_quaternion = IMPOSSIBLE
    bpy.context.scene.joint_limits.enforce_live = True
    bpy.context.scene.frame_set(1)
    after = evaluated_local_rotation(obj, "lower")
    full = limit.project(IMPOSSIBLE)
    half = q.slerp(IMPOSSIBLE, full, 0.5)
    assert q.quaternion_angle(after, half) < 1e-3


def test_influence_and_softening_apply_once_while_posing_interactively(clean_file, addon):
    q = addon.limits.geometry.quaternion
    obj, pb, _ = _rig_with_limit(addon)
    limit = _limit(addon, pb)
    obj.animation_data.action = None
    pb.joint_limit.influence = 0.5
    bpy.context.scene.joint_limits.enforce_live = True
    pb.rotation_quaternion = IMPOSSIBLE
    for _ in range(4):  # later updates of the rig (redraws, selection, our own tag) hand our result back
        obj.update_tag(refresh={"DATA"})
        bpy.context.view_layer.update()
    half = q.slerp(IMPOSSIBLE, limit.project(IMPOSSIBLE), 0.5)
    assert q.quaternion_angle(np.array(pb.rotation_quaternion), half) < 1e-3


def test_interactive_posing_is_limited_by_depsgraph_handler(clean_file, addon):
    obj, pb, _ = _rig_with_limit(addon)
    limit = _limit(addon, pb)
    obj.animation_data.action = None
    bpy.context.scene.joint_limits.enforce_live = True
    pb.rotation_quaternion = IMPOSSIBLE
    bpy.context.view_layer.update()  # fires depsgraph_update_post, as posing in the viewport does
    assert limit.violation(np.array(pb.rotation_quaternion)) < 1e-4


def test_limits_and_clouds_survive_save_and_reload(clean_file, addon, tmp_path):
    obj, pb, _ = _rig_with_limit(addon, "YZX", model="ellipsoid", fit_mode="SWING_TWIST")
    pb.joint_limit.influence = 0.75
    bpy.context.scene.joint_limits.enforce_live = True
    limit = _limit(addon, pb)
    cloud = addon.rig.io.storage.read_cloud(pb)
    path = tmp_path / "rig.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(path))
    bpy.ops.wm.read_homefile(use_empty=True)
    assert "Rig" not in bpy.data.objects
    bpy.ops.wm.open_mainfile(filepath=str(path))
    pb2 = bpy.data.objects["Rig"].pose.bones["lower"]
    assert pb2.joint_limit.model == "ellipsoid"
    assert pb2.joint_limit.mode == "SWING_TWIST"
    assert pb2.joint_limit.influence == pytest.approx(0.75)
    assert bpy.context.scene.joint_limits.enforce_live
    np.testing.assert_allclose(addon.rig.io.storage.read_cloud(pb2), cloud)
    reloaded = _limit(addon, pb2)
    probe = addon.limits.geometry.quaternion.quaternion_random(500, 3)
    np.testing.assert_array_equal(reloaded.contains(probe), limit.contains(probe))
    np.testing.assert_allclose(reloaded.project(probe), limit.project(probe), atol=1e-12)


def test_bake_writes_keys_inside_including_constraint_effects(clean_file, addon):
    q = addon.limits.geometry.quaternion
    obj, pb, _ = _rig_with_limit(addon)
    limit = _limit(addon, pb)
    # an impossible action: the bone swings to 100 degrees and back
    frames = 40
    t = np.linspace(0, 1, frames)
    motion = np.tile(np.array([1.0, 0, 0, 0]), (frames, 3, 1))
    motion[:, 2] = q.quaternion_from_exp_map(np.outer(1.75 * np.sin(np.pi * t), [1.0, 0, 0]))
    bad = addon.rig.io.humanoid.key_rotations(obj, motion, "Impossible")
    # a constraint that adds a further twist: bake must see the evaluated pose
    con = obj.pose.bones["upper"].constraints.new("LIMIT_ROTATION")
    con.owner_space = "LOCAL"
    con.use_limit_x = True
    con.min_x = con.max_x = 0.3
    assert bpy.ops.pose.joint_limits_bake() == {"FINISHED"}
    baked = bpy.data.actions["Impossible_limited"]
    assert obj.animation_data.action == bad, "bake leaves the source action assigned"
    keyed, ok = addon.rig.io.actions.keyed_rotations(obj, baked, ["upper", "lower"], np.arange(1, frames + 1))
    assert ok.all()
    assert limit.violation(keyed[:, 1]).max() < 1e-4
    assert limit.violation(motion[:, 2]).max() > 0.5
    # the constraint's effect is baked into the parent's keys
    np.testing.assert_allclose(q.euler_from_quaternion(keyed[:, 0], "XYZ")[:, 0], 0.3, atol=1e-4)
    # inside frames are unchanged
    inside = limit.contains(motion[:, 2])
    assert inside.any()
    assert q.quaternion_angle(keyed[inside, 1], motion[inside, 2]).max() < 1e-4


def test_report_counts_frames_out_of_limit(clean_file, addon):
    q = addon.limits.geometry.quaternion
    obj, pb, _ = _rig_with_limit(addon)
    limit = _limit(addon, pb)
    frames = 30
    motion = np.tile(np.array([1.0, 0, 0, 0]), (frames, 3, 1))
    motion[:, 2] = q.quaternion_from_exp_map(np.outer(np.linspace(0, 1.6, frames), [0, 0, 1.0]))
    addon.rig.io.humanoid.key_rotations(obj, motion, "Sweep")
    expected = limit.violation(motion[:, 2])
    assert bpy.ops.pose.joint_limits_report() == {"FINISHED"}
    text = bpy.data.texts["Joint Limits Report"].as_string()
    rows = addon.rig.tasks.report.violation_report(obj, bpy.context.scene, obj.animation_data.action, np.arange(1, frames + 1))
    row = next(r for r in rows if r["bone"] == "lower")
    assert row["frames_out"] == int(np.sum(expected > 1e-4))
    assert 0 < row["frames_out"] < frames
    assert row["worst_deg"] == pytest.approx(math.degrees(expected.max()), abs=0.05)
    assert row["worst_frame"] == frames
    assert "lower" in text


def test_export_native_matches_blender_limit_rotation(clean_file, addon):
    """The Euler box exported as Blender's own constraint limits exactly as our euler_box does."""
    q = addon.limits.geometry.quaternion
    obj, pb, _ = _rig_with_limit(addon, "XYZ")
    assert bpy.ops.pose.joint_limits_export_native() == {"FINISHED"}
    con = pb.constraints["Joint Limit (native)"]
    cloud = addon.rig.io.storage.read_cloud(pb)
    box = addon.limits.joint.JointLimit.fit(
        cloud, kind="euler_box", reference="REST", order="XYZ", padding=pb.joint_limit.padding
    )
    assert con.min_x == pytest.approx(box.model.params["mins"][0], abs=1e-6)
    obj.animation_data.action = None
    pb.joint_limit.enabled = False
    rng = np.random.default_rng(5)
    probes = q.quaternion_from_exp_map(rng.normal(scale=0.8, size=(25, 3)))
    for probe in probes:
        pb.rotation_euler = q.euler_from_quaternion(probe, "XYZ").tolist()
        bpy.context.view_layer.update()
        native = evaluated_local_rotation(obj, "lower")
        ours = box.project(np.array(q.quaternion_from_euler(np.array(pb.rotation_euler), "XYZ")))
        assert q.quaternion_angle(native, ours) < 1e-3


def test_mirror_copies_mirrored_samples_and_settings(clean_file, addon):
    """On the humanoid (mirrored about X = 0, rolls mirror images) the mirrored samples follow
    Blender's X-flip convention; rigs whose rolls differ: tests/rig/tasks/test_symmetry.py."""
    q = addon.limits.geometry.quaternion
    obj = addon.rig.io.humanoid.build_armature(addon.limits.body.skeleton.humanoid_skeleton())
    frames = 120
    names = [pb.name for pb in obj.pose.bones]
    motion = np.tile(np.array([1.0, 0, 0, 0]), (frames, len(names), 1))
    arm = names.index("upper_arm.L")
    motion[:, arm] = cone_motion(q, frames, seed=2)
    addon.rig.io.humanoid.key_rotations(obj, motion, "ROM")
    select_only(obj, ["upper_arm.L"])
    bpy.ops.pose.joint_limits_sample()
    obj.pose.bones["upper_arm.L"].joint_limit.model = "ellipsoid"
    bpy.ops.pose.joint_limits_fit()
    assert bpy.ops.pose.joint_limits_mirror() == {"FINISHED"}
    right = obj.pose.bones["upper_arm.R"]
    assert right.joint_limit.model == "ellipsoid"
    mirrored = addon.rig.io.storage.read_cloud(right)
    np.testing.assert_allclose(mirrored, motion[:, arm] * [1, 1, -1, -1], atol=1e-6)
    assert _limit(addon, right).contains(mirrored).all()


def test_show_cloud_creates_point_object_beside_the_rig(clean_file, addon):
    obj, pb, _ = _rig_with_limit(addon)
    assert bpy.ops.pose.joint_limits_show_cloud() == {"FINISHED"}
    cloud = bpy.data.objects["JL Rig lower cloud"]
    shape = bpy.data.objects["JL Rig lower limit"]
    assert len(cloud.data.vertices) == 240
    assert cloud.instance_type == "VERTS" and bpy.data.objects["JL Rig lower cloud dot"].parent == cloud
    bpy.context.view_layer.update()
    instances = [
        i
        for i in bpy.context.evaluated_depsgraph_get().object_instances
        if i.is_instance and i.parent and i.parent.original == cloud
    ]
    assert len(instances) == 240, "a visible dot on every sample"
    assert len(shape.data.polygons) > 100
    assert cloud.location.x > 0.5
    # every sample lies inside (or on) the drawn boundary's extent
    pts = np.array([v.co for v in cloud.data.vertices])
    verts = np.array([v.co for v in shape.data.vertices])
    assert np.abs(pts).max() <= np.abs(verts).max() + 1e-6


def test_clear_removes_limit_and_samples(clean_file, addon):
    obj, pb, _ = _rig_with_limit(addon)
    assert bpy.ops.pose.joint_limits_clear(what="BOTH") == {"FINISHED"}
    assert pb.joint_limit.limit_data == "" and pb.joint_limit.cloud_count == 0
    bpy.ops.ed.undo_push(message="cleared")
    expect_error(bpy.ops.pose.joint_limits_fit, "No selected bone has samples")


def test_changing_the_model_refits_from_stored_samples(clean_file, addon):
    obj, pb, _ = _rig_with_limit(addon, model="box")
    assert _limit(addon, pb).model.kind == "box"
    pb.joint_limit.model = "ellipsoid"
    assert _limit(addon, pb).model.kind == "ellipsoid"
    pb.joint_limit.mode = "SWING_TWIST"
    assert _limit(addon, pb).model.config["mode"] == "SWING_TWIST"


def test_panels_register_and_live_status_reports_violation(clean_file, addon):
    obj, pb, _ = _rig_with_limit(addon)
    obj.animation_data.action = None
    assert addon.ui.panels.sidebar.JOINTLIMITS_PT_limit.poll(bpy.context)
    assert addon.ui.panels.bone_constraints.JOINTLIMITS_PT_bone_constraint.bl_context == "bone_constraint"
    pb.rotation_quaternion = (1.0, 0.0, 0.0, 0.0)
    assert addon.rig.live.status.bone_status(pb) == ("Inside", True)
    pb.rotation_quaternion = IMPOSSIBLE
    text, inside = addon.rig.live.status.bone_status(pb)
    limit = _limit(addon, pb)
    assert inside is False and text == f"Outside by {math.degrees(limit.violation(IMPOSSIBLE)):.1f}°"
    bpy.ops.object.mode_set(mode="OBJECT")
    assert not addon.ui.panels.sidebar.JOINTLIMITS_PT_limit.poll(bpy.context)


def test_every_registered_model_fits_enforces_and_survives_reload(clean_file, addon, tmp_path):
    """The model menu lists every registered model; each one works end to end in Blender."""
    kinds = [
        item.identifier for item in bpy.types.Bone.bl_rna.properties["joint_limit"].fixed_type.properties["model"].enum_items
    ]
    assert {"euler_box", "box", "oriented_box", "ellipsoid", "kdop"} <= set(kinds)
    for kind in kinds:
        bpy.ops.wm.read_homefile(use_empty=True)
        addon.rig.live.reset()
        obj, pb, _ = _rig_with_limit(addon, model=kind)
        limit = _limit(addon, pb)
        if kind == "auto":  # picks a kind per bone
            assert limit.model.kind in {k for k, _ in addon.limits.fitting.cross_validation.AUTO_CANDIDATES}
            assert addon.rig.tasks.fit_report.read_report(pb.joint_limit)["chosen"] >= 0
        else:
            assert limit.model.kind == kind
        assert limit.contains(addon.rig.io.storage.read_cloud(pb)).mean() > 0.99, kind
        obj.animation_data.action = None
        pb.rotation_quaternion = IMPOSSIBLE
        bpy.context.scene.joint_limits.enforce_live = True
        bpy.context.scene.frame_set(1)
        assert limit.violation(evaluated_local_rotation(obj, "lower")) < 1e-3, kind
        path = tmp_path / f"{kind}.blend"
        bpy.ops.wm.save_as_mainfile(filepath=str(path))
        bpy.ops.wm.open_mainfile(filepath=str(path))
        reloaded = _limit(addon, bpy.data.objects["Rig"].pose.bones["lower"])
        probe = addon.limits.geometry.quaternion.quaternion_random(100, 7)
        np.testing.assert_array_equal(reloaded.contains(probe), limit.contains(probe))


def test_panel_shows_phi_of_the_sdf_grid_for_the_active_bone(clean_file, addon):
    obj, pb, _ = _rig_with_limit(addon, model="sdf_grid")
    obj.animation_data.action = None
    pb.rotation_quaternion = addon.rig.io.storage.read_cloud(pb)[17]  # a sampled pose
    inside = addon.rig.live.status.model_details(pb)
    pb.rotation_quaternion = IMPOSSIBLE
    outside = addon.rig.live.status.model_details(pb)
    assert inside[0].startswith("phi -") and "(inside)" in inside[0]
    assert outside[0].startswith("phi +") and "(outside)" in outside[0]
    assert outside[1].startswith("Memory") and float(outside[1].split()[1]) > 100, "a 32^3 grid is ~256 kB"


def test_rigs_sharing_an_armature_share_its_limits(clean_file, addon):
    """A linked duplicate (Alt+D) uses the same armature, so the same bones, settings and
    limits; each rig's own pose is still limited."""
    obj, pb, _ = _rig_with_limit(addon)
    limit = _limit(addon, pb)
    bpy.ops.object.mode_set(mode="OBJECT")
    with bpy.context.temp_override(selected_objects=[obj], selected_editable_objects=[obj], active_object=obj, object=obj):
        assert bpy.ops.object.duplicate(linked=True) == {"FINISHED"}
    twin = next(o for o in bpy.data.objects if o != obj and o.type == "ARMATURE")
    assert twin.data == obj.data and twin.pose.bones["lower"].joint_limit.has_limit
    for rig in (obj, twin):
        rig.animation_data.action = None
    set_local_rotation(twin.pose.bones["lower"], IMPOSSIBLE, addon.limits.geometry.quaternion)
    bpy.context.scene.joint_limits.enforce_live = True
    bpy.context.scene.frame_set(1)
    assert limit.violation(evaluated_local_rotation(twin, "lower")) < 1e-3
    assert limit.violation(evaluated_local_rotation(obj, "lower")) == 0.0  # its own pose, untouched

    twin.pose.bones["lower"].joint_limit.model = "ellipsoid"  # refits the one shared limit
    assert _limit(addon, obj.pose.bones["lower"]).model.kind == "ellipsoid"


def test_report_text_explains_its_columns_and_puts_bones_out_first(addon):
    from types import SimpleNamespace

    def row(bone, out, worst, frame):
        return {"bone": bone, "model": "kdop", "frames": 100, "frames_out": out, "worst_deg": worst, "worst_frame": frame}

    rows = [row("calm", 0, 0.0, 1), row("mild", 3, 2.0, 40), row("wild", 50, 30.0, 7), row("also_calm", 0, 0.0, 1)]
    text = addon.rig.tasks.report.report_text(SimpleNamespace(name="Rig"), SimpleNamespace(name="Act"), rows)
    lines = text.splitlines()
    assert any(line.strip().startswith("out:") for line in lines) and any(line.strip().startswith("worst:") for line in lines)
    body = [line for line in lines if line.split() and line.split()[0] in {r["bone"] for r in rows}]
    assert [line.split()[0] for line in body] == ["wild", "mild", "also_calm", "calm"]
    assert body[0].endswith(" 7") and body[1].endswith(" 40")
    assert body[2].endswith(" -") and body[3].endswith(" -"), "no frame is named when nothing is out"
    assert lines[-1] == "2 of 4 limited bones leave their limits"
