# SPDX-License-Identifier: GPL-3.0-or-later
"""Objects exported beside the rig to be edited with Blender's tools (the sculpt mesh of an SDF
grid, the metaball of a quaternion surface) remember their bone in custom properties."""

import bpy

PROP_ARMATURE = "joint_limits_armature"
PROP_BONE = "joint_limits_bone"
PROP_MATRIX = "joint_limits_export_matrix"
PROP_REFERENCE = "joint_limits_reference"
PROP_CENTRE = "joint_limits_centre"


def is_exported(obj, object_type):
    """Whether ``obj`` is an object of ``object_type`` ('MESH', 'META') exported for a bone."""
    return obj is not None and obj.type == object_type and PROP_BONE in obj and PROP_MATRIX in obj


def find_exported(object_type, armature, pose_bone):
    """The ``object_type`` object exported for ``pose_bone`` of ``armature``, or ``None``."""
    for candidate in bpy.data.objects:
        if (
            is_exported(candidate, object_type)
            and candidate[PROP_ARMATURE] == armature.name
            and candidate[PROP_BONE] == pose_bone.name
        ):
            return candidate
    return None


def exported_bone(source):
    """``(armature object, pose bone)`` an exported object belongs to; ``ValueError`` when the
    armature or the bone is gone."""
    arm = bpy.data.objects.get(source[PROP_ARMATURE])
    if arm is None or arm.type != "ARMATURE":
        raise ValueError(f"{source.name}: armature {source[PROP_ARMATURE]!r} not found")
    pose_bone = arm.pose.bones.get(source[PROP_BONE])
    if pose_bone is None:
        raise ValueError(f"{source.name}: bone {source[PROP_BONE]!r} not found in {arm.name}")
    return arm, pose_bone
