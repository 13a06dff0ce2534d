# SPDX-License-Identifier: GPL-3.0-or-later
"""Showing a bone's data beside the rig: the rotation cloud as a point object and the fitted
limit as a wire mesh, both in scaled angle-axis space (radians times ``display_scale`` metres)."""

import bmesh
import bpy
import numpy as np

from ...limits.constants import IDENTITY_QUATERNION
from ...limits.geometry.boundary import limit_boundary
from ...limits.geometry.quaternion import exp_map_from_quaternion
from ...limits.joint import relative_cloud
from ..io.storage import read_cloud, read_limit

COLLECTION = "Joint Limits Display"


def display_collection(scene):
    """The collection that holds every display object, linked into ``scene``."""
    coll = bpy.data.collections.get(COLLECTION)
    if coll is None:
        coll = bpy.data.collections.new(COLLECTION)
    if coll.name not in scene.collection.children:
        scene.collection.children.link(coll)
    return coll


def display_object(name, mesh, scene):
    """The mesh object ``name`` in the display collection, created or given ``mesh`` (the old
    mesh is freed when nothing else uses it)."""
    coll = display_collection(scene)
    obj = bpy.data.objects.get(name)
    if obj is None or obj.type != "MESH":
        obj = bpy.data.objects.new(name, mesh)
    else:
        old = obj.data
        obj.data = mesh
        if old.users == 0:
            bpy.data.meshes.remove(old)
    if obj.name not in coll.objects:
        coll.objects.link(obj)
    return obj


def place_at_bone(display, obj, pose_bone, matrix):
    """Put ``display`` at armature-space ``matrix`` of rig ``obj`` and make it follow the bone's
    parent (a Child Of constraint), so it stays in the frame the bone's swing is measured in."""
    for con in [c for c in display.constraints if c.type == "CHILD_OF"]:
        display.constraints.remove(con)
    display.parent = None
    display.matrix_world = obj.matrix_world @ matrix
    follow = display.constraints.new("CHILD_OF")
    follow.target = obj
    if pose_bone.parent is not None:
        follow.subtarget = pose_bone.parent.name
        follow.inverse_matrix = (obj.matrix_world @ pose_bone.parent.matrix).inverted()
    else:
        follow.inverse_matrix = obj.matrix_world.inverted()
    return display


def beside_rig(obj, pose_bone, scene):
    """World position for a bone's rotation-space displays: level with the bone's head, to the
    side of the rig."""
    head = obj.matrix_world @ pose_bone.head
    return np.array(head) + np.array([obj.dimensions.x * 0.5 + 4 * scene.joint_limits.display_scale, 0.0, 0.0])


def _instance_dots(cloud_obj, scene, radius):
    """Loose vertices are invisible in Object Mode: instance a small sphere on each one."""
    name = cloud_obj.name + " dot"
    bm = bmesh.new()
    bmesh.ops.create_icosphere(bm, subdivisions=1, radius=radius)
    mesh = bpy.data.meshes.new(name)
    bm.to_mesh(mesh)
    bm.free()
    dot = display_object(name, mesh, scene)
    dot.parent = cloud_obj
    dot.location = (0.0, 0.0, 0.0)
    cloud_obj.instance_type = "VERTS"
    return dot


def bone_rotation_points(pose_bone):
    """``(cloud_points (N, 3), boundary_vertices (V, 3), boundary_faces)`` in exp-map space
    (radians) relative to the limit's reference (or the rest pose when not fitted)."""
    cloud = read_cloud(pose_bone)
    limit = read_limit(pose_bone)
    verts, faces = np.zeros((0, 3)), []
    if limit is not None:
        bm = bmesh.new()
        bmesh.ops.create_icosphere(bm, subdivisions=3, radius=1.0)
        directions = np.array([v.co for v in bm.verts])
        faces = [[v.index for v in f.verts] for f in bm.faces]
        bm.free()
        directions /= np.linalg.norm(directions, axis=1, keepdims=True)
        verts = limit_boundary(limit, directions)
        reference = limit.reference
    else:
        reference = IDENTITY_QUATERNION
    points = exp_map_from_quaternion(relative_cloud(cloud, reference)) if len(cloud) else np.zeros((0, 3))
    return points, verts, faces


def show_bone(obj, pose_bone, scene, offset=None):
    """Create or update the point-cloud and limit-shape objects of ``pose_bone``; returns them."""
    scale = scene.joint_limits.display_scale
    points, verts, faces = bone_rotation_points(pose_bone)
    base = f"JL {obj.name} {pose_bone.name}"
    if offset is None:
        offset = beside_rig(obj, pose_bone, scene)
    cloud_mesh = bpy.data.meshes.new(base + " cloud")
    cloud_mesh.from_pydata((points * scale).tolist(), [], [])
    cloud_obj = display_object(base + " cloud", cloud_mesh, scene)
    cloud_obj.location = offset
    _instance_dots(cloud_obj, scene, radius=0.02 * scale)
    shape_obj = None
    if len(verts):
        shape_mesh = bpy.data.meshes.new(base + " limit")
        shape_mesh.from_pydata((verts * scale).tolist(), [], faces)
        shape_obj = display_object(base + " limit", shape_mesh, scene)
        shape_obj.location = offset
        shape_obj.display_type = "WIRE"
        shape_obj.hide_render = True
    return cloud_obj, shape_obj
