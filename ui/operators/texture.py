# SPDX-License-Identifier: GPL-3.0-or-later
"""Sinus texture operators: edit the texture as an image, rebuild after painting, files."""

import bpy
from bpy.props import StringProperty
from bpy_extras.io_utils import ExportHelper, ImportHelper

from ...limits.model import TEXTURE
from ...limits.registry import model_class
from ...rig.tasks.texture import (
    boundary_tour,
    cone_name,
    edit_image,
    export_texture,
    import_texture,
    rebuild_from_image,
    update_cone,
)
from ._common import active_bone_in_pose_mode


def _texture_bone(cls, context):
    if not active_bone_in_pose_mode(cls, context):
        return False
    if not model_class(context.active_pose_bone.joint_limit.model).offers(TEXTURE):
        cls.poll_message_set("Set the active bone's model to Sinus Texture and fit it")
        return False
    return True


class JOINTLIMITS_OT_texture_edit(bpy.types.Operator):
    """Put the active bone's sinus texture into a packed image (R allowed, G/B twist min/max, A stress) to edit in the Image Editor or Texture Paint"""

    bl_idname = "pose.joint_limits_texture_edit"
    bl_label = "Edit Texture"
    bl_options = {"REGISTER", "UNDO"}

    @classmethod
    def poll(cls, context):
        return _texture_bone(cls, context)

    def execute(self, context):
        image = edit_image(context.object, context.active_pose_bone)
        self.report({"INFO"}, f"Texture image {image.name!r} ({image.size[0]}x{image.size[1]}) ready to edit")
        return {"FINISHED"}


class JOINTLIMITS_OT_texture_rebuild(bpy.types.Operator):
    """Read the edited texture image back into the limit and recompute its nearest-boundary table"""

    bl_idname = "pose.joint_limits_texture_rebuild"
    bl_label = "Rebuild From Texture"
    bl_options = {"REGISTER", "UNDO"}

    @classmethod
    def poll(cls, context):
        return _texture_bone(cls, context)

    def execute(self, context):
        limit = rebuild_from_image(context.object, context.active_pose_bone)
        if bpy.data.objects.get(cone_name(context.object, context.active_pose_bone)) is not None:
            update_cone(context.object, context.active_pose_bone)
        mask = limit.model.params["image"][..., 0]
        islands = limit.model.config["islands"]
        level = {"WARNING"} if islands > 1 else {"INFO"}
        self.report(level, f"Rebuilt: {100.0 * mask.mean():.1f}% of texels allowed, {islands} island(s)")
        return {"FINISHED"}


class JOINTLIMITS_OT_texture_export(bpy.types.Operator, ExportHelper):
    """Save the active bone's sinus texture: Kelly's 8-bit layout (.png) or the float channels (.exr)"""

    bl_idname = "pose.joint_limits_texture_export"
    bl_label = "Export Texture"
    filename_ext = ".png"
    filter_glob: StringProperty(description="Files shown in the file browser", default="*.png;*.exr", options={"HIDDEN"})

    @classmethod
    def poll(cls, context):
        return _texture_bone(cls, context)

    def execute(self, context):
        try:
            path = export_texture(context.active_pose_bone, self.filepath)
        except (ValueError, RuntimeError, OSError) as err:
            self.report({"ERROR"}, str(err))
            return {"CANCELLED"}
        self.report({"INFO"}, f"Saved {path.name}")
        return {"FINISHED"}


class JOINTLIMITS_OT_texture_import(bpy.types.Operator, ImportHelper):
    """Load a sinus texture (Kelly 8-bit .png, or .exr of the float channels) as the active bone's limit"""

    bl_idname = "pose.joint_limits_texture_import"
    bl_label = "Import Texture"
    bl_options = {"REGISTER", "UNDO"}
    filter_glob: StringProperty(description="Files shown in the file browser", default="*.png;*.exr", options={"HIDDEN"})

    @classmethod
    def poll(cls, context):
        return active_bone_in_pose_mode(cls, context)

    def execute(self, context):
        try:
            limit = import_texture(context.object, context.active_pose_bone, self.filepath)
        except ValueError as err:
            self.report({"ERROR"}, f"Could not import texture: {err}")
            return {"CANCELLED"}
        self.report({"INFO"}, f"Loaded a {limit.model.config['width']}x{limit.model.config['height']} sinus texture")
        return {"FINISHED"}


class JOINTLIMITS_OT_texture_cone(bpy.types.Operator):
    """Show the active bone's sinus cone: apex at the bone head, rim along the boundary of its allowed swings"""

    bl_idname = "pose.joint_limits_texture_cone"
    bl_label = "Show Sinus Cone"
    bl_options = {"REGISTER", "UNDO"}

    @classmethod
    def poll(cls, context):
        return _texture_bone(cls, context)

    def execute(self, context):
        cone = update_cone(context.object, context.active_pose_bone)
        self.report({"INFO"}, f"Sinus cone {cone.name!r} with {len(cone.data.vertices) - 1} rim points")
        return {"FINISHED"}


class JOINTLIMITS_OT_boundary_tour(bpy.types.Operator):
    """Key the active bone around the boundary of its sinus texture in a new action, to preview the limit"""

    bl_idname = "pose.joint_limits_boundary_tour"
    bl_label = "Boundary Tour"
    bl_options = {"REGISTER", "UNDO"}

    count: bpy.props.IntProperty(name="Keys", description="Keys around the boundary", default=48, min=4, max=720)

    @classmethod
    def poll(cls, context):
        return _texture_bone(cls, context)

    def execute(self, context):
        action = boundary_tour(context.object, context.active_pose_bone, self.count, context.scene.frame_start)
        self.report({"INFO"}, f"Keyed {self.count} boundary poses into {action.name!r} (assigned; the previous action is kept)")
        return {"FINISHED"}


classes = (
    JOINTLIMITS_OT_texture_edit,
    JOINTLIMITS_OT_texture_rebuild,
    JOINTLIMITS_OT_texture_export,
    JOINTLIMITS_OT_texture_import,
    JOINTLIMITS_OT_texture_cone,
    JOINTLIMITS_OT_boundary_tour,
)
