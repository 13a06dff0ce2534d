# SPDX-License-Identifier: GPL-3.0-or-later
"""The signed-distance-field limit of Engell-Norregard, Niebe and Erleben (seed 000).

The allowed region is a set in a three-dimensional parameter space: the rotations within a
*tube* of radius ``tube`` (radians, in that space) of the densified motion samples, plus every
pocket the tube encloses. It is stored as a signed distance ``phi`` sampled on a regular grid:
``phi < 0`` inside, ``phi > 0`` outside, ``phi = 0`` on the region's boundary.

Spaces (``config["space"]``)
----------------------------
``"EXP_MAP"`` (default)
    Scaled angle-axis vector of the reference-relative rotation (radians). The reference pose
    is the data's mean, so the data sit around the origin, where the exp map is locally an
    isometry: parameter distance equals the geodesic angle to first order, and within a turn
    of ``theta`` it stretches distances by at most ``(theta / 2) / sin(theta / 2)`` (1.57 at a
    half turn). The tube is therefore a nearly uniform band of rotations and the projection is
    close to the geodesically nearest allowed rotation.
``"ZYZ"``
    Seed 000's proper Z-Y-Z Euler angles ``(a, b, c)`` (:func:`~.quaternion.zyz_from_quaternion`),
    ``a`` and ``c`` periodic. Kept for comparison. Its chart is singular at ``b = 0`` and
    ``b = pi``, and ``b = 0`` is the reference pose itself, i.e. the middle of the data: there
    a tiny rotation moves ``a`` and ``c`` by up to ``pi`` in opposite directions, so the tube is
    far too thin in some directions and far too wide in others, and densified tracks cannot be
    made continuous. ``bench/bench_sdf_grid.py`` measures the difference (parameter distance
    over geodesic angle, and the geodesic error of projections); this is why ``EXP_MAP`` is the
    default.

    The periodic axes have no seam: each is read on the circle. The grid window along ``a``
    (``c``) is the smallest arc holding the data (the complement of the largest gap between
    sorted angles) grown by the margin, and a query angle is taken on the turn that puts it in
    the window, or nearest to it. When the grown arc covers the whole circle the axis is
    *closed*: ``n`` nodes spaced ``2 pi / n`` around it, with wrap-around lookups, distance
    transform, flood fill and gradients.

Building (:meth:`SdfGridLimit.fit`)
-----------------------------------
1. Grid layout. Per axis the data's range grown by a margin of ``tube + 1.5`` spacings on both
   sides, ``n = resolution`` nodes (``n`` = 8..128, the same on every axis; spacings differ
   per axis). ``tube = epsilon + padding``, but at least ``1.15`` times the largest spacing:
   a densified track then lights a 6-connected chain of nodes (a point on a segment between
   samples at most ``h / 2`` apart is within ``h / 4`` of a sample; every point has all
   corners of its Voronoi face or vertex within ``sqrt(3) h / 2``; ``1 / 4 + sqrt(3) / 2 <
   1.15``).
2. Densification (seed 000, section 3.2 and Fig. 2): :func:`~.cloud.densify_slerp` with an
   angle that keeps consecutive samples at most half the smallest spacing apart in exp-map
   space, then adaptive rounds that subdivide (slerp) just the pairs still too far apart in
   the parameter space (needed near the ZYZ poles; at most :data:`REFINE_ROUNDS` rounds and
   :data:`MAX_STEPS` pieces per pair, so a track through a pole stays broken there). Clips
   given by ``segments`` are bridged (last frame to first frame of the next clip) as in the
   paper unless ``bridge=False``.
3. Unsigned distance ``d`` to the samples without a nodes x samples search: every sample seeds
   its nearest node (each seeded node keeps the sample nearest to it, ``rep``), an exact
   separable Euclidean distance transform (:mod:`.distance_transform`) gives every node its
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

Queries
-------
``contains``: trilinear ``phi <= tolerance`` (eq. 5 of the paper with its epsilon folded into
``phi``; the default tolerance :data:`CONTAINS_TOLERANCE` only absorbs rounding). Points
outside the grid box (on non-closed axes) are outside.

``project``: rotations with ``phi <= tolerance`` are returned unchanged. Others are clamped
into the grid box, then moved twice by ``p <- p - phi(p) g / |g|`` (eqs. 6 and 7: ``g`` is the
trilinear interpolation of the nodes' central-difference gradients; for an exact distance
field ``|g| = 1`` and this is the paper's step, normalizing it only matters near ridges where
averaged gradients shrink). Rotations whose ``phi`` is still above ``tolerance / 2`` (corners
of the field, ridges) get at most :data:`EXTRA_STEPS` more such steps aimed slightly inside,
and the few left after that are bisected on the segment to their nearest inside node (found
by a distance transform of the inside nodes, computed once per model when first needed), so
every result has ``phi <= tolerance / 2``: it counts as inside, and projecting it again
returns it unchanged. Constant time per rotation; no search over samples.

Parameters (``params``)
-----------------------
``phi (n, n, n)``        signed distance at the nodes, radians of the parameter space
``lower (3,)``           position of node ``(0, 0, 0)``
``spacing (3,)``         node spacing per axis
``closed (3,)``          1.0 on axes that wrap around (ZYZ ``a``/``c`` covering the circle), else 0.0
``tube ()``              tube radius used (radians)
``components ()``        number of connected inside components found when fitting

``config``: ``space`` and ``resolution``. Models stack when both agree (the group key).
Memory: ``8 n^3`` bytes of grid per joint (:attr:`SdfGridLimit.memory_bytes`; 262 kB at
``n = 32``); a projection caches a float32 table of ``phi`` and its gradient (16 bytes per node,
twice the grid; derived, never stored) and, if the fallback is ever needed, the nearest inside
node of every node.

Projection runs in chunks of :data:`CHUNK_ROWS` rows with the points laid out axes first. One
16-byte gather per cell corner fetches float32 ``phi`` and gradient (on open grids each corner is
gathered from the table shifted by its offset, with the cells' first-corner index); float32
``phi`` only decides where it cannot be wrong (its error is bounded, and rows near the tolerance
are looked up in float64) and gives the first step's length. The second step's length and the
test after it use the float64 grid, so results meet the same ``phi <= tolerance / 2``; most rows
are inside after the first step, so the second gathers the gradient only for the rows it still
moves. Rows still outside after
the two steps are finished together after the last chunk. Rows beyond the grid box on all three
(open) axes are clamped onto one of its 8 corners, so they all have that corner's projection:
when they are more than an eighth of a chunk, it is taken from a per-model cache of the 8
corners (computed by the same steps on first use; derived, never stored).
"""

