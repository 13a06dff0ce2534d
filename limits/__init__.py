# SPDX-License-Identifier: GPL-3.0-or-later
"""Joint-limit maths in numpy only (no bpy, no mathutils): quaternions, rotation clouds,
limit models. Importing this package registers every model in :mod:`.model`'s registry."""

from . import model  # noqa: F401  (registry first)

# isort: off
# Registration order is the order of the UI's model list.
from . import euler_box, box, oriented_box, ellipsoid, kdop  # noqa: F401
# isort: on
