# SPDX-License-Identifier: GPL-3.0-or-later
"""Point-cloud helpers for rotation clouds, fully vectorized.

* :func:`subsample_min_distance` thins a cloud of ``D``-dimensional points (exp-map vectors,
  quaternions as 4-vectors, ...) to a well spread subset, like Holden's ``subsample_naive`` but
  in ``O(N log N)`` numpy instead of ``O(N M)`` Python.
* :func:`densify_slerp` inserts slerp samples into a time-ordered rotation track so that no
  two consecutive samples are further apart than a given angle (the adaptive sampling of
  Engell-Norregard et al., section 3.2, done in one pass rather than by halving).
"""

import itertools

import numpy as np

from .geometry.quaternion import as_quaternions, check_finite, quaternion_angle, slerp

#: Largest packed cell key; keys are int64 and neighbour offsets must not overflow.
_KEY_LIMIT = 2**62

#: Cells are this much larger (coarse) / smaller (fine) than the ideal size, so floating-point
#: rounding of ``(x - origin) / side`` can never break the geometric promises made below.
_SAFETY = 1e-6


def _as_points(points):
    p = np.asarray(points, dtype=float)
    if p.ndim != 2:
        raise ValueError(f"points must have shape (N, D), got {p.shape}")
    return check_finite(p, "points")


# -- integer grids ------------------------------------------------------------------------------


def _cells(points, origin, side):
    """Integer cell coordinates ``(N, D)`` of ``points`` in a grid of cell size ``side``."""
    return np.floor((points - origin) / side).astype(np.int64)


def _pack(*cell_arrays):
    """Pack integer cells into int64 keys sharing one mixed-radix layout.

    Every coordinate gets one spare cell on both sides, so ``key + offset_key`` of a
    neighbour (offsets in ``{-1, 0, 1}``) is exact and never aliases another cell. Only the
    leading ``k`` dimensions that fit in an int64 are used; keys then identify a *group* of
    cells (a superset), which is still correct for neighbour searches.

    Returns ``(keys per input array, strides (k,), key_space)`` where every key and every
    neighbour key lies in ``[0, key_space)``.
    """
    stacked = np.concatenate(cell_arrays, axis=0)
    lo = stacked.min(axis=0) - 1
    extents = stacked.max(axis=0) - lo + 2
    strides = []
    size = 1
    for extent in extents:
        if size * int(extent) > _KEY_LIMIT:
            break
        strides.append(size)
        size *= int(extent)
    strides = np.array(strides, dtype=np.int64)
    k = len(strides)
    keys = [(c[:, :k] - lo[:k]) @ strides if k else np.zeros(len(c), np.int64) for c in cell_arrays]
    return keys, strides, size


def _offset_keys(strides, half=False):
    """Keys of the ``3**k`` neighbour offsets (``half``: zero and one of each ``+-o`` pair)."""
    k = len(strides)
    offsets = np.array(list(itertools.product((-1, 0, 1), repeat=k)), dtype=np.int64).reshape(-1, k)
    if half:
        # Lexicographically positive offsets: the first non-zero entry is +1.
        nonzero = offsets != 0
        first = np.argmax(nonzero, axis=1)
        sign = offsets[np.arange(len(offsets)), first]
        offsets = offsets[(sign > 0) | ~nonzero.any(axis=1)]
    # Zero offset first: it is where close points are most likely.
    order = np.argsort(np.abs(offsets).sum(axis=1), kind="stable")
    return offsets[order] @ strides


class _Grid:
    """Points grouped by packed cell key, with fast key lookups.

    ``order`` sorts the points by key; group ``g`` (key ``unique[g]``) holds the sorted
    positions ``starts[g]:starts[g] + counts[g]``; ``columns (D, N)`` are the coordinates in
    that order (contiguous per coordinate, for fast gathers). When the packed key space is
    small enough a dense table maps keys to groups (one gather per lookup); otherwise a binary
    search does.
    """

    _TABLE_LIMIT = 1 << 23

    def __init__(self, points, keys, key_space):
        self.order = np.argsort(keys, kind="stable")
        self.unique, self.starts, self.counts = np.unique(keys[self.order], return_index=True, return_counts=True)
        self.columns = np.ascontiguousarray(points[self.order].T)
        self.table = None
        if key_space <= max(self._TABLE_LIMIT, 16 * len(self.unique)) and key_space <= 1 << 24:
            self.table = np.full(key_space, -1, dtype=np.int64 if len(self.unique) >= 2**31 else np.int32)
            self.table[self.unique] = np.arange(len(self.unique))

    def lookup(self, keys):
        """Group index of each key and whether it is occupied."""
        if self.table is not None:
            group = self.table[keys]
            return group, group >= 0
        pos = np.minimum(np.searchsorted(self.unique, keys), len(self.unique) - 1)
        return pos, self.unique[pos] == keys