import numpy as np

from .cloud import _segment_starts, densify_slerp
from .constants import IDENTITY_QUATERNION
from .distance_transform import distance_transform, label_components
from .model import LimitModel, RowsPerBone, register_model
from .quaternion import (
    as_quaternions,
    check_finite,
    exp_map_from_quaternion,
    exp_map_into,
    quaternion_from_exp_map,
    quaternion_from_exp_map_into,
    quaternion_from_zyz,
    slerp,
    zyz_from_quaternion,
)
from .shape_limit import check_padding

#: The parameter spaces, default first.
SPACES = ("EXP_MAP", "ZYZ")

#: Allowed grid resolutions (nodes per axis).
MIN_RESOLUTION, MAX_RESOLUTION = 8, 128

#: Default tolerance of :meth:`SdfGridLimit.contains` (radians of the parameter space).
CONTAINS_TOLERANCE = 1e-9

#: The tube is at least this many times the largest spacing (see the module docstring).
TUBE_FLOOR = 1.15

#: Spacings between the tube's extent and the grid's border.
BORDER_SPACINGS = 1.5

#: Sweeps in which every node tries its neighbours' nearest samples (distance refinement).
PROPAGATION_SWEEPS = 2

#: Adaptive densification: rounds, and most pieces a pair of samples is cut into per round.
REFINE_ROUNDS = 4
MAX_STEPS = 256

#: Projection: further gradient steps for rotations the two paper steps leave outside, and
#: bisection steps of the last-resort fallback.
EXTRA_STEPS = 4
BISECTION_STEPS = 40

#: Rows per batch of a large projection (keeps temporaries in the CPU cache).
CHUNK_ROWS = 16384

TWO_PI = 2.0 * np.pi

#: Axes that are angles with period 2 pi, per space.
_WRAP = {"EXP_MAP": np.zeros(3, dtype=bool), "ZYZ": np.array([True, False, True])}

#: The 8 cell corners as offsets (di, dj, dk).
_CORNERS = [(di, dj, dk) for di in (0, 1) for dj in (0, 1) for dk in (0, 1)]


# -- spaces -----------------------------------------------------------------------------------------
def coordinates_from_quaternion(q, space):
    """Parameter-space points ``(..., 3)`` of unit quaternions ``q (..., 4)`` (radians)."""
    if space == "EXP_MAP":
        return exp_map_from_quaternion(q)
    return zyz_from_quaternion(q)


def quaternion_from_coordinates(p, space):
    """Unit quaternions ``(..., 4)`` of parameter-space points ``p (..., 3)``."""
    if space == "EXP_MAP":
        return quaternion_from_exp_map(p)
    return quaternion_from_zyz(p)


def _check_space(space):
    if space not in SPACES:
        raise ValueError(f"space must be one of {SPACES}, got {space!r}")
    return space


def _check_resolution(resolution):
    if isinstance(resolution, bool) or not isinstance(resolution, (int, np.integer)):
        if isinstance(resolution, float) and resolution.is_integer():
            resolution = int(resolution)
        else:
            raise ValueError(f"resolution must be an integer number of nodes per axis, got {resolution!r}")
    resolution = int(resolution)
    if not MIN_RESOLUTION <= resolution <= MAX_RESOLUTION:
        raise ValueError(f"resolution must be between {MIN_RESOLUTION} and {MAX_RESOLUTION} nodes per axis, got {resolution}")
    return resolution


def _check_epsilon(epsilon):
    try:
        epsilon = float(epsilon)
    except (TypeError, ValueError):
        raise ValueError(f"epsilon must be a positive number of radians, got {epsilon!r}") from None
    if not np.isfinite(epsilon) or epsilon <= 0.0:
        raise ValueError(f"epsilon must be a positive number of radians, got {epsilon!r}")
    return epsilon


def _circular_arc(angles):
    """``(start, length)`` of the smallest arc holding all ``angles (N,)`` (radians)."""
    a = np.sort(np.mod(angles, TWO_PI))
    gaps = np.diff(np.append(a, a[0] + TWO_PI))
    widest = int(np.argmax(gaps))
    start = a[(widest + 1) % len(a)]
    return float(start), float(TWO_PI - gaps[widest])


# -- grid layout --------------------------------------------------------------------------------------
def _layout(points, space, n, tube0):
    """Grid ``lower (3,)``, ``spacing (3,)``, ``closed (3,) bool`` and ``tube`` for ``points (N, 3)``.

    Solves ``h = (extent + 2 margin) / (n - 1)`` with ``margin = tube + 1.5 h`` and
    ``tube = max(tube0, 1.15 max(h))`` in closed form.
    """
    wrap = _WRAP[space]
    start = points.min(axis=0)
    extent = points.max(axis=0) - start
    for axis in np.flatnonzero(wrap):
        start[axis], extent[axis] = _circular_arc(points[:, axis])
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


def _to_window(p, lower, spacing, closed, n, wrap):
    """Angles on the periodic axes of ``p (R, 3)`` moved by whole turns into (or nearest to) each
    row's grid window; ``lower``/``spacing``/``closed`` broadcast against ``p``."""
    if not wrap.any():
        return p
    p = p.copy()
    for axis in np.flatnonzero(wrap):
        lo = lower[..., axis]
        x = lo + np.mod(p[..., axis] - lo, TWO_PI)
        upper = lo + (n - 1) * spacing[..., axis]
        below = (x > upper) & (lo + TWO_PI - x < x - upper) & (closed[..., axis] == 0)
        p[..., axis] = np.where(below, x - TWO_PI, x)
    return p


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


def _densify(q, space, target, segments, bridge):
    """Samples ``(M, 4)`` with consecutive parameter distances at most ``target`` (see module
    docstring, step 2), and the ``(M - 1,)`` mask of pairs that are unbridged clip boundaries."""
    n = len(q)
    starts = None if segments is None else _segment_starts(segments, n)
    if n < 2:
        return q.copy(), np.zeros(0, dtype=bool)
    if space == "EXP_MAP":
        # exp map stretches distances by at most (theta / 2) / sin(theta / 2) at angle theta.
        theta = min(float(np.max(np.linalg.norm(exp_map_from_quaternion(q), axis=-1))) + target, 1.9 * np.pi)
        stretch = (0.5 * theta) / np.sin(0.5 * theta) if theta > 1e-6 else 1.0
    else:
        stretch = 1.0
    samples, position = densify_slerp(q, target / stretch, segments=segments, bridge=bridge, return_index=True)
    boundary = np.zeros(len(samples) - 1, dtype=bool)
    if starts is not None and not bridge:
        whole = position == np.round(position)
        boundary = whole[1:] & starts[np.round(position[1:]).astype(np.int64)] & (position[1:] - position[:-1] == 1.0)
    for _ in range(REFINE_ROUNDS):
        gaps = _gaps(coordinates_from_quaternion(samples, space), space)
        bad = (gaps > target) & ~boundary
        if not bad.any():
            break
        steps = np.ones(len(gaps), dtype=np.int64)
        steps[bad] = np.minimum(np.ceil(gaps[bad] / target * 1.01), MAX_STEPS).astype(np.int64)
        samples, _ = _subdivide(samples, steps)
        boundary = np.repeat(boundary, steps)
    return samples, boundary


