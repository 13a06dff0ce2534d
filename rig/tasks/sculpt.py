# SPDX-License-Identifier: GPL-3.0-or-later
"""Sculpting a bone's limit as a mesh (seed 000, section 3.4): export the boundary of the
allowed region as a closed mesh beside the rig, edit it with any Blender tool, rebuild the
bone's signed-distance-grid limit from it.

The mesh lives in rotation space: its vertex coordinates are exp-map radians relative to the
limit's reference pose, and the object is scaled by the scene's ``display_scale`` (metres per
radian) and placed where :mod:`.display` shows the bone's cloud, so the samples sit inside it.
The object remembers its bone and the matrix it was exported with (custom properties), so
moving or scaling it in Object Mode, editing or sculpting its vertices, and modifiers (e.g. an
enclosing sphere with a Shrinkwrap modifier targeting it) all change the rebuilt limit: the
rebuild reads the *evaluated* mesh in world space and undoes the export matrix.
"""

import bpy
import numpy as np
from mathutils import Matrix

from ...limits.geometry.quaternion import quaternion_angle, quaternion_mean
from ...limits.joint import JointLimit, reference_rotation, relative_cloud
from ...limits.model import SCULPT
from ...limits.models.sdf.grid import SdfGridLimit
from ...limits.models.sdf.sculpt import check_closed_manifold, mesh_from_sdf, sdf_from_mesh
from ..io.exported import (
    PROP_ARMATURE,
    PROP_BONE,
    PROP_CENTRE,
    PROP_MATRIX,
    PROP_REFERENCE,
    exported_bone,
    find_exported,
    is_exported,
)
from ..io.storage import read_cloud, read_limit, store_limit
from .display import beside_rig, display_object
from .fit import reference_frame_rotation

#: Custom property on an exported mesh object (the others: :mod:`..io.exported`).
PROP_RESOLUTION = "joint_limits_resolution"

#: Grid resolution when the bone's limit is not already an exp-map SDF grid.
DEFAULT_RESOLUTION = 32


def sculpt_object_name(obj, pose_bone):
    return f"JL {obj.name} {pose_bone.name} sculpt"


def is_sculpt_mesh(mesh_obj):
    """Whether ``mesh_obj`` was made by :func:`export_sculpt_mesh`."""
    return is_exported(mesh_obj, "MESH")


def sculpt_source(mesh_obj):
    """The exported mesh that gives ``mesh_obj`` its bone: itself, or the target of one of its
    Shrinkwrap modifiers (an enclosing sphere shrink-wrapped onto the exported mesh); ``None``."""
    if mesh_obj is None or mesh_obj.type != "MESH":
        return None
    if is_sculpt_mesh(mesh_obj):
        return mesh_obj
    for mod in mesh_obj.modifiers:
        if mod.type == "SHRINKWRAP" and is_sculpt_mesh(mod.target):
            return mod.target
    return None


def find_sculpt_mesh(obj, pose_bone):
    """The mesh exported for ``pose_bone`` of armature ``obj``, or ``None``."""
    return find_exported("MESH", obj, pose_bone)


def sculpt_bone(mesh_obj):
    """``(armature object, pose bone)`` an exported mesh belongs to; ``ValueError`` when gone."""
    source = sculpt_source(mesh_obj)
    if source is None:
        raise ValueError(f"{mesh_obj.name} was not exported by Joint Limits (and does not shrink-wrap onto such a mesh)")
    return exported_bone(source)