def _ranges(starts, counts):
    """Concatenated ``arange(starts[k], starts[k] + counts[k])``: ``(owner k, value)``."""
    if np.all(counts == 1):
        return np.arange(len(counts)), starts.copy()
    owner = np.repeat(np.arange(len(counts)), counts)
    value = np.arange(len(owner)) + np.repeat(starts - (np.cumsum(counts) - counts), counts)
    return owner, value


def _squared_distances(cols_a, ia, cols_b, ib):
    """``|a[ia] - b[ib]|**2`` for coordinate columns ``(D, N)``."""
    out = np.zeros(len(ia))
    for ca, cb in zip(cols_a, cols_b, strict=True):
        out += (ca[ia] - cb[ib]) ** 2
    return out


def _close_pairs(points, distance):
    """All pairs ``(i, j)``, ``i != j`` listed once, with ``|p_i - p_j| < distance``.

    Grid of cell size ``distance`` (slightly more, against rounding): close points lie in the
    same or adjacent cells, so half of the ``3**D`` neighbour offsets find every pair once.
    """
    n = len(points)
    if n < 2:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    cells = _cells(points, points.min(axis=0), distance * (1.0 + _SAFETY))
    (keys,), strides, key_space = _pack(cells)
    grid = _Grid(points, keys, key_space)
    out_i, out_j = [], []
    for off in _offset_keys(strides, half=True):
        if off == 0:
            cell_a = np.flatnonzero(grid.counts > 1)
            cell_b = cell_a
        else:
            group, present = grid.lookup(grid.unique + off)
            cell_a = np.flatnonzero(present)
            cell_b = group[cell_a]
        if len(cell_a) == 0:
            continue
        owner, sa = _ranges(grid.starts[cell_a], grid.counts[cell_a])
        cb = cell_b[owner]
        owner, sb = _ranges(grid.starts[cb], grid.counts[cb])
        sa = sa[owner]
        if off == 0:
            keep = sa < sb
            sa, sb = sa[keep], sb[keep]
        close = _squared_distances(grid.columns, sa, grid.columns, sb) < distance * distance
        out_i.append(grid.order[sa[close]])
        out_j.append(grid.order[sb[close]])
    if not out_i:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    return np.concatenate(out_i), np.concatenate(out_j)


def _any_within(queries, targets, distance):
    """``(len(queries),)`` bool: is some target strictly closer than ``distance``?"""
    hit = np.zeros(len(queries), dtype=bool)
    if len(queries) == 0 or len(targets) == 0:
        return hit
    side = distance * (1.0 + _SAFETY)
    origin = np.minimum(queries.min(axis=0), targets.min(axis=0))
    (qkeys, tkeys), strides, key_space = _pack(_cells(queries, origin, side), _cells(targets, origin, side))
    grid = _Grid(targets, tkeys, key_space)
    qcols = np.ascontiguousarray(queries.T)
    pending = np.arange(len(queries))
    for off in _offset_keys(strides):
        group, present = grid.lookup(qkeys[pending] + off)
        q = pending[present]
        cell = group[present]
        owner, st = _ranges(grid.starts[cell], grid.counts[cell])
        qi = q[owner]
        hit[qi[_squared_distances(qcols, qi, grid.columns, st) < distance * distance]] = True
        pending = pending[~hit[pending]]
        if len(pending) == 0:
            break
    return hit


def _luby_mis(n, i, j, priority):
    """Maximal independent set of the graph with edges ``(i, j)`` on ``n`` nodes.

    Luby-style rounds: an undecided node whose priority beats all its undecided neighbours
    joins the set and removes them. Random priorities need ``O(log n)`` rounds in expectation.

    Returns ``(kept (n,) bool, killer (n,) int)``: for a removed node, one kept neighbour.
    """
    kept = np.zeros(n, dtype=bool)
    alive = np.ones(n, dtype=bool)
    killer = np.full(n, -1, dtype=np.int64)
    while alive.any():
        live = alive[i] & alive[j]
        i, j = i[live], j[live]
        best = np.full(n, n, dtype=np.int64)
        np.minimum.at(best, i, priority[j])
        np.minimum.at(best, j, priority[i])
        new = alive & (priority < best)
        kept |= new
        alive &= ~new
        for a, b in ((i, j), (j, i)):
            hit = new[a] & alive[b]
            killer[b[hit]] = a[hit]
            alive[b[hit]] = False
    return kept, killer


