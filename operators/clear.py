# SPDX-License-Identifier: GPL-3.0-or-later
import bpy
from bpy.props import EnumProperty

from ._common import armature_in_pose_mode, plural, selected_bones


class JOINTLIMITS_OT_clear(bpy.types.Operator):
    """Remove the fitted limit and/or the samples of the selected bones"""

    bl_idname = "pose.joint_limits_clear"
    bl_label = "Clear Limits"
    bl_options = {"REGISTER", "UNDO"}

    what: EnumProperty(
        name="Clear",
        description="What to remove from the selected bones",
        items=(
            ("LIMIT", "Limit", "The fitted limit"),
            ("SAMPLES", "Samples", "The rotation cloud"),
            ("BOTH", "Both", "Limit and samples"),
        ),
        default="LIMIT",
    )

    @classmethod
    def poll(cls, context):
        return armature_in_pose_mode(cls, context)

    def execute(self, context):
        count = 0
        for pb in selected_bones(context):
            settings = pb.joint_limit
            had = settings.has_limit if self.what == "LIMIT" else settings.has_limit or settings.has_cloud
            if self.what in {"LIMIT", "BOTH"}:
                settings.limit_data = ""
            if self.what in {"SAMPLES", "BOTH"}:
                settings.cloud_data = ""
                settings.cloud_count = 0
            count += had
        self.report({"INFO"}, f"Cleared {plural(count, 'bone')}")
        return {"FINISHED"}
