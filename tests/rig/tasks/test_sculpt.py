# SPDX-License-Identifier: GPL-3.0-or-later
"""Sculpted limits in Blender: export a bone's SDF grid as a mesh, edit it, rebuild the limit."""

import bpy
import numpy as np
import pytest
from rigs import chain_rig, cone_motion, expect_error, select_only

pytestmark = pytest.mark.blender42


def _rig(addon, model="sdf_grid", frames=120):
    obj = chain_rig()
    motion = np.tile(np.array([1.0, 0, 0, 0]), (frames, 3, 1))
    motion[:, 2] = cone_motion(addon.limits.geometry.quaternion, frames)
    addon.rig.io.humanoid.key_rotations(obj, motion, "ROM")
    select_only(obj, ["lower"])
    assert bpy.ops.pose.joint_limits_sample() == {"FINISHED"}
    pb = obj.pose.bones["lower"]
    pb.joint_limit.model = model
    assert bpy.ops.pose.joint_limits_fit() == {"FINISHED"}
    return obj, pb


def _mesh_arrays(addon, mesh_obj):
    depsgraph = bpy.context.evaluated_depsgraph_get()
    return addon.rig.tasks.sculpt.evaluated_triangles(mesh_obj, depsgraph)


def _to_params(addon, mesh_obj, world):
    export = np.array(mesh_obj[addon.rig.tasks.sculpt.PROP_MATRIX]).reshape(4, 4)
    inverse = np.linalg.inv(export)
    return world @ inverse[:3, :3].T + inverse[:3, 3]


def _rel_exp(addon, limit, local):
    return addon.limits.geometry.quaternion.exp_map_from_quaternion(limit.to_relative(local))


def test_export_gives_a_closed_mesh_around_the_samples(clean_file, addon):
    obj, pb = _rig(addon)
    limit = addon.rig.io.storage.read_limit(pb)
    assert bpy.ops.pose.joint_limits_sculpt_export() == {"FINISHED"}
    mesh_obj = bpy.data.objects[f"JL {obj.name} lower sculpt"]
    assert mesh_obj.name in bpy.data.collections["Joint Limits Display"].objects
    assert mesh_obj.scale[0] == pytest.approx(bpy.context.scene.joint_limits.display_scale)
    world, triangles = _mesh_arrays(addon, mesh_obj)
    addon.limits.models.sdf.sculpt.check_closed_manifold(triangles)
    params = _to_params(addon, mesh_obj, world)
    assert addon.limits.models.sdf.sculpt.signed_volume(params, triangles) > 0
    # the samples are inside the mesh (ray parity on the exported surface)
    cloud = addon.rig.io.storage.read_cloud(pb)
    p = _rel_exp(addon, limit, cloud)
    lower, spacing = params.min(axis=0) - 0.1, np.full(3, 0.01)
    n = int(np.ceil((params.max(axis=0) + 0.1 - lower).max() / 0.01)) + 1
    inside = addon.limits.models.sdf.sculpt.inside_mesh(params[triangles], lower, spacing, n)
    cell = np.rint((p - lower) / spacing).astype(int)
    assert inside[tuple(cell.T)].all()
    # rebuilding the unedited mesh gives back (nearly) the same limit
    assert bpy.ops.pose.joint_limits_sculpt_rebuild() == {"FINISHED"}
    rebuilt = addon.rig.io.storage.read_limit(pb)
    assert rebuilt.model.kind == "sdf_grid" and pb.joint_limit.model == "sdf_grid"
    assert rebuilt.contains(cloud).all()
    probe = limit.from_relative(
        addon.limits.geometry.quaternion.quaternion_from_exp_map(np.random.default_rng(0).uniform(-1.2, 1.2, (2000, 3)))
    )
    assert np.mean(rebuilt.contains(probe) == limit.contains(probe)) > 0.97
    np.testing.assert_allclose(rebuilt.reference, limit.reference)


def test_scaling_the_mesh_in_object_mode_shrinks_the_limit(clean_file, addon):
    obj, pb = _rig(addon)
    limit = addon.rig.io.storage.read_limit(pb)
    assert bpy.ops.pose.joint_limits_sculpt_export() == {"FINISHED"}
    mesh_obj = bpy.data.objects[f"JL {obj.name} lower sculpt"]
    bpy.ops.object.mode_set(mode="OBJECT")
    mesh_obj.scale = mesh_obj.scale * 0.5  # about the object's origin, the reference pose
    bpy.context.view_layer.objects.active = mesh_obj
    assert bpy.ops.pose.joint_limits_sculpt_rebuild() == {"FINISHED"}
    rebuilt = addon.rig.io.storage.read_limit(pb)
    cloud = addon.rig.io.storage.read_cloud(pb)
    q = addon.limits.geometry.quaternion
    p = _rel_exp(addon, limit, cloud)
    outer = limit.from_relative(q.quaternion_from_exp_map(p))  # the samples: allowed before
    assert limit.contains(outer).all()
    far = np.linalg.norm(p, axis=1) > 0.7 * np.linalg.norm(p, axis=1).max()
    assert not rebuilt.contains(outer[far]).any(), "the outer samples are now forbidden"
    inner = limit.from_relative(q.quaternion_from_exp_map(0.25 * p))
    assert rebuilt.contains(inner).all(), "rotations near the reference stay allowed"