def _first_per_cell(cells):
    """For integer cells ``(N, D)``: ``(first, inverse)`` = the lowest index in each occupied
    cell (ascending) and each point's cell number."""
    (keys,), strides, _ = _pack(cells)
    if len(strides) == cells.shape[1]:
        _, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
    else:  # keys would overflow: group by whole rows (slower, exact)
        _, first, inverse = np.unique(cells, axis=0, return_index=True, return_inverse=True)
    return first, inverse.reshape(-1)


# -- public -------------------------------------------------------------------------------------


def subsample_min_distance(points, min_distance, seed=0):
    """Indices of a well spread subset of ``points``: a maximal set at spacing ``min_distance``.

    Parameters
    ----------
    points : array_like, shape (N, D)
        Any small dimension ``D`` (3 for exp-map vectors, 4 for quaternions as 4-vectors);
        Euclidean distance in the same units as ``min_distance``.
    min_distance : float
        Spacing, ``>= 0``. ``0`` keeps every point.
    seed : int, optional
        Seed of the random priorities of the maximal-independent-set rounds: which of two
        close points survives. The result is deterministic for a given seed.

    Returns
    -------
    indices : ndarray of int, shape (M,)
        Sorted indices into ``points`` of the kept points.

    Notes
    -----
    Guarantees, exactly as Holden's ``subsample_naive`` (which keeps a point when no kept point
    is closer than the threshold), though generally not the same subset:

    1. *Spacing*: any two kept points are at distance ``>= min_distance``.
    2. *Covering* (maximality): every input point is at distance ``< min_distance`` from some
       kept point (a kept point covers itself), so no further point could be added.

    In particular exact duplicates collapse to one point, ``N = 0`` gives an empty result and
    ``N = 1`` keeps the point.

    Method: a grid of cell size ``min_distance / sqrt(D)`` (any two points in one cell are
    closer than ``min_distance``) keeps one candidate per occupied cell; candidates closer
    than ``min_distance`` are found through a second grid of cell size ``min_distance``
    (sorted cell keys, one ``searchsorted`` per neighbour offset), and a Luby maximal
    independent set of that conflict graph is kept. A point whose cell candidate was dropped
    is within ``2 * min_distance`` of the kept point that displaced it, not necessarily within
    ``min_distance`` of any: such points are checked against the kept points, and those that
    really are uncovered go through another round (they are at least ``min_distance`` from
    all kept points, so rounds never conflict). Rounds are data dependent but few (typically
    two or three).
    Neighbour offsets number ``3**D``: meant for small ``D``.
    """
    p = _as_points(points)
    n, dim = p.shape
    d = float(min_distance)
    if not np.isfinite(d) or d < 0.0:
        raise ValueError(f"min_distance must be a finite number >= 0, got {min_distance!r}")
    if d == 0.0:
        return np.arange(n, dtype=np.int64)
    if n == 0 or dim == 0:  # no points, or all points coincide in a 0-dimensional space
        return np.arange(min(n, 1), dtype=np.int64)
    origin = p.min(axis=0)
    fine_side = d / np.sqrt(dim) * (1.0 - _SAFETY)
    if np.max(p.max(axis=0) - origin) / fine_side > 2.0**52:
        raise ValueError(f"min_distance {d} is too small for points spread over {np.ptp(p, axis=0).max()}")
    rng = np.random.default_rng(seed)
    kept_all = []
    uncovered = np.arange(n)
    while len(uncovered):
        pts = p[uncovered]
        first, cell_of = _first_per_cell(_cells(pts, origin, fine_side))
        cand = uncovered[first]
        ci, cj = _close_pairs(p[cand], d)
        keep, killer = _luby_mis(len(cand), ci, cj, rng.permutation(len(cand)))
        new_kept = cand[keep]
        kept_all.append(new_kept)
        # Points sharing a cell with a kept candidate are covered by it (cell diameter < d).
        covered = keep[cell_of]
        # Cheap test against the kept neighbour that removed the cell's candidate.
        rest = np.flatnonzero(~covered)
        k = cand[killer[cell_of[rest]]]
        diff = pts[rest] - p[k]
        near = np.einsum("ij,ij->i", diff, diff) < d * d
        covered[rest[near]] = True
        rest = rest[~near]
        covered[rest] = _any_within(pts[rest], p[new_kept], d)
        uncovered = uncovered[~covered]
    return np.sort(np.concatenate(kept_all))


def chord_from_angle(angle):
    """Euclidean distance between two unit quaternions on the same cover ``angle`` apart.

    ``|q1 - q2| = 2 sin(angle / 4)`` for rotations ``angle`` radians apart with
    ``q1 . q2 >= 0``; use it to give :func:`subsample_min_distance` a spacing in radians for
    quaternions as 4-vectors.
    """
    return 2.0 * np.sin(0.25 * np.asarray(angle, dtype=float))


