# SPDX-License-Identifier: GPL-3.0-or-later
"""Reading and writing Blender data: pose arrays, actions, stored limits, bone errors. Imports nothing above it."""
