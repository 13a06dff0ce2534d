# SPDX-License-Identifier: GPL-3.0-or-later
"""Joint Limits: learn realistic joint rotation limits from motion and enforce them.

This file only wires the parts together (docs/architecture.md draws the layers): the settings,
operators and panels Blender shows, live enforcement, the viewport's drawing, the headless
commands; unregistered in reverse.
"""

from . import cli
from .rig import live
from .ui import operators, panels, props
from .ui.viewport import overlay, paint

_parts = (props, operators, panels, live, overlay, paint, cli)


def register():
    for part in _parts:
        part.register()


def unregister():
    for part in reversed(_parts):
        part.unregister()
