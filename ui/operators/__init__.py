# SPDX-License-Identifier: GPL-3.0-or-later
"""Operators, one per file. Scripts depend on the ``pose.joint_limits_<verb>`` names. Each is
registered with :func:`._common.checked_operator`: it says when the rig's limit data is lost and
reports bad input in the status bar."""

import bpy

from ._common import checked_operator
from .apply_preset import JOINTLIMITS_OT_apply_preset
from .bake import JOINTLIMITS_OT_bake
from .clear import JOINTLIMITS_OT_clear
from .enforce import JOINTLIMITS_OT_enforce
from .export_engine import JOINTLIMITS_OT_export_engine, menu_export
from .export_ik_limits import JOINTLIMITS_OT_export_ik_limits
from .export_native import JOINTLIMITS_OT_export_native
from .fit import JOINTLIMITS_OT_fit
from .fit_limb import JOINTLIMITS_OT_fit_limb
from .import_bvh import JOINTLIMITS_OT_import_bvh
from .limit_file import JOINTLIMITS_OT_load_file, JOINTLIMITS_OT_save_file
from .metaball import JOINTLIMITS_OT_metaball_export, JOINTLIMITS_OT_metaball_rebuild
from .mirror import JOINTLIMITS_OT_mirror
from .paint_limits import classes as paint_classes
from .ragdoll import JOINTLIMITS_OT_ragdoll
from .report import JOINTLIMITS_OT_report
from .sample import JOINTLIMITS_OT_sample
from .sculpt import JOINTLIMITS_OT_sculpt_export, JOINTLIMITS_OT_sculpt_rebuild
from .show_cloud import JOINTLIMITS_OT_show_cloud
from .swing_sphere import classes as swing_sphere_classes
from .texture import classes as texture_classes
from .twist_disk import classes as twist_disk_classes

classes = (
    JOINTLIMITS_OT_sample,
    JOINTLIMITS_OT_import_bvh,
    JOINTLIMITS_OT_fit,
    JOINTLIMITS_OT_fit_limb,
    JOINTLIMITS_OT_apply_preset,
    JOINTLIMITS_OT_clear,
    JOINTLIMITS_OT_mirror,
    JOINTLIMITS_OT_export_native,
    JOINTLIMITS_OT_export_ik_limits,
    JOINTLIMITS_OT_export_engine,
    JOINTLIMITS_OT_ragdoll,
    JOINTLIMITS_OT_enforce,
    JOINTLIMITS_OT_bake,
    JOINTLIMITS_OT_report,
    JOINTLIMITS_OT_show_cloud,
    JOINTLIMITS_OT_save_file,
    JOINTLIMITS_OT_load_file,
    JOINTLIMITS_OT_sculpt_export,
    JOINTLIMITS_OT_sculpt_rebuild,
    JOINTLIMITS_OT_metaball_export,
    JOINTLIMITS_OT_metaball_rebuild,
    *texture_classes,
    *swing_sphere_classes,
    *twist_disk_classes,
    *paint_classes,
)


def register():
    for cls in classes:
        bpy.utils.register_class(checked_operator(cls))
    bpy.types.TOPBAR_MT_file_export.append(menu_export)


def unregister():
    bpy.types.TOPBAR_MT_file_export.remove(menu_export)
    for cls in reversed(classes):
        bpy.utils.unregister_class(cls)
