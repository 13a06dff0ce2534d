# SPDX-License-Identifier: GPL-3.0-or-later
"""Building the SDF grid limit (:mod:`.grid`) from motion samples: grid layout,
densification, unsigned distance, sign and inside depth (seed 000, sections 3.2 and 3.3).

:func:`sdf_from_rotations` is what :meth:`.grid.SdfGridLimit.fit` runs once the input is
checked.

Steps
-----
1. Grid layout. Per axis the data's range grown by a margin of ``tube + 1.5`` spacings on both
   sides, ``n = resolution`` nodes (``n`` = 8..128, the same on every axis; spacings differ
   per axis). ``tube = epsilon + padding``, but at least ``1.15`` times the largest spacing:
   a densified track then lights a 6-connected chain of nodes (a point on a segment between
   samples at most ``h / 2`` apart is within ``h / 4`` of a sample; every point has all
   corners of its Voronoi face or vertex within ``sqrt(3) h / 2``; ``1 / 4 + sqrt(3) / 2 <
   1.15``).
2. Densification (seed 000, section 3.2 and Fig. 2): :func:`~...cloud.densify_slerp` with an
   angle that keeps consecutive samples at most half the smallest spacing apart in exp-map
   space, then adaptive rounds that subdivide (slerp) just the pairs still too far apart in
   the parameter space (needed near the ZYZ poles; at most :data:`REFINE_ROUNDS` rounds and
   :data:`MAX_STEPS` pieces per pair, so a track through a pole stays broken there). Clips
   given by ``segments`` are bridged (last frame to first frame of the next clip) as in the
   paper unless ``bridge=False``.
3. Unsigned distance ``d`` to the samples without a nodes x samples search: every sample seeds
   its nearest node (each seeded node keeps the sample nearest to it, ``rep``), an exact
   separable Euclidean distance transform (:mod:`...geometry.distance_transform`) gives every node its
   nearest seeded node, and ``d_hat(x) = min |x - rep(s)|`` over the nearest seeds of ``x``
   and of its six neighbours. Error bound: with ``r`` the largest distance from a sample to its
   seed node (at most half a cell diagonal), ``d <= d_hat <= d + 2 r``: ``d_hat`` is a distance
   to a real sample, and the seed of the true nearest sample is within ``d + r`` of ``x`` so the
   nearest seed is too, and its ``rep`` within another ``r``. ``fit_report["distance_error_bound"]``
   holds ``2 r``; the bound is tested against brute force. In practice the error is a small
   fraction of a spacing (the representative is the sample closest to the node).
4. Sign (section 3.3): nodes with ``d_hat > tube`` that are connected (6-neighbours, wrapping on
   closed axes) to the grid's border are outside; every other node is inside (the tube plus the
   pockets it encloses). The number of connected inside components is stored in the parameter
   ``components`` (1 for a well sampled joint; more means islands the densification could not
   join, e.g. separate clips with ``bridge=False``).
5. Signed distance. Outside nodes: ``phi = d_hat - tube``, the distance to the union of tube
   balls, which is the region's boundary seen from outside (pockets are enclosed by the tube).
   Inside nodes: ``phi = -min_y (|x - y| - phi(y))`` over the nearest outside nodes ``y`` of ``x``
   and of its six neighbours (a second exact distance transform, seeded by the outside nodes):
   the ball of radius ``phi(y)`` around an outside node is free of the region, so each term
   bounds the depth of ``x`` from above and the minimum is tight when some ``y`` lies near the
   normal through ``x``. Zero level: the tube's outer surface with the pockets filled.

Cost: two distance transforms and two component labellings, all ``O(nodes)`` numpy passes (a
loop over the ``n`` positions of a grid line, vectorized over lines), plus ``O(samples)`` for
seeding; no Python loop over nodes or samples. Candidate samples a node was already offered
are not evaluated again, and the inside-depth sweeps only visit the nodes within reach of
inside nodes (neither changes the field).
"""

import numpy as np

from ...cloud import _segment_starts, densify_slerp
from ...geometry.distance_transform import distance_transform, label_components
from ...geometry.quaternion import exp_map_from_quaternion, quaternion_angle, slerp
from .space import _WRAP, TWO_PI, _arc_of_sorted, _difference, _to_window, coordinates_from_quaternion

