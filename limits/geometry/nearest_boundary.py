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


def allowed_at(flat_mask, points, layout, shape, offset=0):
    """``(...,)`` bool: the texel of each direction ``points (..., 3)`` is allowed, in the flat
    masks ``flat_mask`` (one or more, one after another) from ``offset`` (each row's own)."""
    u, v = sm._FORWARD[layout](points[..., 0], points[..., 1], points[..., 2])
    return flat_mask[sm.uv_to_texel(u, v, shape) + offset]


def boundary_texels(padded):
    """``(B, H * W)`` bool: allowed texels with a forbidden texel among their 8 neighbours (across
    seams), all at once, from masks with a one-texel border continued across the seams
    ``padded (B, H + 2, W + 2)`` (:func:`.sphere_maps.padded_texels`)."""
    b, h, w = padded.shape[0], padded.shape[1] - 2, padded.shape[2] - 2
    inner = padded[:, :h, :w].copy()
    for dr in (0, 1, 2):
        for dc in (0, 1, 2):
            if (dr, dc) not in ((0, 0), (1, 1)):
                inner &= padded[:, dr : dr + h, dc : dc + w]
    return (padded[:, 1 : h + 1, 1 : w + 1] & ~inner).reshape(b, h * w)


def _boundary_of(flat_mask, layout, shape):
    """:func:`boundary_texels` of one flat mask ``(H * W,)``."""
    padded = flat_mask[sm.padded_texels(layout, shape)].reshape(1, shape[0] + 2, shape[1] + 2)
    return boundary_texels(padded)[0]


def boundary_candidates(boundary, layout, shape):
    """The candidates for every forbidden texel's nearest allowed texel, from one mask's
    :func:`boundary_texels` ``(H * W,)``: ``(index (K,), centres (3, K))``, the flat indices and
    centre directions of the allowed texels with a forbidden neighbour (the nearest allowed
    texel of a forbidden one always borders the forbidden set)."""
    index = np.flatnonzero(boundary)
    centres = sm.texel_centres(layout, shape).reshape(-1, 3)
    return index, np.ascontiguousarray(centres[index].T)


def _nearest_candidate(points, candidates):
    """``(index (n,), cos (n,))``: the candidate (see :func:`boundary_candidates`) whose centre
    is nearest each direction of ``points (n, 3)`` by arc length, and the cosine of that arc.

    The dot products are sums of three products per pair, not a matrix product, so a row's
    answer does not depend on which other rows it is computed with: a table filled texel by
    texel as projection needs it is the table computed all at once, bit for bit."""
    index, (cx, cy, cz) = candidates
    best = np.empty(len(points), dtype=np.int64)
    cos = np.empty(len(points))
    rows = max(1, (1 << 20) // max(index.size, 1))
    for start in range(0, len(points), rows):
        part = points[start : start + rows]
        dots = part[:, 0:1] * cx
        dots += part[:, 1:2] * cy
        dots += part[:, 2:3] * cz
        pick = np.argmax(dots, axis=1)
        best[start : start + rows] = index[pick]
        cos[start : start + rows] = dots[np.arange(len(part)), pick]
    return best, cos


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
    """
    mask = np.asarray(mask, dtype=bool)
    shape = shape_of(mask)
    flat = _check_some_allowed(mask.ravel())
    index = np.arange(flat.size)
    cos = np.ones(flat.size)
    forbidden = np.flatnonzero(~flat)
    if forbidden.size:
        centres = sm.texel_centres(layout, shape).reshape(-1, 3)
        candidates = boundary_candidates(_boundary_of(flat, layout, shape), layout, shape)
        index[forbidden], cos[forbidden] = _nearest_candidate(centres[forbidden], candidates)
    return index, cos


def _check_some_allowed(flat_mask):
    if not flat_mask.any():
        raise ValueError("the sinus texture forbids every swing: at least one texel must be allowed")
    return flat_mask


def texel_scale(shape):
    """Mean texel size in radians (side of a square of equal solid angle)."""
    return float(np.sqrt(4.0 * np.pi / (shape[0] * shape[1])))


def _inset(points, flat_mask, layout, shape, fallback=None, offset=0):
    """Directions moved :data:`INSET` of a texel towards the centre of their own texel (in
    texture coordinates); rows that would not stay allowed take their texel centre."""
    u, v = sm._FORWARD[layout](points[..., 0], points[..., 1], points[..., 2])
    texel = sm.uv_to_texel(u, v, shape)
    h, w = shape
    cu = (texel % w + 0.5) / w
    cv = (texel // w + 0.5) / h
    keep = 1.0 - INSET
    out = sm.uv_to_direction(cu + keep * (u - cu), cv + keep * (v - cv), layout)
    ok = allowed_at(flat_mask, out, layout, shape, offset)
    if not ok.all():
        centres = sm.texel_centres(layout, shape).reshape(-1, 3)
        out[~ok] = centres[texel[~ok]] if fallback is None else fallback[~ok]
    return out


def _bisect(lo, hi, flat_mask, layout, shape, iterations, offset=0):
    """Bisect great arcs from allowed ``lo`` to forbidden ``hi`` (both ``(n, 3)``) for the mask
    crossing; returns the allowed end."""
    for _ in range(iterations):
        mid = lo + hi
        mid /= np.linalg.norm(mid, axis=-1, keepdims=True)
        ok = allowed_at(flat_mask, mid, layout, shape, offset)
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


def nearest_points(texels, flat_masks, layout, shape, candidates):
    """The nearest-boundary table entries ``(n, 3)`` of forbidden texels of one or more masks:
    see :func:`nearest_allowed_points`, which this computes for just these texels, with the same
    result.

    Parameters
    ----------
    texels : (n,) int array
        Flat indices into ``flat_masks``: texel ``t`` of mask ``b`` is ``b * H * W + t``.
    flat_masks : (B * H * W,) bool array
        The masks, one after another.
    candidates : callable
        ``candidates(b)``: mask ``b``'s :func:`boundary_candidates`.
    """
    size = shape[0] * shape[1]
    bone, local = np.divmod(texels, size)
    offset = bone * size
    centres = sm.texel_centres(layout, shape).reshape(-1, 3)
    target = centres[local]
    index = np.empty(len(texels), dtype=np.int64)
    cos = np.empty(len(texels))
    order = np.argsort(bone, kind="stable")
    bones, first = np.unique(bone[order], return_index=True)
    for b, rows in zip(bones.tolist(), np.split(order, first[1:])):
        index[rows], cos[rows] = _nearest_candidate(target[rows], candidates(b))
    start = centres[index]
    arc = np.arccos(np.clip(cos, -1.0, 1.0))
    hi = toward(start, target, np.minimum(arc, 2.0 * texel_scale(shape)))
    ok = allowed_at(flat_masks, hi, layout, shape, offset)
    lo = np.where(ok[:, None], hi, start)
    hi = np.where(ok[:, None], target, hi)
    lo = _bisect(lo, hi, flat_masks, layout, shape, 8, offset)
    return _inset(lo, flat_masks, layout, shape, fallback=start, offset=offset)


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
    flat = _check_some_allowed(mask.ravel())
    table = sm.texel_centres(layout, shape).reshape(-1, 3).copy()
    forbidden = np.flatnonzero(~flat)
    if forbidden.size:
        candidates = boundary_candidates(_boundary_of(flat, layout, shape), layout, shape)
        table[forbidden] = nearest_points(forbidden, flat, layout, shape, lambda _: candidates)
    return table.reshape(shape + (3,))
