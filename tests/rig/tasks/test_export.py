# SPDX-License-Identifier: GPL-3.0-or-later
"""Engine exports and the rigid-body ragdoll on real Blender: the operators, the CLI command
and a short Bullet simulation."""

import json
import math
import re

import bpy
import numpy as np
import pytest
from pxr import Sdf, Usd, UsdPhysics
from rigs import expect_error, fitted_rig, select_only

pytestmark = pytest.mark.blender42


def _read(addon, path):
    return addon.limits.export.engine_export.read_export(path.read_text(encoding="utf-8"))


def test_the_operator_writes_one_file_with_each_bones_approximation_and_fidelity(clean_file, addon, tmp_path, capfd):
    obj, pb, _ = fitted_rig(addon)
    path = tmp_path / "rig.json"
    assert bpy.ops.pose.joint_limits_export_engine(filepath=str(path), format="jolt") == {"FINISHED"}
    data = _read(addon, path)
    assert data["engine"] == "jolt" and data["armature"] == "Rig"
    (entry,) = data["bones"]
    assert entry["bone"] == "lower" and entry["parent"] == "upper"
    np.testing.assert_allclose(entry["rest"]["matrix"], np.array(pb.bone.matrix_local), atol=1e-6)
    np.testing.assert_allclose(entry["joint"]["position"], [0.0, 1.0, 0.0], atol=1e-6)  # 'lower' starts at upper's tail
    # the cone motion swings up to 0.6 rad and twists 0.3: the fitted limits are about that
    cone = entry["approximations"]["cone"]
    assert 0.45 < cone["mNormalHalfConeAngle"] < 0.75 and 0.45 < cone["mPlaneHalfConeAngle"] < 0.75
    assert 0.2 < cone["mTwistMaxAngle"] < 0.35
    assert set(entry["approximations"]) == {"cone", "pyramid"}
    for approx in entry["approximations"].values():
        assert approx["fidelity"]["sample_share"] >= 0.99 and approx["fidelity"]["limit_volume"] > 0
    assert "lower cone: accepts" in capfd.readouterr().out
    assert "lower pyramid: accepts" in bpy.data.texts["Joint Limits Engine Export"].as_string()


def test_the_export_is_in_the_file_export_menu(addon):
    draw = bpy.types.TOPBAR_MT_file_export._dyn_ui_initialize()
    assert addon.ui.operators.export_engine.menu_export in draw


def test_usd_is_written_as_a_usda_layer(clean_file, addon, tmp_path):
    fitted_rig(addon)
    path = tmp_path / "rig.json"
    assert bpy.ops.pose.joint_limits_export_engine(filepath=str(path), format="usd") == {"FINISHED"}
    text = (tmp_path / "rig.usda").read_text(encoding="utf-8")  # the extension follows the format
    assert text.startswith("#usda 1.0") and 'def PhysicsSphericalJoint "lower"' in text
    assert "rel physics:body0 = </Rig/Bodies/upper>" in text
    # what Pixar's UsdPhysics parser reads (usd-core, beside bpy's own USD): 'lower' and its
    # parent 'upper' as rigid bodies, one spherical joint between them with the cone as written
    stage = Usd.Stage.Open(str(tmp_path / "rig.usda"))
    parsed = UsdPhysics.UsdPhysicsLoadStageFromPrimRange(stage, ["/"])
    bodies, _ = parsed[UsdPhysics.ObjectType.RigidBody]
    (joint_path,), (joint,) = parsed[UsdPhysics.ObjectType.SphericalJoint]
    assert sorted(map(str, bodies)) == ["/Rig/Bodies/lower", "/Rig/Bodies/upper"]
    assert str(joint_path) == "/Rig/Joints/lower" and joint.jointEnabled and joint.axis == UsdPhysics.Axis.X
    assert (joint.body0, joint.body1) == (Sdf.Path("/Rig/Bodies/upper"), Sdf.Path("/Rig/Bodies/lower"))
    written = [float(re.search(rf"float physics:{key} = (\S+)", text)[1]) for key in ("coneAngle0Limit", "coneAngle1Limit")]
    assert joint.limit.enabled and [joint.limit.lower, joint.limit.upper] == [float(np.float32(v)) for v in written]
    # the cone motion swings up to 0.6 rad: the cone's half angles (degrees) are about that
    assert all(math.degrees(0.45) < v < math.degrees(0.75) for v in written)


def test_bones_without_samples_are_refused_in_the_status_bar(clean_file, addon, tmp_path):
    obj, _, _ = fitted_rig(addon)
    select_only(obj, ["root"])
    expect_error(bpy.ops.pose.joint_limits_export_engine, "No selected bone has samples", filepath=str(tmp_path / "x.json"))
    assert not (tmp_path / "x.json").exists()


