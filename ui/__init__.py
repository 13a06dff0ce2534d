# SPDX-License-Identifier: GPL-3.0-or-later
"""What Blender shows: properties, operators, panels, viewport drawing and shaders."""
