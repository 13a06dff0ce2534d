# SPDX-License-Identifier: GPL-3.0-or-later
"""Exact Euclidean distance transforms and connected components on small 3-D grids, in numpy.

Used by the signed-distance-field limit (:mod:`..models.sdf.build`, :mod:`..models.sdf.projection`) to replace
seed 000's brute force over grid nodes x samples.

* :func:`distance_transform` is the separable transform of Felzenszwalb and Huttenlocher
  ("Distance transforms of sampled functions", 2012): one lower envelope of parabolas per grid
  line and axis, so ``O(nodes)`` work per axis. The envelope is built for all lines of an axis
  at once (the loop runs over the ``n`` positions of a line, vectorized over the lines; the
  parabolas it pops are removed in vectorized rounds, at most ``n`` in total per line). The
  result is exact: squared distances in physical units (per-axis spacings), and the flat index
  of a nearest seed. Periodic (closed) axes are handled exactly by transforming three copies of
  each line and keeping the middle one.
* :func:`label_components` labels the 6-connected components of a boolean grid by label
  propagation: every round takes the minimum label along each maximal run of set nodes on each
  axis (a segmented ``minimum.reduceat``; runs wrap around on closed axes), then shortcuts
  labels by pointer jumping. Labels only decrease, so it terminates; the number of rounds is
  about the number of turns of the longest path a component needs (a few for blob-like
  shapes; a maze of ``n`` corridors needs ``O(n)`` rounds, each ``O(nodes)``).

Grids are ``(I, J, K)`` arrays in C order; the flat index of node ``(i, j, k)`` is
``(i * J + j) * K + k``.
"""

import numpy as np


def _envelope(f, x, present):
    """Lower envelope of the parabolas ``(t - x[j])^2 + f[j, l]`` over the sites ``present[j, l]``.

    Parameters
    ----------
    f : (m, L) float array
        Values at the sites, position along axis 0, one grid line per column.
    x : (m,) float array
        Strictly increasing site positions, shared by all lines.
    present : (m, L) bool array
        Which entries are sites; the others are ignored (no seed reaches them yet).

    Returns
    -------
    d2 : (m, L) float array
        ``min_j (x[q] - x[j])^2 + f[j, l]`` over the sites of line ``l``; lines without a site
        keep ``f``.
    arg : (m, L) int array
        A minimizing ``j`` (the site whose parabola is lowest at ``x[q]``); ``q`` itself on lines
        without a site.
    """
    m, lines = f.shape
    rows = np.arange(lines)
    g = (f + (x * x)[:, None]).ravel()
    v = np.zeros(m * lines, dtype=np.intp)  # sites of each envelope, in order (flat, (m, L))
    z = np.empty((m + 1) * lines)  # boundaries between them
    z[:lines] = -np.inf
    pos = rows - lines  # flat position of each line's last envelope entry; < 0 while empty
    for q in range(m):
        act = np.flatnonzero(present[q])
        if not len(act):
            continue
        gq = g[q * lines : (q + 1) * lines]
        xq = x[q]
        pa = pos[act]
        nonempty = pa >= 0
        top = act[nonempty]
        s_all = np.full(len(act), -np.inf)
        if len(top):
            pt = pa[nonempty]
            vk = v.take(pt)
            s = (gq.take(top) - g.take(vk * lines + top)) / (2.0 * (xq - x.take(vk)))
            sel = np.flatnonzero(s <= z.take(pt))
            while len(sel):  # pop hidden parabolas; the first one (z = -inf) always stays
                pt[sel] -= lines
                pp = pt[sel]
                lp = top[sel]
                vp = v.take(pp)
                sp = (gq.take(lp) - g.take(vp * lines + lp)) / (2.0 * (xq - x.take(vp)))
                s[sel] = sp
                sel = sel[sp <= z.take(pp)]
            pa[nonempty] = pt
            s_all[nonempty] = s
        pa += lines
        pos[act] = pa
        v[pa] = q
        z[pa] = s_all
    last = (pos + lines - rows) // lines - 1  # index of the last envelope entry, -1 if empty
    # Which envelope segment holds each position: the number of boundaries below it, minus one.
    # Boundaries are compared as they were when all lines' boundaries were laid end to end, each
    # line shifted by ``offset`` (one sorted array for one searchsorted): ``z + offset <
    # x + offset`` in floating point. Here each used boundary finds its first position with a
    # search in the ``m`` positions and a check of the one position where the shifted
    # comparison can differ, and a cumulative count over the positions gives the segments.
    lo, hi = x[0] - 1.0, x[-1] + 1.0
    entry, line = np.nonzero(np.arange(m + 1)[:, None] <= last[None, :])  # used entries
    zc = np.clip(z.reshape(m + 1, lines)[entry, line], lo, hi)
    zc[entry == 0] = lo
    offset = line * (hi - lo + 4.0)
    first = np.searchsorted(x, zc, side="right")  # first position with x > z
    ahead = np.minimum(first, m - 1)
    first += (first < m) & (x[ahead] + offset <= zc + offset)
    counts = np.bincount(first * lines + line, minlength=(m + 1) * lines).reshape(m + 1, lines)
    seg = np.cumsum(counts[:m], axis=0) - 1
    arg = v.reshape(m, lines)[np.maximum(seg, 0), rows[None, :]]
    empty = last < 0
    if empty.any():
        arg[:, empty] = np.arange(m)[:, None]
    diff = x[:, None] - x[arg]
    return diff * diff + f[arg, rows[None, :]], arg