def subsample_rotations(q, min_angle, seed=0):
    """:func:`subsample_min_distance` of quaternions ``(N, 4)`` with a spacing in radians.

    Distances are taken on the covers as given (an unrolled cloud keeps +90 and -270 degrees
    apart, as Holden intends): kept pairs are at least ``min_angle`` apart along the 4D great
    circle, and every rotation is within ``min_angle`` of a kept one on its own cover.
    """
    q = as_quaternions(q)
    if q.ndim != 2:
        raise ValueError(f"rotations must have shape (N, 4), got {q.shape}")
    if not np.isfinite(min_angle) or not 0.0 <= min_angle <= 2.0 * np.pi:
        raise ValueError(f"min_angle must be in [0, 2 pi] radians, got {min_angle!r}")
    return subsample_min_distance(q, float(chord_from_angle(min_angle)), seed=seed)


def _segment_starts(segments, n):
    """``(n,)`` bool mask of clip starts from a bool mask or an int array of start indices."""
    seg = np.asarray(segments)
    if seg.dtype == bool:
        if seg.shape != (n,):
            raise ValueError(f"a boolean segments mask must have shape ({n},), got {seg.shape}")
        return seg.copy()
    if seg.size and not np.issubdtype(seg.dtype, np.integer):
        raise ValueError(f"segments must be a boolean mask or integer start indices, got dtype {seg.dtype}")
    seg = seg.astype(np.int64).reshape(-1)
    if np.any((seg < 0) | (seg >= max(n, 1))):
        raise ValueError(f"segment start indices must lie in [0, {n}), got {seg.tolist()}")
    mask = np.zeros(n, dtype=bool)
    mask[seg] = True
    return mask


def densify_slerp(q, max_angle, segments=None, bridge=False, return_index=False):
    """Insert slerp samples so consecutive rotations are at most ``max_angle`` apart.

    Parameters
    ----------
    q : array_like, shape (N, 4)
        Time-ordered unit quaternions ``(w, x, y, z)``.
    max_angle : float
        Largest allowed geodesic angle (:func:`~limits.quaternion.quaternion_angle`, radians)
        between consecutive output samples; ``> 0``.
    segments : array_like, optional
        Where disjoint clips start: a boolean mask ``(N,)`` (True at the first sample of a
        clip) or integer start indices. Consecutive samples in different clips are not
        interpolated (no rotations are invented between unrelated poses) unless ``bridge``.
    bridge : bool, optional
        Interpolate across clip boundaries too, as Engell-Norregard et al. do to connect
        disjoint motions. Without ``segments`` everything is one clip anyway.
    return_index : bool, optional
        Also return the fractional source position of every output sample.

    Returns
    -------
    samples : ndarray, shape (M, 4)
        The original rotations, bit for bit and in order, with the inserted samples between
        them. Segment ``i -> i + 1`` spanning angle ``a`` gets ``ceil(a / max_angle) - 1``
        evenly spaced samples on the shortest arc, which start on the cover of ``q[i]``
        (unroll the input first if the cover matters).
    position : ndarray of float, shape (M,)
        Only with ``return_index``: ``i + t`` for a sample at slerp parameter ``t`` between
        inputs ``i`` and ``i + 1``; originals have the integer position ``i``, so
        ``samples[position == i]`` is ``q[i]``.
    """
    q = as_quaternions(q)
    if q.ndim != 2:
        raise ValueError(f"rotations must have shape (N, 4), got {q.shape}")
    check_finite(q)
    if not np.isfinite(max_angle) or max_angle <= 0.0:
        raise ValueError(f"max_angle must be a positive number of radians, got {max_angle!r}")
    n = len(q)
    starts = None if segments is None else _segment_starts(segments, n)
    if n < 2:
        out = q.copy()
        return (out, np.arange(n, dtype=float)) if return_index else out
    angles = quaternion_angle(q[:-1], q[1:])
    steps = np.maximum(np.ceil(angles / max_angle), 1.0).astype(np.int64)
    if starts is not None and not bridge:
        steps[starts[1:]] = 1
    total = int(steps.sum())
    seg = np.repeat(np.arange(n - 1), steps)
    j = np.arange(total) - np.repeat(np.cumsum(steps) - steps, steps)
    t = j / steps[seg]
    out = np.empty((total + 1, 4))
    original = j == 0
    out[:-1][original] = q[:-1]
    inner = ~original
    out[:-1][inner] = slerp(q[seg[inner]], q[seg[inner] + 1], t[inner])
    out[-1] = q[-1]
    if return_index:
        return out, np.append(seg + t, float(n - 1))
    return out
