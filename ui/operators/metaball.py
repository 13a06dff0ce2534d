# SPDX-License-Identifier: GPL-3.0-or-later
"""Quaternion-surface limits as metaballs (seed 002): export the active bone's primitives as a
Metaball object beside the rig, rebuild the bone's limit from the edited elements."""

import bpy

from ...rig.tasks.metaball import export_metaball, find_metaball, is_limit_metaball, rebuild_from_metaball
from ._common import bone_with_limit_or_samples, exported_to_rebuild, plural

#: Modes in which the active object can be the metaball to rebuild from.
METABALL_MODES = {"OBJECT", "EDIT_METABALL"}


class JOINTLIMITS_OT_metaball_export(bpy.types.Operator):
    """Export the active bone's quaternion-surface limit as a metaball beside the rig (one element per sphere, negative ones carve), to move, scale, add or delete elements and then rebuild the limit from"""

    bl_idname = "pose.joint_limits_metaball_export"
    bl_label = "Export Metaball"
    bl_options = {"REGISTER", "UNDO"}

    @classmethod
    def poll(cls, context):
        return bone_with_limit_or_samples(cls, context)

    def execute(self, context):
        pb = context.active_pose_bone
        mb_obj, info = export_metaball(context.object, pb, context.scene)
        source = "its quaternion surface" if info["source"] == "limit" else "a quaternion surface fitted to its samples"
        self.report(
            {"INFO"},
            f"Exported '{mb_obj.name}' from {source}: {plural(info['positive'], 'sphere')}, "
            f"{plural(info['negative'], 'carving sphere')}; edit it, then Rebuild From Metaball",
        )
        return {"FINISHED"}


def _metaball_to_rebuild(context):
    """``(metaball object, None)`` the rebuild reads, or ``(None, why not)``."""
    return exported_to_rebuild(
        context,
        object_type="META",
        modes=METABALL_MODES,
        noun="exported limit metaball",
        where="Object or Edit Mode",
        find=find_metaball,
        source=lambda obj: obj if is_limit_metaball(obj) else None,
        missing="exported metaball; use Export Metaball first",
        foreign="is not a metaball exported by Joint Limits",
    )


class JOINTLIMITS_OT_metaball_rebuild(bpy.types.Operator):
    """Rebuild a bone's limit (quaternion surface) from its edited metaball: the active bone's exported metaball in Pose Mode, or the active metaball otherwise"""

    bl_idname = "pose.joint_limits_metaball_rebuild"
    bl_label = "Rebuild From Metaball"
    bl_options = {"REGISTER", "UNDO"}

    @classmethod
    def poll(cls, context):
        mb_obj, why = _metaball_to_rebuild(context)
        if mb_obj is None:
            cls.poll_message_set(why)
        return mb_obj is not None

    def execute(self, context):
        mb_obj, why = _metaball_to_rebuild(context)
        if mb_obj is None:
            self.report({"ERROR"}, why)
            return {"CANCELLED"}
        try:
            _, info = rebuild_from_metaball(mb_obj)
        except ValueError as err:
            self.report({"ERROR"}, f"Limit unchanged: {err}")
            return {"CANCELLED"}
        if info["reference_changed"]:
            self.report(
                {"WARNING"},
                f"{info['bone']}: its reference pose changed since the export; the metaball was read in the exported one",
            )
        self.report(
            {"INFO"},
            f"Rebuilt {info['bone']} from '{mb_obj.name}': {plural(info['positive'], 'sphere')}, {plural(info['negative'], 'carving sphere')}",
        )
        return {"FINISHED"}