def test_moving_vertices_changes_only_that_side(clean_file, addon):
    obj, pb = _rig(addon)
    limit = addon.rig.io.storage.read_limit(pb)
    assert bpy.ops.pose.joint_limits_sculpt_export() == {"FINISHED"}
    mesh_obj = bpy.data.objects[f"JL {obj.name} lower sculpt"]
    mesh = mesh_obj.data
    co = np.empty(3 * len(mesh.vertices), dtype=np.float32)
    mesh.vertices.foreach_get("co", co)
    co = co.reshape(-1, 3)
    co[:, 0] = np.where(co[:, 0] > 0, 0.3 * co[:, 0], co[:, 0])  # push the +X side in
    mesh.vertices.foreach_set("co", co.ravel())
    mesh.update()
    assert bpy.ops.pose.joint_limits_sculpt_rebuild() == {"FINISHED"}  # from Pose Mode
    rebuilt = addon.rig.io.storage.read_limit(pb)
    q = addon.limits.geometry.quaternion
    cloud = addon.rig.io.storage.read_cloud(pb)
    p = _rel_exp(addon, limit, cloud)
    samples = limit.from_relative(q.quaternion_from_exp_map(p))
    edited = p[:, 0] > 0.6 * p[:, 0].max()
    kept = p[:, 0] < -0.05
    assert edited.any() and kept.any()
    assert not rebuilt.contains(samples[edited]).any()
    assert rebuilt.contains(samples[kept]).all()


def test_shrinkwrapped_enclosing_sphere_rebuilds_the_limit(clean_file, addon):
    obj, pb = _rig(addon)
    limit = addon.rig.io.storage.read_limit(pb)
    assert bpy.ops.pose.joint_limits_sculpt_export() == {"FINISHED"}
    target = bpy.data.objects[f"JL {obj.name} lower sculpt"]
    bpy.ops.object.mode_set(mode="OBJECT")
    # seed 000, Fig. 3: an enclosing sphere shrink-wrapped onto the exported surface
    import bmesh

    bm = bmesh.new()
    bmesh.ops.create_icosphere(bm, subdivisions=4, radius=2.0 * max(target.dimensions))
    mesh = bpy.data.meshes.new("Enclosing")
    bm.to_mesh(mesh)
    bm.free()
    sphere = bpy.data.objects.new("Enclosing", mesh)
    bpy.context.scene.collection.objects.link(sphere)
    sphere.matrix_world = target.matrix_world.copy()
    mod = sphere.modifiers.new("Shrinkwrap", "SHRINKWRAP")
    mod.target = target
    bpy.context.view_layer.objects.active = sphere
    assert bpy.ops.pose.joint_limits_sculpt_rebuild() == {"FINISHED"}
    rebuilt = addon.rig.io.storage.read_limit(pb)
    cloud = addon.rig.io.storage.read_cloud(pb)
    assert np.mean(rebuilt.contains(cloud)) > 0.95
    probe = limit.from_relative(
        addon.limits.geometry.quaternion.quaternion_from_exp_map(np.random.default_rng(1).uniform(-1.2, 1.2, (2000, 3)))
    )
    assert np.mean(rebuilt.contains(probe) == limit.contains(probe)) > 0.9
    assert not rebuilt.contains(probe).all(), "the sphere was wrapped, not taken as it is"


def test_open_mesh_is_refused_and_the_limit_is_kept(clean_file, addon):
    obj, pb = _rig(addon)
    before = pb.joint_limit.limit_data
    assert bpy.ops.pose.joint_limits_sculpt_export() == {"FINISHED"}
    mesh_obj = bpy.data.objects[f"JL {obj.name} lower sculpt"]
    import bmesh

    bm = bmesh.new()
    bm.from_mesh(mesh_obj.data)
    bm.faces.ensure_lookup_table()
    bmesh.ops.delete(bm, geom=[bm.faces[0]], context="FACES_ONLY")
    bm.to_mesh(mesh_obj.data)
    bm.free()
    expect_error(bpy.ops.pose.joint_limits_sculpt_rebuild, "mesh is open: 3 boundary edges")
    assert pb.joint_limit.limit_data == before


def test_export_fits_from_samples_for_other_models_and_polls_explain(clean_file, addon):
    obj, pb = _rig(addon, model="kdop")
    assert not bpy.ops.pose.joint_limits_sculpt_rebuild.poll()
    assert bpy.ops.pose.joint_limits_sculpt_export() == {"FINISHED"}
    assert bpy.ops.pose.joint_limits_sculpt_rebuild.poll()
    assert bpy.ops.pose.joint_limits_sculpt_rebuild() == {"FINISHED"}
    assert pb.joint_limit.model == "sdf_grid"
    assert addon.rig.io.storage.read_limit(pb).contains(addon.rig.io.storage.read_cloud(pb)).mean() > 0.97
    # undo after a rebuild does not crash (background sessions may have no undo stack)
    try:
        bpy.ops.ed.undo_push(message="after rebuild")
        bpy.ops.ed.undo()
    except RuntimeError:
        pass
    bpy.ops.pose.select_all(action="DESELECT")
    obj.data.bones.active = obj.data.bones["root"]
    assert not bpy.ops.pose.joint_limits_sculpt_export.poll()
