# SPDX-License-Identifier: GPL-3.0-or-later
import bpy
from bpy.props import EnumProperty

from ._common import armature_in_pose_mode, plural, selected_bones


class JOINTLIMITS_OT_clear(bpy.types.Operator):
    """Remove the fitted limit, the samples or the limb range of motion of the selected bones"""

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
            ("LIMB", "Limb Range", "The limb range of motion stored with a limb's middle bone (forearm, shin)"),
            ("ALL", "All", "Limit, samples and limb range"),
        ),
        default="LIMIT",
    )

    @classmethod
    def poll(cls, context):
        return armature_in_pose_mode(cls, context)

    def execute(self, context):
        count = 0
        clear_limit = self.what in {"LIMIT", "BOTH", "ALL"}
        clear_samples = self.what in {"SAMPLES", "BOTH", "ALL"}
        clear_limb = self.what in {"LIMB", "ALL"}
        for pb in selected_bones(context):
            settings = pb.joint_limit
            had = (
                (clear_limit and settings.has_limit)
                or (clear_samples and settings.has_cloud)
                or (clear_limb and settings.has_limb)
            )
            if clear_limit:
                settings.limit_data = ""
            if clear_samples:
                settings.cloud_data = ""
                settings.cloud_count = 0
            if clear_limb:
                settings.limb_data = ""
            count += bool(had)
        self.report({"INFO"}, f"Cleared {plural(count, 'bone')}")
        return {"FINISHED"}
