# SPDX-License-Identifier: GPL-3.0-or-later
import bpy
from bpy.props import BoolProperty, StringProperty

from ...rig.io.bone_errors import SkippedBones
from ...rig.io.datastore import short_list
from ...rig.tasks.bake import assign_baked, bake_action
from ._common import ActionFramesMixin, plural, progress, report_done


class JOINTLIMITS_OT_bake(ActionFramesMixin, bpy.types.Operator):
    """Evaluate the action with all constraints and IK, project limited bones into their limits and write a new clean action. With Assign, the new action replaces the current one, which keeps a fake user so it stays in the file (clear it in the action list to let it go), and the bones' constraints whose effect is now in the keys are muted"""

    bl_idname = "pose.joint_limits_bake"
    bl_label = "Bake Limited Action"
    bl_options = {"REGISTER", "UNDO"}

    action_name: StringProperty(name="New Action", description="Name of the baked action (default: <action>_limited)")
    assign: BoolProperty(
        name="Assign",
        description="Assign the baked action (the current one keeps a fake user) and mute the constraints of the baked bones, whose effect the keys now hold",
        default=False,
    )

    def execute(self, context):
        obj = context.object
        action = obj.animation_data.action
        skipped = SkippedBones()
        frames = self.frames(action)
        with progress(context, len(frames)) as update:
            baked = bake_action(
                obj, context.scene, action, frames, name=self.action_name or None, progress=update, skipped=skipped
            )
        message = f"Baked {len(frames)} frames of {len(obj.pose.bones)} bones into {baked.name!r}"
        if self.assign:
            muted = assign_baked(obj, action, baked)
            message += f" and assigned it; {action.name!r} kept (fake user); muted {plural(len(muted), 'constraint')}"
            message += f" on {short_list(bone for bone, _ in muted)}" if muted else ""
        report_done(self, message, skipped)
        return {"FINISHED"}
