# SPDX-License-Identifier: GPL-3.0-or-later
import bpy
from bpy.props import BoolProperty, EnumProperty, StringProperty

from ...rig.io.actions import assign_action
from ...rig.io.bone_errors import SkippedBones
from ...rig.io.datastore import short_list
from ...rig.tasks import control_bake
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
    keys_on: EnumProperty(
        name="Keys On",
        description="Which bones the baked action keys",
        items=(
            (
                "AUTO",
                "Auto",
                "The controls when the limited bones copy controls (a generated Rigify rig), else the bones",
            ),
            (
                "CONTROLS",
                "Controls",
                "The controls the limited bones copy (Rigify's FK controls, switched to FK), so you keep animating with them",
            ),
            ("BONES", "Bones", "Every bone's evaluated pose, constraints and IK baked in"),
        ),
        default="AUTO",
    )

    def execute(self, context):
        obj = context.object
        action = obj.animation_data.action
        limited = control_bake.limited_names(obj)
        if self.keys_on == "CONTROLS" or (self.keys_on == "AUTO" and control_bake.control_pairs(obj, limited)):
            return self._bake_controls(context, obj, action)
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

    def _bake_controls(self, context, obj, action):
        frames = self.frames(action)
        with progress(context, len(frames)) as update:
            baked, controls, switch_bones = control_bake.bake_to_controls(
                obj, context.scene, action, frames, name=self.action_name or None, progress=update
            )
        text = bpy.data.texts.get(control_bake.REPORT) or bpy.data.texts.new(control_bake.REPORT)
        text.clear()
        text.write(control_bake.report_text(obj, action, baked, controls, switch_bones))
        message = (
            f"Baked {len(frames)} frames onto {plural(len(controls), 'control')} ({short_list(controls)}), "
            f"{len(switch_bones)} IK/FK switch{'' if len(switch_bones) == 1 else 'es'} at FK, into {baked.name!r}"
        )
        if self.assign:
            action.use_fake_user = True
            assign_action(obj, baked)
            message += f" and assigned it; {action.name!r} kept (fake user)"
        report_done(self, f"{message} (see the text {control_bake.REPORT!r})", None)
        return {"FINISHED"}
