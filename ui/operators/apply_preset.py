# SPDX-License-Identifier: GPL-3.0-or-later
import bpy
from bpy.props import BoolProperty, EnumProperty

from ...rig.tasks.fit_report import write_report_text
from ...rig.tasks.preset import TEXT_NAME, apply_preset, load_preset, report_text
from ._common import armature_in_pose_mode, plural, report_done, selected_bones


class JOINTLIMITS_OT_apply_preset(bpy.types.Operator):
    """Give a humanoid rig's bones the human body's range of motion: bones are matched to joints by name (Rigify, Mixamo, Unreal, CMU and other BVH conventions), the human envelope (clinical ranges with the shapes real motion shows) is turned into each bone's own axes on the rig's neutral posture, and each bone gets a reach cone (or its own model). Unmatched bones and what was assumed are listed in the text Joint Limits Preset Report"""

    bl_idname = "pose.joint_limits_apply_preset"
    bl_label = "Apply Human Preset"
    bl_options = {"REGISTER", "UNDO"}

    data: EnumProperty(
        name="Samples",
        description="What each matched bone's limit is fitted from",
        items=(
            ("REPLACE", "Preset Only", "Replace the bones' samples with the preset's"),
            ("ADD", "Preset + My Data", "Keep the samples the bones have from your own clips and add the preset's"),
        ),
        default="REPLACE",
    )
    fit_with: EnumProperty(
        name="Fit With",
        description="The model each matched bone's limit is fitted with",
        items=(
            ("REACH_CONE", "Reach Cone", "A reach cone in the joint's anatomical frame: holds the human envelope exactly"),
            ("BONE", "Bone's Own Model", "Each bone's own model setting (Auto, k-DOP, ...)"),
        ),
        default="REACH_CONE",
    )
    selected_only: BoolProperty(
        name="Selected Only", description="Only the selected bones (otherwise every bone of the rig)", default=False
    )

    @classmethod
    def poll(cls, context):
        return armature_in_pose_mode(cls, context, need_selection=False)

    def execute(self, context):
        obj = context.object
        preset = load_preset("human")
        names = [pb.name for pb in selected_bones(context)] if self.selected_only else None
        if names == []:
            raise ValueError("No bone selected (untick Selected Only to use every bone)")
        own = self.fit_with == "BONE"
        result = apply_preset(obj, preset, names, add_data=self.data == "ADD", own_model=own)
        text = bpy.data.texts.get(TEXT_NAME) or bpy.data.texts.new(TEXT_NAME)
        text.clear()
        text.write(report_text(obj, preset, result))
        write_report_text([obj.pose.bones[name] for name in result.fitted])
        if not result.fitted:
            raise ValueError(
                f"No bone matched a joint of the preset ({plural(len(result.unmatched), 'bone')} unmatched, "
                f"{len(result.no_data)} without preset data); see the text {TEXT_NAME!r}"
            )
        left = len(result.unmatched) + len(result.no_data)
        tail = f"; {plural(left, 'bone')} left as they were (see the text {TEXT_NAME!r})" if left else ""
        report_done(self, f"Applied the human preset to {plural(len(result.fitted), 'bone')}{tail}", result.skipped)
        return {"FINISHED"}