#: The tube is at least this many times the largest spacing (see the module docstring).
TUBE_FLOOR = 1.15

#: Spacings between the tube's extent and the grid's border.
BORDER_SPACINGS = 1.5

#: Sweeps in which every node tries its neighbours' nearest samples (distance refinement).
PROPAGATION_SWEEPS = 2

#: Adaptive densification: rounds, and most pieces a pair of samples is cut into per round.
REFINE_ROUNDS = 4
MAX_STEPS = 256

#: Rows of the densified track made and read at a time (memory: see sdf_from_rotations).
PIECE_SAMPLES = 1 << 18

#: Most samples in a densified track (a few seconds of work); see :func:`_track`.
MAX_DENSIFIED = 1 << 21

#: Periodic axes of a long track: angles kept exactly, and bins past that (see :class:`_Extent`).
ARC_KEEP = 1 << 18
ARC_BINS = 1 << 16


# -- grid layout --------------------------------------------------------------------------------------
class _Extent:
    """Running extent of parameter points, for :func:`_layout` on a track given in pieces.

    Open axes keep their minimum and maximum. Periodic axes keep angles (mod 2 pi) for the
    smallest arc holding them; past :data:`ARC_KEEP` angles only each of :data:`ARC_BINS` equal
    bins' smallest and largest are kept. The arc is then still exact whenever the data leave a
    gap wider than a bin (``2 pi / ARC_BINS``): gaps between bins are kept exactly and gaps
    inside a bin are narrower. Else the circle is covered, the axis is closed, and only where
    its nodes start may differ (by less than a bin).
    """

    def __init__(self, space):
        self.wrap = _WRAP[space]
        self.low = np.full(3, np.inf)
        self.high = np.full(3, -np.inf)
        self.angles = {int(axis): np.empty(0) for axis in np.flatnonzero(self.wrap)}

    def add(self, points):
        """Take in the points ``(N, 3)``; returns self."""
        if not len(points):
            return self
        np.minimum(self.low, points.min(axis=0), out=self.low)
        np.maximum(self.high, points.max(axis=0), out=self.high)
        for axis, kept in self.angles.items():
            kept = np.concatenate((kept, np.mod(points[:, axis], TWO_PI)))
            if len(kept) > ARC_KEEP:
                kept = np.sort(kept)
                bins = np.minimum((kept * (ARC_BINS / TWO_PI)).astype(np.int64), ARC_BINS - 1)
                change = bins[1:] != bins[:-1]
                keep = np.r_[True, change] | np.r_[change, True]  # first and last of each bin
                kept = kept[keep]
            self.angles[axis] = kept
        return self

    def start_extent(self):
        """``start (3,)`` and ``extent (3,)`` of the points taken in (periodic axes: the arc)."""
        start = self.low.copy()
        extent = self.high - start
        for axis, kept in self.angles.items():
            start[axis], extent[axis] = _arc_of_sorted(np.sort(kept))
        return start, extent


def _layout(points, space, n, tube0):
    """Grid ``lower (3,)``, ``spacing (3,)``, ``closed (3,) bool`` and ``tube`` for ``points (N, 3)``."""
    return _layout_of(_Extent(space).add(points), space, n, tube0)


def _layout_of(reach, space, n, tube0):
    """Grid ``lower (3,)``, ``spacing (3,)``, ``closed (3,) bool`` and ``tube`` for the points
    an :class:`_Extent` took in.

    Solves ``h = (extent + 2 margin) / (n - 1)`` with ``margin = tube + 1.5 h`` and
    ``tube = max(tube0, 1.15 max(h))`` in closed form.
    """
    wrap = _WRAP[space]
    start, extent = reach.start_extent()
    usable = n - 1 - 2.0 * BORDER_SPACINGS
    closed = np.zeros(3, dtype=bool)
    for _ in range(3):  # closing an axis can only grow the tube: at most two changes
        h_closed = TWO_PI / n
        open_max = extent[~closed].max() if (~closed).any() else 0.0
        # tube >= floor * h for open axes: tube >= floor (E + 2 tube) / usable.
        tube = max(tube0, TUBE_FLOOR * open_max / (usable - 2.0 * TUBE_FLOOR))
        if closed.any():
            tube = max(tube, TUBE_FLOOR * h_closed)
        spacing = (extent + 2.0 * tube) / usable
        spacing = np.where(closed, h_closed, spacing)
        grown = extent + 2.0 * (tube + BORDER_SPACINGS * spacing)
        newly = wrap & ~closed & (grown >= TWO_PI - 1e-9)
        if not newly.any():
            break
        closed |= newly
    margin = tube + BORDER_SPACINGS * spacing
    lower = np.where(closed, start, start - margin)
    return lower, spacing, closed, float(tube)


