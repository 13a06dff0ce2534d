# SPDX-License-Identifier: GPL-3.0-or-later
"""The seed's picture of a limb's range of motion (Mukai, seed 004): the sphere of directions
from the limb root, in a Lambert azimuthal equal-area projection, coloured by how far the end
reaches along each direction and how wide the middle joint may swivel there; white where the
end cannot go. Pure numpy: an RGBA array the rig side turns into an image.

The projection is centred on the limb's rest direction (an arm or leg hanging): a disc of
radius 2 maps the whole sphere, the rest direction at its centre, the opposite direction on its
rim, and equal areas of the sphere to equal areas of the disc (so the share of the disc that is
coloured is the share of directions the limb reaches). Up in the picture is the swivel's pole
reference (where the middle joint bends at swivel 0)."""

import numpy as np

from ..geometry.quaternion import vector_cross

#: Colour ramp (low to high), linear RGB: dark blue, teal, green, yellow.
RAMP = np.array([[0.05, 0.05, 0.35], [0.0, 0.45, 0.55], [0.25, 0.7, 0.25], [1.0, 0.85, 0.1]])
UNREACHABLE = np.array([1.0, 1.0, 1.0])
BACKGROUND = np.array([0.2, 0.2, 0.2])


def lambert_directions(size, centre, up):
    """``(directions (size, size, 3), on_disc (size, size) bool)``: the unit direction at each
    pixel of a ``size`` x ``size`` Lambert azimuthal equal-area picture centred on ``centre``
    (row 0 at the top, ``up`` pointing up). Pixels off the disc get ``centre``."""
    c = np.asarray(centre, dtype=float)
    c = c / np.linalg.norm(c)
    u = np.asarray(up, dtype=float)
    u = u - (u @ c) * c
    if np.linalg.norm(u) < 1e-9:  # up along the centre: any perpendicular
        u = vector_cross(c, np.array([1.0, 0.0, 0.0]) if abs(c[0]) < 0.9 else np.array([0.0, 1.0, 0.0]))
    u = u / np.linalg.norm(u)
    right = vector_cross(u, c)
    coords = (np.arange(size) + 0.5) / size * 4.0 - 2.0
    x, y = np.meshgrid(coords, -coords)  # (y up)
    rho = np.hypot(x, y)
    on_disc = rho <= 2.0
    cos_c = np.clip(1.0 - 0.5 * rho**2, -1.0, 1.0)  # Lambert: rho = 2 sin(c / 2)
    sin_c = np.sqrt(1.0 - cos_c**2)
    azimuth = np.arctan2(y, x)
    d = cos_c[..., None] * c + sin_c[..., None] * (np.cos(azimuth)[..., None] * right + np.sin(azimuth)[..., None] * u)
    d[~on_disc] = c
    return d, on_disc


def ramp(values):
    """RGB ``(..., 3)`` of ``values`` in [0, 1] along :data:`RAMP`."""
    t = np.clip(np.nan_to_num(values), 0.0, 1.0) * (len(RAMP) - 1)
    i = np.minimum(t.astype(int), len(RAMP) - 2)
    f = (t - i)[..., None]
    return RAMP[i] * (1.0 - f) + RAMP[i + 1] * f


def limb_range_picture(model, size=256):
    """``(size, 2 size, 4)`` float RGBA, row 0 at the top: two equal-area discs of the limb's
    directions (:func:`lambert_directions`): left the farthest reach along each direction, right
    the width of the allowed swivel there, each as a share of its largest value over the
    reachable directions (:data:`RAMP`: dark blue least, yellow most); white where the end
    cannot go, grey off the discs."""
    params = model.params
    d, on_disc = lambert_directions(size, params["rest_direction"], params["pole_reference"])
    flat = d.reshape(-1, 3)
    allowed = model.allows_direction(flat)
    _, far = model.reach_range(flat)
    low, high = model.swivel_range(params["root"] + flat)
    reach = _share_of_most(far, allowed)
    swivel = _share_of_most(high - low, allowed)
    out = np.ones((size, 2 * size, 4))
    for column, values in ((0, reach), (1, swivel)):
        rgb = np.where(allowed[:, None], ramp(values), UNREACHABLE).reshape(size, size, 3)
        rgb[~on_disc] = BACKGROUND
        out[:, column * size : (column + 1) * size, :3] = rgb
    return out


def _share_of_most(values, allowed):
    most = np.max(np.where(allowed, values, 0.0), initial=0.0)
    return values / most if most > 0.0 else np.zeros_like(values)
