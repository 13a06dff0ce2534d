# SPDX-License-Identifier: GPL-3.0-or-later
import bpy

from ...rig.io.bone_errors import SkippedBones
from ...rig.tasks.report import report_text, violation_report
from ._common import ActionFramesMixin, progress, report_done

TEXT_NAME = "Joint Limits Report"


class JOINTLIMITS_OT_report(ActionFramesMixin, bpy.types.Operator):
    """Check the action against the limits: frames out of limit and the worst violation per bone (text block 'Joint Limits Report')"""

    bl_idname = "pose.joint_limits_report"
    bl_label = "Violation Report"
    bl_options = {"REGISTER"}

    def execute(self, context):
        obj = context.object
        action = obj.animation_data.action
        skipped = SkippedBones()
        frames = self.frames(action)
        with progress(context, len(frames)) as update:
            rows = violation_report(obj, context.scene, action, frames, progress=update, skipped=skipped)
        text = bpy.data.texts.get(TEXT_NAME) or bpy.data.texts.new(TEXT_NAME)
        text.from_string(report_text(obj, action, rows, skipped))
        bad = [r for r in rows if r["frames_out"]]
        if bad:
            worst = max(bad, key=lambda r: r["worst_deg"])
            summary = f"{len(bad)} of {len(rows)} bones leave their limits; worst {worst['bone']} {worst['worst_deg']:.1f}° at frame {worst['worst_frame']} (see text '{TEXT_NAME}')"
            report_done(self, summary, skipped, level="WARNING")
        else:
            report_done(self, f"All {len(rows)} limited bones stay inside over {len(frames)} frames", skipped)
        return {"FINISHED"}
