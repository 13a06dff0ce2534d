# SPDX-License-Identifier: GPL-3.0-or-later
"""Sculpted limits (seed 000, section 3.4): export the active bone's allowed region as a mesh,
rebuild the bone's SDF grid limit from the edited mesh."""

import bpy
from bpy.props import IntProperty

from ...rig.tasks.sculpt import export_sculpt_mesh, find_sculpt_mesh, rebuild_from_sculpt_mesh, sculpt_source
from ._common import bone_with_limit_or_samples, exported_to_rebuild, plural

#: Modes in which the active object can be the mesh to rebuild from.
MESH_MODES = {"OBJECT", "EDIT_MESH", "SCULPT"}


class JOINTLIMITS_OT_sculpt_export(bpy.types.Operator):
    """Export the active bone's allowed rotations as a closed mesh beside the rig (rotation space), to move, scale, sculpt or shrink-wrap and then rebuild the limit from"""

    bl_idname = "pose.joint_limits_sculpt_export"
    bl_label = "Export Limit Mesh"
    bl_options = {"REGISTER", "UNDO"}

    resolution: IntProperty(
        name="Resolution",
        description="Grid nodes per axis of the rebuilt limit (and of the fit when the bone's limit is not an SDF grid); 0 uses the limit's own",
        default=0,
        min=0,
        max=128,
    )

    @classmethod
    def poll(cls, context):
        return bone_with_limit_or_samples(cls, context)

    def execute(self, context):
        pb = context.active_pose_bone
        mesh_obj, info = export_sculpt_mesh(context.object, pb, context.scene, self.resolution or None)
        source = "its SDF grid" if info["source"] == "grid" else "an SDF grid fitted to its samples"
        self.report(
            {"INFO"},
            f"Exported '{mesh_obj.name}' from {source}: {plural(info['vertices'], 'vertex')}, {plural(info['faces'], 'face')}; "
            f"edit it, then Rebuild From Mesh ({info['resolution']}^3 grid)",
        )
        return {"FINISHED"}


def _mesh_to_rebuild(context):
    """``(mesh object, None)`` the rebuild reads, or ``(None, why not)``."""
    return exported_to_rebuild(
        context,
        object_type="MESH",
        modes=MESH_MODES,
        noun="exported limit mesh",
        where="Object, Edit or Sculpt Mode",
        find=find_sculpt_mesh,
        source=sculpt_source,
        missing="exported limit mesh; use Export Limit Mesh first",
        foreign="is not an exported limit mesh (nor shrink-wrapped onto one)",
    )


class JOINTLIMITS_OT_sculpt_rebuild(bpy.types.Operator):
    """Rebuild a bone's limit (SDF grid) from its edited limit mesh: the active bone's exported mesh in Pose Mode, or the active mesh (or a mesh shrink-wrapped onto it) otherwise"""

    bl_idname = "pose.joint_limits_sculpt_rebuild"
    bl_label = "Rebuild From Mesh"
    bl_options = {"REGISTER", "UNDO"}

    resolution: IntProperty(
        name="Resolution",
        description="Grid nodes per axis; 0 uses the one chosen at export",
        default=0,
        min=0,
        max=128,
    )

    @classmethod
    def poll(cls, context):
        mesh_obj, why = _mesh_to_rebuild(context)
        if mesh_obj is None:
            cls.poll_message_set(why)
        return mesh_obj is not None

    def execute(self, context):
        mesh_obj, why = _mesh_to_rebuild(context)
        if mesh_obj is None:  # the poll says why; scripts may skip it
            self.report({"ERROR"}, why)
            return {"CANCELLED"}
        try:
            _, info = rebuild_from_sculpt_mesh(mesh_obj, context.evaluated_depsgraph_get(), self.resolution or None)
        except ValueError as err:
            self.report({"ERROR"}, f"Limit unchanged: {err}")
            return {"CANCELLED"}
        if info["reference_changed"]:
            self.report(
                {"WARNING"}, f"{info['bone']}: its reference pose changed since the export; the mesh was read in the exported one"
            )
        self.report(
            {"INFO"},
            f"Rebuilt {info['bone']} from '{mesh_obj.name}': {plural(info['faces'], 'face')}, {info['resolution']}^3 grid, "
            f"{plural(info['inside_nodes'], 'inside node')}, {plural(info['components'], 'component')}",
        )
        return {"FINISHED"}
