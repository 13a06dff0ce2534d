# SPDX-License-Identifier: GPL-3.0-or-later
"""Joint-limit maths in numpy only (no bpy, no mathutils): quaternions, rotation clouds,
limit models. Importing this package imports every module in it, so every model registers
itself in :mod:`.model`'s registry: a new model is one new file."""

import importlib
import pkgutil

from . import model  # noqa: F401  (registry first)

for _info in pkgutil.iter_modules(__path__):
    importlib.import_module(f"{__name__}.{_info.name}")
