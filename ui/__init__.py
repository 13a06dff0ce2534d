# SPDX-License-Identifier: GPL-3.0-or-later
"""What Blender shows: properties, operators, panels, viewport drawing and shaders."""

from . import operators, panels, props
from .viewport import overlay, paint

_parts = (props, operators, panels, overlay, paint)


def register():
    for part in _parts:
        part.register()


def unregister():
    for part in reversed(_parts):
        part.unregister()