# -- building the field ----------------------------------------------------------------------------------
def _node_positions(shape, lower, spacing):
    """``(I, J, K, 3)`` positions of the grid nodes."""
    axes = [lower[a] + spacing[a] * np.arange(shape[a]) for a in range(3)]
    return np.stack(np.meshgrid(*axes, indexing="ij"), axis=-1)


def _difference(a, b, closed):
    """``a - b`` for points ``(..., 3)``, closed axes the short way round."""
    d = a - b
    if np.any(closed):
        d = d - np.where(closed, TWO_PI * np.round(d / TWO_PI), 0.0)
    return d


def _neighbour_candidates(nearest, closed):
    """``(7, I, J, K)``: ``nearest`` at each node and at its six neighbours (edge nodes repeat
    themselves on open axes, wrap on closed ones)."""
    out = [nearest]
    for axis in range(3):
        for shift in (1, -1):
            rolled = np.roll(nearest, shift, axis=axis)
            if not closed[axis]:
                edge = [slice(None)] * 3
                edge[axis] = 0 if shift == 1 else -1
                rolled[tuple(edge)] = nearest[tuple(edge)]
            out.append(rolled)
    return np.stack(out)


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
        for axis in range(3):
            for shift in (1, -1):
                rolled = np.roll(mask, shift, axis=axis)
                if not closed[axis]:
                    edge = [slice(None)] * 3
                    edge[axis] = 0 if shift == 1 else -1
                    rolled[tuple(edge)] = mask[tuple(edge)]
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


def _build(points, lower, spacing, closed, n, tube):
    """Signed distance ``phi (n, n, n)``, inside component count and the distance error bound."""
    shape = (n, n, n)
    size = n**3
    u = (points - lower) / spacing
    cell = np.rint(u).astype(np.int64)
    cell = np.where(closed, np.mod(cell, n), np.clip(cell, 0, n - 1))
    seed = np.ravel_multi_index(tuple(cell.T), shape)
    nodes = _node_positions(shape, lower, spacing).reshape(-1, 3)
    offset = _difference(points, nodes[seed], closed)
    dist2 = _norm2(offset)
    error_bound = 2.0 * float(np.sqrt(dist2.max()))
    nodes = np.ascontiguousarray(nodes.T)
    # Representatives of each seeded node: the sample nearest the node, then the samples with
    # the smallest and largest coordinate along each axis (the best ones for far queries); on
    # ties the earliest sample. One stable sort by node, then per node the first (last) sample
    # holding the group's minimum (maximum) of each key.
    order = np.argsort(seed, kind="stable")
    grouped = seed[order]
    starts = np.flatnonzero(np.r_[True, grouped[1:] != grouped[:-1]])
    seeded_nodes = grouped[starts]
    group = np.repeat(np.arange(len(starts)), np.diff(np.r_[starts, len(order)]))
    slot = np.full(size, -1, dtype=np.intp)
    slot[seeded_nodes] = np.arange(len(seeded_nodes))
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


# -- trilinear lookups ------------------------------------------------------------------------------------
class _Geometry:
    """Grid geometry of a batch of query rows, axes first: ``lower``, ``spacing`` and ``closed``
    (bool) are ``(3, 1)`` for a single model or ``(3, R)`` per row (stacked models, ``base (R,)``
    the flat index of each row's grid, else None). Points are ``(3, R)`` arrays."""

    __slots__ = ("n", "lower", "spacing", "inverse", "upper", "closed", "base", "any_closed")

    def __init__(self, n, lower, spacing, closed, base):
        self.n = n
        self.lower, self.spacing, self.closed, self.base = lower, spacing, closed, base
        self.inverse = 1.0 / spacing
        self.upper = lower + (n - 1) * spacing
        self.any_closed = bool(closed.any())

    def rows(self, index):
        """The geometry of the rows ``index`` (itself when it is not per row)."""
        if self.base is None:
            return self
        return _Geometry(self.n, self.lower[:, index], self.spacing[:, index], self.closed[:, index], self.base[index])

    def in_box(self, p, clamped=None):
        """``(R,)`` bool: ``p`` inside the grid box on every open axis (``clamped`` is
        :meth:`clamp_open` of ``p`` if already computed)."""
        inside = (p >= self.lower) & (p <= self.upper) if clamped is None else clamped == p
        if self.any_closed:
            inside |= self.closed
        return inside.all(axis=0)

    def clamp_open(self, p):
        """A copy of ``p`` with the open axes clipped into the grid box (closed axes as they are)."""
        x = np.maximum(p, self.lower)
        np.minimum(x, self.upper, out=x)
        if self.any_closed:
            np.copyto(x, p, where=self.closed)
        return x

    def clamp(self, x):
        """Move ``x`` into the grid box (open axes) / onto the first turn (closed axes), in place."""
        if self.any_closed:
            turned = self.lower + np.mod(x - self.lower, TWO_PI)
            np.maximum(x, self.lower, out=x)
            np.minimum(x, self.upper, out=x)
            np.copyto(x, turned, where=self.closed)
        else:
            np.maximum(x, self.lower, out=x)
            np.minimum(x, self.upper, out=x)

    def cell(self, x):
        """``(index, fraction (3, R), corner (3, R))``: the corners of each point's cell (for
        :func:`_gather`), the point's position in the cell (0..1 per axis) and the cell's first
        corner in node units (floats). ``index`` is the ``(R,)`` flat node index of each cell's
        first corner when no axis is closed (the others are at fixed offsets from it), else the
        ``(8, R)`` flat node indices of the 8 corners (:data:`_CORNERS` order)."""
        n = self.n
        u = x - self.lower
        u *= self.inverse
        if not self.any_closed:
            np.maximum(u, 0.0, out=u)
            np.minimum(u, n - 1.0, out=u)
            i0 = np.floor(u)
            np.minimum(i0, n - 2.0, out=i0)
            u -= i0
            flat = i0[0] * float(n * n)
            flat += i0[1] * float(n)
            flat += i0[2]
            base = flat.astype(np.intp)
            if self.base is not None:
                base += self.base
            return base, u, i0
        c = np.broadcast_to(self.closed, u.shape)
        u = np.where(c, np.mod(u, n), np.clip(u, 0.0, n - 1.0))
        i0 = np.minimum(np.floor(u), n - 1.0).astype(np.intp)
        i0 = np.where(c, i0, np.minimum(i0, n - 2))
        i1 = np.where(c & (i0 == n - 1), 0, i0 + 1)
        stride = np.array([n * n, n, 1]).reshape(3, 1)
        ends = np.stack((i0 * stride, i1 * stride), axis=1)  # (3, 2, R)
        index = ends[0][:, None, None] + ends[1][None, :, None] + ends[2][None, None, :]
        index = index.reshape(8, -1)
        if self.base is not None:
            index += self.base
        return index, u - i0, i0.astype(float)

    def refraction(self, x, corner):
        """``fraction (3, R)`` of points ``x`` in the cells whose first corners are ``corner``
        (from :meth:`cell`), and the ``(R,)`` mask of points inside those cells (faces
        included). Open axes only: the points must be in the box (clamped)."""
        f = x - self.lower
        f *= self.inverse
        f -= corner
        ok = (f >= 0.0) & (f <= 1.0)
        return f, ok.all(axis=0)


