# SPDX-License-Identifier: GPL-3.0-or-later
"""The Blender edge: moving rotations between bpy data (pose bones, actions, the .blend) and
the numpy arrays that :mod:`..limits` works on. Operators, panels, handlers and the CLI use it."""
