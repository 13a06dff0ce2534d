# SPDX-License-Identifier: GPL-3.0-or-later
"""Viewport drawing and interaction: the swing sphere overlay, GPU shaders, limb workspace, texture painting, posing."""
