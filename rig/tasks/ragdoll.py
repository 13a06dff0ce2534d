# SPDX-License-Identifier: GPL-3.0-or-later
"""A rigid-body ragdoll built from a rig, its joints limited by Blender's own Generic rigid body
constraints (Bullet), fitted to the learned limits.

One box per limited bone (the bone's length along its +Y, a fifth of it across) and one for the
parent of each limited bone, placed at the bones' *rest* pose in world space, its origin (the
body's centre of mass for Blender) halfway along the bone (the constraint
frames are taken at the rest pose, so the joint rotation Bullet measures is the bone's local
rotation). A limited bone with a parent gets an active body and a Generic constraint to its
parent's body: an empty at the bone's head with the bone's rest axes, angular limits from
:func:`...limits.export.engine_limits.fit_euler` (Bullet clamps Euler angles of the joint rotation,
read as :func:`...limits.export.engine_limits.bullet_euler_from_quaternion` does), linear axes locked.
Other bodies are passive (they hold the chain). Boxes are 0.8 of their bone long, so the boxes
of bones meeting at a joint (siblings, which no constraint excuses from colliding) do not
overlap at the rest pose, and a rigid body world the build creates solves constraints in 50
iterations (Blender's default 10): on the demo humanoid hanging from its hips for 120 frames
the worst joint left its limits by 44 degrees with full-length boxes and 10 iterations, by
8.6 degrees (the spine, holding the whole upper body) like this.
Everything goes into the collection ``<armature> Ragdoll``; building again replaces what the
last build made there. Kelly's break margin is kept on each constraint empty as the custom
property ``joint_limits_break_margin_deg`` (Blender's breaking threshold is an impulse, not an
angle).
"""

import bmesh
import bpy
import numpy as np
from mathutils import Matrix

from ...limits.export.engine_limits import TARGET_SHARE, break_margin_deg, fit_euler
from ...limits.export.fidelity import fidelity
from ..io.bone_errors import SkippedBones, guarded
from ..io.exported import PROP_ARMATURE, PROP_BONE
from ..io.storage import read_cloud, read_limit

#: Box cross-section over the bone's length.
WIDTH_RATIO = 0.2

#: Box length over the bone's length: a gap at each end keeps the boxes of bones that meet at a
#: joint (siblings, which no constraint excuses from colliding) apart at the rest pose.
LENGTH_RATIO = 0.8

#: Constraint solver iterations of a rigid body world the ragdoll creates (Blender's default is 10).
SOLVER_ITERATIONS = 50

#: Custom property of a constraint empty: Kelly's break margin (degrees).
PROP_BREAK_MARGIN = "joint_limits_break_margin_deg"


def collection_name(obj):
    return f"{obj.name} Ragdoll"


def _made_here(candidate, obj):
    return candidate.get(PROP_ARMATURE) == obj.name and PROP_BONE in candidate


def remove_ragdoll(obj):
    """Remove the objects the last build for ``obj`` made (and their meshes); the collection and
    anything else in it stay. Returns how many objects went."""
    coll = bpy.data.collections.get(collection_name(obj))
    if coll is None:
        return 0
    removed = 0
    for candidate in list(coll.objects):
        if not _made_here(candidate, obj):
            continue
        mesh = candidate.data if candidate.type == "MESH" else None
        bpy.data.objects.remove(candidate)
        if mesh is not None and mesh.users == 0:
            bpy.data.meshes.remove(mesh)
        removed += 1
    return removed


def _box_mesh(name, length):
    width = max(WIDTH_RATIO * length, 1e-3)
    mesh = bpy.data.meshes.new(name)
    bm = bmesh.new()
    bmesh.ops.create_cube(bm, size=1.0)
    for vert in bm.verts:  # x, z across; y along the bone, centred on the origin (the centre of mass)
        vert.co.x *= width
        vert.co.z *= width
        vert.co.y *= LENGTH_RATIO * length
    bm.to_mesh(mesh)
    bm.free()
    return mesh


def _rigid_body_world(scene):
    if scene.rigidbody_world is None:
        with bpy.context.temp_override(scene=scene):
            bpy.ops.rigidbody.world_add()
        scene.rigidbody_world.solver_iterations = SOLVER_ITERATIONS
    world = scene.rigidbody_world
    if world.collection is None:
        world.collection = bpy.data.collections.new("RigidBodyWorld")
    if world.constraints is None:
        world.constraints = bpy.data.collections.new("RigidBodyConstraints")
    return world


