# SPDX-License-Identifier: GPL-3.0-or-later
"""Painting operators: paint the active bone's sinus texture on a sphere at the bone in
Texture Paint, pick an allowed / forbidden / stress brush, rebuild the limit. Thin over
``ui/viewport/paint.py``."""

import bpy
from bpy.props import EnumProperty

from ..viewport import paint
from .texture import _texture_bone


class JOINTLIMITS_OT_paint_limit(bpy.types.Operator):
    """Paint the active bone's limit in 3-D: a sphere at the bone shows its allowed swings (green) and stress (yellow to red); enters Texture Paint on it"""

    bl_idname = "pose.joint_limits_paint_limit"
    bl_label = "Paint Limit"
    bl_options = {"REGISTER", "UNDO"}

    @classmethod
    def poll(cls, context):
        return _texture_bone(cls, context)

    def execute(self, context):
        sphere, image = paint.start_painting(context, context.object, context.active_pose_bone)
        self.report({"INFO"}, f"Painting {image.name!r} on {sphere.name!r}: pick a brush, then Finish Painting")
        return {"FINISHED"}


def _painting(cls, context):
    if not paint.session():
        cls.poll_message_set("Start with Paint Limit")
        return False
    return True


class JOINTLIMITS_OT_paint_brush(bpy.types.Operator):
    """Set the active Texture Paint brush up to paint allowed or forbidden swings, or more or less stress"""

    bl_idname = "paint.joint_limits_brush"
    bl_label = "Limit Brush"

    kind: EnumProperty(
        name="Brush",
        description="What the brush paints into the limit's texture",
        items=(
            ("ALLOWED", "Allowed", "Paint swings allowed (adds green)"),
            ("FORBIDDEN", "Forbidden", "Paint swings forbidden (removes green)"),
            ("STRESS_UP", "More Stress", "Raise the stress (adds red)"),
            ("STRESS_DOWN", "Less Stress", "Lower the stress (removes red)"),
        ),
        default="FORBIDDEN",
    )

    @classmethod
    def poll(cls, context):
        if context.mode != "PAINT_TEXTURE":
            cls.poll_message_set("Enter Texture Paint (Paint Limit)")
            return False
        return True

    def execute(self, context):
        paint.set_brush(context, self.kind)
        return {"FINISHED"}


class JOINTLIMITS_OT_paint_rebuild(bpy.types.Operator):
    """Rebuild the painted bone's limit from the paint image now (painting goes on)"""

    bl_idname = "paint.joint_limits_rebuild"
    bl_label = "Rebuild Limit"
    bl_options = {"REGISTER", "UNDO"}

    @classmethod
    def poll(cls, context):
        return _painting(cls, context)

    def execute(self, context):
        limit = paint.rebuild_session()
        self.report({"INFO"}, f"Rebuilt: {100.0 * limit.model.params['image'][..., 0].mean():.1f}% of swings allowed")
        return {"FINISHED"}


class JOINTLIMITS_OT_paint_finish(bpy.types.Operator):
    """Leave Texture Paint, rebuild the limit from the painting and return to the bone in Pose Mode"""

    bl_idname = "paint.joint_limits_finish"
    bl_label = "Finish Painting"
    bl_options = {"REGISTER", "UNDO"}

    @classmethod
    def poll(cls, context):
        return _painting(cls, context)

    def execute(self, context):
        paint.finish_painting(context)
        return {"FINISHED"}


classes = (JOINTLIMITS_OT_paint_limit, JOINTLIMITS_OT_paint_brush, JOINTLIMITS_OT_paint_rebuild, JOINTLIMITS_OT_paint_finish)
