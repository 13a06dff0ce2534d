# SPDX-License-Identifier: GPL-3.0-or-later
import bpy
from bpy.props import EnumProperty

from ...rig import live
from ._common import plural


class JOINTLIMITS_OT_enforce(bpy.types.Operator):
    """Turn live enforcement of joint limits on or off for this scene"""

    bl_idname = "pose.joint_limits_enforce"
    bl_label = "Live Enforcement"
    bl_options = {"REGISTER", "UNDO"}

    state: EnumProperty(
        name="State",
        description="Switch live enforcement to this state",
        items=(
            ("TOGGLE", "Toggle", "On when off, off when on"),
            ("ON", "On", "Limit every frame"),
            ("OFF", "Off", "Leave poses as they are"),
        ),
        default="TOGGLE",
    )

    @classmethod
    def poll(cls, context):
        if context.scene is None:
            cls.poll_message_set("No scene")
            return False
        return True

    def execute(self, context):
        settings = context.scene.joint_limits
        settings.enforce_live = {"TOGGLE": not settings.enforce_live, "ON": True, "OFF": False}[self.state]
        if settings.enforce_live:
            moved = live.enforce_scene(context.scene)
            self.report({"INFO"}, f"Live enforcement on ({plural(moved, 'bone')} moved into limits)")
        else:
            self.report({"INFO"}, "Live enforcement off")
        return {"FINISHED"}