def _transform_axis(f, present, index, axis, h, closed):
    """One separable pass along ``axis``; ``index`` carries the flat index of the nearest seed."""
    moved = np.moveaxis(f, axis, 0)
    shape = moved.shape
    n = shape[0]
    lines = np.ascontiguousarray(moved).reshape(n, -1)
    have = np.ascontiguousarray(np.moveaxis(present, axis, 0)).reshape(n, -1)
    idx_lines = np.ascontiguousarray(np.moveaxis(index, axis, 0)).reshape(n, -1)
    if closed:
        x = np.arange(3 * n) * h
        d2, arg = _envelope(np.concatenate((lines, lines, lines)), x, np.concatenate((have, have, have)))
        d2, arg = d2[n : 2 * n], arg[n : 2 * n] % n
    else:
        d2, arg = _envelope(lines, np.arange(n) * h, have)
    new_index = np.take_along_axis(idx_lines, arg, axis=0)
    new_present = np.take_along_axis(have, arg, axis=0)
    back = [np.ascontiguousarray(np.moveaxis(a.reshape(shape), 0, axis)) for a in (d2, new_present, new_index)]
    return tuple(back)


def distance_transform(seeds, spacing, closed=(False, False, False)):
    """Exact squared Euclidean distance from every node to the nearest seed node.

    Parameters
    ----------
    seeds : (I, J, K) bool array
        The seed nodes; at least one must be set.
    spacing : (3,) array of float
        Node spacing along each axis (physical units, e.g. radians); all positive.
    closed : (3,) array of bool, optional
        Axes that wrap around (node ``n - 1`` neighbours node ``0``, at distance ``spacing``):
        distances along them are taken the short way round.

    Returns
    -------
    d2 : (I, J, K) float array
        Squared distance in physical units, exact up to rounding.
    nearest : (I, J, K) int array
        Flat index of a nearest seed node.
    """
    seeds = np.asarray(seeds, dtype=bool)
    if seeds.ndim != 3 or not seeds.any():
        raise ValueError(f"distance_transform needs a 3-D grid with at least one seed, got shape {seeds.shape}")
    spacing = np.asarray(spacing, dtype=float).reshape(3)
    closed = np.asarray(closed, dtype=bool).reshape(3)
    f = np.zeros(seeds.shape)
    present = seeds
    index = np.arange(seeds.size).reshape(seeds.shape)
    for axis in range(3):
        f, present, index = _transform_axis(f, present, index, axis, spacing[axis], bool(closed[axis]))
    return f, index


def _line_runs(mask_lines, closed):
    """Run bookkeeping for the set entries of ``mask_lines (L, n)`` in C order.

    Returns ``(starts, run_of_set, seam)``: indices (into the compressed set entries) where runs
    start, the run number of every set entry, and for closed lines the run pairs ``(first,
    last)`` that the seam joins.
    """
    lines, n = mask_lines.shape
    prev = np.zeros_like(mask_lines)
    prev[:, 1:] = mask_lines[:, :-1]
    start = mask_lines & ~prev
    start_set = start[mask_lines]
    run = np.cumsum(start_set) - 1
    starts = np.flatnonzero(start_set)
    seam = None
    if closed and n > 1:
        both = np.flatnonzero(mask_lines[:, 0] & mask_lines[:, -1])
        if len(both):
            position = np.cumsum(mask_lines.ravel()) - 1  # compressed position of each entry
            first = run[position[both * n]]
            last = run[position[both * n + n - 1]]
            keep = first != last
            seam = (first[keep], last[keep])
    return starts, run, seam


def label_components(mask, closed=(False, False, False)):
    """6-connected components of a boolean grid.

    Parameters
    ----------
    mask : (I, J, K) bool array
    closed : (3,) array of bool, optional
        Axes that wrap around (node ``n - 1`` touches node ``0``).

    Returns
    -------
    labels : (I, J, K) int array
        For set nodes, the smallest flat index in their component; ``-1`` elsewhere.
    count : int
        Number of components.
    """
    mask = np.asarray(mask, dtype=bool)
    closed = np.asarray(closed, dtype=bool).reshape(3)
    size = mask.size
    labels = np.where(mask, np.arange(size).reshape(mask.shape), -1)
    if not mask.any():
        return labels, 0
    plans = []
    for axis in range(3):
        moved = np.moveaxis(mask, axis, -1)
        lines = np.ascontiguousarray(moved).reshape(-1, moved.shape[-1])
        plans.append((axis, moved.shape, lines.ravel(), *_line_runs(lines, bool(closed[axis]))))
    set_flat = np.flatnonzero(mask.ravel())
    while True:
        before = labels[mask]
        for axis, shape, flat_mask, starts, run, seam in plans:
            moved = np.ascontiguousarray(np.moveaxis(labels, axis, -1)).ravel()
            values = moved[flat_mask]
            run_min = np.minimum.reduceat(values, starts)
            if seam is not None:
                joint = np.minimum(run_min[seam[0]], run_min[seam[1]])
                run_min[seam[0]] = joint
                run_min[seam[1]] = joint
            moved[flat_mask] = run_min[run]
            labels = np.ascontiguousarray(np.moveaxis(moved.reshape(shape), -1, axis))
        # Pointer jumping: a label is a node of the same component with a smaller-or-equal label.
        flat = labels.ravel()
        while True:
            current = flat[set_flat]
            jumped = flat[current]
            if np.array_equal(jumped, current):
                break
            flat[set_flat] = jumped
        labels = flat.reshape(mask.shape)
        if np.array_equal(labels[mask], before):
            break
    count = int(np.count_nonzero(labels.ravel()[set_flat] == set_flat))
    return labels, count
