# SPDX-License-Identifier: GPL-3.0-or-later
"""Swing sphere operators: drag on the sphere to swing the active bone, key the picks along
great arcs, add them to the rotation cloud. Thin over ``ui/viewport/posing.py`` (tested maths)."""

import bpy
import numpy as np
from bpy.props import BoolProperty, FloatProperty, FloatVectorProperty

from ...limits.authoring import pose_helper as ph
from ..viewport import overlay, posing
from ._common import active_bone_in_pose_mode


def _has_picks(cls, context):
    if not active_bone_in_pose_mode(cls, context):
        return False
    if not overlay.picks():
        cls.poll_message_set("Pick directions on the swing sphere first")
        return False
    return True


class JOINTLIMITS_OT_swing_sphere(bpy.types.Operator):
    """Swing the active bone by dragging on its swing sphere (Ctrl: pick on the far side); every release adds a pick. Right-click or Esc ends"""

    bl_idname = "pose.joint_limits_swing_sphere"
    bl_label = "Swing Sphere"
    bl_options = {"REGISTER", "UNDO"}

    direction: FloatVectorProperty(
        name="Direction", description="Where the bone points, in its swing frame", size=3, default=(0.0, 1.0, 0.0)
    )

    @classmethod
    def poll(cls, context):
        return active_bone_in_pose_mode(cls, context)

    def execute(self, context):
        d = np.asarray(self.direction, dtype=float)
        if np.linalg.norm(d) < 1e-9:
            self.report({"ERROR"}, "The direction must not be zero")
            return {"CANCELLED"}
        posing.swing_to(context.active_pose_bone, d)
        overlay.set_picks(overlay.picks() + [d / np.linalg.norm(d)])
        return {"FINISHED"}

    def invoke(self, context, event):
        if context.area is None or context.area.type != "VIEW_3D":
            return self.execute(context)
        context.window_manager.joint_limits_swing_sphere = True
        self._dragging = False
        context.window_manager.modal_handler_add(self)
        context.area.header_text_set("Swing Sphere: drag to swing (Ctrl: far side), right-click / Esc to finish")
        return {"RUNNING_MODAL"}

    def _drag(self, context, event):
        from bpy_extras.view3d_utils import region_2d_to_origin_3d, region_2d_to_vector_3d

        coord = (event.mouse_region_x, event.mouse_region_y)
        origin = np.array(region_2d_to_origin_3d(context.region, context.region_data, coord))
        ray = np.array(region_2d_to_vector_3d(context.region, context.region_data, coord))
        d, _hit = posing.pick(context.object, context.active_pose_bone, origin, ray, far=event.ctrl)
        posing.swing_to(context.active_pose_bone, d)
        self.direction = d.tolist()
        context.area.tag_redraw()

    def modal(self, context, event):
        if event.type in {"RIGHTMOUSE", "ESC"} and event.value == "PRESS":
            context.area.header_text_set(None)
            return {"FINISHED"}
        if event.type == "LEFTMOUSE":
            if event.value == "PRESS":
                self._dragging = True
                self._drag(context, event)
            elif event.value == "RELEASE" and self._dragging:
                self._dragging = False
                overlay.set_picks(overlay.picks() + [np.asarray(self.direction, dtype=float)])
                context.area.tag_redraw()
            return {"RUNNING_MODAL"}
        if event.type == "MOUSEMOVE" and self._dragging:
            self._drag(context, event)
            return {"RUNNING_MODAL"}
        return {"PASS_THROUGH"}


class JOINTLIMITS_OT_key_picks(bpy.types.Operator):
    """Key the active bone along great arcs through the picked directions, one key per frame from the current frame (Draw Interpolation)"""

    bl_idname = "pose.joint_limits_key_picks"
    bl_label = "Key Picks"
    bl_options = {"REGISTER", "UNDO"}

    step: FloatProperty(
        name="Step", description="Largest swing between keys", default=ph.ARC_STEP, min=0.005, max=1.5, subtype="ANGLE"
    )
    clear: BoolProperty(name="Clear Picks", description="Forget the picks once keyed", default=True)

    @classmethod
    def poll(cls, context):
        return _has_picks(cls, context)

    def execute(self, context):
        frames = posing.key_picks(
            context.object, context.active_pose_bone, overlay.picks(), context.scene.frame_current, self.step
        )
        if self.clear:
            overlay.set_picks([])
        self.report({"INFO"}, f"Keyed frames {int(frames[0])}-{int(frames[-1])}")
        return {"FINISHED"}


class JOINTLIMITS_OT_picks_to_cloud(bpy.types.Operator):
    """Add the picked directions (with the bone's current twist) to the active bone's rotation cloud, for artist-driven limits"""

    bl_idname = "pose.joint_limits_picks_to_cloud"
    bl_label = "Add Picks to Cloud"
    bl_options = {"REGISTER", "UNDO"}

    @classmethod
    def poll(cls, context):
        return _has_picks(cls, context)

    def execute(self, context):
        count = posing.add_picks_to_cloud(context.active_pose_bone, overlay.picks())
        self.report({"INFO"}, f"Rotation cloud now holds {count} samples; Fit to use them")
        return {"FINISHED"}


class JOINTLIMITS_OT_clear_picks(bpy.types.Operator):
    """Forget the directions picked on the swing sphere"""

    bl_idname = "pose.joint_limits_clear_picks"
    bl_label = "Clear Picks"
    bl_options = {"REGISTER", "UNDO"}  # the picks are scene data: Ctrl+Z brings them back

    def execute(self, context):
        overlay.set_picks([])
        return {"FINISHED"}


classes = (JOINTLIMITS_OT_swing_sphere, JOINTLIMITS_OT_key_picks, JOINTLIMITS_OT_picks_to_cloud, JOINTLIMITS_OT_clear_picks)
