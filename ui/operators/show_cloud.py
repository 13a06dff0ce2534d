# SPDX-License-Identifier: GPL-3.0-or-later
import bpy

from ...rig.tasks.display import show_bone
from ._common import armature_in_pose_mode, plural, selected_bones


class JOINTLIMITS_OT_show_cloud(bpy.types.Operator):
    """Show each selected bone's rotation samples and fitted limit beside the rig, in rotation space (scaled angle-axis)"""

    bl_idname = "pose.joint_limits_show_cloud"
    bl_label = "Show Rotation Cloud"
    bl_options = {"REGISTER", "UNDO"}

    @classmethod
    def poll(cls, context):
        return armature_in_pose_mode(cls, context)

    def execute(self, context):
        obj = context.object
        bones = [pb for pb in selected_bones(context) if pb.joint_limit.cloud_count or pb.joint_limit.has_limit]
        if not bones:
            self.report({"ERROR"}, "No selected bone has samples or a limit")
            return {"CANCELLED"}
        for pb in bones:
            show_bone(obj, pb, context.scene)
        self.report({"INFO"}, f"Showing {plural(len(bones), 'bone')} in collection 'Joint Limits Display'")
        return {"FINISHED"}
