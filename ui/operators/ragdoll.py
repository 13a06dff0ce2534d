# SPDX-License-Identifier: GPL-3.0-or-later
import bpy

from ...rig.io.bone_errors import SkippedBones
from ...rig.tasks.ragdoll import build_ragdoll
from ._common import armature_in_pose_mode, plural, report_done, selected_bones_with_samples
from .export_engine import break_margin_property, target_share_property


class JOINTLIMITS_OT_ragdoll(bpy.types.Operator):
    """Build a rigid-body ragdoll from the selected bones: a box per bone at its rest pose and a Generic rigid body constraint per joint, its angular limits fitted to the bone's learned limit; building again replaces the last one (collection '<armature> Ragdoll')"""

    bl_idname = "pose.joint_limits_ragdoll"
    bl_label = "Build Ragdoll"
    bl_options = {"REGISTER", "UNDO"}
    target: target_share_property("each joint's limits")
    break_margin: break_margin_property("kept on each joint empty")

    @classmethod
    def poll(cls, context):
        return armature_in_pose_mode(cls, context)

    def execute(self, context):
        obj = context.object
        bones = selected_bones_with_samples(context)
        skipped = SkippedBones()
        coll, joints = build_ragdoll(obj, [pb.name for pb in bones], context.scene, self.target, self.break_margin, skipped)
        for name, (_, fid) in joints.items():
            print(f"Joint Limits ragdoll: {name}: {fid.summary()}")
        worst = min((fid.sample_share, name) for name, (_, fid) in joints.items())
        report_done(
            self,
            f"Built {coll.name}: {plural(len(joints), 'joint')}; samples accepted {100 * worst[0]:.1f}% at worst ({worst[1]})",
            skipped,
        )
        return {"FINISHED"}
