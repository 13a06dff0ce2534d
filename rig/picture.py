# SPDX-License-Identifier: GPL-3.0-or-later
"""Saving numpy pictures as PNG files through Blender's image API."""

import bpy
import numpy as np


def save_png(path, rgba):
    """Write ``rgba (H, W, 4)`` floats (row 0 at the bottom) to ``path`` as PNG."""
    h, w, _ = rgba.shape
    image = bpy.data.images.new("joint_limits_picture", width=w, height=h, alpha=True)
    try:
        image.pixels.foreach_set(np.ascontiguousarray(rgba, dtype=np.float32).ravel())
        image.filepath_raw = str(path)
        image.file_format = "PNG"
        image.save()
    finally:
        bpy.data.images.remove(image)