def _exp_map_grid(obj, pose_bone, resolution):
    """``(phi, lower, spacing, reference, centre, resolution, how)`` of the bone's region in
    exp-map space: its own grid when the limit is an exp-map SDF grid, else a fit of its cloud."""
    settings = pose_bone.joint_limit
    limit = read_limit(pose_bone)
    model = None if limit is None else limit.model
    if model is not None and model.can(SCULPT):
        n = resolution or model.config["resolution"]
        return model.params["phi"], model.params["lower"], model.params["spacing"], limit.reference, limit.centre, n, "grid"
    cloud = read_cloud(pose_bone)
    if not len(cloud):
        raise ValueError(
            f"{pose_bone.name}: its {model.kind if model else 'missing'} limit is not an SDF grid and it has no samples to fit one; sample an action first"
        )
    n = resolution or DEFAULT_RESOLUTION
    if limit is not None:
        reference, centre = limit.reference, limit.centre
        rel = limit.to_relative(cloud)  # the cover the limit itself reads
    else:
        frame = reference_frame_rotation(obj, pose_bone) if settings.reference == "FRAME" else None
        reference = reference_rotation(cloud, settings.reference, frame)
        rel = relative_cloud(cloud, reference)
        centre = quaternion_mean(rel)
        if np.sum(rel @ centre) < 0:
            centre = -centre
    fitted = SdfGridLimit.fit(rel, padding=settings.padding, resolution=n)
    return fitted.params["phi"], fitted.params["lower"], fitted.params["spacing"], reference, centre, n, "samples"


def export_sculpt_mesh(obj, pose_bone, scene, resolution=None):
    """Create (or replace) the editable mesh of ``pose_bone``'s allowed region.

    Parameters
    ----------
    obj : bpy.types.Object
        The armature.
    pose_bone : bpy.types.PoseBone
        A bone with an exp-map SDF grid limit, or with samples (an SDF grid is fitted to them).
    scene : bpy.types.Scene
        Gives ``joint_limits.display_scale`` (metres per radian) and the display collection.
    resolution : int, optional
        Grid nodes per axis of the rebuild (and of the fit when the limit is not an SDF grid);
        default the limit's own, or :data:`DEFAULT_RESOLUTION`.

    Returns
    -------
    mesh_obj : bpy.types.Object
        Named ``"JL <armature> <bone> sculpt"``, in collection "Joint Limits Display"; vertex
        coordinates are exp-map radians relative to the limit's reference.
    info : dict
        ``vertices``, ``faces``, ``resolution``, ``source`` ("grid" or "samples").
    """
    phi, lower, spacing, reference, centre, n, source = _exp_map_grid(obj, pose_bone, resolution)
    vertices, triangles = mesh_from_sdf(phi, lower, spacing)
    if not len(triangles):
        raise ValueError(f"{pose_bone.name}: the limit's region is empty")
    scale = scene.joint_limits.display_scale
    offset = beside_rig(obj, pose_bone, scene)
    name = sculpt_object_name(obj, pose_bone)
    mesh = bpy.data.meshes.new(name)
    mesh.vertices.add(len(vertices))
    mesh.vertices.foreach_set("co", vertices.astype(np.float32).ravel())
    mesh.loops.add(3 * len(triangles))
    mesh.loops.foreach_set("vertex_index", triangles.astype(np.int32).ravel())
    mesh.polygons.add(len(triangles))
    mesh.polygons.foreach_set("loop_start", np.arange(0, 3 * len(triangles), 3, dtype=np.int32))
    mesh.update(calc_edges=True)
    mesh.validate()
    mesh_obj = display_object(name, mesh, scene)
    matrix = Matrix.Translation(offset) @ Matrix.Diagonal((scale, scale, scale, 1.0))
    mesh_obj.parent = None
    mesh_obj.matrix_world = matrix
    mesh_obj.show_wire = True
    mesh_obj.hide_render = True
    mesh_obj[PROP_ARMATURE] = obj.name
    mesh_obj[PROP_BONE] = pose_bone.name
    mesh_obj[PROP_MATRIX] = [float(x) for row in matrix for x in row]
    mesh_obj[PROP_RESOLUTION] = int(n)
    mesh_obj[PROP_REFERENCE] = [float(x) for x in reference]
    mesh_obj[PROP_CENTRE] = [float(x) for x in centre]
    return mesh_obj, {"vertices": len(vertices), "faces": len(triangles), "resolution": int(n), "source": source}


