# SPDX-License-Identifier: GPL-3.0-or-later
"""Images over the sphere of swing directions: distances, dilation, islands, smooth filling,
bilinear taps and spherical hulls, all by arc length and across the layout's seams
(:mod:`.sphere_maps`).

The sinus texture (:mod:`..models.sinus.texture`) and the pose helper build and edit their masks and
twist channels with these; nothing here knows what the channels mean.
"""

import functools

import numpy as np

from . import sphere_maps as sm


def shape_of(mask):
    return tuple(int(s) for s in mask.shape[:2])


def _steps(shape, layout, max_radius):
    h, w = shape
    top = max(h, w) // 2
    if max_radius is not None and np.isfinite(max_radius):
        step = _min_texel_step(layout, shape)
        top = min(top, int(np.ceil(max_radius / max(step, 1e-12))) + 1)
    steps = []
    k = 1
    while k < top:
        k *= 2
    while k >= 1:
        steps.append(k)
        k //= 2
    return steps + [1]


_MIN_STEP = {}


def _min_texel_step(layout, shape):
    key = (layout, shape)
    if key not in _MIN_STEP:
        c = sm.texel_centres(layout, shape)
        dots = max(np.max(np.sum(c[:, 1:] * c[:, :-1], axis=-1)), np.max(np.sum(c[1:] * c[:-1], axis=-1)))
        _MIN_STEP[key] = float(np.arccos(min(dots, 1.0)))
    return _MIN_STEP[key]


@functools.lru_cache(maxsize=32)
def _border_grid(layout, shape, k):
    """Flat texel indices ``(H + 2k, W + 2k)`` int32 of the texture with a border of ``k``
    texels continued across the seams (read-only, cached)."""
    h, w = shape
    rows, cols = np.meshgrid(np.arange(-k, h + k), np.arange(-k, w + k), indexing="ij")
    r, c = sm.wrap_texels(rows, cols, layout, shape)
    grid = (r * w + c).astype(np.int32)
    grid.flags.writeable = False
    return grid


def distance_transform(seeds, layout=sm.DEFAULT_LAYOUT, max_radius=None):
    """Arc distance (radians) from every texel centre to the nearest seed texel's centre.

    Parameters
    ----------
    seeds : (H, W) bool array
    layout : str
    max_radius : float, optional
        Distances beyond this need not be exact (they come out larger or infinite); limits the
        work.

    Returns
    -------
    (H, W) float array, ``inf`` where no seed is found (no seeds at all, or beyond reach).

    A spherical jump-flooding distance transform: every texel keeps the seed nearest to it by
    arc length among those its neighbours at grid offsets ``k`` (halving from the reach down
    to 1, plus one extra pass of 1) know, with neighbours taken across the layout's seams.
    Like every jump-flooding scheme it can, rarely, miss the nearest seed by a fraction of a
    texel; it is used for morphology and stress, never for the nearest-boundary table.
    """
    seeds = np.asarray(seeds, dtype=bool)
    shape = shape_of(seeds)
    flat = seeds.ravel()
    if not flat.any():
        return np.full(shape, np.inf)
    c = sm.texel_centres(layout, shape).reshape(-1, 3)
    h, w = shape
    cx, cy, cz = (c[:, i].reshape(shape).astype(np.float32) for i in range(3))
    # the best seed's direction per texel (NaN: none yet, never wins a comparison); float32
    # halves the memory traffic and resolves arcs to ~1e-6 rad at texel scale
    nan = np.float32(np.nan)
    bx = np.where(seeds, cx, nan)
    by = np.where(seeds, cy, nan)
    bz = np.where(seeds, cz, nan)
    best_cos = np.where(seeds, np.float32(1.0), np.float32(-2.0))
    dots = np.empty(shape, dtype=np.float32)
    tmp = np.empty(shape, dtype=np.float32)
    better = np.empty(shape, dtype=bool)
    for k in _steps(shape, layout, max_radius):
        grid = _border_grid(layout, shape, k)
        px, py, pz = bx.ravel()[grid], by.ravel()[grid], bz.ravel()[grid]
        for dr, dc in ((-k, 0), (k, 0), (0, -k), (0, k), (-k, -k), (-k, k), (k, -k), (k, k)):
            cut = (slice(k + dr, k + dr + h), slice(k + dc, k + dc + w))
            sx, sy, sz = px[cut], py[cut], pz[cut]
            np.multiply(sx, cx, out=dots)
            np.multiply(sy, cy, out=tmp)
            dots += tmp
            np.multiply(sz, cz, out=tmp)
            dots += tmp
            np.greater(dots, best_cos, out=better)
            np.copyto(best_cos, dots, where=better)
            np.copyto(bx, sx, where=better)
            np.copyto(by, sy, where=better)
            np.copyto(bz, sz, where=better)
    best = np.where(np.isnan(bx), -1, 0)
    out = np.arccos(np.clip(best_cos.astype(float), -1.0, 1.0))
    out[best < 0] = np.inf
    return out


