# SPDX-License-Identifier: GPL-3.0-or-later
import bpy

from .limit_ui import draw_limit_settings, draw_store_warning


class JOINTLIMITS_PT_bone_constraint(bpy.types.Panel):
    """The bone's joint limit shown like a constraint in the Bone Constraints tab."""

    bl_space_type = "PROPERTIES"
    bl_region_type = "WINDOW"
    bl_context = "bone_constraint"
    bl_label = "Joint Limit"
    bl_options = {"HEADER_LAYOUT_EXPAND"}

    @classmethod
    def poll(cls, context):
        return context.pose_bone is not None

    def draw_header(self, context):
        self.layout.prop(context.pose_bone.joint_limit, "enabled", text="")

    def draw(self, context):
        pb = context.pose_bone
        layout = self.layout
        draw_store_warning(layout, pb.bone.id_data)
        if not pb.joint_limit.has_limit and not pb.joint_limit.cloud_count:
            layout.label(text="No samples: use Joint Limits > Sample in the 3-D view sidebar", icon="INFO")
        draw_limit_settings(layout, pb)