def evaluated_triangles(mesh_obj, depsgraph):
    """``(vertices (V, 3) world space, triangles (T, 3))`` of the evaluated mesh (modifiers,
    shape keys and Edit Mode changes included)."""
    if mesh_obj.mode in {"EDIT", "SCULPT"}:
        mesh_obj.update_from_editmode()
        depsgraph.update()
    evaluated = mesh_obj.evaluated_get(depsgraph)
    mesh = evaluated.to_mesh()
    try:
        mesh.calc_loop_triangles()
        co = np.empty(3 * len(mesh.vertices), dtype=np.float32)
        mesh.vertices.foreach_get("co", co)
        tri = np.empty(3 * len(mesh.loop_triangles), dtype=np.int32)
        mesh.loop_triangles.foreach_get("vertices", tri)
        matrix = np.array(evaluated.matrix_world, dtype=float)
    finally:
        evaluated.to_mesh_clear()
    local = co.reshape(-1, 3).astype(float)
    world = local @ matrix[:3, :3].T + matrix[:3, 3]
    return world, tri.reshape(-1, 3).astype(np.intp)


def rebuild_from_sculpt_mesh(mesh_obj, depsgraph, resolution=None):
    """Rebuild the bone's limit from an (edited) exported mesh and store it on the bone.

    Parameters
    ----------
    mesh_obj : bpy.types.Object
        The exported mesh, or a mesh shrink-wrapped onto it.
    depsgraph : bpy.types.Depsgraph
        For the evaluated mesh.
    resolution : int, optional
        Grid nodes per axis; default the one stored at export.

    Returns
    -------
    limit : JointLimit
        The stored limit: an exp-map SDF grid, the bone's current reference and centre (those
        stored at export when the bone's reference has changed or it has no limit).
    info : dict
        ``faces``, ``resolution``, ``inside_nodes``, ``components``, ``bone``, ``armature``,
        ``reference_changed`` (bool).

    Raises
    ------
    ValueError
        Open or non-manifold meshes ("mesh is open: 12 boundary edges"), flat or empty ones, a
        limit that would not read back; the bone's limit and settings are then left unchanged.
    """
    arm, pose_bone = sculpt_bone(mesh_obj)
    source = sculpt_source(mesh_obj)
    world, triangles = evaluated_triangles(mesh_obj, depsgraph)
    try:
        check_closed_manifold(triangles)
    except ValueError as err:
        raise ValueError(f"{mesh_obj.name}: {err}") from None
    export = np.array(source[PROP_MATRIX], dtype=float).reshape(4, 4)
    inverse = np.linalg.inv(export)
    params = world @ inverse[:3, :3].T + inverse[:3, 3]
    n = int(resolution or source.get(PROP_RESOLUTION, DEFAULT_RESOLUTION))
    phi, lower, spacing = sdf_from_mesh(params, triangles, resolution=n)
    model = SdfGridLimit.from_grid(phi, lower, spacing, space="EXP_MAP")
    reference = np.array(source[PROP_REFERENCE], dtype=float)
    centre = np.array(source[PROP_CENTRE], dtype=float)
    current = read_limit(pose_bone)
    changed = True
    if current is not None and current.reference.ndim == 1 and quaternion_angle(current.reference, reference) < 1e-6:
        reference, centre, changed = current.reference, current.centre, False
    try:
        store_limit(pose_bone, JointLimit(model, reference, centre))  # validated before anything is written
    except ValueError as err:
        raise ValueError(f"{mesh_obj.name}: {err}") from None
    pose_bone.joint_limit.last_error = ""
    info = {
        "faces": len(triangles),
        "resolution": n,
        "inside_nodes": model.fit_report["inside_nodes"],
        "components": model.fit_report["components"],
        "bone": pose_bone.name,
        "armature": arm.name,
        "reference_changed": changed and current is not None,
    }
    return read_limit(pose_bone), info
