# SPDX-License-Identifier: GPL-3.0-or-later
import bpy
from bpy.props import BoolProperty, StringProperty
from bpy_extras.io_utils import ImportHelper

from ...rig.io.bvh import bvh_rotations, import_bvh_armature, remove_armature
from ...rig.tasks.sample import drop_bad_rotations, dropped_message, store_clouds
from ._common import armature_in_pose_mode, plural, selected_bones


class JOINTLIMITS_OT_import_bvh(bpy.types.Operator, ImportHelper):
    """Import BVH motion capture and sample it onto the selected bones (matched by name)"""

    bl_idname = "pose.joint_limits_import_bvh"
    bl_label = "Sample BVH Motion"
    bl_options = {"REGISTER", "UNDO"}

    filename_ext = ".bvh"
    filter_glob: StringProperty(description="Files shown in the file browser", default="*.bvh", options={"HIDDEN"})
    append: BoolProperty(name="Append", description="Add to the existing samples instead of replacing them", default=False)
    keep_armature: BoolProperty(
        name="Keep Imported Armature", description="Keep the imported BVH armature and action", default=False
    )

    @classmethod
    def poll(cls, context):
        return armature_in_pose_mode(cls, context)

    def execute(self, context):
        target = context.object
        names = [pb.name for pb in selected_bones(context)]
        try:
            bpy.ops.object.mode_set(mode="OBJECT")
            source = import_bvh_armature(context, self.filepath)
        except (ValueError, RuntimeError, OSError) as err:
            self._restore(context, target)
            self.report({"ERROR"}, f"BVH import failed: {err}")
            return {"CANCELLED"}
        try:
            clouds, dropped, notes = drop_bad_rotations(bvh_rotations(source, target, names), bpy.path.basename(self.filepath))
            counts = store_clouds(target, clouds, append=self.append, clips=bpy.path.basename(self.filepath))
        finally:
            if not self.keep_armature:
                remove_armature(source)
            self._restore(context, target)
        for note in notes[:5]:
            self.report({"WARNING"}, note)
        msg = f"Sampled {plural(len(counts), 'bone')} from {bpy.path.basename(self.filepath)} ({len(names) - len(counts)} unmatched)"
        self.report({"INFO"}, msg + (f"; {dropped_message(dropped)}" if dropped else ""))
        return {"FINISHED"}

    @staticmethod
    def _restore(context, target):
        # (iterating view_layer.objects right after removing an object crashes Blender 5.0)
        target.select_set(True)
        bpy.context.view_layer.objects.active = target
        if bpy.context.mode != "POSE":
            bpy.ops.object.mode_set(mode="POSE")
