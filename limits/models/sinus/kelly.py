# SPDX-License-Identifier: GPL-3.0-or-later
"""Kelly's 8-bit RGBA joint-limit texture (seed 003), read and written.

The file format of Kelly's dissertation: a 256 x 512 image in his two-hemisphere layout whose
allowed texels hold the twist range and stress, and whose forbidden texels point at their
nearest allowed texel. :mod:`.texture` holds the same information at float precision.
"""

import numpy as np

from ...geometry import sphere_maps as sm
from ...geometry.nearest_boundary import nearest_allowed_texels
from ...geometry.sphere_image import bilinear_taps, fill_smooth
from .texture import MASK, STRESS, TWIST_MAX, TWIST_MIN, SinusTextureLimit


def to_kelly_rgba8(model):
    """Kelly's 8-bit RGBA joint-limit texture ``uint8 (512, 256, 4)`` of an unstacked model.

    Numpy shape ``(rows, columns) = (512, 256)``: Kelly's image is 256 wide by 512 high in his
    two-hemisphere layout (:mod:`...geometry.sphere_maps`, ``"kelly"``); row 0 is the *bottom* row (his
    pixel heights are measured from the bottom; Blender's ``Image.pixels`` has the same order,
    flip the rows for a top-down PNG writer). Models of another layout or size are resampled
    (mask by nearest texel, twist and stress bilinear, at Kelly's texel centres) and their
    nearest-boundary indices recomputed by arc length.

    Channels, following the dissertation ("Correction of point beyond boundary", "Encoding
    and Interpolation of Twist", "Texture Formats"):

    allowed texels (R > 0)
        R = twist minimum (the clockwise limit), G = twist maximum (anticlockwise), as signed
        angles mapped linearly from ``[-pi, pi]``: ``R = 1 + round((min + pi) / 2 pi * 254)``
        (red 0 is reserved for "forbidden"), ``G = round((max + pi) / 2 pi * 255)``; B = stress
        ``round(255 s)``; A = 255 (unused). Kelly gives no scale for the twist bytes and
        records limits "either side of the zero position"; signed angles keep ranges that
        do not straddle zero. Steps: 1.4 degrees.
    forbidden texels (R = 0)
        G = column (0..255) and ``B + (255 - A)`` = row (0..510) of the nearest allowed texel by
        arc length, exactly as his correction shader reads them (``B = min(row, 255)``). Row
        511 (within 0.2 degrees of the -X pole) is not expressible and is written as 510.
    """
    model._check_single()
    layout = model.config["layout"]
    shape = (model.config["height"], model.config["width"])
    image = np.asarray(model.params["image"], dtype=float)
    if layout != "kelly" or shape != sm.KELLY_SHAPE:
        centres = sm.texel_centres("kelly", sm.KELLY_SHAPE).reshape(-1, 3)
        u, v = sm._FORWARD[layout](centres[:, 0], centres[:, 1], centres[:, 2])
        flat = image.reshape(-1, 4)
        mask = flat[sm.uv_to_texel(u, v, shape), MASK] > 0.5
        taps, weights = bilinear_taps(u, v, layout, shape)
        resampled = np.sum(flat[taps] * weights[..., None], axis=1)
        image = resampled.reshape(sm.KELLY_SHAPE + (4,))
        image[..., MASK] = mask.reshape(sm.KELLY_SHAPE)
        if not mask.any():
            raise ValueError("the model's allowed region vanishes at Kelly's resolution")
    h, w = sm.KELLY_SHAPE
    mask = image[..., MASK] > 0.5
    out = np.zeros((h, w, 4), dtype=np.uint8)
    low = np.clip(image[..., TWIST_MIN], -np.pi, np.pi)
    high = np.clip(image[..., TWIST_MAX], -np.pi, np.pi)
    red = 1 + np.rint((low + np.pi) / (2 * np.pi) * 254)
    green = np.rint((high + np.pi) / (2 * np.pi) * 255)
    blue = np.rint(np.clip(image[..., STRESS], 0.0, 1.0) * 255)
    index, _ = nearest_allowed_texels(mask, "kelly")
    row, col = np.divmod(index.reshape(h, w), w)
    row = np.minimum(row, 510)
    b_index = np.minimum(row, 255)
    a_index = 255 - (row - b_index)
    out[..., 0] = np.where(mask, red, 0)
    out[..., 1] = np.where(mask, green, col)
    out[..., 2] = np.where(mask, blue, b_index)
    out[..., 3] = np.where(mask, 255, a_index)
    return out


def from_kelly_rgba8(array):
    """A ``"kelly"``-layout model from Kelly's 8-bit texture ``(512, 256, 4)`` (integers 0..255,
    row 0 at the bottom; see :func:`to_kelly_rgba8` for the channels).

    The stored nearest-boundary indices are derived data and are recomputed (by arc length);
    twist limits of forbidden texels, which the format does not hold, are filled smoothly from
    the allowed ones. ``ValueError`` for a wrong size or channel count, values outside 0..255 or
    an image without any allowed (red > 0) texel.
    """
    a = np.asarray(array)
    if a.ndim != 3 or a.shape[:2] != sm.KELLY_SHAPE:
        raise ValueError(f"a Kelly texture is 256 wide by 512 high: shape (512, 256, 4), got {a.shape}")
    if a.shape[2] != 4:
        raise ValueError(f"a Kelly texture needs 4 channels (RGBA), got {a.shape[2]}")
    if a.dtype.kind not in "iuf" or np.any(a < 0) or np.any(a > 255) or np.any(a != np.rint(a)):
        raise ValueError("a Kelly texture holds integers 0..255")
    a = a.astype(float)
    mask = a[..., 0] > 0
    if not mask.any():
        raise ValueError("the sinus texture forbids every swing: no texel has red > 0")
    low = (a[..., 0] - 1) / 254 * 2 * np.pi - np.pi
    high = a[..., 1] / 255 * 2 * np.pi - np.pi
    pair = np.stack((np.minimum(low, high), np.maximum(low, high)), axis=-1)
    twists = fill_smooth(np.where(mask[..., None], pair, 0.0), mask, "kelly")
    stress = np.where(mask, a[..., 2] / 255, 1.0)
    image = np.concatenate((mask[..., None].astype(float), twists, stress[..., None]), axis=-1)
    return SinusTextureLimit.from_image(image, "kelly")