def _gather(table, index, n):
    """``(8, R)``: the flat node ``table`` at the cell corners ``index`` (:meth:`_Geometry.cell`)
    of a grid of ``n``. First corners ``(R,)``: one gather per corner from the table shifted by
    that corner's offset, with the same index array (no ``(8, R)`` index array to build and
    read; ``mode="clip"`` never clips, a cell's last corner is in the table)."""
    if index.ndim == 2:
        return table.take(index)
    out = np.empty((8, len(index)), dtype=table.dtype)
    for k, (di, dj, dk) in enumerate(_CORNERS):
        table[(di * n + dj) * n + dk :].take(index, out=out[k], mode="clip")
    return out


def _interpolate(corners, f):
    """Trilinear interpolation of ``corners (8, R, ...)`` (:data:`_CORNERS` order) at fractions
    ``f (3, R, ...)``: three rounds of lerps, along z, y, then x."""
    z = corners[1::2] - corners[0::2]
    z *= f[2]
    z += corners[0::2]
    y = z[1::2] - z[0::2]
    y *= f[1]
    y += z[0::2]
    v = y[1] - y[0]
    v *= f[0]
    v += y[0]
    return v


def _packed_interpolate(corners, fraction):
    """``(4, R)`` float64: trilinear interpolation (float32) of the packed corner quadruples
    ``corners (8, R, 4)`` at ``fraction (3, R)``."""
    # The fractions once per channel: four strided float32 copies (about twice as fast as
    # np.repeat, which is a generic byte loop).
    f = np.empty(fraction.shape + (4,), dtype=np.float32)
    for channel in range(4):
        f[..., channel] = fraction
    return _interpolate(corners, f).T.astype(float, order="C")


def _finite_rows(rows):
    """``(R,)`` bool: rows of ``rows (R, 4)`` with four finite components."""
    finite = np.isfinite(rows)
    if finite.shape[-1] == 4 and finite.flags.c_contiguous:
        return finite.view(np.uint32).ravel() == np.frombuffer(b"\x01" * 4, dtype=np.uint32)[0]
    return finite.all(axis=-1)


def _step(x, phi, grad, geo, target):
    """One projection step ``x <- x - (phi - target) g / |g|`` (eq. 7) in place on the rows of
    ``x (3, R)`` with ``phi > target + tolerance / 2`` and ``|g| > 1e-12`` (``grad (3, R)``),
    clamped into the box. Returns the ``(R,)`` mask of the rows that moved, or None when it
    went through every row (the others with a step of length 0, which leaves them unchanged)."""
    norm = grad[0] * grad[0]
    norm += grad[1] * grad[1]
    norm += grad[2] * grad[2]
    np.sqrt(norm, out=norm)
    move = (phi > target + 0.5 * CONTAINS_TOLERANCE) & (norm > 1e-12)
    if move.all():
        scale = phi - target
        scale /= norm
        x -= scale * grad
        geo.clamp(x)
        return None
    if 2 * np.count_nonzero(move) >= len(move) and not geo.any_closed:
        # Most rows move: the others get a step of length 0 (x - 0 g is x, and x is in the box;
        # phi is finite, and the norm is raised only where it is too small to move).
        scale = phi - target
        scale *= move
        np.maximum(norm, 1e-12, out=norm)
        scale /= norm
        x -= scale * grad
        geo.clamp(x)
        return None
    rows = np.flatnonzero(move)
    if len(rows):
        scale = (phi[rows] - target) / norm[rows]
        moved = x[:, rows] - scale * grad[:, rows]
        geo.rows(rows).clamp(moved)
        x[:, rows] = moved
    return move


