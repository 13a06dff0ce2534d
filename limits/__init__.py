# SPDX-License-Identifier: GPL-3.0-or-later
"""Joint-limit maths in numpy only (no bpy, no mathutils).

The interface at the top (``model``: the contract every limit model keeps; ``joint``: a model in
a bone's frame; ``continuity``: motion limited continuously; ``serialize``; ``registry``: every
model by kind; ``constants``, ``checks``, ``cloud``, ``softening``), then one sub-package per
idea: ``geometry``, ``body``, ``models``, ``fitting``, ``ik``, ``export``, ``authoring``.
"""
