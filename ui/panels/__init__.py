# SPDX-License-Identifier: GPL-3.0-or-later
"""Panels: the 3-D view sidebar tab and the Bone Constraints tab section."""

import bpy

from .authoring import classes as authoring_classes
from .bone_constraints import JOINTLIMITS_PT_bone_constraint
from .sidebar import JOINTLIMITS_PT_enforce, JOINTLIMITS_PT_limit, JOINTLIMITS_PT_tools
from .texture import JOINTLIMITS_PT_texture

classes = (
    JOINTLIMITS_PT_limit,
    JOINTLIMITS_PT_texture,
    JOINTLIMITS_PT_enforce,
    JOINTLIMITS_PT_tools,
    JOINTLIMITS_PT_bone_constraint,
    *authoring_classes,
)


def register():
    for cls in classes:
        bpy.utils.register_class(cls)


def unregister():
    for cls in reversed(classes):
        bpy.utils.unregister_class(cls)
