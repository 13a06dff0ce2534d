# SPDX-License-Identifier: GPL-3.0-or-later
"""The Authoring panel: swing sphere, twist disk and limit painting for the active bone."""

import bpy

from ..viewport import overlay, paint
from .sidebar import _SidebarPanel


class JOINTLIMITS_PT_authoring(_SidebarPanel, bpy.types.Panel):
    bl_label = "Authoring"
    bl_parent_id = "JOINTLIMITS_PT_limit"

    @classmethod
    def poll(cls, context):
        return super().poll(context) and hasattr(context.window_manager, "joint_limits_swing_sphere")

    def draw(self, context):
        layout = self.layout
        wm = context.window_manager
        row = layout.row(align=True)
        row.prop(wm, "joint_limits_swing_sphere", toggle=True, icon="SPHERE")
        row.prop(wm, "joint_limits_twist_disk", toggle=True, icon="DRIVER_ROTATIONAL_DIFFERENCE")
        col = layout.column(align=True)
        col.operator("pose.joint_limits_swing_sphere", icon="ORIENTATION_GIMBAL")
        row = col.row(align=True)
        row.operator("pose.joint_limits_key_picks", icon="KEYFRAME", text=f"Key {len(overlay.picks())} Picks")
        row.operator("pose.joint_limits_picks_to_cloud", icon="OUTLINER_OB_POINTCLOUD", text="To Cloud")
        row.operator("pose.joint_limits_clear_picks", icon="X", text="")
        col = layout.column(align=True)
        col.operator("pose.joint_limits_twist_disk", icon="DRIVER_ROTATIONAL_DIFFERENCE")
        row = col.row(align=True)
        row.operator("pose.joint_limits_record_twist_limit", text="Twist Min Here").side = "MIN"
        row.operator("pose.joint_limits_record_twist_limit", text="Twist Max Here").side = "MAX"
        layout.operator("pose.joint_limits_paint_limit", icon="BRUSH_DATA")


class JOINTLIMITS_PT_paint(bpy.types.Panel):
    """Shown while a limit is painted (the paint sphere is in Texture Paint)."""

    bl_space_type = "VIEW_3D"
    bl_region_type = "UI"
    bl_category = "Joint Limits"
    bl_label = "Paint Limit"

    @classmethod
    def poll(cls, context):
        return bool(paint.session())

    def draw(self, context):
        session = paint.session()
        layout = self.layout
        layout.label(text=f"{session.get('armature')}: {session.get('bone')}", icon="BONE_DATA")
        col = layout.column(align=True)
        row = col.row(align=True)
        for kind, text in (("ALLOWED", "Allowed"), ("FORBIDDEN", "Forbidden")):
            row.operator("paint.joint_limits_brush", text=text).kind = kind
        row = col.row(align=True)
        for kind, text in (("STRESS_UP", "Stress +"), ("STRESS_DOWN", "Stress -")):
            row.operator("paint.joint_limits_brush", text=text).kind = kind
        col.operator("paint.joint_limits_rebuild", icon="FILE_REFRESH")
        col.operator("paint.joint_limits_finish", icon="CHECKMARK")


classes = (JOINTLIMITS_PT_authoring, JOINTLIMITS_PT_paint)
