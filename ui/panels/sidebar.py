# SPDX-License-Identifier: GPL-3.0-or-later
import bpy

from ...rig import live
from .limit_ui import draw_limit_settings, draw_store_warning


class _SidebarPanel:
    bl_space_type = "VIEW_3D"
    bl_region_type = "UI"
    bl_category = "Joint Limits"

    @classmethod
    def poll(cls, context):
        return context.object is not None and context.object.type == "ARMATURE" and context.mode == "POSE"


class JOINTLIMITS_PT_limit(_SidebarPanel, bpy.types.Panel):
    bl_label = "Joint Limit"

    def draw_header(self, context):
        pb = context.active_pose_bone
        if pb is not None:
            self.layout.prop(pb.joint_limit, "enabled", text="")

    def draw(self, context):
        layout = self.layout
        draw_store_warning(layout, context.object.data)
        row = layout.row(align=True)
        row.operator("pose.joint_limits_sample", icon="ACTION")
        row.operator("pose.joint_limits_fit", icon="MOD_MESHDEFORM")
        row = layout.row(align=True)
        row.operator("pose.joint_limits_apply_preset", icon="ARMATURE_DATA")
        row.operator("pose.joint_limits_apply_preset", text="+ My Data").data = "ADD"
        pb = context.active_pose_bone
        if pb is None:
            layout.label(text="No active bone", icon="INFO")
            return
        layout.label(text=pb.name, icon="BONE_DATA")
        if pb.parent is not None:
            row = layout.row(align=True)
            row.operator("pose.joint_limits_fit_limb", icon="CON_KINEMATIC")
            if pb.joint_limit.has_limb:
                row.prop(context.window_manager, "joint_limits_limb_workspace", text="", icon="SPHERE")
                layout.label(text=f"Limb: {pb.parent.name} -> {pb.name}", icon="CHECKMARK")
        draw_limit_settings(layout, pb)


class JOINTLIMITS_PT_enforce(_SidebarPanel, bpy.types.Panel):
    bl_label = "Enforcement"

    def draw(self, context):
        layout = self.layout
        settings = context.scene.joint_limits
        layout.prop(settings, "enforce_live", toggle=True, icon="CON_ROTLIMIT")
        row = layout.row(align=True)
        row.operator("pose.joint_limits_bake", icon="REC")
        row.operator("pose.joint_limits_report", icon="TEXT")
        for message in live.messages()[-3:]:
            layout.label(text=message, icon="ERROR")


class JOINTLIMITS_PT_tools(_SidebarPanel, bpy.types.Panel):
    bl_label = "Tools"
    bl_options = {"DEFAULT_CLOSED"}

    def draw(self, context):
        col = self.layout.column(align=True)
        col.operator("pose.joint_limits_import_bvh", icon="IMPORT")
        col.operator("pose.joint_limits_mirror", icon="MOD_MIRROR")
        row = col.row(align=True)
        row.operator("pose.joint_limits_export_native", icon="CONSTRAINT_BONE", text="Limit Rotation")
        row.operator("pose.joint_limits_export_ik_limits", icon="CON_KINEMATIC", text="IK Limits")
        row = col.row(align=True)
        row.operator("pose.joint_limits_export_engine", icon="EXPORT", text="Engine Limits")
        row.operator("pose.joint_limits_ragdoll", icon="RIGID_BODY_CONSTRAINT", text="Ragdoll")
        col.operator("pose.joint_limits_show_cloud", icon="OUTLINER_OB_POINTCLOUD")
        row = col.row(align=True)
        row.operator("pose.joint_limits_sculpt_export", icon="SCULPTMODE_HLT", text="Export Mesh")
        row.operator("pose.joint_limits_sculpt_rebuild", icon="FILE_REFRESH", text="Rebuild")
        row = col.row(align=True)
        row.operator("pose.joint_limits_metaball_export", icon="META_BALL", text="Export Metaball")
        row.operator("pose.joint_limits_metaball_rebuild", icon="FILE_REFRESH", text="Rebuild")
        col.operator("pose.joint_limits_clear", icon="X")
        row = col.row(align=True)
        row.operator("pose.joint_limits_save_file", icon="EXPORT", text="Save")
        row.operator("pose.joint_limits_load_file", icon="IMPORT", text="Load")
        col.prop(context.scene.joint_limits, "display_scale")
