# SPDX-License-Identifier: GPL-3.0-or-later
"""The nearest allowed swing of a sinus texture's forbidden texels (Kelly's precomputed
nearest-boundary table), and the great-arc steps it and trajectory projection share.

A mask ``(H, W)`` of allowed texels over the sphere of directions (:mod:`.sphere_maps`) gets,
for every forbidden texel, the exact nearest allowed texel by arc length, then the point where
the great arc towards the forbidden texel leaves the allowed region, pulled a hair inside.
"""

import numpy as np

from . import sphere_maps as sm
from .sphere_image import shape_of

#: Table points and trajectory results are pulled this fraction of a texel inside their texel,
#: so rounding never moves them into a forbidden neighbour.
INSET = 0.01


def allowed_at(flat_mask, points, layout, shape):
    """``(...,)`` bool: the texel of each direction ``points (..., 3)`` is allowed."""
    u, v = sm._FORWARD[layout](points[..., 0], points[..., 1], points[..., 2])
    return flat_mask[sm.uv_to_texel(u, v, shape)]


def _boundary_texels(flat_mask, layout, shape):
    """Allowed texels with a forbidden texel among their 8 neighbours (across seams)."""
    nb = sm.neighbour_texels(layout, shape, diagonal=True)
    return flat_mask & ~np.all(flat_mask[nb], axis=0)


def nearest_allowed_texels(mask, layout=sm.DEFAULT_LAYOUT):
    """Exact nearest allowed texel (by arc length between texel centres) of every texel.

    Parameters
    ----------
    mask : (H, W) bool array
        Allowed texels. At least one must be allowed.
    layout : str

    Returns
    -------
    index : (H * W,) int64
        Flat index of the allowed texel whose centre is nearest each texel's centre (the texel
        itself when allowed).
    cos : (H * W,) float
        Cosine of that arc (1 for allowed texels).

    Only allowed texels on the region's boundary are candidates (the nearest allowed texel of
    a forbidden one always borders the forbidden set); the forbidden x boundary dot products
    are computed in chunks with one matrix product each.
    """
    mask = np.asarray(mask, dtype=bool)
    shape = shape_of(mask)
    flat = mask.ravel()
    if not flat.any():
        raise ValueError("the sinus texture forbids every swing: at least one texel must be allowed")
    centres = sm.texel_centres(layout, shape).reshape(-1, 3)
    index = np.arange(flat.size)
    cos = np.ones(flat.size)
    forbidden = np.flatnonzero(~flat)
    if forbidden.size == 0:
        return index, cos
    candidates = np.flatnonzero(_boundary_texels(flat, layout, shape))
    targets = np.ascontiguousarray(centres[candidates].T)
    rows = max(1, (1 << 21) // max(candidates.size, 1))
    for start in range(0, forbidden.size, rows):
        part = forbidden[start : start + rows]
        dots = centres[part] @ targets
        best = np.argmax(dots, axis=1)
        index[part] = candidates[best]
        cos[part] = dots[np.arange(part.size), best]
    return index, cos


def texel_scale(shape):
    """Mean texel size in radians (side of a square of equal solid angle)."""
    return float(np.sqrt(4.0 * np.pi / (shape[0] * shape[1])))


def _inset(points, flat_mask, layout, shape, fallback=None):
    """Directions moved :data:`INSET` of a texel towards the centre of their own texel (in
    texture coordinates); rows that would not stay allowed take their texel centre."""
    u, v = sm._FORWARD[layout](points[..., 0], points[..., 1], points[..., 2])
    texel = sm.uv_to_texel(u, v, shape)
    h, w = shape
    cu = (texel % w + 0.5) / w
    cv = (texel // w + 0.5) / h
    keep = 1.0 - INSET
    out = sm.uv_to_direction(cu + keep * (u - cu), cv + keep * (v - cv), layout)
    ok = allowed_at(flat_mask, out, layout, shape)
    if not ok.all():
        centres = sm.texel_centres(layout, shape).reshape(-1, 3)
        out[~ok] = centres[texel[~ok]] if fallback is None else fallback[~ok]
    return out


def _bisect(lo, hi, flat_mask, layout, shape, iterations):
    """Bisect great arcs from allowed ``lo`` to forbidden ``hi`` (both ``(n, 3)``) for the mask
    crossing; returns the allowed end."""
    for _ in range(iterations):
        mid = lo + hi
        mid /= np.linalg.norm(mid, axis=-1, keepdims=True)
        ok = allowed_at(flat_mask, mid, layout, shape)
        lo = np.where(ok[:, None], mid, lo)
        hi = np.where(ok[:, None], hi, mid)
    return lo


def toward(a, b, angle):
    """Rotate unit vectors ``a`` towards ``b`` by ``angle`` radians (along the great arc)."""
    t = b - np.sum(a * b, axis=-1, keepdims=True) * a
    n = np.linalg.norm(t, axis=-1, keepdims=True)
    t = np.where(n > 1e-12, t / np.where(n > 1e-12, n, 1.0), 0.0)
    angle = np.asarray(angle)[..., None]
    return np.cos(angle) * a + np.sin(angle) * t


def nearest_allowed_points(mask, layout=sm.DEFAULT_LAYOUT):
    """The nearest-boundary table ``(H, W, 3)`` for an allowed-swing ``mask (H, W)``.

    For each forbidden texel ``f``: the exact nearest allowed texel ``a`` by arc length
    (:func:`nearest_allowed_texels`), then the point where the great arc from ``a``'s centre
    towards ``f``'s centre leaves the allowed region (bisection to 1/128 of a texel), pulled
    1 % of a texel into its own texel so that it stays allowed under rounding. So the entry
    lies on the region's boundary and is at most one texel further from ``f``'s centre than
    the exact nearest allowed direction. Allowed texels store their centre.
    """
    mask = np.asarray(mask, dtype=bool)
    shape = shape_of(mask)
    flat = mask.ravel()
    index, cos = nearest_allowed_texels(mask, layout)
    centres = sm.texel_centres(layout, shape).reshape(-1, 3)
    table = centres.copy()
    forbidden = np.flatnonzero(~flat)
    if forbidden.size:
        start = centres[index[forbidden]]
        target = centres[forbidden]
        arc = np.arccos(np.clip(cos[forbidden], -1.0, 1.0))
        hi = toward(start, target, np.minimum(arc, 2.0 * texel_scale(shape)))
        ok = allowed_at(flat, hi, layout, shape)
        lo = np.where(ok[:, None], hi, start)
        hi = np.where(ok[:, None], target, hi)
        lo = _bisect(lo, hi, flat, layout, shape, 8)
        table[forbidden] = _inset(lo, flat, layout, shape, fallback=start)
    return table.reshape(shape + (3,))