def test_the_cli_exports_the_whole_rig_and_reports_bad_input_in_one_line(clean_file, addon, tmp_path, capsys):
    fitted_rig(addon)
    bpy.ops.object.mode_set(mode="OBJECT")
    path = tmp_path / "rig_physx.json"
    assert addon.cli.main(["export", "--format", "physx", "--output", str(path), "--break-margin", "20"]) == 0
    out = capsys.readouterr().out
    assert "exported 1 bones of Rig for physx" in out and "lower cone: accepts" in out
    data = json.loads(path.read_text(encoding="utf-8"))
    assert data["bones"][0]["break_margin_deg"] == 20.0
    assert data["bones"][0]["approximations"]["cone"]["joint"] == "PxD6Joint"

    assert addon.cli.main(["export", "--format", "havok", "--output", str(path)]) == 2
    assert addon.cli.main(["export", "--format", "json", "--output", str(tmp_path / "missing" / "x.json")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2 and all(line.startswith("joint_limits: error: ") for line in err)
    assert "havok" in err[0] and "missing" in err[1]


def _bullet_local(addon, parent, child, rest):
    """The child body's rotation relative to the parent's, against their rest relative rotation:
    the local rotation Bullet's Generic constraint limits (w, x, y, z)."""
    q_lib = addon.limits.geometry.quaternion
    current = np.array((parent.matrix_world.to_3x3().inverted() @ child.matrix_world.to_3x3()).to_quaternion())
    return q_lib.quaternion_multiply(q_lib.quaternion_conjugate(rest), current)


def test_the_ragdoll_joint_limits_are_the_fitted_ones_and_hold_in_a_simulation(clean_file, addon):
    el = addon.limits.export.engine_limits
    obj, pb, _ = fitted_rig(addon)
    obj.rotation_euler = (math.pi / 2, 0.0, 0.0)  # the chain lies along -Y: gravity swings 'lower' down
    bpy.context.view_layer.update()
    assert bpy.ops.pose.joint_limits_ragdoll() == {"FINISHED"}
    coll = bpy.data.collections["Rig Ragdoll"]
    names = sorted(o.name for o in coll.objects)
    assert names == ["Rig lower body", "Rig lower joint", "Rig upper body"]
    lower, upper = bpy.data.objects["Rig lower body"], bpy.data.objects["Rig upper body"]
    joint = bpy.data.objects["Rig lower joint"]
    assert lower.rigid_body.type == "ACTIVE" and upper.rigid_body.type == "PASSIVE"
    # placed at the bones' rest pose: the body's centre halfway along 'lower', the joint at its head
    head, tail = obj.matrix_world @ pb.bone.head_local, obj.matrix_world @ pb.bone.tail_local
    assert (lower.matrix_world.translation - (head + tail) / 2).length < 1e-5
    assert (joint.matrix_world.translation - head).length < 1e-5
    assert (
        lower.matrix_world.to_quaternion().rotation_difference((obj.matrix_world @ pb.bone.matrix_local).to_quaternion())
    ).angle < 1e-5
    # the constraint's limits are the fitted Euler box of the bone's samples
    region = el.fit_euler(addon.rig.io.storage.read_cloud(pb), addon.rig.io.storage.read_limit(pb))
    con_lower, con_upper = addon.rig.tasks.ragdoll.constraint_limits(joint)
    np.testing.assert_allclose(con_lower, region.lower, atol=1e-6)
    np.testing.assert_allclose(con_upper, region.upper, atol=1e-6)
    assert joint.rigid_body_constraint.object1 == upper and joint.rigid_body_constraint.object2 == lower
    assert joint["joint_limits_break_margin_deg"] == pytest.approx(el.DEFAULT_BREAK_MARGIN_DEG)

    # a short simulation: 'lower' falls onto its limit and stays within it
    scene = bpy.context.scene
    rest = np.array((upper.matrix_world.to_3x3().inverted() @ lower.matrix_world.to_3x3()).to_quaternion())
    angles = []
    for frame in range(1, 41):
        scene.frame_set(frame)
        local = _bullet_local(addon, upper, lower, rest)
        angles.append(el.bullet_euler_from_quaternion(local))
    angles = np.array(angles)
    tolerance = math.radians(3.0)
    assert np.all(angles >= region.lower - tolerance) and np.all(angles <= region.upper + tolerance)
    moved = np.abs(angles[-1]).max()
    assert moved > 0.3  # it did swing (to the limit, not just sit at rest)
    assert np.all(np.isfinite(np.array(lower.matrix_world)))


def test_building_again_replaces_the_ragdoll_and_undo_removes_it(clean_file, addon, tmp_path):
    obj, _, _ = fitted_rig(addon)
    bpy.ops.wm.save_as_mainfile(filepath=str(tmp_path / "ragdoll.blend"))
    bpy.ops.wm.open_mainfile(filepath=str(tmp_path / "ragdoll.blend"))  # starts the undo stack here
    obj = bpy.data.objects["Rig"]
    select_only(obj, ["lower"])
    bpy.ops.ed.undo_push(message="fitted")
    assert bpy.ops.pose.joint_limits_ragdoll("EXEC_DEFAULT", True) == {"FINISHED"}
    assert bpy.ops.pose.joint_limits_ragdoll("EXEC_DEFAULT", True) == {"FINISHED"}
    assert len(bpy.data.collections["Rig Ragdoll"].objects) == 3
    assert len([o for o in bpy.data.objects if o.name.startswith("Rig lower body")]) == 1
    bpy.ops.ed.undo()
    bpy.ops.ed.undo()
    assert "Rig lower body" not in bpy.data.objects and "Rig lower joint" not in bpy.data.objects


def _two_boxes_held_by_a_generic_constraint(limits):
    """A passive box and an active one beside it along +Y, joined at the origin by a Generic
    rigid body constraint with angular ``limits`` ``{axis: (lower, upper)}`` (radians)."""
    import bmesh

    scene = bpy.context.scene
    with bpy.context.temp_override(scene=scene):
        bpy.ops.rigidbody.world_add()
    world = scene.rigidbody_world
    world.solver_iterations = 50
    world.collection = bpy.data.collections.new("RigidBodyWorld")
    world.constraints = bpy.data.collections.new("RigidBodyConstraints")
    boxes = []
    for name, y in (("A", -0.5), ("B", 0.5)):
        mesh = bpy.data.meshes.new(name)
        bm = bmesh.new()
        bmesh.ops.create_cube(bm, size=1.0)
        bmesh.ops.scale(bm, vec=(0.2, 1.0, 0.2), verts=bm.verts)
        bm.to_mesh(mesh)
        bm.free()
        box = bpy.data.objects.new(name, mesh)
        box.location = (0.0, y, 0.0)
        scene.collection.objects.link(box)
        world.collection.objects.link(box)
        boxes.append(box)
    boxes[0].rigid_body.type = "PASSIVE"
    boxes[1].rigid_body.angular_damping = 0.5
    joint = bpy.data.objects.new("joint", None)
    scene.collection.objects.link(joint)
    world.constraints.objects.link(joint)
    con = joint.rigid_body_constraint
    con.type, con.object1, con.object2 = "GENERIC", boxes[0], boxes[1]
    for axis, (lower, upper) in limits.items():
        setattr(con, f"use_limit_ang_{axis}", True)
        setattr(con, f"limit_ang_{axis}_lower", lower)
        setattr(con, f"limit_ang_{axis}_upper", upper)
        setattr(con, f"use_limit_lin_{axis}", True)
        setattr(con, f"limit_lin_{axis}_lower", 0.0)
        setattr(con, f"limit_lin_{axis}_upper", 0.0)
    return boxes


def test_bullet_limits_the_angles_bullet_euler_from_quaternion_reads(clean_file, addon):
    """Asymmetric limits, gravity pulling three ways: the box comes to rest on its limits as
    :func:`bullet_euler_from_quaternion` reads the joint rotation (R = Rz(-z) Ry(-y) Rx(-x)),
    which a plain Rx Ry Rz reading of the same rotation would put outside them."""
    el = addon.limits.export.engine_limits
    limits = {"x": (-0.5, 0.1), "y": (-0.15, 0.05), "z": (-0.2, 0.35)}
    lower, upper = (np.array([limits[a][i] for a in "xyz"]) for i in (0, 1))
    a, b = _two_boxes_held_by_a_generic_constraint(limits)
    scene = bpy.context.scene
    for gravity in ((6.0, 0.0, -6.0), (-6.0, 3.0, -6.0), (5.0, -5.0, 5.0)):
        scene.gravity = gravity
        scene.rigidbody_world.point_cache.frame_start = 1  # (a fresh simulation)
        for frame in range(1, 61):
            scene.frame_set(frame)
        rel = np.array((a.matrix_world.to_3x3().inverted() @ b.matrix_world.to_3x3()).to_quaternion())
        angles = el.bullet_euler_from_quaternion(rel)
        assert np.all(angles >= lower - 0.02) and np.all(angles <= upper + 0.02), (gravity, angles)
        on_bound = np.minimum(np.abs(angles - lower), np.abs(angles - upper)) < 0.02
        assert on_bound.sum() >= 2, (gravity, angles)  # held by the limits, not hanging free