def _tag(candidate, obj, bone_name):
    candidate[PROP_ARMATURE] = obj.name
    candidate[PROP_BONE] = bone_name


def build_ragdoll(obj, bone_names, scene, target=TARGET_SHARE, break_margin=None, skipped=None):
    """Build (or rebuild) the ragdoll of armature ``obj`` for ``bone_names`` (those with samples;
    a bone whose data cannot be read goes to ``skipped``). Returns ``(collection, {bone:
    (EulerRegion, Fidelity)})`` for the constrained bones; ``ValueError`` when none is left."""
    skipped = SkippedBones() if skipped is None else skipped
    fitted = {}
    for name in bone_names:
        pose_bone = obj.pose.bones[name]
        if not pose_bone.joint_limit.cloud_count or pose_bone.parent is None:
            continue
        with guarded(skipped, name):
            cloud = read_cloud(pose_bone)
            limit = read_limit(pose_bone)
            region = fit_euler(cloud, limit, target)
            margin = break_margin_deg(limit) if break_margin is None else break_margin_deg(None, break_margin)
            fitted[name] = (region, fidelity(region, cloud, limit), margin)
    if not fitted:
        why = f" ({skipped.summary()})" if skipped else ""
        raise ValueError(f"no bone of {obj.name} with samples and a parent to make a joint of{why}")

    remove_ragdoll(obj)
    coll = bpy.data.collections.get(collection_name(obj)) or bpy.data.collections.new(collection_name(obj))
    if coll.name not in scene.collection.children:
        scene.collection.children.link(coll)
    world = _rigid_body_world(scene)
    parents = {obj.pose.bones[name].parent.name for name in fitted}
    bodies = {}
    for pose_bone in obj.pose.bones:  # (the rig's order: parents before children)
        name = pose_bone.name
        if name not in fitted and name not in parents:
            continue
        bone = pose_bone.bone
        body = bpy.data.objects.new(f"{obj.name} {name} body", _box_mesh(f"{obj.name} {name} body", bone.length))
        body.matrix_world = obj.matrix_world @ bone.matrix_local @ Matrix.Translation((0.0, 0.5 * bone.length, 0.0))
        coll.objects.link(body)
        world.collection.objects.link(body)
        body.rigid_body.type = "ACTIVE" if name in fitted else "PASSIVE"
        body.rigid_body.collision_shape = "BOX"
        _tag(body, obj, name)
        bodies[name] = body
    for name, (region, _, margin) in fitted.items():
        bone = obj.pose.bones[name].bone
        joint = bpy.data.objects.new(f"{obj.name} {name} joint", None)
        joint.empty_display_type = "ARROWS"
        joint.empty_display_size = 0.3 * bone.length
        joint.matrix_world = obj.matrix_world @ bone.matrix_local
        coll.objects.link(joint)
        world.constraints.objects.link(joint)
        con = joint.rigid_body_constraint
        con.type = "GENERIC"
        con.object1 = bodies[bone.parent.name]
        con.object2 = bodies[name]
        con.disable_collisions = True
        for i, axis in enumerate("xyz"):
            setattr(con, f"use_limit_ang_{axis}", True)
            setattr(con, f"limit_ang_{axis}_lower", float(region.lower[i]))
            setattr(con, f"limit_ang_{axis}_upper", float(region.upper[i]))
            setattr(con, f"use_limit_lin_{axis}", True)
            setattr(con, f"limit_lin_{axis}_lower", 0.0)
            setattr(con, f"limit_lin_{axis}_upper", 0.0)
        _tag(joint, obj, name)
        joint[PROP_BREAK_MARGIN] = float(margin)
    return coll, {name: (region, fid) for name, (region, fid, _) in fitted.items()}


def constraint_limits(joint):
    """``(lower (3,), upper (3,))`` radians of a ragdoll joint's Generic constraint."""
    con = joint.rigid_body_constraint
    lower = np.array([getattr(con, f"limit_ang_{axis}_lower") for axis in "xyz"])
    upper = np.array([getattr(con, f"limit_ang_{axis}_upper") for axis in "xyz"])
    return lower, upper