def dilate(mask, radius, layout=sm.DEFAULT_LAYOUT):
    """Texels within ``radius`` radians (arc, centre to centre) of a ``mask`` texel."""
    mask = np.asarray(mask, dtype=bool)
    if radius <= 0 or not mask.any():
        return mask.copy()
    return distance_transform(mask, layout, radius) <= radius


def count_islands(mask, layout=sm.DEFAULT_LAYOUT):
    """Connected allowed regions of ``mask (H, W)`` (8-neighbours, across seams).

    Returns ``(count, labels)``: ``labels (H, W)`` int64, -1 on forbidden texels, else the
    smallest flat index of the texel's island. Vectorized union-find (hooking plus pointer
    jumping).
    """
    mask = np.asarray(mask, dtype=bool)
    shape = shape_of(mask)
    flat = mask.ravel()
    labels = np.arange(flat.size)
    a_list, b_list = [], []
    for dr, dc in ((0, 1), (1, 0), (1, 1), (1, -1)):
        nb = sm.shifted_texels(layout, shape, dr, dc)
        keep = flat & flat[nb]
        a_list.append(np.flatnonzero(keep))
        b_list.append(nb[keep])
    a = np.concatenate(a_list)
    b = np.concatenate(b_list)
    while a.size:
        la, lb = labels[a], labels[b]
        differ = la != lb
        if not differ.any():
            break
        a, b, la, lb = a[differ], b[differ], la[differ], lb[differ]
        np.minimum.at(labels, np.maximum(la, lb), np.minimum(la, lb))
        while True:
            jumped = labels[labels]
            if np.array_equal(jumped, labels):
                break
            labels = jumped
    labels = np.where(flat, labels, -1)
    count = int(np.unique(labels[flat]).size)
    return count, labels.reshape(shape)


