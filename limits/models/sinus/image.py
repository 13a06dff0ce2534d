# SPDX-License-Identifier: GPL-3.0-or-later
"""A sinus texture's image: its four channels, and the checks an image and a model's channels
pass before a limit is built from them (files, paint and stored limits are all checked here)."""

import numpy as np

from ...geometry import sphere_maps as sm

#: Channel indices of ``image``.
MASK, TWIST_MIN, TWIST_MAX, STRESS = 0, 1, 2, 3


def check_image(image, layout, shape=None):
    """``image (H, W, 4)`` as floats, or ``ValueError`` naming what is wrong with it."""
    image = np.asarray(image, dtype=float)
    if image.ndim != 3:
        raise ValueError(f"a sinus texture image must have shape (height, width, 4), got {image.shape}")
    if image.shape[2] != 4:
        raise ValueError(f"a sinus texture image needs 4 channels (mask, twist min, twist max, stress), got {image.shape[2]}")
    if shape is not None and image.shape[:2] != tuple(shape):
        raise ValueError(f"a {layout} sinus texture must be {tuple(shape)} texels (height, width), got {image.shape[:2]}")
    sm.texture_shape(image.shape[:2], layout)
    if not np.all(np.isfinite(image)):
        raise ValueError("the sinus texture image contains NaN or infinity")
    return image


#: float16 bit patterns the channel checks compare with. The checks read each value's bits as
#: an int16: its sign is the value's, and without the sign bit a finite value's magnitude orders
#: like its bits. (numpy compares and converts float16 values one at a time, slowly.)
_HALF_MAGNITUDE = 0x7FFF
_HALF_INFINITY = int(np.float16(np.inf).view(np.int16))  # and above: infinity, NaN
_HALF_ONE = int(np.float16(1.0).view(np.int16))
_HALF_FULL_TURN = int(np.float16(2.0 * np.pi).view(np.int16))  # the largest half below 2 pi


def check_channels(image, kind="sinus_texture"):
    """Raise ``ValueError`` for inconsistent channel values of ``image (..., H, W, 4)``, one
    bone's or a stack's, as the model holds it (float16: see :meth:`SinusTextureLimit.round_single`).
    Checked on the bits of each channel's plane, so that turning a big rig's limits on stays quick."""
    bits = np.ascontiguousarray(np.moveaxis(np.asarray(image, dtype=np.float16).view(np.int16), -1, 0))
    magnitude = bits & _HALF_MAGNITUDE  # (4, ..., H, W), as bits
    if np.any(magnitude >= _HALF_INFINITY):
        raise ValueError(f"{kind} limit: the image contains NaN or infinity")
    if not np.all((magnitude[MASK] == 0) | (bits[MASK] == _HALF_ONE)):
        raise ValueError(f"{kind} limit: the mask channel must hold only 0 (forbidden) and 1 (allowed)")
    twists = slice(TWIST_MIN, TWIST_MAX + 1)
    ordered = np.where(bits[twists] < 0, -magnitude[twists], magnitude[twists])  # orders like the values
    if np.any(ordered[0] > ordered[1]):
        raise ValueError(f"{kind} limit: twist minimum exceeds twist maximum somewhere")
    if np.any(magnitude[twists] > _HALF_FULL_TURN):
        raise ValueError(f"{kind} limit: twist limits must lie within [-2 pi, 2 pi] radians")
    if not np.all((magnitude[STRESS] == 0) | ((bits[STRESS] > 0) & (bits[STRESS] <= _HALF_ONE))):
        raise ValueError(f"{kind} limit: stress must lie in [0, 1]")
    if not np.all(np.any(bits[MASK] == _HALF_ONE, axis=(-2, -1))):
        raise ValueError(f"{kind} limit: the mask forbids every swing: at least one texel must be allowed")
