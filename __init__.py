# SPDX-License-Identifier: GPL-3.0-or-later
"""Joint Limits: learn realistic joint rotation limits from motion and enforce them.

This file only wires the parts together; see README.md for the layout.
"""

from . import cli, enforcement, operators, panels, props
from .rig import overlay, paint

_parts = (props, operators, panels, enforcement, overlay, paint, cli)


def register():
    for part in _parts:
        part.register()


def unregister():
    for part in reversed(_parts):
        part.unregister()
