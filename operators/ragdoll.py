# SPDX-License-Identifier: GPL-3.0-or-later
import bpy
from bpy.props import FloatProperty

from ..limits.engine_limits import DEFAULT_BREAK_MARGIN_DEG, TARGET_SHARE
from ..rig.bone_errors import SkippedBones
from ..rig.ragdoll import build_ragdoll
from ._common import armature_in_pose_mode, plural, report_done, selected_bones_with_samples


class JOINTLIMITS_OT_ragdoll(bpy.types.Operator):
    """Build a rigid-body ragdoll from the selected bones: a box per bone at its rest pose and a Generic rigid body constraint per joint, its angular limits fitted to the bone's learned limit; building again replaces the last one (collection '<armature> Ragdoll')"""

    bl_idname = "pose.joint_limits_ragdoll"
    bl_label = "Build Ragdoll"
    bl_options = {"REGISTER", "UNDO"}
    target: FloatProperty(
        name="Target Share",
        description="Share of the samples the learned limit accepts that each joint's limits must accept",
        default=TARGET_SHARE,
        min=0.5,
        max=1.0,
    )
    break_margin: FloatProperty(
        name="Break Margin",
        description="Degrees beyond the limit before the joint breaks (Kelly), kept on each joint empty",
        default=DEFAULT_BREAK_MARGIN_DEG,
        min=0.0,
        max=180.0,
    )

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
