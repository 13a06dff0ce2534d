# SPDX-License-Identifier: GPL-3.0-or-later
import bpy

from ...limits.joint import JointLimit
from ...rig.io.bone_errors import SkippedBones, guarded
from ...rig.io.storage import read_cloud
from ._common import armature_in_pose_mode, plural, report_done, selected_bones_with_samples

CONSTRAINT_NAME = "Joint Limit (native)"


def euler_order_of(pose_bone):
    mode = pose_bone.rotation_mode
    return mode if mode not in {"QUATERNION", "AXIS_ANGLE"} else "XYZ"


def export_native(pose_bone, padding=None):
    """Add (or replace) a Limit Rotation constraint holding the Euler box of the bone's samples,
    fitted relative to the rest pose in the bone's Euler order. Returns the constraint."""
    cloud = read_cloud(pose_bone)
    if len(cloud) == 0:
        raise ValueError(f"{pose_bone.name}: no samples")
    pad = pose_bone.joint_limit.padding if padding is None else padding
    order = euler_order_of(pose_bone)
    box = JointLimit.fit(cloud, kind="euler_box", reference="REST", order=order, padding=pad).model
    con = pose_bone.constraints.get(CONSTRAINT_NAME) or pose_bone.constraints.new("LIMIT_ROTATION")
    con.name = CONSTRAINT_NAME
    con.owner_space = "LOCAL"
    con.euler_order = order
    for i, axis in enumerate("xyz"):
        setattr(con, f"use_limit_{axis}", True)
        setattr(con, f"min_{axis}", float(box.params["mins"][i]))
        setattr(con, f"max_{axis}", float(box.params["maxs"][i]))
    return con


class JOINTLIMITS_OT_export_native(bpy.types.Operator):
    """Add Blender's own Limit Rotation constraint with the Euler-angle box of each selected bone's samples"""

    bl_idname = "pose.joint_limits_export_native"
    bl_label = "Export to Limit Rotation"
    bl_options = {"REGISTER", "UNDO"}

    @classmethod
    def poll(cls, context):
        return armature_in_pose_mode(cls, context)

    def execute(self, context):
        bones = selected_bones_with_samples(context)
        skipped = SkippedBones()
        for pb in bones:
            with guarded(skipped, pb.name):
                export_native(pb)
        added = len(bones) - len(skipped)
        if not added:
            self.report({"ERROR"}, f"No Limit Rotation added ({skipped.summary()})")
            return {"CANCELLED"}
        report_done(self, f"Added Limit Rotation to {plural(added, 'bone')}", skipped)
        return {"FINISHED"}
