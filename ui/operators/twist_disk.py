# SPDX-License-Identifier: GPL-3.0-or-later
"""Twist disk operators: drag about the bone axis to twist the active bone, and record its
twist as a twist limit at the current swing (Kelly's "Setting Twist"). Thin over
``ui/viewport/posing.py``."""

import bpy
import numpy as np
from bpy.props import EnumProperty, FloatProperty

from ...limits.authoring import pose_helper as ph
from ...limits.model import TEXTURE
from ...limits.registry import model_class
from ...rig import live
from ...rig.io.pose_io import local_quaternion
from ..viewport import posing
from ._common import active_bone_in_pose_mode


class JOINTLIMITS_OT_twist_disk(bpy.types.Operator):
    """Twist the active bone by dragging around its twist disk; right-click or Esc ends"""

    bl_idname = "pose.joint_limits_twist_disk"
    bl_label = "Twist Disk"
    bl_options = {"REGISTER", "UNDO"}

    twist: FloatProperty(
        name="Twist", description="Twist about the bone axis, relative to the limit's reference", default=0.0, subtype="ANGLE"
    )

    @classmethod
    def poll(cls, context):
        return active_bone_in_pose_mode(cls, context)

    def execute(self, context):
        posing.twist_to(context.active_pose_bone, self.twist)
        return {"FINISHED"}

    def invoke(self, context, event):
        if context.area is None or context.area.type != "VIEW_3D":
            return self.execute(context)
        context.window_manager.joint_limits_twist_disk = True
        self._start = None
        context.window_manager.modal_handler_add(self)
        context.area.header_text_set("Twist Disk: drag around the bone to twist it, right-click / Esc to finish")
        return {"RUNNING_MODAL"}

    def _angle(self, context, event):
        from bpy_extras.view3d_utils import region_2d_to_origin_3d, region_2d_to_vector_3d

        coord = (event.mouse_region_x, event.mouse_region_y)
        origin = np.array(region_2d_to_origin_3d(context.region, context.region_data, coord))
        ray = np.array(region_2d_to_vector_3d(context.region, context.region_data, coord))
        return posing.twist_angle(context.object, context.active_pose_bone, origin, ray)

    def modal(self, context, event):
        pb = context.active_pose_bone
        if event.type in {"RIGHTMOUSE", "ESC"} and event.value == "PRESS":
            context.area.header_text_set(None)
            return {"FINISHED"}
        if event.type == "LEFTMOUSE":
            if event.value == "PRESS":
                angle = self._angle(context, event)
                _, twist = ph.current_direction_twist(local_quaternion(pb), posing.reference_of(pb))
                self._start = None if angle is None else (float(twist), angle)
            elif event.value == "RELEASE":
                self._start = None
            return {"RUNNING_MODAL"}
        if event.type == "MOUSEMOVE" and self._start is not None:
            angle = self._angle(context, event)
            if angle is not None:
                self.twist = ph.twist_from_drag(self._start[0], self._start[1], angle)
                posing.twist_to(pb, self.twist)
                context.area.tag_redraw()
            return {"RUNNING_MODAL"}
        return {"PASS_THROUGH"}


class JOINTLIMITS_OT_record_twist_limit(bpy.types.Operator):
    """Record the active bone's twist as its twist limit at the current swing (a twist key); the sinus texture's twist channels are rebuilt from all keys"""

    bl_idname = "pose.joint_limits_record_twist_limit"
    bl_label = "Record Twist Limit Here"
    bl_options = {"REGISTER", "UNDO"}

    side: EnumProperty(
        name="Side",
        description="Which end of the twist range the current twist sets",
        items=(
            ("MIN", "Minimum", "The current twist is the smallest allowed here"),
            ("MAX", "Maximum", "The current twist is the largest allowed here"),
        ),
        default="MAX",
    )

    @classmethod
    def poll(cls, context):
        if not active_bone_in_pose_mode(cls, context):
            return False
        if (
            not model_class(context.active_pose_bone.joint_limit.model).offers(TEXTURE)
            or not context.active_pose_bone.joint_limit.has_limit
        ):
            cls.poll_message_set("Fit a Sinus Texture limit first")
            return False
        return True

    def execute(self, context):
        posing.record_twist_limit(context.object, context.active_pose_bone, self.side)
        live.invalidate()
        count = len(posing.twist_keys(context.active_pose_bone))
        self.report({"INFO"}, f"Twist {self.side.lower()} recorded; {count} twist key(s)")
        return {"FINISHED"}


classes = (JOINTLIMITS_OT_twist_disk, JOINTLIMITS_OT_record_twist_limit)
