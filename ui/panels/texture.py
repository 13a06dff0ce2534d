# SPDX-License-Identifier: GPL-3.0-or-later
import bpy

from ...limits.model import TEXTURE
from ...limits.registry import model_class
from ...rig.live.status import texture_details
from .sidebar import _SidebarPanel


class JOINTLIMITS_PT_texture(_SidebarPanel, bpy.types.Panel):
    bl_label = "Sinus Texture"
    bl_parent_id = "JOINTLIMITS_PT_limit"

    @classmethod
    def poll(cls, context):
        pb = context.active_pose_bone
        return super().poll(context) and pb is not None and model_class(pb.joint_limit.model).offers(TEXTURE)

    def draw(self, context):
        layout = self.layout
        col = layout.column(align=True)
        col.operator("pose.joint_limits_texture_edit", icon="IMAGE_DATA")
        col.operator("pose.joint_limits_texture_rebuild", icon="FILE_REFRESH")
        row = col.row(align=True)
        row.operator("pose.joint_limits_texture_cone", icon="MESH_CONE", text="Cone")
        row.operator("pose.joint_limits_boundary_tour", icon="PLAY", text="Tour")
        row = col.row(align=True)
        row.operator("pose.joint_limits_texture_export", icon="EXPORT", text="Export")
        row.operator("pose.joint_limits_texture_import", icon="IMPORT", text="Import")
        for line in texture_details(context.active_pose_bone):
            layout.label(text=line)