# -- densification -------------------------------------------------------------------------------------
def _gaps(p, space):
    """Parameter distance between consecutive rows of ``p (N, 3)``, periodic axes the short way."""
    d = np.diff(p, axis=0)
    wrap = _WRAP[space]
    if wrap.any():
        d[:, wrap] -= TWO_PI * np.round(d[:, wrap] / TWO_PI)
    return np.sqrt(np.sum(d * d, axis=1))


def _subdivide(q, steps):
    """Slerp ``steps[i] - 1`` evenly spaced rotations between ``q[i]`` and ``q[i + 1]``."""
    n = len(q)
    total = int(steps.sum())
    seg = np.repeat(np.arange(n - 1), steps)
    j = np.arange(total) - np.repeat(np.cumsum(steps) - steps, steps)
    out = np.empty((total + 1, 4))
    original = j == 0
    out[:-1][original] = q[:-1]
    inner = ~original
    out[:-1][inner] = slerp(q[seg[inner]], q[seg[inner] + 1], j[inner] / steps[seg[inner]])
    out[-1] = q[-1]
    return out, original


def _runs(steps, size):
    """Bounds ``(R + 1,)`` cutting pairs with ``steps (P,)`` pieces each into runs of consecutive
    pairs of about ``size`` pieces (at least one pair each)."""
    total = np.cumsum(steps)
    cut = np.flatnonzero(np.diff(total // size) > 0) + 1
    return np.r_[0, cut, len(steps)]


def _refined(samples, boundary, space, target, rounds, last):
    """Yield ``samples (M, 4)`` after at most ``rounds`` adaptive rounds (pairs farther apart than
    ``target`` in the parameter space are subdivided unless ``boundary (M - 1,)``), in
    consecutive pieces of about :data:`PIECE_SAMPLES` rows; the last sample only if ``last``
    (the next piece starts with it otherwise)."""
    for done in range(rounds):
        gaps = _gaps(coordinates_from_quaternion(samples, space), space)
        bad = (gaps > target) & ~boundary
        if not bad.any():
            break
        steps = np.ones(len(gaps), dtype=np.int64)
        steps[bad] = np.minimum(np.ceil(gaps[bad] / target * 1.01), MAX_STEPS).astype(np.int64)
        if steps.sum() > PIECE_SAMPLES and len(steps) > 1:
            # Pairs are subdivided independently: refine runs of them one after the other.
            bounds = _runs(steps, PIECE_SAMPLES)
            for a, b in zip(bounds[:-1], bounds[1:]):
                end = last and b == len(steps)
                yield from _refined(samples[a : b + 1], boundary[a:b], space, target, rounds - done, end)
            return
        samples, _ = _subdivide(samples, steps)
        boundary = np.repeat(boundary, steps)
    yield samples if last else samples[:-1]


def _track(q, space, target, segments, bridge):
    """The densified track (module docstring, step 2) of rotations ``q (N, 4)``: samples with
    consecutive parameter distances at most ``target``, yielded in consecutive pieces ``(M_i,
    4)`` of about :data:`PIECE_SAMPLES` rows (a generator; the same again for the same arguments).

    Pairs are densified and refined independently, so the pieces are exactly the samples a
    single pass over the whole track would give. If that track would hold more than
    :data:`MAX_DENSIFIED` samples (a cloud that is not a track, e.g. rotations in random
    order, where each pair spans the grid), ``target`` is widened until it does not (and when
    the samples alone are that many, they are used as they are): the grid has only ``n^3``
    nodes to light, and the work stays bounded.
    """
    n = len(q)
    starts = None if segments is None else _segment_starts(segments, n)
    if n < 2:
        return iter((q.copy(),))
    if space == "EXP_MAP":
        # exp map stretches distances by at most (theta / 2) / sin(theta / 2) at angle theta.
        theta = min(float(np.max(np.linalg.norm(exp_map_from_quaternion(q), axis=-1))) + target, 1.9 * np.pi)
        stretch = (0.5 * theta) / np.sin(0.5 * theta) if theta > 1e-6 else 1.0
    else:
        stretch = 1.0
    angles = np.empty(n - 1)
    for a in range(0, n - 1, PIECE_SAMPLES):
        b = min(a + PIECE_SAMPLES, n - 1)
        angles[a:b] = quaternion_angle(q[a:b], q[a + 1 : b + 1])
    if starts is not None and not bridge:
        angles[starts[1:]] = 0.0  # unbridged clip boundaries are not interpolated
    angle = target / stretch
    # densify_slerp's pieces per pair
    steps = np.maximum(np.ceil(angles / angle), 1.0).astype(np.int64)
    if steps.sum() + 1 > MAX_DENSIFIED:
        room = MAX_DENSIFIED - n
        if room < n:
            return (q[a : a + PIECE_SAMPLES] for a in range(0, n, PIECE_SAMPLES))
        # sum(ceil(x)) < sum(x) + pairs: widen so that sum(angles) / angle <= room
        widen = float(angles.sum()) / angle / room
        target *= widen
        angle = target / stretch
        steps = np.maximum(np.ceil(angles / angle), 1.0).astype(np.int64)
    return _track_pieces(q, starts, angle, steps, space, target, bridge)


def _track_pieces(q, starts, angle, steps, space, target, bridge):
    """The pieces of :func:`_track`: runs of pairs densified by :func:`~...cloud.densify_slerp`
    with ``angle`` (``steps`` pieces per pair), then refined."""
    n = len(q)
    bounds = _runs(steps, PIECE_SAMPLES)
    for a, b in zip(bounds[:-1], bounds[1:]):
        part = None if starts is None else starts[a : b + 1]
        samples, position = densify_slerp(q[a : b + 1], angle, segments=part, bridge=bridge, return_index=True)
        boundary = np.zeros(len(samples) - 1, dtype=bool)
        if part is not None and not bridge:
            whole = position == np.round(position)
            boundary = whole[1:] & part[np.round(position[1:]).astype(np.int64)] & (position[1:] - position[:-1] == 1.0)
        yield from _refined(samples, boundary, space, target, REFINE_ROUNDS, b == n - 1)


# -- building the field ----------------------------------------------------------------------------------
def _node_positions(shape, lower, spacing):
    """``(I, J, K, 3)`` positions of the grid nodes."""
    axes = [lower[a] + spacing[a] * np.arange(shape[a]) for a in range(3)]
    return np.stack(np.meshgrid(*axes, indexing="ij"), axis=-1)


def _six_neighbours(values, closed):
    """``values (I, J, K)`` seen from each node's six neighbours, one array each (edge nodes
    repeat themselves on open axes, wrap on closed ones)."""
    for axis in range(3):
        for shift in (1, -1):
            rolled = np.roll(values, shift, axis=axis)
            if not closed[axis]:
                edge = [slice(None)] * 3
                edge[axis] = 0 if shift == 1 else -1
                rolled[tuple(edge)] = values[tuple(edge)]
            yield rolled


def _neighbour_candidates(nearest, closed):
    """``(7, I, J, K)``: ``nearest`` at each node and at its six neighbours."""
    return np.stack([nearest, *_six_neighbours(nearest, closed)])


def _norm2(d):
    """Squared lengths ``(R,)`` of ``d (R, 3)``, from components (numpy reduces a short last
    axis several times slower)."""
    out = d[:, 0] * d[:, 0]
    out += d[:, 1] * d[:, 1]
    out += d[:, 2] * d[:, 2]
    return out


def _distance2(nodes, others, closed):
    """Squared distances ``(R,)`` between points given axes first, ``nodes`` and ``others`` (3
    arrays ``(R,)`` each), closed axes the short way round (as ``_norm2(_difference(..))``)."""
    out = None
    for axis in range(3):
        d = nodes[axis] - others[axis]
        if closed[axis]:
            d = d - TWO_PI * np.round(d / TWO_PI)
        d *= d
        if out is None:
            out = d
        else:
            out += d
    return out


def _take(table, index):
    """``table[:, index]`` for a ``(3, N)`` table, one fast 1-D gather per axis."""
    return [table[axis].take(index) for axis in range(3)]


def _dilate(mask, closed, times):
    """``mask (I, J, K)`` grown ``times`` times by its six neighbours (wrapping on closed axes,
    as :func:`_neighbour_candidates` sees them)."""
    for _ in range(times):
        grown = mask.copy()
        for rolled in _six_neighbours(mask, closed):
            grown |= rolled
        mask = grown
    return mask


def _first_occurrences(candidates):
    """``(K, R)`` bool: ``candidates[k, r]`` differs from ``candidates[:k, r]`` (a candidate
    seen before for the same row cannot improve on it)."""
    new = np.ones(candidates.shape, dtype=bool)
    for k in range(1, len(candidates)):
        for j in range(k):
            new[k] &= candidates[k] != candidates[j]
    return new


class _Nearest:
    """Running nearest sample (index into ``points``) and squared distance of every node, axes
    first. :meth:`offer` keeps a candidate where it is strictly nearer (so offering a sample a
    node already holds, or one seen before, changes nothing)."""

    def __init__(self, nodes, points, closed):
        self.nodes = nodes  # (3, N)
        self.points = points  # (3, S)
        self.closed = closed
        self.d2 = np.full(nodes.shape[1], np.inf)
        self.best = np.zeros(nodes.shape[1], dtype=np.intp)

    def offer(self, sample, rows=None):
        """Offer sample ``sample[i]`` to node ``rows[i]`` (to node ``i`` when ``rows`` is None)."""
        if rows is None:
            dist2 = _distance2(self.nodes, _take(self.points, sample), self.closed)
            better = dist2 < self.d2
            np.copyto(self.d2, dist2, where=better)
            np.copyto(self.best, sample, where=better)
            return
        dist2 = _distance2(_take(self.nodes, rows), _take(self.points, sample), self.closed)
        better = np.flatnonzero(dist2 < self.d2[rows])
        self.d2[rows[better]] = dist2[better]
        self.best[rows[better]] = sample[better]


def _seed(points, lower, spacing, closed, n, nodes):
    """Seed every sample at its nearest node: ``seed (S,)`` the samples' nodes, ``dist2 (S,)``
    their squared distances to them, ``seeded_nodes (G,)`` increasing, and ``reps (7, G)`` the
    representatives of each seeded node (sample indices). ``nodes (n^3, 3)`` node positions."""
    shape = (n, n, n)
    u = (points - lower) / spacing
    cell = np.rint(u).astype(np.int64)
    cell = np.where(closed, np.mod(cell, n), np.clip(cell, 0, n - 1))
    seed = np.ravel_multi_index(tuple(cell.T), shape)
    offset = _difference(points, nodes[seed], closed)
    dist2 = _norm2(offset)
    # Representatives of each seeded node: the sample nearest the node, then the samples with
    # the smallest and largest coordinate along each axis (the best ones for far queries); on
    # ties the earliest sample. One stable sort by node, then per node the first (last) sample
    # holding the group's minimum (maximum) of each key.
    order = np.argsort(seed, kind="stable")
    grouped = seed[order]
    starts = np.flatnonzero(np.r_[True, grouped[1:] != grouped[:-1]])
    seeded_nodes = grouped[starts]
    group = np.repeat(np.arange(len(starts)), np.diff(np.r_[starts, len(order)]))
    reps = np.empty((7, len(seeded_nodes)), dtype=np.intp)  # sample indices
    for r, key in enumerate((dist2, offset[:, 0], offset[:, 1], offset[:, 2])):
        k = key[order]
        low = np.flatnonzero(k == np.minimum.reduceat(k, starts)[group])
        keep = np.r_[True, group[low[1:]] != group[low[:-1]]]
        reps[2 * r - 1 if r else 0] = order[low[keep]]
        if r:
            high = np.flatnonzero(k == np.maximum.reduceat(k, starts)[group])
            keep = np.r_[group[high[1:]] != group[high[:-1]], True]
            reps[2 * r] = order[high[keep]]
    return seed, dist2, seeded_nodes, reps


def _representatives(points, lower, spacing, closed, n):
    """Increasing indices of the samples ``points (S, 3)`` that :func:`_build` can use: the
    representatives of every seeded node (:func:`_seed`) and one sample farthest from its node
    (for the error bound).

    ``_build`` of these samples (in their order) equals ``_build`` of all: it reads the others
    only through the representatives, and a sample that is a node's first (last) holder of a
    least (greatest) key among all samples is that among any subset holding it, in order.
    So a long track can be built piece by piece, keeping only these between pieces.
    """
    nodes = _node_positions((n, n, n), lower, spacing).reshape(-1, 3)
    _, dist2, _, reps = _seed(points, lower, spacing, closed, n, nodes)
    return np.unique(np.append(reps.ravel(), np.argmax(dist2)))


def _build(points, lower, spacing, closed, n, tube):
    """Signed distance ``phi (n, n, n)``, inside component count and the distance error bound."""
    shape = (n, n, n)
    size = n**3
    nodes = _node_positions(shape, lower, spacing).reshape(-1, 3)
    _, dist2, seeded_nodes, reps = _seed(points, lower, spacing, closed, n, nodes)
    error_bound = 2.0 * float(np.sqrt(dist2.max()))
    nodes = np.ascontiguousarray(nodes.T)
    slot = np.full(size, -1, dtype=np.intp)
    slot[seeded_nodes] = np.arange(len(seeded_nodes))
    seeded = slot >= 0

    _, nearest = distance_transform(seeded.reshape(shape), spacing, closed)
    cands = slot[_neighbour_candidates(nearest, closed).reshape(7, -1)]
    fresh = _first_occurrences(cands)
    near = _Nearest(nodes, np.ascontiguousarray(points.T), closed)
    near.offer(reps[0][cands[0]])
    for k in range(1, 7):
        rows = np.flatnonzero(fresh[k])
        near.offer(reps[0][cands[k, rows]], rows)
    # Near the zero level (where phi must be accurate) also try the other representatives.
    band = np.flatnonzero(near.d2 <= (tube + 3.0 * float(spacing.max())) ** 2)
    for k in range(7):
        rows = band[fresh[k, band]]
        c = cands[k, rows]
        for r in range(1, 7):
            near.offer(reps[r][c], rows)
    # Then let neighbours share their nearest samples (vector propagation, a few sweeps).
    for _ in range(PROPAGATION_SWEEPS):
        for axis in range(3):
            for shift in (1, -1):
                other = np.roll(near.best.reshape(shape), shift, axis=axis).ravel()
                rows = np.flatnonzero(other != near.best)
                if 2 * len(rows) > size:
                    near.offer(other)
                else:
                    near.offer(other[rows], rows)
    d_hat = np.sqrt(near.d2)

    free = (d_hat > tube).reshape(shape)
    labels, _ = label_components(free, closed)
    border = np.zeros(shape, dtype=bool)
    for axis in range(3):
        if not closed[axis]:
            edge = [slice(None)] * 3
            for end in (0, -1):
                edge[axis] = end
                border[tuple(edge)] = True
    touching = np.unique(labels[border & free])
    outside = np.isin(labels, touching) & free
    if not outside.any():  # cannot happen with the margin; keep a sane field anyway
        phi = (d_hat - tube).reshape(shape)
        _, count = label_components(~free, closed)
        return phi, count, error_bound
    outside = outside.ravel()
    phi = np.where(outside, d_hat - tube, 0.0)
    inside = ~outside
    _, near_out = distance_transform(outside.reshape(shape), spacing, closed)
    # depth(x) = min_y |x - y| - phi(y) over candidate outside nodes y: the nearest outside
    # nodes of x and of its neighbours, then neighbours' best y (a few propagation sweeps).
    # Only inside nodes need a depth, so sweep s only visits the nodes within
    # PROPAGATION_SWEEPS - s steps of them (what the later sweeps read).
    depth = np.full(size, np.inf)
    best = np.zeros(size, dtype=np.intp)
    inside_grid = inside.reshape(shape)
    for sweep in range(PROPAGATION_SWEEPS + 1):
        rows = np.flatnonzero(_dilate(inside_grid, closed, PROPAGATION_SWEEPS - sweep))
        if sweep:
            candidates = _neighbour_candidates(best.reshape(shape), closed)[1:].reshape(6, -1)
        else:
            candidates = _neighbour_candidates(near_out, closed).reshape(7, -1)
        at = _take(nodes, rows)
        row_depth, row_best = depth[rows], best[rows]
        for c in candidates[:, rows]:
            value = np.sqrt(_distance2(at, _take(nodes, c), closed))
            value -= phi.take(c)
            better = value < row_depth
            np.copyto(row_depth, value, where=better)
            np.copyto(row_best, c, where=better)
        depth[rows], best[rows] = row_depth, row_best
    phi[inside] = -np.maximum(depth[inside], 0.0)
    _, count = label_components(inside.reshape(shape), closed)
    return phi.reshape(shape), count, error_bound


def sdf_from_rotations(q, space, n, tube0, segments=None, bridge=True, densify=True):
    """Signed distance grid of unit quaternions ``q (N, 4)`` (checked and normalized, ``N >= 1``)
    in ``space`` with ``n`` nodes per axis and a tube of at least ``tube0`` radians; the other
    arguments as for :meth:`.grid.SdfGridLimit.fit`.

    Memory is bounded by the input and the grid, never by the densified track: the track is
    made and read in pieces of about :data:`PIECE_SAMPLES` rows (twice: once for the grid
    layout, once for the field, unless it fits in one piece), and between pieces only the
    samples the field can use are kept (:func:`_representatives`, at most 7 per seeded node
    plus one).

    Returns ``(params, report)``: the model's parameters and its ``fit_report``.
    """
    wrap = _WRAP[space]
    chunks = range(0, len(q), PIECE_SAMPLES)
    reach = _Extent(space)
    for a in chunks:
        reach.add(coordinates_from_quaternion(q[a : a + PIECE_SAMPLES], space))
    lower, spacing, closed, tube = _layout_of(reach, space, n, tube0)
    kept = None  # the points of a track that fits in one piece
    if densify:
        for _ in range(2):  # the layout of the densified track can differ a little
            target = 0.5 * float(spacing.min())
            reach = _Extent(space)
            kept, size = [], 0
            for piece in _track(q, space, target, segments, bridge):
                points = coordinates_from_quaternion(piece, space)
                reach.add(points)
                size += len(piece)
                if kept is not None:
                    kept = kept + [points] if size <= PIECE_SAMPLES else None
            new = _layout_of(reach, space, n, tube0)
            stable = np.all(new[1] >= spacing) and np.array_equal(new[2], closed)
            lower, spacing, closed, tube = new
            if stable:
                break
    if kept is not None:
        pieces = kept
    elif densify:  # the same track again (same target), for the final layout
        pieces = (coordinates_from_quaternion(piece, space) for piece in _track(q, space, target, segments, bridge))
    else:
        pieces = (coordinates_from_quaternion(q[a : a + PIECE_SAMPLES], space) for a in chunks)
    pool, pending, size, used = [], 0, 0, 0
    for points in pieces:
        pool.append(_to_window(points, lower, spacing, closed.astype(float), n, wrap))
        pending += len(points)
        size += len(points)
        if pending > max(PIECE_SAMPLES, 2 * used):
            points = np.concatenate(pool)
            pool = [points[_representatives(points, lower, spacing, closed, n)]]
            pending = used = len(pool[0])
    points = pool[0] if len(pool) == 1 else np.concatenate(pool)
    phi, count, error_bound = _build(points, lower, spacing, closed, n, tube)
    params = {
        "phi": phi,
        "lower": lower,
        "spacing": spacing,
        "closed": closed.astype(float),
        "tube": np.array(tube),
        "components": np.array(float(count)),
    }
    report = {
        "samples": len(q),
        "densified": size,
        "components": count,
        "tube": tube,
        "distance_error_bound": error_bound,
    }
    return params, report