def fill_smooth(values, known, layout=sm.DEFAULT_LAYOUT, iterations=6):
    """Fill the texels of ``values (H, W, C)`` where ``known (H, W)`` is False, smoothly.

    Pull-push inpainting: known texels are averaged down a pyramid of half-resolution
    textures (the same layout), the coarsest level fills everything, and each finer level takes
    its unknown texels from the level below and relaxes them with ``iterations`` Jacobi sweeps
    (mean of the 4 neighbours across seams). Known texels keep their values.
    """
    values = np.asarray(values, dtype=float)
    known = np.asarray(known, dtype=bool)
    if not known.any():
        raise ValueError("nothing to fill from: no known texels")
    if known.all():
        return values.copy()
    h, w = known.shape
    channels = values.shape[2]
    if h % 2 == 0 and w % 2 == 0 and min(h, w) >= 8:
        weight = known.reshape(h // 2, 2, w // 2, 2).sum(axis=(1, 3))
        total = (values * known[..., None]).reshape(h // 2, 2, w // 2, 2, channels).sum(axis=(1, 3))
        coarse_known = weight > 0
        coarse = total / np.maximum(weight, 1)[..., None]
        coarse = fill_smooth(coarse, coarse_known, layout, iterations)
        guess = coarse.repeat(2, axis=0).repeat(2, axis=1)
    else:
        guess = np.broadcast_to(values[known].mean(axis=0), values.shape)
    out = np.where(known[..., None], values, guess).reshape(-1, channels)
    free = ~known.ravel()
    nb = sm.neighbour_texels(layout, (h, w), diagonal=False)[:, free]
    for _ in range(iterations):
        out[free] = 0.25 * (out[nb[0]] + out[nb[1]] + out[nb[2]] + out[nb[3]])
    return out.reshape(h, w, channels)


def texel_corner(u, v, shape):
    """``(x0, y0, fx, fy)``: the texel (column, row; int64) whose centre is the bilinear
    interpolation's first tap at texture coordinates ``u, v``, and the fractions past it."""
    h, w = shape
    x = np.asarray(u) * w - 0.5
    y = np.asarray(v) * h - 0.5
    x0 = np.floor(x)
    y0 = np.floor(y)
    return x0.astype(np.int64), y0.astype(np.int64), x - x0, y - y0


def bilinear_taps(u, v, layout, shape):
    """Flat texel indices ``(..., 4)`` and weights ``(..., 4)`` of bilinear interpolation between
    texel centres at texture coordinates ``u, v``, across the layout's seams."""
    x0, y0, fx, fy = texel_corner(u, v, shape)
    w = shape[1]
    rows = np.stack((y0, y0, y0 + 1, y0 + 1), axis=-1)
    cols = np.stack((x0, x0 + 1, x0, x0 + 1), axis=-1)
    r, c = sm.wrap_texels(rows, cols, layout, shape)
    weights = np.stack(((1 - fx) * (1 - fy), fx * (1 - fy), (1 - fx) * fy, fx * fy), axis=-1)
    return r * w + c, weights


def spherical_hull_mask(directions, layout, shape):
    """Texels inside the spherical convex hull of unit ``directions (K, 3)`` (all within an open
    hemisphere): their gnomonic projection about the mean direction keeps great circles
    straight, so the hull is a plane convex hull there."""
    mean = directions.sum(axis=0)
    norm = np.linalg.norm(mean)
    if norm < 1e-9 or np.any(directions @ (mean / norm) <= 1e-6):
        raise ValueError("the twist keys do not lie within one hemisphere: pass a mask for their region")
    m = mean / norm
    helper = np.array([1.0, 0.0, 0.0]) if abs(m[0]) < 0.9 else np.array([0.0, 0.0, 1.0])
    e1 = np.cross(m, helper)
    e1 /= np.linalg.norm(e1)
    e2 = np.cross(m, e1)
    pts = np.stack((directions @ e1, directions @ e2), axis=-1) / (directions @ m)[:, None]
    hull = _convex_hull_2d(pts)
    centres = sm.texel_centres(layout, shape).reshape(-1, 3)
    front = centres @ m
    inside = front > 1e-6
    if len(hull) < 3:
        return np.zeros(shape, dtype=bool)
    safe = np.where(inside, front, 1.0)
    px = (centres @ e1) / safe
    py = (centres @ e2) / safe
    for (x0, y0), (x1, y1) in zip(hull, np.roll(hull, -1, axis=0)):
        inside &= (x1 - x0) * (py - y0) - (y1 - y0) * (px - x0) >= -1e-12
    return inside.reshape(shape)


def _convex_hull_2d(points):
    """Counter-clockwise convex hull (Andrew's monotone chain) of a few 2-D points."""
    pts = sorted({(float(x), float(y)) for x, y in points})
    if len(pts) < 3:
        return np.array(pts)

    def cross(o, a, b):
        return (a[0] - o[0]) * (b[1] - o[1]) - (a[1] - o[1]) * (b[0] - o[0])

    lower, upper = [], []
    for p in pts:
        while len(lower) >= 2 and cross(lower[-2], lower[-1], p) <= 0:
            lower.pop()
        lower.append(p)
    for p in reversed(pts):
        while len(upper) >= 2 and cross(upper[-2], upper[-1], p) <= 0:
            upper.pop()
        upper.append(p)
    return np.array(lower[:-1] + upper[:-1])
