# SPDX-License-Identifier: GPL-3.0-or-later
import bpy

from ...rig.tasks.limb import fit_limb, limb_rest
from ._common import active_bone_in_pose_mode


class JOINTLIMITS_OT_fit_limb(bpy.types.Operator):
    """Fit the range of motion of the limb whose middle bone (forearm, shin) is the active bone, from the samples of it and its parent (upper arm, thigh): where the limb's end may be and how the middle joint may swivel there (Mukai)"""

    bl_idname = "pose.joint_limits_fit_limb"
    bl_label = "Fit Limb Range"
    bl_options = {"REGISTER", "UNDO"}

    @classmethod
    def poll(cls, context):
        if not active_bone_in_pose_mode(cls, context):
            return False
        if context.active_pose_bone.parent is None:
            cls.poll_message_set("Make a limb's middle bone active (forearm, shin): it needs a parent")
            return False
        return True

    def execute(self, context):
        obj, pb = context.object, context.active_pose_bone
        limb = limb_rest(obj, pb.name)
        model = fit_limb(obj, pb.name)
        kept = len(model.params["samples"])
        self.report(
            {"INFO"},
            f"Fitted the limb range {limb.root} -> {pb.name} from {pb.joint_limit.cloud_count} poses: "
            f"{kept} of {model.config['sample_count']} directions, {model.nbytes()} bytes; "
            f"its picture is the image 'JL {obj.name} {pb.name} limb range'",
        )
        return {"FINISHED"}
