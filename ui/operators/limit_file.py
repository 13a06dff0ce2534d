# SPDX-License-Identifier: GPL-3.0-or-later
import bpy
from bpy.props import StringProperty
from bpy_extras.io_utils import ExportHelper, ImportHelper

from ...limits.serialize import load_limit, save_limit
from ...rig.io.bone_errors import describe, naming
from ...rig.io.storage import read_limit, store_limit
from ._common import active_bone_in_pose_mode


class JOINTLIMITS_OT_save_file(bpy.types.Operator, ExportHelper):
    """Save the active bone's fitted limit to a .json or .npz file"""

    bl_idname = "pose.joint_limits_save_file"
    bl_label = "Save Limit File"
    filename_ext = ".json"
    filter_glob: StringProperty(description="Files shown in the file browser", default="*.json;*.npz", options={"HIDDEN"})

    @classmethod
    def poll(cls, context):
        return active_bone_in_pose_mode(cls, context)

    def execute(self, context):
        pb = context.active_pose_bone
        with naming(pb.name):
            limit = read_limit(pb)
        if limit is None:
            raise ValueError(f"{pb.name} has no fitted limit")
        save_limit(self.filepath, limit)
        self.report({"INFO"}, f"Saved {pb.name}'s limit to {self.filepath}")
        return {"FINISHED"}


class JOINTLIMITS_OT_load_file(bpy.types.Operator, ImportHelper):
    """Load a limit from a .json or .npz file onto the active bone (validated, never unpickled)"""

    bl_idname = "pose.joint_limits_load_file"
    bl_label = "Load Limit File"
    bl_options = {"REGISTER", "UNDO"}
    filter_glob: StringProperty(description="Files shown in the file browser", default="*.json;*.npz", options={"HIDDEN"})

    @classmethod
    def poll(cls, context):
        return active_bone_in_pose_mode(cls, context)

    def execute(self, context):
        pb = context.active_pose_bone
        try:
            limit = load_limit(self.filepath)
        except (ValueError, OSError, RecursionError, MemoryError) as err:  # a foreign file, not a bug here
            self.report({"ERROR"}, f"Could not load {self.filepath}: {describe(err)}")
            return {"CANCELLED"}
        store_limit(pb, limit)
        self.report({"INFO"}, f"Loaded a {limit.model.kind} limit onto {pb.name}")
        return {"FINISHED"}
