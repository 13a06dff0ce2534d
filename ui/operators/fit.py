# SPDX-License-Identifier: GPL-3.0-or-later
import bpy
from bpy.props import EnumProperty

from ...rig.io.anatomy import rig_anatomy
from ...rig.io.bone_errors import SkippedBones, guarded
from ...rig.tasks.fit import fit_pose_bone
from ...rig.tasks.fit_report import write_report_text
from ...rig.tasks.symmetry import body_mirror
from ..props import MODEL_ITEMS
from ._common import armature_in_pose_mode, plural, report_done, selected_bones_with_samples


class JOINTLIMITS_OT_fit(bpy.types.Operator):
    """Fit a limit shape to each selected bone's rotation cloud"""

    bl_idname = "pose.joint_limits_fit"
    bl_label = "Fit Limits"
    bl_options = {"REGISTER", "UNDO"}

    model: EnumProperty(
        name="Model",
        description="Shape to fit (Per Bone: each bone's own model setting)",
        items=(("BONE", "Per Bone", "Use each bone's own model setting"), *MODEL_ITEMS),
        default="BONE",
    )

    @classmethod
    def poll(cls, context):
        return armature_in_pose_mode(cls, context)

    def execute(self, context):
        obj = context.object
        bones = selected_bones_with_samples(context)
        skipped, split, heading = SkippedBones(), [], []
        mirror, anatomy = body_mirror(obj), None
        for pb in bones:
            with guarded(skipped, pb.name):
                if self.model != "BONE":
                    pb.joint_limit.model = self.model
                if pb.joint_limit.model == "reach_cone" and anatomy is None:
                    anatomy = rig_anatomy(obj)  # (once for the rig)
                limit = fit_pose_bone(obj, pb, mirror, anatomy)
                pb.joint_limit.last_error = ""
                if limit.heading_off:
                    heading.append(pb.name)
                regions = limit.model.region_count()
                if regions is not None and regions > 1:
                    split.append(f"{pb.name}: {regions} disconnected regions (gaps in the samples?)")
        for name, why in skipped.items():
            obj.pose.bones[name].joint_limit.last_error = why
        for f in split[:5]:
            self.report({"WARNING"}, f)
        if heading:
            self.report(
                {"INFO"}, f"Limit off on {', '.join(heading)}: carries the heading or travel (turn it on in its settings)"
            )
        write_report_text(bones)
        fitted = len(bones) - len(skipped)
        if not fitted:
            self.report({"ERROR"}, f"No limit fitted ({skipped.summary()})")
            return {"CANCELLED"}
        report_done(self, f"Fitted {plural(fitted, 'bone')}", skipped)
        return {"FINISHED"}