# -- the model ---------------------------------------------------------------------------------------------
@register_model
class SdfGridLimit(RowsPerBone, LimitModel):
    """Signed distance field on a grid in exp-map (or ZYZ) space; see the module docstring."""

    kind = "sdf_grid"
    LEAD_PARAM = "lower"
    label = "SDF Grid"
    description = "Signed distance field around the sampled motion (tube plus enclosed pockets); tight and non-convex"
    ui_order = 60
    PARAM_SHAPES = {
        "phi": (None, None, None),
        "lower": (3,),
        "spacing": (3,),
        "closed": (3,),
        "tube": (),
        "components": (),
    }
    SINGLE_PRECISION = ("phi",)
    FIT_OPTIONS = ("padding",)

    def __init__(self, params, config=None):
        super().__init__(params, config)
        self._table = None
        self._corners = None
        self._inner = {}
        #: Facts about the fit (not stored): sample counts, timings, error bound.
        self.fit_report = {}

    # -- fitting --------------------------------------------------------------------------------
    @classmethod
    def fit(cls, rotations, padding=0.05, resolution=32, space="EXP_MAP", epsilon=0.2, segments=None, bridge=True, densify=True):
        """Build the signed distance grid of a rotation cloud.

        Parameters
        ----------
        rotations : (N, 4) array
            Time-ordered unit quaternions ``(w, x, y, z)`` relative to the reference pose, cover
            already chosen (e.g. unrolled).
        padding : float
            Radians added to ``epsilon`` (the project-wide "room around the data" setting; at
            least :data:`~.shape_limit.MIN_PADDING`).
        resolution : int
            Grid nodes per axis, 8..128.
        space : {"EXP_MAP", "ZYZ"}
        epsilon : float
            Seed 000's threshold: radius (radians of the space) of the tube around the samples,
            > 0. The tube used is ``epsilon + padding``, at least 1.15 grid spacings.
        segments : array_like, optional
            Clip starts (bool mask ``(N,)`` or start indices), as for :func:`~.cloud.densify_slerp`.
        bridge : bool
            Interpolate from each clip's last frame to the next clip's first (seed 000).
        densify : bool
            Densify the track (seed 000, section 3.2); ``False`` uses the samples as they are
            (for point clouds that are not tracks, and to see islands).

        Returns
        -------
        SdfGridLimit
            With ``fit_report`` (a dict: ``samples``, ``densified``, ``components``, ``tube``,
            ``distance_error_bound``).
        """
        q = as_quaternions(rotations, "rotation cloud")
        if q.ndim != 2 or len(q) == 0:
            raise ValueError(f"the rotation cloud is empty or not (N, 4): shape {q.shape}")
        check_finite(q, "rotation cloud")
        norms = np.linalg.norm(q, axis=-1)
        if np.any(norms < 1e-6):
            raise ValueError("the rotation cloud contains zero quaternions")
        q = q / norms[:, None]
        space = _check_space(space)
        n = _check_resolution(resolution)
        tube0 = _check_epsilon(epsilon) + check_padding(padding)
        wrap = _WRAP[space]

        points = coordinates_from_quaternion(q, space)
        lower, spacing, closed, tube = _layout(points, space, n, tube0)
        samples = q
        if densify:
            for _ in range(2):  # the layout of the densified track can differ a little
                samples, _ = _densify(q, space, 0.5 * float(spacing.min()), segments, bridge)
                points = coordinates_from_quaternion(samples, space)
                new = _layout(points, space, n, tube0)
                stable = np.all(new[1] >= spacing) and np.array_equal(new[2], closed)
                lower, spacing, closed, tube = new
                if stable:
                    break
        points = _to_window(points, lower, spacing, closed.astype(float), n, wrap)
        phi, count, error_bound = _build(points, lower, spacing, closed, n, tube)
        params = {
            "phi": phi,
            "lower": lower,
            "spacing": spacing,
            "closed": closed.astype(float),
            "tube": np.array(tube),
            "components": np.array(float(count)),
        }
        model = cls(params, {"space": space, "resolution": n})
        model.fit_report = {
            "samples": len(q),
            "densified": len(samples),
            "components": count,
            "tube": tube,
            "distance_error_bound": error_bound,
        }
        return model

    @classmethod
    def from_grid(cls, phi, lower, spacing, space="EXP_MAP"):
        """A model from a signed distance grid built elsewhere (e.g. a sculpted mesh,
        :func:`~.sculpt.sdf_from_mesh`).

        Parameters
        ----------
        phi : (n, n, n) float array
            Signed distance at the nodes, radians of the parameter space, negative inside;
            ``n`` = 8..128.
        lower : (3,) float array
            Position of node ``(0, 0, 0)``.
        spacing : (3,) float array
            Node spacing per axis, positive.
        space : {"EXP_MAP", "ZYZ"}

        Returns
        -------
        SdfGridLimit
            No closed axes, ``tube`` 0, ``components`` the 6-connected inside components
            (``phi <= 0``); validated. ``ValueError`` for a bad shape, non-finite values or a
            grid with no inside node.
        """
        phi = np.asarray(phi, dtype=float)
        if phi.ndim != 3 or len(set(phi.shape)) != 1:
            raise ValueError(f"phi must be an (n, n, n) grid, got shape {phi.shape}")
        n = _check_resolution(phi.shape[0])
        lower = np.asarray(lower, dtype=float).reshape(3)
        spacing = np.asarray(spacing, dtype=float).reshape(3)
        for name, value in (("phi", phi), ("lower", lower), ("spacing", spacing)):
            if not np.all(np.isfinite(value)):
                raise ValueError(f"{name} contains NaN or infinity")
        inside = phi <= 0.0
        if not inside.any():
            raise ValueError("the grid has no inside node (the region is empty or thinner than a grid spacing)")
        _, count = label_components(inside)
        params = {
            "phi": phi,
            "lower": lower,
            "spacing": spacing,
            "closed": np.zeros(3),
            "tube": np.array(0.0),
            "components": np.array(float(count)),
        }
        model = cls(params, {"space": _check_space(space), "resolution": n})
        model.validate()
        model.fit_report = {"components": count, "inside_nodes": int(np.count_nonzero(inside))}
        return model

    # -- plain data --------------------------------------------------------------------------------
    def validate(self):
        space = self.config.get("space")
        if space not in SPACES:
            raise ValueError(f"{self.kind} limit: config 'space' must be one of {SPACES}, got {space!r}")
        n = _check_resolution(self.config.get("resolution"))
        extra = set(self.config) - {"space", "resolution"}
        if extra:
            raise ValueError(f"{self.kind} limit: unknown config entries {sorted(extra)}")
        if self.params["phi"].shape[-3:] != (n, n, n):
            raise ValueError(f"{self.kind} limit: 'phi' must have shape {(n, n, n)}, got {self.params['phi'].shape}")
        if np.any(self.params["spacing"] <= 0):
            raise ValueError(f"{self.kind} limit: 'spacing' must be positive")
        closed = self.params["closed"]
        if np.any((closed != 0.0) & (closed != 1.0)):
            raise ValueError(f"{self.kind} limit: 'closed' must hold 0 or 1 per axis")
        if np.any(closed[..., ~_WRAP[space]] != 0.0):
            raise ValueError(f"{self.kind} limit: only the periodic ZYZ axes (a, c) can be closed")
        ring = np.where(closed == 1.0, self.params["spacing"] * n, TWO_PI)
        if not np.allclose(ring, TWO_PI, rtol=1e-9, atol=1e-9):
            raise ValueError(f"{self.kind} limit: a closed axis must have spacing 2 pi / resolution")

    def region_count(self):
        return int(np.max(self.params["components"]))

    # -- size ----------------------------------------------------------------------------------------
    @property
    def memory_bytes(self):
        """Bytes of the stored grid and parameters (per joint times the number of stacked joints)."""
        return int(sum(value.nbytes for value in self.params.values()))

    # -- lookup tables (derived from params, cached on the instance, never stored) -------------------

    def _gradient_grid(self):
        """``(bones, n, n, n, 3)`` central-difference gradient of ``phi`` at the nodes (one-sided
        at the ends of open axes)."""
        n = self.config["resolution"]
        phi = self.params["phi"].reshape(-1, n, n, n)
        spacing = self.params["spacing"].reshape(-1, 3)
        closed = self.params["closed"].reshape(-1, 3)
        out = np.empty(phi.shape + (3,))
        for axis in range(3):
            ax = axis + 1
            h = spacing[:, axis].reshape(-1, 1, 1, 1)
            central = (np.roll(phi, -1, axis=ax) - np.roll(phi, 1, axis=ax)) / (2.0 * h)
            # Open axes: one-sided differences at the two ends.
            first = [slice(None)] * 4
            last = [slice(None)] * 4
            first[ax], last[ax] = 0, -1
            second, before = list(first), list(last)
            second[ax], before[ax] = 1, -2
            open_ = (closed[:, axis] == 0.0).reshape(-1, 1, 1)
            h2 = spacing[:, axis].reshape(-1, 1, 1)
            central[tuple(first)] = np.where(open_, (phi[tuple(second)] - phi[tuple(first)]) / h2, central[tuple(first)])
            central[tuple(last)] = np.where(open_, (phi[tuple(last)] - phi[tuple(before)]) / h2, central[tuple(last)])
            out[..., axis] = central
        return out

    def _table_cache(self):
        """``(phi, packed, margin)``: ``phi (bones * n^3,)`` float64 (the stored grid, flat);
        ``packed (bones * n^3,)`` complex128, each item the float32 quadruple ``(phi, d/dx, d/dy,
        d/dz)`` of a node, so one 16-byte gather fetches all four; ``margin`` bounds the
        difference between trilinear ``phi`` from ``packed`` (float32) and from ``phi``."""
        if self._table is None:
            phi = np.ascontiguousarray(self.params["phi"], dtype=float).ravel()
            packed = np.empty((len(phi), 4), dtype=np.float32)
            packed[:, 0] = phi
            packed[:, 1:] = self._gradient_grid().reshape(-1, 3)
            # float32 rounding of the corners and of three lerps (about 31 ulps of the largest
            # |phi|, see _interpolate); twice that for safety.
            scale = float(np.max(np.abs(phi))) if len(phi) else 0.0
            margin = 64.0 * float(np.finfo(np.float32).eps) * max(scale, 1e-30)
            self._table = (phi, packed.view(np.complex128).ravel(), margin)
        return self._table

    def _geometry(self, bone):
        """Per-row grid geometry, axes first (see :class:`_Geometry`)."""
        n = self.config["resolution"]
        if bone is None:
            lower = self.params["lower"].reshape(3, 1)
            spacing = self.params["spacing"].reshape(3, 1)
            closed = (self.params["closed"] == 1.0).reshape(3, 1)
            base = None
        else:
            lower = np.ascontiguousarray(self.params["lower"].reshape(-1, 3)[bone].T)
            spacing = np.ascontiguousarray(self.params["spacing"].reshape(-1, 3)[bone].T)
            closed = np.ascontiguousarray((self.params["closed"].reshape(-1, 3) == 1.0)[bone].T)
            base = bone * n**3
        return _Geometry(n, lower, spacing, closed, base)

    # -- evaluation ---------------------------------------------------------------------------------------
    def _grid_points(self, rows, bone):
        """Parameter points of quaternion rows, periodic angles moved into the grid windows."""
        space = self.config["space"]
        p = coordinates_from_quaternion(rows, space)
        lower = self._per_row("lower", bone)
        spacing = self._per_row("spacing", bone)
        closed = self._per_row("closed", bone)
        return _to_window(p, lower, spacing, closed, self.config["resolution"], _WRAP[space])

    def _in_box(self, p, bone):
        """``(R,)`` bool: inside the grid box on every open axis."""
        return self._geometry(bone).in_box(np.ascontiguousarray(p.T))

    def _clamp(self, p, bone):
        """Points moved into the grid box (open axes) / onto the first turn (closed axes)."""
        x = np.ascontiguousarray(p.T)
        self._geometry(bone).clamp(x)
        return x.T.copy()

    def _sample(self, p, bone, gradient=True):
        """Trilinear ``phi (R,)`` and gradient ``(R, 3)`` (or None) at points ``p (R, 3)``."""
        geo = self._geometry(bone)
        cell = geo.cell(np.ascontiguousarray(p.T))
        phi = self._phi_cell(cell)
        if not gradient:
            return phi, None
        return phi, self._packed_cell(cell)[1:].T.copy()

    def _phi(self, p, bone):
        return self._sample(p, bone, gradient=False)[0]

    def _phi_cell(self, cell):
        """Trilinear ``phi (R,)`` (float64) in the cells ``cell`` (from :meth:`_Geometry.cell`)."""
        return _interpolate(_gather(self._table_cache()[0], cell[0], self.config["resolution"]), cell[1])

    def _packed_cell(self, cell):
        """``(4, R)`` float64: trilinear ``phi`` and gradient from the float32 table in the cells
        ``cell`` (one 16-byte gather per corner)."""
        return _packed_interpolate(self._packed_corners(cell[0]), cell[1])

    def _packed_corners(self, index):
        """``(8, R, 4)`` float32 ``(phi, gradient)`` at the cell corners ``index`` (:meth:`_Geometry.cell`)."""
        return _gather(self._table_cache()[1], index, self.config["resolution"]).view(np.float32).reshape(8, -1, 4)

    def _points(self, rows, bone):
        """``(3, R)``: :meth:`_grid_points` of quaternion rows, axes first."""
        if self.config["space"] == "EXP_MAP":
            p = np.empty((3, len(rows)))
            exp_map_into(rows[:, 0], rows[:, 1], rows[:, 2], rows[:, 3], p.T)
            return p
        return np.ascontiguousarray(self._grid_points(rows, bone).T)

    def _quaternions(self, x, out=None):
        """Quaternions ``(R, 4)`` of points ``x (3, R)`` (into ``out`` if given)."""
        if self.config["space"] == "EXP_MAP":
            if out is None:
                out = np.empty((x.shape[1], 4))
            return quaternion_from_exp_map_into(x[0], x[1], x[2], out)
        q = quaternion_from_coordinates(x.T, self.config["space"])
        if out is not None:
            out[...] = q
        return q

    # -- the interface ----------------------------------------------------------------------------------
    def contains(self, q, tolerance=CONTAINS_TOLERANCE):
        """``(...,)`` bool: ``phi <= tolerance`` at the rotations ``q (..., 4)`` and inside the grid
        box. Non-finite rows are not contained."""
        q = as_quaternions(q)
        rows, bone, lead = self._rows(q)
        inside = np.empty(len(rows), dtype=bool)
        for start in range(0, len(rows), CHUNK_ROWS):  # chunks keep the corner arrays small
            stop = min(start + CHUNK_ROWS, len(rows))
            part = None if bone is None else bone[start:stop]
            chunk = rows[start:stop]
            finite = _finite_rows(chunk)
            safe = chunk if finite.all() else np.where(finite[:, None], chunk, IDENTITY_QUATERNION)
            geo = self._geometry(part)
            p = self._points(safe, part)
            ok = finite & geo.in_box(p)
            ok &= self._phi_cell(geo.cell(p)) <= tolerance
            inside[start:stop] = ok
        return inside.reshape(lead)

    def signed_distance(self, q):
        """``phi (...,)`` at rotations ``q (..., 4)``, radians of the parameter space, negative
        inside. Outside the grid box: phi at the nearest box point plus the distance to it."""
        q = as_quaternions(q)
        rows, bone, lead = self._rows(q)
        p = self._grid_points(rows, bone)
        clamped = self._clamp(p, bone)
        return (self._phi(clamped, bone) + np.linalg.norm(p - clamped, axis=-1)).reshape(lead)

    def project(self, q):
        """Allowed rotations ``(..., 4)``: the gradient projection of the module docstring.
        Allowed rotations and non-finite rows are returned unchanged."""
        q = as_quaternions(q)
        rows, bone, lead = self._rows(q)
        out = np.empty((len(rows), 4))  # every row is written by _steps
        late, late_x = [], []
        for start in range(0, len(rows), CHUNK_ROWS):
            stop = min(start + CHUNK_ROWS, len(rows))
            part = None if bone is None else bone[start:stop]
            index, x = self._project_rows(rows[start:stop], part, out[start:stop])
            if len(index):
                late.append(index + start)
                late_x.append(x)
        if late:
            # The few rows the two paper steps leave outside, all chunks at once (the extra steps
            # and the bisection are many small passes: one set of them, not one per chunk).
            late = np.concatenate(late)
            x = np.concatenate(late_x)
            sub = None if bone is None else bone[late]
            x = self._descend(x, sub, target=-CONTAINS_TOLERANCE, steps=EXTRA_STEPS)
            x = self._fallback(x, sub)
            out[late] = quaternion_from_coordinates(x, self.config["space"])
        return out.reshape(lead + (4,))

    def _project_rows(self, rows, bone, out):
        """The two paper steps for the rows of one chunk: writes the rotations they bring inside
        to ``out`` and returns ``(index, x (L, 3))`` of the rows still outside (``phi > tolerance
        / 2``) with their points, for :meth:`project` to finish."""
        finite = _finite_rows(rows)
        safe = rows if finite.all() else np.where(finite[:, None], rows, IDENTITY_QUATERNION)
        geo = self._geometry(bone)
        p = self._points(safe, bone)
        # Sample at p with the open axes clamped into the box: for rows inside the box that is p
        # itself (so the inside test is contains()'s), for the others the first step's start.
        x = geo.clamp_open(p)
        if geo.any_closed:
            return self._steps(x, geo.in_box(p, clamped=x), finite, geo, rows, out)
        clamped = x != p
        inside = ~clamped.any(axis=0)
        corner = clamped.all(axis=0)
        corner &= finite
        count = int(np.count_nonzero(corner))
        if 8 * count <= len(rows):
            return self._steps(x, inside, finite, geo, rows, out)
        # Rows beyond the box on all three axes start at one of its 8 corners: every such row
        # has the same projection, computed once per model (see _box_corners). The others are
        # stepped together; one gather then writes every row of the chunk.
        keep = np.flatnonzero(~corner)
        part = np.empty((len(keep) + 8 * self._bones(), 4))
        part[len(keep) :] = self._box_corners()
        above = (p > geo.upper).view(np.uint8)
        key = above[2] << 2
        key |= above[1] << 1
        key |= above[0]
        order = np.cumsum(~corner)
        order -= 1
        key = key.astype(np.intp)
        key += len(keep) if bone is None else 8 * bone + len(keep)
        np.copyto(order, key, where=corner)
        late, late_x = self._steps(x.take(keep, axis=1), inside[keep], finite[keep], geo.rows(keep), rows.take(keep, axis=0), part[: len(keep)])
        np.take(part, order, axis=0, out=out, mode="clip")
        return keep[late], late_x

    def _bones(self):
        """Number of stacked joints."""
        return len(self.params["lower"].reshape(-1, 3))

    def _box_corners(self):
        """``(bones * 8, 4)``: the projections of the grid box's corners (corner ``c`` of bone
        ``b`` at row ``8 b + c``, upper end on axis ``a`` when bit ``a`` of ``c`` is set), as
        :meth:`_project_rows` and :meth:`project` compute them for a row clamped onto it."""
        if self._corners is None:
            bones = self._bones()
            bone = np.repeat(np.arange(bones), 8)
            geo = self._geometry(bone if self._lead() else None)
            bits = (np.arange(8 * bones) >> np.arange(3)[:, None]) & 1
            x = np.where(bits == 1, geo.upper, geo.lower)
            out = np.empty((8 * bones, 4))
            rows = np.broadcast_to(IDENTITY_QUATERNION, out.shape)
            finite = np.ones(len(out), dtype=bool)
            late, late_x = self._steps(x, ~finite, finite, geo, rows, out)
            if len(late):
                sub = None if geo.base is None else bone[late]
                late_x = self._descend(late_x, sub, target=-CONTAINS_TOLERANCE, steps=EXTRA_STEPS)
                out[late] = quaternion_from_coordinates(self._fallback(late_x, sub), self.config["space"])
            self._corners = out
        return self._corners

    def _steps(self, x, inside, finite, geo, rows, out):
        """The two paper steps for points ``x (3, R)`` (open axes in the box) of ``rows (R, 4)``:
        rows that are ``inside`` (and those not ``finite``) are copied to ``out (R, 4)``, the
        others projected into it; returns ``(index, x (L, 3))`` of those still outside."""
        value = self._packed_cell(geo.cell(x))
        phi = value[0]
        # The float32 phi decides where it cannot be wrong; float64 near the tolerance. (Far
        # from it, it is the first step's length; the second step and the test after it, which
        # make the result's accuracy, use float64 phi.)
        margin = self._table_cache()[2]
        near = phi <= CONTAINS_TOLERANCE + margin
        near &= (phi >= CONTAINS_TOLERANCE - margin) | ~inside
        near = np.flatnonzero(near)
        if len(near):
            phi[near] = self._phi_cell(geo.rows(near).cell(x[:, near]))
        outside = ~(inside & (phi <= CONTAINS_TOLERANCE)) & finite
        count = int(np.count_nonzero(outside))
        if not count:
            out[...] = rows
            return np.empty(0, dtype=np.intp), np.empty((0, 3))
        todo = frozen = None
        if 10 * count >= 9 * len(rows) and not geo.any_closed:
            # Nearly all rows move: step every row, the others with length 0 (they stay exactly
            # where they are), and restore them at the end (cheaper than gathering and
            # scattering; with more than a tenth of the rows staying, stepping them costs more).
            if count < len(rows):
                frozen = np.flatnonzero(~outside)
                phi[frozen] = 0.0
        else:
            out[...] = rows
            todo = np.flatnonzero(outside)
            x, phi, value, geo = x[:, todo], phi[todo], value[:, todo], geo.rows(todo)
            geo.clamp(x)  # closed axes onto their first turn (open ones are in the box already)
        moved = _step(x, phi, value[1:], geo, 0.0)
        active = None if moved is None else np.flatnonzero(moved)
        xa, ga = (x, geo) if active is None else (x[:, active], geo.rows(active))
        index, fraction, corner = ga.cell(xa)
        corners = _gather(self._table_cache()[0], index, self.config["resolution"])
        pa = _interpolate(corners, fraction)
        if frozen is not None and active is None:
            pa[frozen] = 0.0
        # Most rows are inside after the first step (about nine in ten of uniformly random
        # rotations): the gradient is only gathered and interpolated for the rows step 2 moves.
        want = pa > 0.5 * CONTAINS_TOLERANCE
        count = int(np.count_nonzero(want))
        if 10 * count >= 9 * len(pa) and not ga.any_closed:
            moved = _step(xa, pa, _packed_interpolate(self._packed_corners(index), fraction)[1:], ga, 0.0)
            again = None if moved is None else np.flatnonzero(moved)
        else:
            again = np.flatnonzero(want)
            if count:
                xs, gs = xa[:, again], ga.rows(again)
                moved = _step(xs, pa[again], _packed_interpolate(self._packed_corners(index[..., again]), fraction[:, again])[1:], gs, 0.0)
                xa[:, again] = xs
                if moved is not None:
                    again = again[moved]
        # phi where step 2 moved, from the same corners while the point stays in its cell
        if again is None:
            pa = self._phi_after(xa, ga, corners, corner)
        elif len(again):
            pa[again] = self._phi_after(xa[:, again], ga.rows(again), corners[:, again], corner[:, again])
        if active is None:
            phi = pa
        else:
            phi[active] = pa
            x[:, active] = xa
        if frozen is not None:
            phi[frozen] = 0.0
        late = phi > 0.5 * CONTAINS_TOLERANCE
        any_late = late.any()
        if todo is None:
            self._quaternions(x, out)  # late rows too: project() overwrites them
            if frozen is not None:
                out[frozen] = rows[frozen]
            todo = np.arange(len(rows))
        else:
            done = np.flatnonzero(~late) if any_late else slice(None)
            out[todo[done]] = self._quaternions(x[:, done])
        if not any_late:
            return np.empty(0, dtype=np.intp), np.empty((0, 3))
        late = np.flatnonzero(late)
        return todo[late], x[:, late].T.copy()

    def _phi_after(self, x, geo, corners, corner):
        """Trilinear ``phi`` at points ``x (3, R)`` that were in the cells with first corners
        ``corner`` and corner values ``corners (8, R)``: those values where a point is still in
        its cell, a fresh lookup elsewhere."""
        if geo.any_closed:
            return self._phi_cell(geo.cell(x))
        fraction, same = geo.refraction(x, corner)
        phi = _interpolate(corners, fraction)
        if not same.all():
            moved = np.flatnonzero(~same)
            phi[moved] = self._phi_cell(geo.rows(moved).cell(x[:, moved]))
        return phi

    def _descend(self, x, bone, target, steps):
        """``steps`` gradient steps ``x <- x - (phi - target) g / |g|`` (eq. 7); rows that reach
        ``phi <= target + tolerance / 2`` stop; results stay in the grid box."""
        active = np.arange(len(x))
        for _ in range(steps):
            b = None if bone is None else bone[active]
            phi, grad = self._sample(x[active], b)
            norm = np.sqrt(np.sum(grad * grad, axis=1))
            move = (phi > target + 0.5 * CONTAINS_TOLERANCE) & (norm > 1e-12)
            active = active[move]
            if not len(active):
                break
            b = None if bone is None else bone[active]
            step = ((phi[move] - target) / norm[move])[:, None] * grad[move]
            x[active] = self._clamp(x[active] - step, b)
        return x

    def _fallback(self, x, bone):
        """Rows still outside after the extra steps: bisect towards their nearest inside node."""
        phi = self._phi(x, bone)
        bad = np.flatnonzero(phi > 0.5 * CONTAINS_TOLERANCE)
        if not len(bad):
            return x
        n = self.config["resolution"]
        sub = None if bone is None else bone[bad]
        lower = self._per_row("lower", sub)
        spacing = self._per_row("spacing", sub)
        closed = self._per_row("closed", sub)
        u = (x[bad] - lower) / spacing
        cell = np.rint(u).astype(np.intp)
        cell = np.where(closed == 1.0, np.mod(cell, n), np.clip(cell, 0, n - 1))
        node = np.ravel_multi_index(tuple(cell.T), (n, n, n))
        bones = np.zeros(len(bad), dtype=np.intp) if sub is None else sub
        target = np.empty(len(bad), dtype=np.intp)
        for b in np.unique(bones):
            mine = bones == b
            target[mine] = self._inner_nodes(int(b))[node[mine]]
        position = np.stack(np.unravel_index(target, (n, n, n)), axis=-1) * spacing + lower
        outer = x[bad]
        # Take the inside node on the turn nearest the point (closed axes).
        position = outer + _difference(position, outer, closed == 1.0)
        inner = position
        for _ in range(BISECTION_STEPS):
            mid = 0.5 * (inner + outer)
            ok = self._phi(mid, sub) <= 0.5 * CONTAINS_TOLERANCE
            inner = np.where(ok[:, None], mid, inner)
            outer = np.where(ok[:, None], outer, mid)
        x = x.copy()
        x[bad] = inner
        return x

    def _inner_nodes(self, b):
        """``(n^3,)`` flat index of the nearest node with ``phi <= 0`` for each node of bone ``b``."""
        if b not in self._inner:
            n = self.config["resolution"]
            phi = self.params["phi"].reshape(-1, n, n, n)[b]
            spacing = self.params["spacing"].reshape(-1, 3)[b]
            closed = self.params["closed"].reshape(-1, 3)[b] == 1.0
            inside = phi <= 0.0
            if not inside.any():
                inside = phi <= phi.min()
            self._inner[b] = distance_transform(inside, spacing, closed)[1].ravel()
        return self._inner[b]
