# SPDX-License-Identifier: GPL-3.0-or-later
"""A small raster picture of a rotation cloud and its limit, drawn with numpy: three
orthographic views (X-Y, Y-Z, X-Z) of scaled angle-axis space side by side."""

import numpy as np

CLOUD = np.array([0.15, 0.45, 0.95, 1.0])
BOUNDARY = np.array([0.95, 0.45, 0.1, 1.0])
VIOLATION = np.array([0.9, 0.1, 0.1, 1.0])
BACKGROUND = np.array([1.0, 1.0, 1.0, 1.0])
AXES = np.array([0.8, 0.8, 0.8, 1.0])
VIEWS = ((0, 1), (1, 2), (0, 2))


def _splat(image, xy, colour, radius):
    h, w, _ = image.shape
    for dy in range(-radius, radius + 1):
        for dx in range(-radius, radius + 1):
            if dx * dx + dy * dy > radius * radius:
                continue
            x = xy[:, 0] + dx
            y = xy[:, 1] + dy
            ok = (x >= 0) & (x < w) & (y >= 0) & (y < h)
            image[y[ok], x[ok]] = colour


def cloud_picture(layers, size=256, extent=None):
    """RGBA float image ``(size, 3 * size, 4)`` (row 0 at the bottom, as Blender stores pixels).

    ``layers`` is a list of ``(points (N, 3), rgba (4,), dot_radius_px)`` drawn in order.
    """
    pts = [np.asarray(p, dtype=float).reshape(-1, 3) for p, _, _ in layers]
    allp = np.concatenate(pts) if pts else np.zeros((0, 3))
    if extent is None:
        extent = float(np.abs(allp).max()) * 1.1 if len(allp) else np.pi
    extent = max(extent, 1e-3)
    image = np.empty((size, 3 * size, 4))
    image[:] = BACKGROUND
    half = size // 2
    for v in range(3):
        image[half, v * size : (v + 1) * size] = AXES
        image[:, v * size + half] = AXES
        image[:, v * size] = AXES
    for (_, colour, radius), p in zip(layers, pts):
        for v, (a, b) in enumerate(VIEWS):
            xy = np.empty((len(p), 2), dtype=int)
            xy[:, 0] = v * size + np.clip(((p[:, a] / extent) * 0.5 + 0.5) * (size - 1), 0, size - 1).astype(int)
            xy[:, 1] = np.clip(((p[:, b] / extent) * 0.5 + 0.5) * (size - 1), 0, size - 1).astype(int)
            _splat(image, xy, colour, radius)
    return image
