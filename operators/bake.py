# SPDX-License-Identifier: GPL-3.0-or-later
import bpy
from bpy.props import BoolProperty, StringProperty

from ..rig.actions import assign_action
from ..rig.bake import bake_action
from ..rig.bone_errors import SkippedBones
from ._common import ActionFramesMixin, progress, report_done


class JOINTLIMITS_OT_bake(ActionFramesMixin, bpy.types.Operator):
    """Evaluate the action with all constraints and IK, project limited bones into their limits and write a new clean action"""

    bl_idname = "pose.joint_limits_bake"
    bl_label = "Bake Limited Action"
    bl_options = {"REGISTER", "UNDO"}

    action_name: StringProperty(name="New Action", description="Name of the baked action (default: <action>_limited)")
    assign: BoolProperty(name="Assign", description="Assign the baked action and mute the bones' constraints it already contains", default=False)

    def execute(self, context):
        obj = context.object
        action = obj.animation_data.action
        skipped = SkippedBones()
        try:
            frames = self.frames(action)
            with progress(context, len(frames)) as update:
                baked = bake_action(obj, context.scene, action, frames, name=self.action_name or None, progress=update, skipped=skipped)
        except ValueError as err:
            self.report({"ERROR"}, str(err))
            return {"CANCELLED"}
        if self.assign:
            assign_action(obj, baked)
            for pb in obj.pose.bones:
                for con in pb.constraints:
                    con.mute = True
        report_done(self, f"Baked {len(frames)} frames of {len(obj.pose.bones)} bones into {baked.name!r}", skipped)
        return {"FINISHED"}
