# SPDX-License-Identifier: GPL-3.0-or-later
"""Joint Limits: learn realistic joint rotation limits from motion and enforce them.

This file only wires the parts together (docs/architecture.md draws the layers): what Blender
shows (``ui``), live enforcement (``rig.live``) and the headless commands (``cli``).
"""

from . import cli, ui
from .rig import live

_parts = (ui, live, cli)


def register():
    for part in _parts:
        part.register()


def unregister():
    for part in reversed(_parts):
        part.unregister()
