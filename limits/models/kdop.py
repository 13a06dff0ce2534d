# SPDX-License-Identifier: GPL-3.0-or-later
"""Holden's k-DOP limit (13 axes, 26 planes), with an exact nearest-point projection.

Shape: the points are centred on their mean (``position``) and turned to their principal axes
(``rotation``, numpy SVD), like the oriented box. In that frame ``y`` the k-DOP is the
intersection of 13 slabs ``mins[i] <= axes[i] . y <= maxs[i]`` over :data:`KDOP_AXES`: the 3
primary axes, the 6 edge diagonals and the 4 corner diagonals of a cube (normalized), a
rhombicuboctahedron-like polytope hugging the data. ``mins``/``maxs`` are the data's extent
along each axis grown by the padding. Written as 26 half-spaces ``n_j . y <= b_j`` with
violations ``s_j = n_j . y - b_j``.

Projection. Holden clamps along each axis in turn, which is not the nearest point near edges
and corners (and Dykstra's alternating projection, which is, converges slowly at sharp corners).
Here the projection is *exact*: the nearest point ``p`` of a convex polytope is characterized by
the KKT conditions: ``p`` is inside, and ``y - p = sum(lambda_j n_j)`` over the planes ``p`` lies
on, with every ``lambda_j >= 0``. Each point outside gets a guessed active set, tested against
those conditions, all points at once:

1. *Face* ``k``, the most violated plane (found from the 13 values ``|axes . y - mid| - half``,
   since only the nearer plane of a slab can be violated): ``p = y - s_k n_k`` is the answer if
   ``p`` is inside (tested against all 13 slabs; then ``y - p = s_k n_k`` with ``s_k > 0``).
2. *Edge* ``(k, l)``, ``l`` the plane most violated at the face projection (or, when that plane
   does not meet ``k`` in an edge, the most violated of ``k``'s neighbours): the multipliers
   solve a 2x2 system; ``p`` is the projection onto the planes' common line, the answer if both
   multipliers are ``>= 0`` and ``p`` lies on the edge's segment.
3. *Vertex* where that projection fell off the segment, with the plane ``m`` that ends it: the
   answer if the 3x3 multipliers are ``>= 0`` (the inverse of the three normals is tabled per
   segment end).
4. Points failing all three guesses (about one percent of far-outside points; e.g. when the
   most violated plane is not active, or at vertices where more than three planes meet) take
   the exhaustive fallback: the nearest of their projections onto every edge segment, which is
   the nearest boundary point.

The points are handled in batches of :data:`CHUNK_ROWS` rows laid out as rows of components
(``(13, n)`` slab values, ``(n,)`` per quantity), which keeps numpy's reductions along
contiguous rows; the face guess is made for every point outside, the edge guess for the points
the face did not take, the vertex guess for those the edge did not take (subsets gathered by
index: selecting by masks of random bits is slow).

In SWING_TWIST mode the fitted shapes are exactly symmetric (the twist shape under the half
turn about the twist axis, the swing shape under the mirror through the swing plane), so the
nearest point of a twist point lies on the axis and that of a swing point in the plane: twist
points are clamped to the axis' interval inside the k-DOP, swing points projected onto the
k-DOP's section polygon (edge and vertex regions, all tested at once). Shapes that are not
exactly symmetric (edited or foreign parameters) take the general projection.

Each k-DOP's structure (the segment of every plane pair's line inside the polytope, which
plane ends it, the planes around each face, the edge list) is computed once, vectorized, and
cached on the exact parameter values. Accuracy: the result is the exact nearest point up to
floating point, ~1e-14 radians (guesses are accepted with a ``1e-10`` slack on feasibility
and multipliers). In the fallback, squared-distance comparisons between nearly tied edges can
cancel, bounding the error there by ~1e-7 radians.

Parameters (per shape; concatenated ``[swing, twist]`` in SWING_TWIST mode, see
:mod:`.shape_limit`): ``position (3,)``, ``rotation (3, 3)``, ``mins (13,)``, ``maxs (13,)``
(radians along :data:`KDOP_AXES` in the rotated frame), plus the twist ``axis (3,)``.
"""

import functools

import numpy as np

from ..constants import CHUNK_ROWS
from .shape_limit import ShapeLimit, check_rotation_matrices, flatten_rows, frame_keeps_y, from_local, principal_frame, to_local

_RAW_AXES = np.array(
    [
        [1, 0, 0],
        [0, 1, 0],
        [0, 0, 1],
        [1, 1, 0],
        [1, -1, 0],
        [1, 0, 1],
        [1, 0, -1],
        [0, 1, 1],
        [0, 1, -1],
        [1, 1, 1],
        [1, 1, -1],
        [1, -1, 1],
        [-1, 1, 1],
    ],
    dtype=float,
)

#: The 13 unit axes of the k-DOP ``(13, 3)``: primary, edge diagonals, corner diagonals.
KDOP_AXES = _RAW_AXES / np.linalg.norm(_RAW_AXES, axis=1, keepdims=True)

#: Outward normals of the 26 half-spaces ``n . y <= b``: ``+axes`` (bounded by ``maxs``), then
#: ``-axes`` (bounded by ``-mins``).
NORMALS = np.concatenate((KDOP_AXES, -KDOP_AXES))

_AXES = len(KDOP_AXES)
_PLANES = len(NORMALS)
_AXES_T = np.ascontiguousarray(KDOP_AXES.T)
_NORMALS_T = np.ascontiguousarray(NORMALS.T)
_GRAM = NORMALS @ NORMALS.T

# Every ordered pair of planes (k, l): parallel or not, the unit direction d = n_k x n_l of
# the common line, the matrix giving the line's point nearest the frame origin
# ([n_k; n_l; d] o = [b_k, b_l, 0]), and n_j . d for every plane j.
_cross = np.cross(NORMALS[:, None, :], NORMALS[None, :, :])
_cross_norm = np.linalg.norm(_cross, axis=-1)
_PARALLEL = _cross_norm < 1e-9
_LINE_DIR = np.where(_PARALLEL[..., None], 0.0, _cross / np.where(_PARALLEL, 1.0, _cross_norm)[..., None])
_system = np.stack(np.broadcast_arrays(NORMALS[:, None, :], NORMALS[None, :, :], _LINE_DIR), axis=-2)
_LINE_SOLVE = np.linalg.inv(np.where(_PARALLEL[..., None, None], np.eye(3), _system))
_LINE_ALONG = _LINE_DIR @ NORMALS.T  # (26, 26, 26)
_LINE_DIR_FLAT = _LINE_DIR.reshape(-1, 3)
_LINE_DIR_COLUMNS = np.ascontiguousarray(_LINE_DIR_FLAT.T)
_GRAM_FLAT = _GRAM.reshape(-1)
# 1 / (1 - g^2) for the 2x2 multipliers of every plane pair's line (0 for parallel planes).
_EDGE_INVERSE = np.where(_PARALLEL.reshape(-1), 0.0, 1.0 / np.where(_PARALLEL.reshape(-1), 1.0, 1.0 - _GRAM_FLAT**2))
del _cross, _cross_norm, _system

#: Slack (radians) when testing feasibility and the sign of multipliers.
FEASIBILITY_TOLERANCE = 1e-10

#: Smallest depth (radians) of a valid k-DOP's interior (fitted ones have at least the padding).
MIN_INTERIOR = 1e-7

#: Rows per batch of the exhaustive edge scan (its temporaries hold a value per row and edge).
_SCAN_ROWS = 1024

_CORE_NDIMS = {"position": 1, "rotation": 2, "mins": 1, "maxs": 1}


def kdop_offsets(mins, maxs):
    """Half-space offsets ``b (..., 26)`` from ``mins``/``maxs (..., 13)``: ``n_j . y <= b_j``."""
    return np.concatenate((maxs, -mins), axis=-1)


def _line_segments(offsets):
    """For k-DOPs ``offsets (P, 26)`` and every plane pair ``(k, l)``: the line's point nearest
    the origin ``(P, 26, 26, 3)``, the parameter range inside the k-DOP, the planes ending it,
    and whether the planes parallel to the line let it through."""
    rhs = np.zeros((len(offsets), _PLANES, _PLANES, 3))
    rhs[..., 0] = offsets[:, :, None]
    rhs[..., 1] = offsets[:, None, :]
    origin = np.einsum("klij,pklj->pkli", _LINE_SOLVE, rhs)
    slack = offsets[:, None, None, :] - origin @ _NORMALS_T  # (P, 26, 26, 26)
    up, down = _LINE_ALONG > 1e-12, _LINE_ALONG < -1e-12
    ratio = slack / np.where(up | down, _LINE_ALONG, 1.0)
    hi_ratio = np.where(up, ratio, np.inf)
    lo_ratio = np.where(down, ratio, -np.inf)
    plane_hi, plane_lo = hi_ratio.argmin(axis=-1), lo_ratio.argmax(axis=-1)
    t_hi = np.take_along_axis(hi_ratio, plane_hi[..., None], axis=-1)[..., 0]
    t_lo = np.take_along_axis(lo_ratio, plane_lo[..., None], axis=-1)[..., 0]
    parallel_ok = np.all(up | down | (slack >= -FEASIBILITY_TOLERANCE), axis=-1)
    return origin, t_lo, t_hi, plane_lo, plane_hi, parallel_ok


def kdop_tables(offsets):
    """The structure of k-DOPs with ``offsets (P, 26)``, for the projection (vectorized over P).

    Returns a dict; ``pair`` entries are indexed by ``(p * 26 + k) * 26 + l`` (k-DOP ``p``,
    planes ``k`` and ``l``), ``face`` entries by ``p * 26 + k``:

    ``pair_origin (P*676, 3)``, ``pair_t_lo``/``pair_t_hi (P*676,)``
        The line of planes ``k`` and ``l`` is ``origin + t * d_kl``; the k-DOP holds the segment
        ``t_lo <= t <= t_hi``. ``pair_origin_columns (3, P*676)``: the origins' components.
    ``pair_plane_lo``/``pair_plane_hi (P*676,)`` int
        The plane ending that segment at ``t_lo`` / ``t_hi``.
    ``end_dual (9, P*676*2)``
        For the segment's end ``2 * pair + (0 at t_lo, 1 at t_hi)``: the inverse of the matrix
        whose columns are the normals of ``k``, ``l`` and the plane ending it there (row
        ``3 * j + i`` holds entry ``(j, i)``), NaN where those normals are nearly dependent.
    ``pair_is_edge (P*676,)`` bool
        Planes ``k`` and ``l`` meet in an edge of positive length (else the other pair entries
        are meaningless but finite).
    ``face_is_facet (P*26,)`` bool, ``face_adjacent (P*26, D)`` int
        Plane ``k`` bounds a face (at least 3 edges, in more than one direction); the planes
        sharing an edge with it, padded with ``k`` itself; ``face_width`` holds ``D``.
    ``edge_origin``/``edge_direction (P, E, 3)``, ``edge_length (P, E)``, ``edge_count (P,)``
        Every edge once, as a segment; rows are padded by repeating edge 0.
    ``interior_margin (P,)``
        Depth (radians) of the mean of the edges' ends inside the nearest plane: zero or
        negative for empty or flat k-DOPs.
    """
    offsets = np.asarray(offsets, dtype=float).reshape(-1, _PLANES)
    origin, t_lo, t_hi, plane_lo, plane_hi, length, is_edge = _segments(offsets)

    # The vertex at either end of each pair's segment: the inverse of the matrix whose columns
    # are the normals of k, l and the plane ending the segment there (the multipliers of
    # y - vertex); NaN where the three are nearly dependent (Gram determinant below 1e-9).
    # Those depend on the three planes only: gathered from a table of every triple.
    ends = np.stack((plane_lo, plane_hi), axis=-1)  # (P, 26, 26, 2)
    plane = np.arange(_PLANES)
    dual = _vertex_duals()[plane[:, None, None], plane[None, :, None], ends]  # (P, 26, 26, 2, 3, 3)

    degree = is_edge.sum(axis=-1)
    width = max(int(degree.max()), 1)
    order = np.argsort(~is_edge, axis=-1, kind="stable")[..., :width]
    adjacent = np.where(np.arange(width) < degree[..., None], order, np.arange(_PLANES)[None, :, None])
    # A face has edges in two directions at least (a plane touching the k-DOP along one line,
    # however many planes share that line, is no face).
    directions = _LINE_DIR[np.arange(_PLANES)[:, None], adjacent] * (np.arange(width) < degree[..., None])[..., None]
    turns = np.linalg.norm(np.cross(directions[..., :, None, :], directions[..., None, :, :]), axis=-1)
    is_facet = (degree >= 3) & (turns.max(axis=(-2, -1)) > 1e-6)

    edge_origin, edge_direction, edge_length, edge_count, margin = _edge_list(offsets, origin, t_lo, length, is_edge)
    return {
        "pair_origin": origin.reshape(-1, 3),
        "pair_origin_columns": np.ascontiguousarray(origin.reshape(-1, 3).T),
        "pair_t_lo": t_lo.reshape(-1),
        "pair_t_hi": t_hi.reshape(-1),
        "pair_plane_lo": plane_lo.reshape(-1),
        "pair_plane_hi": plane_hi.reshape(-1),
        "pair_is_edge": is_edge.reshape(-1),
        "end_dual": np.ascontiguousarray(dual.reshape(-1, 9).T),
        "face_is_facet": is_facet.reshape(-1),
        "face_adjacent": adjacent.reshape(-1, width),
        "face_width": np.array([width]),
        "edge_origin": edge_origin,
        "edge_direction": edge_direction,
        "edge_length": edge_length,
        "edge_origin_along": np.einsum("pei,pei->pe", edge_origin, edge_direction),
        "edge_origin_sq": np.einsum("pei,pei->pe", edge_origin, edge_origin),
        "edge_count": edge_count,
        "interior_margin": margin,
    }


@functools.lru_cache(maxsize=1)
def _vertex_duals():
    """``(26, 26, 26, 3, 3)``: the inverse of the matrix whose columns are the normals of planes
    ``k``, ``l`` and ``m`` (NaN where the three are nearly dependent: Gram determinant below
    1e-9), for every triple; built once, as inverting per k-DOP would be most of its tables' cost."""
    matrix = np.stack(
        np.broadcast_arrays(NORMALS[:, None, None, :], NORMALS[None, :, None, :], NORMALS[None, None, :, :]), axis=-1
    )
    regular = np.linalg.det(matrix) ** 2 > 1e-9
    dual = np.linalg.inv(np.where(regular[..., None, None], matrix, np.eye(3)))
    dual[~regular] = np.nan
    dual.flags.writeable = False
    return dual


def _segments(offsets):
    """Per pair of planes of the k-DOPs ``offsets (P, 26)``, the segment of their line inside:
    ``(origin, t_lo, t_hi, plane_lo, plane_hi, length, is_edge)``, each ``(P, 26, 26, ...)``
    (see :func:`kdop_tables`)."""
    # (P, 26, 26, 26) temporaries: a few k-DOPs at a time.
    parts = [_line_segments(offsets[i : i + 16]) for i in range(0, len(offsets), 16)]
    origin, t_lo, t_hi, plane_lo, plane_hi, parallel_ok = (np.concatenate(arrays) for arrays in zip(*parts, strict=True))
    finite = np.isfinite(t_lo) & np.isfinite(t_hi)
    t_lo, t_hi = np.where(finite, t_lo, 0.0), np.where(finite, t_hi, 0.0)
    length = t_hi - t_lo
    is_edge = ~_PARALLEL & parallel_ok & finite & (length > 1e-12)
    return origin, t_lo, t_hi, plane_lo, plane_hi, length, is_edge


def _edge_list(offsets, origin, t_lo, length, is_edge):
    """Every edge once (from :func:`_segments`) and the interior margin: ``(edge_origin,
    edge_direction, edge_length, edge_count, interior_margin)`` as in :func:`kdop_tables`."""
    count = len(offsets)
    upper = (is_edge & np.triu(np.ones((_PLANES, _PLANES), dtype=bool), k=1)).reshape(count, -1)
    edge_count = upper.sum(axis=1)
    e_width = max(int(edge_count.max()), 1)
    pick = np.argsort(~upper, axis=1, kind="stable")[:, :e_width]
    pick = np.where(np.arange(e_width) < edge_count[:, None], pick, pick[:, :1])
    rows = np.arange(count)[:, None]
    first, second = np.divmod(pick, _PLANES)
    edge_direction = _LINE_DIR[first, second]
    edge_origin = origin[rows, first, second] + t_lo[rows, first, second][..., None] * edge_direction
    edge_length = np.where(edge_count[:, None] > 0, length[rows, first, second], 0.0)

    ends = np.concatenate((edge_origin, edge_origin + edge_length[..., None] * edge_direction), axis=1)
    margin = np.min(offsets - ends.mean(axis=1) @ _NORMALS_T, axis=1)
    return edge_origin, edge_direction, edge_length, edge_count, np.where(edge_count > 0, margin, -np.inf)


def interior_margin(offsets):
    """``interior_margin (P,)`` of :func:`kdop_tables` alone: what validating a k-DOP needs,
    for about a tenth of the tables' cost (loading a rig's limits validates every one)."""
    offsets = np.asarray(offsets, dtype=float).reshape(-1, _PLANES)
    origin, t_lo, _, _, _, length, is_edge = _segments(offsets)
    return _edge_list(offsets, origin, t_lo, length, is_edge)[-1]


@functools.lru_cache(maxsize=32)
def _cached_tables(key, count):
    tables = kdop_tables(np.frombuffer(key, dtype=float).reshape(count, _PLANES))
    for value in tables.values():
        value.flags.writeable = False
    return tables


def cached_tables(offsets):
    """:func:`kdop_tables` for ``offsets (P, 26)``, cached on their exact values (read-only)."""
    offsets = np.ascontiguousarray(offsets, dtype=float).reshape(-1, _PLANES)
    return _cached_tables(offsets.tobytes(), len(offsets))


def _nearest_on_edges(y, tables, which):
    """The exhaustive fallback: nearest points ``(m, 3)`` to ``y (m, 3)`` on all edges of k-DOP
    ``which`` (an int, or an index array ``(m,)``)."""
    origins, directions = tables["edge_origin"][which], tables["edge_direction"][which]
    lengths = tables["edge_length"][which]
    origin_along, origin_sq = tables["edge_origin_along"][which], tables["edge_origin_sq"][which]
    if np.ndim(which) == 0:
        along = y @ directions.T - origin_along
        y_dot_o = y @ origins.T
    else:
        along = np.einsum("mi,mei->me", y, directions) - origin_along
        y_dot_o = np.einsum("mi,mei->me", y, origins)
    t = np.minimum(np.maximum(along, 0.0), lengths)
    dist_sq = origin_sq - 2.0 * y_dot_o + t * (t - 2.0 * along)  # minus the constant |y|^2
    best = np.argmin(dist_sq, axis=1)
    rows = np.arange(len(y))
    t_best = t[rows, best][:, None]
    if np.ndim(which) == 0:
        return origins[best] + t_best * directions[best]
    return origins[rows, best] + t_best * directions[rows, best]


# _most_violated_plane: the byte key of a slab row (13 - row in the low bits, 16 when the
# negative side is violated) -> plane index.
_ROW_WEIGHTS = np.arange(_AXES, 0, -1, dtype=np.uint8)[:, None]
_KEY_PLANE = np.zeros(256, dtype=np.intp)
_KEY_PLANE[1 : _AXES + 1] = np.arange(_AXES - 1, -1, -1)
_KEY_PLANE[17 : 17 + _AXES] = np.arange(_PLANES - 1, _AXES - 1, -1)


def _slab_violations(y, mid, half):
    """The slab violations ``|axes . y - mid| - half (13, n)`` of points ``y (3, n)`` and a byte
    key ``(13, n)`` for :func:`_most_violated_plane`, 16 where the negative side is the
    nearer one (one 13-row float array, in place)."""
    c = KDOP_AXES @ y
    c -= mid
    key = np.less(c, 0.0).view(np.uint8)
    key *= np.uint8(16)
    np.abs(c, out=c)
    c -= half
    return c, key


def _most_violated_plane(violation, key, worst):
    """Plane index ``(n,)`` of the first slab row of ``violation (13, n)`` reaching its column
    maximum ``worst (n,)``, on the side recorded in ``key`` (from :func:`_slab_violations`,
    overwritten).

    ``violation.argmax(axis=0)`` without numpy's slow strided argmax: a byte per entry holding
    ``row weight + 16 * negative side`` where the maximum is reached, one byte-wide ``max``
    and a table lookup. (Exact ties may pick a later row; any pick is a guess, verified
    afterwards.)
    """
    key += _ROW_WEIGHTS
    key *= np.equal(violation, worst).view(np.uint8)
    return np.take(_KEY_PLANE, key.max(axis=0))


def _most_violated_neighbour(p, k, mid, half, tables, which, rows):
    """For face projections ``p (3, r)`` onto planes ``k (r,)``: the plane sharing an edge with
    ``k`` most violated at ``p``, and its violation there (``k`` itself, violation 0, when none
    is violated). ``mid``/``half`` are ``(13, 1)`` or ``(13, n)`` with ``rows (r,)`` the
    points' columns, ``which`` the k-DOP (int or ``(n,)``)."""
    width = int(tables["face_width"][0])
    face = k if np.ndim(which) == 0 and which == 0 else np.take(which, rows) * _PLANES + k
    adjacent = np.take(tables["face_adjacent"], face[None, :] * width + np.arange(width)[:, None])  # (width, r)
    if mid.shape[1] > 1:
        mid, half = mid[:, rows], half[:, rows]
    s = NORMALS @ p  # (26, r): violations of every plane at p
    s -= np.concatenate((mid + half, half - mid))
    count = len(k)
    r = np.arange(count)
    s = np.take(s, adjacent * count + r)  # (width, r), the padding (k itself) at 0
    return adjacent[s.argmax(axis=0), r], s.max(axis=0)


def _guess_chunk(y, mid, half, tables, which):
    """Nearest points of the points ``y (3, n)`` (frame coordinates, one row per component)
    outside their k-DOP, by guessed active sets (see the module docstring).

    ``mid``/``half`` are ``(13, 1)`` or per point ``(13, n)``; ``which`` is the k-DOP (an int, or
    ``(n,)``). Returns ``(rows (m,), points (3, m), solved (m,) bool)`` for the ``m`` points
    outside; unsolved ones need the exhaustive edge scan. Each guess is kept only if it passes
    the KKT test.
    """
    tol = FEASIBILITY_TOLERANCE
    take = np.take
    violation, key = _slab_violations(y, mid, half)  # (13, n): reductions run along rows
    worst = violation.max(axis=0)
    rows = np.flatnonzero(worst > 0.0)
    if rows.size == 0:
        return rows, np.empty((3, 0)), np.empty(0, dtype=bool)
    k = take(_most_violated_plane(violation, key, worst), rows)
    sk = take(worst, rows)
    y0, y1, y2 = at_y = take(y[0], rows), take(y[1], rows), take(y[2], rows)
    if mid.shape[1] > 1:
        mid, half, which = mid[:, rows], half[:, rows], which[rows]

    # 1. Face k: its plane projection p = y - s_k n_k must be inside (then y - p = s_k n_k, with
    # s_k > 0, is the KKT certificate). Checked against all 13 slabs: cheaper than gathering
    # the planes around the face.
    p = np.empty((3, len(rows)))
    for i, yi in enumerate((y0, y1, y2)):
        np.multiply(sk, take(_NORMALS_T[i], k), out=p[i])
        np.subtract(yi, p[i], out=p[i])
    violation, key = _slab_violations(p, mid, half)
    at_face = violation.max(axis=0)
    face = at_face <= tol

    # 2. Edge of planes k and k2, k2 the plane most violated at the face projection, where
    # its violation is s2 - g s_k (g = n_k . n_k2). Where that plane does not meet k in an
    # edge (a few percent), k2 is the most violated plane among k's neighbours instead.
    # Only for the points the face did not take (gathered by index).
    k2 = _most_violated_plane(violation, key, at_face)
    points = p
    not_face = np.flatnonzero(~face)
    if not_face.size == 0:
        return _moved_only(rows, points, face, *at_y)
    solved = face
    if not_face.size < len(rows):
        k, k2, sk, at_face = take(k, not_face), take(k2, not_face), take(sk, not_face), take(at_face, not_face)
        y0, y1, y2, p = take(y0, not_face), take(y1, not_face), take(y2, not_face), take(p, not_face, axis=1)
        if mid.shape[1] > 1:
            mid, half, which = mid[:, not_face], half[:, not_face], which[not_face]
    base = 0 if np.ndim(which) == 0 and which == 0 else which * (_PLANES * _PLANES)
    pair = k * _PLANES + k2
    pair += base
    is_edge = take(tables["pair_is_edge"], pair)
    retry = np.flatnonzero(~is_edge)
    if retry.size:
        k2[retry], at_face[retry] = _most_violated_neighbour(take(p, retry, axis=1), k[retry], mid, half, tables, which, retry)
        pair[retry] = k[retry] * _PLANES + k2[retry]
        if np.ndim(base):
            pair[retry] += base[retry]
        is_edge[retry] = take(tables["pair_is_edge"], pair[retry])
    line = k * _PLANES + k2
    g = take(_GRAM_FLAT, line)
    s2 = g * sk
    s2 += at_face
    inv = take(_EDGE_INVERSE, line)
    lam_k = sk - g * s2
    lam_k *= inv
    lam_2 = s2 - g * sk
    lam_2 *= inv
    origin = tables["pair_origin_columns"]
    o0, o1, o2 = take(origin[0], pair), take(origin[1], pair), take(origin[2], pair)
    d0, d1, d2 = take(_LINE_DIR_COLUMNS[0], line), take(_LINE_DIR_COLUMNS[1], line), take(_LINE_DIR_COLUMNS[2], line)
    r0, r1, r2 = y0 - o0, y1 - o1, y2 - o2
    t = r0 * d0
    t += r1 * d1
    t += r2 * d2
    t_lo, t_hi = take(tables["pair_t_lo"], pair), take(tables["pair_t_hi"], pair)
    low, high = t < t_lo, t > t_hi
    off = low | high
    edge = is_edge & (lam_k >= -tol) & (lam_2 >= -tol) & ~off

    # 3. Vertex at the end of that edge where the projection fell off (the plane k3 ending it):
    # the multipliers of y - vertex on the normals of k, k2, k3 (their inverse matrix is
    # tabled; NaN where the three normals are nearly dependent).
    # Only for the points no face or edge took (a fifth or so): gathered by index.
    np.maximum(t, t_lo, out=t)
    np.minimum(t, t_hi, out=t)
    for ri, oi, di in ((r0, o0, d0), (r1, o1, d1), (r2, o2, d2)):
        di *= t
        ri -= di  # y - q
        di += oi  # q = origin + t d, the point on the segment
    rest = np.flatnonzero(~edge & is_edge & off)
    end = take(pair, rest)
    end += end
    end += take(high, rest)
    dual = tables["end_dual"]
    r0, r1, r2 = take(r0, rest), take(r1, rest), take(r2, rest)
    corner = np.ones(len(rest), dtype=bool)
    for j in range(3):
        lam = take(dual[3 * j], end) * r0
        lam += take(dual[3 * j + 1], end) * r1
        lam += take(dual[3 * j + 2], end) * r2
        corner &= lam >= -tol
    edge[rest] = corner
    solved[not_face] = edge
    for i, qi in enumerate((d0, d1, d2)):
        points[i][not_face] = qi  # (indices on 1-D views: masks of random bits select slowly)
    return _moved_only(rows, points, solved, *at_y)


def _moved_only(rows, points, solved, y0, y1, y2):
    """``(rows, points, solved)`` without the rows whose (solved) point equals ``y``: points
    outside by less than their rounding are not moved."""
    moved = (points[0] != y0) | (points[1] != y1) | (points[2] != y2) | ~solved
    if not moved.all():
        rows, points, solved = rows[moved], points[:, moved], solved[moved]
    return rows, points, solved


def _nearest_columns(y, mid, half, tables, which=0):
    """:func:`nearest_in_kdop` on frame coordinates ``y (3, m)`` (one row per component, e.g. a
    transposed view), ``mid``/``half`` as ``(13,)`` or ``(m, 13)``. Returns ``(rows (r,),
    points (3, r))``: the points outside and their nearest points, in increasing row order."""
    per_row = mid.ndim == 2
    if per_row:
        mid_t, half_t = mid.T, half.T
    else:
        mid_col, half_col = mid[:, None], half[:, None]
    found, unsolved = [], []
    for start in range(0, y.shape[1], CHUNK_ROWS):
        stop = min(start + CHUNK_ROWS, y.shape[1])
        if per_row:
            mid_col, half_col, bones = mid_t[:, start:stop], half_t[:, start:stop], which[start:stop]
        else:
            bones = which
        rows, points, solved = _guess_chunk(y[:, start:stop], mid_col, half_col, tables, bones)
        rows += start
        found.append((rows, points))
        if not solved.all():
            unsolved.append((len(found) - 1, np.flatnonzero(~solved)))
    if not found:
        return np.empty(0, dtype=np.intp), np.empty((3, 0))
    # The exhaustive edge scan, once for the few points the guesses left in any chunk.
    if unsolved:
        index = np.concatenate([found[f][0][u] for f, u in unsolved])
        points_scanned = np.empty((len(index), 3))
        for at in range(0, len(index), _SCAN_ROWS):  # (rows, edges) temporaries: keep them small
            part = index[at : at + _SCAN_ROWS]
            points_scanned[at : at + _SCAN_ROWS] = _nearest_on_edges(y[:, part].T, tables, which[part] if per_row else which)
        at = 0
        for f, u in unsolved:
            found[f][1][:, u] = points_scanned[at : at + len(u)].T
            at += len(u)
    if len(found) == 1:
        rows, points = found[0]
    else:
        rows, points = np.concatenate([f[0] for f in found]), np.concatenate([f[1] for f in found], axis=1)
    if unsolved:
        same = np.flatnonzero(np.all(points_scanned == y[:, index].T, axis=1))
        if same.size:  # outside by less than their rounding: not moved
            keep = ~np.isin(rows, index[same])
            rows, points = rows[keep], points[:, keep]
    return rows, points


def nearest_in_kdop(y, mid, half, tables, which=0):
    """Nearest points of k-DOPs to ``y (m, 3)`` (frame coordinates); points inside unchanged.

    ``mid``/``half`` are the slabs' middles and half-widths, ``(13,)`` for one k-DOP
    (``which = 0``) or ``(m, 13)`` with ``which (m,)`` each point's k-DOP in ``tables`` (see
    :func:`cached_tables`). Only the nearer plane of a slab can be violated, so the most
    violated plane comes from the 13 values ``|axes . y - mid| - half``.
    """
    out = y.copy()
    rows, points = _nearest_columns(np.ascontiguousarray(y.T), mid, half, tables, which)
    out[rows] = points.T
    return out


# The half turn about the Y axis permutes the k-DOP's axes: H a_j = sign_j a_perm_j.
_turned = KDOP_AXES * (-1.0, 1.0, -1.0)
_TURN_PERM = np.argmax(np.abs(_turned @ KDOP_AXES.T), axis=1)
_TURN_SIGN = np.sign(np.sum(_turned * KDOP_AXES[_TURN_PERM], axis=1))
del _turned


def twist_axis_interval(shape):
    """``(lo, hi)``, the part ``position + (0, t, 0)``, ``lo <= t <= hi``, of the Y axis of
    shape space inside a k-DOP that is exactly symmetric under the half turn about that axis,
    or None (not symmetric, batched parameters, or the axis misses the k-DOP).

    Twist shapes as fitted are symmetric: their points lie on the axis, so the frame is centred
    on it with its axis 1 along it, and the slab bounds come out exactly mirrored. For such a
    k-DOP the nearest point of a point on the axis is on the axis (the half turn maps it to the
    nearest point of the same point, which is unique): the clamp of ``t`` to ``[lo, hi]``.
    """
    if not _y_frame(shape) or shape["position"][0] != 0.0 or shape["position"][2] != 0.0:
        return None
    mins, maxs = shape["mins"], shape["maxs"]
    if not _bounds_symmetric(mins, maxs, _TURN_PERM, _TURN_SIGN):
        return None
    along = KDOP_AXES[:, 1]
    flat = along == 0.0
    if np.any(flat & ((mins > 0.0) | (maxs < 0.0))):
        return None
    a, lo_b, hi_b = along[~flat], mins[~flat], maxs[~flat]
    lo = float(np.max(np.where(a > 0.0, lo_b, hi_b) / a))
    hi = float(np.min(np.where(a > 0.0, hi_b, lo_b) / a))
    return (lo, hi) if lo <= hi else None


# The mirror y -> -y permutes the k-DOP's axes the same way: M a_j = sign_j a_perm_j.
_mirrored = KDOP_AXES * (1.0, -1.0, 1.0)
_MIRROR_PERM = np.argmax(np.abs(_mirrored @ KDOP_AXES.T), axis=1)
_MIRROR_SIGN = np.sign(np.sum(_mirrored * KDOP_AXES[_MIRROR_PERM], axis=1))
del _mirrored


def _bounds_symmetric(mins, maxs, perm, sign):
    """The slab bounds map onto themselves, bit for bit, under the axis permutation."""
    same = (mins[perm] == mins) & (maxs[perm] == maxs)
    mirrored = (mins[perm] == -maxs) & (maxs[perm] == -mins)
    return bool(np.all(np.where(sign > 0, same, mirrored)))


def _y_frame(shape):
    """Unbatched parameters whose frame keeps the Y axis (row and column 1 of ``rotation``
    are the unit Y vector)."""
    position, rotation, mins, maxs = shape["position"], shape["rotation"], shape["mins"], shape["maxs"]
    if rotation.ndim != 2 or mins.ndim != 1 or maxs.ndim != 1 or position.ndim != 1:
        return False
    return frame_keeps_y(rotation)


@functools.lru_cache(maxsize=32)
def _cached_polygon(key):
    position, rotation, mins, maxs = np.split(np.frombuffer(key, dtype=float), [3, 12, 25])
    rotation = rotation.reshape(3, 3)
    # In-plane constraints (frame coordinates x, z): u . w <= b for the slabs not along Y.
    xz = KDOP_AXES[:, [0, 2]]
    length = np.linalg.norm(xz, axis=1)
    along_y = length < 1e-12
    if np.any(along_y & ((mins > 0.0) | (maxs < 0.0))):
        return None
    u = xz[~along_y] / length[~along_y, None]
    normals = np.concatenate((u, -u))
    offsets = np.concatenate((maxs[~along_y] / length[~along_y], -mins[~along_y] / length[~along_y]))
    first, second = np.triu_indices(len(normals), k=1)
    det = normals[first, 0] * normals[second, 1] - normals[first, 1] * normals[second, 0]
    ok = np.abs(det) > 1e-9
    first, second, det = first[ok], second[ok], det[ok]
    x = (offsets[first] * normals[second, 1] - offsets[second] * normals[first, 1]) / det
    z = (normals[first, 0] * offsets[second] - normals[second, 0] * offsets[first]) / det
    corners = np.stack((x, z), axis=1)
    scale = 1.0 + np.abs(offsets).max()
    corners = corners[np.all(corners @ normals.T - offsets <= 1e-12 * scale, axis=1)]
    if len(corners) < 3:
        return None
    centre = corners.mean(axis=0)
    corners = corners[np.argsort(np.arctan2(corners[:, 1] - centre[1], corners[:, 0] - centre[0]))]
    keep = np.linalg.norm(corners - np.roll(corners, 1, axis=0), axis=1) > 1e-12 * scale
    corners = corners[keep]
    if len(corners) < 3:
        return None
    # To shape space (the frame keeps Y, so x and z map among themselves).
    world = np.stack((corners[:, 0], np.zeros(len(corners)), corners[:, 1]), axis=1) @ rotation.T + position
    vertex = world[:, [0, 2]]
    if np.linalg.det(rotation[np.ix_([0, 2], [0, 2])]) < 0:  # a mirrored frame reverses the order
        vertex = vertex[::-1]
    edge = np.roll(vertex, -1, axis=0) - vertex
    length = np.linalg.norm(edge, axis=1)
    direction = edge / length[:, None]
    normal = np.stack((direction[:, 1], -direction[:, 0]), axis=1)  # outward: vertices run counterclockwise
    out = {
        "vertex": np.ascontiguousarray(vertex.T),
        "direction": np.ascontiguousarray(direction.T),
        "normal": np.ascontiguousarray(normal.T),
        "offset": np.einsum("ei,ei->e", normal, vertex),
        "start": np.einsum("ei,ei->e", direction, vertex),
        "length": length,
    }
    for value in out.values():
        value.flags.writeable = False
    return out


def swing_plane_polygon(shape):
    """The k-DOP's section by the plane ``y = 0`` of shape space, as a counterclockwise polygon
    in ``(x, z)``, for k-DOPs exactly symmetric under the mirror ``y -> -y``; None otherwise
    (or for degenerate sections).

    Swing shapes as fitted are symmetric: their points lie in the plane, so the frame is centred
    in it with its axis 1 along Y, and the slab bounds come out exactly mirrored. For such a
    k-DOP the nearest point of a point in the plane is in the plane (the mirror maps it to the
    nearest point of the same point, which is unique): the nearest point of the polygon.
    Returns a dict of ``(2, E)`` / ``(E,)`` arrays: ``vertex``, unit edge ``direction`` (vertex
    ``i`` to ``i + 1``), outward ``normal``, ``offset = normal . vertex``, ``start = direction
    . vertex``, ``length``.
    """
    if not _y_frame(shape) or shape["position"][1] != 0.0:
        return None
    if not _bounds_symmetric(shape["mins"], shape["maxs"], _MIRROR_PERM, _MIRROR_SIGN):
        return None
    key = np.concatenate([np.ravel(shape[name]) for name in ("position", "rotation", "mins", "maxs")]).astype(float)
    return _cached_polygon(key.tobytes())


def _nearest_polygon_edge(t, x, z, polygon):
    """Index ``(m,)`` of the polygon edge nearest to the points ``(x, z)``, given their
    parameters ``t (E, m)`` along every edge: the exhaustive scan of the clamped projections."""
    direction, vertex = polygon["direction"], polygon["vertex"]
    t = np.clip(t, 0.0, polygon["length"][:, None])
    dx = vertex[0][:, None] + t * direction[0][:, None] - x
    dz = vertex[1][:, None] + t * direction[1][:, None] - z
    return np.argmin(dx * dx + dz * dz, axis=0)


def _nearest_in_swing_polygon(points, polygon):
    """Points ``(..., 3)`` in the plane ``y = 0`` moved to their nearest points of ``polygon``
    (see :func:`swing_plane_polygon`); the points inside unchanged (bit for bit).

    The region of a point outside: edge ``j`` if it is outside that edge's line and its
    projection falls on the segment; vertex ``i`` if it lies past the end of edge ``i - 1`` and
    before the start of edge ``i``. The regions (closed, overlapping only on their borders)
    cover the outside; all are tested at once on ``(E, m)`` arrays.
    """
    x, z = points[..., 0].reshape(-1), points[..., 2].reshape(-1)
    normal, direction, vertex = polygon["normal"], polygon["direction"], polygon["vertex"]
    s = normal[0][:, None] * x
    s += normal[1][:, None] * z
    s -= polygon["offset"][:, None]
    rows = np.flatnonzero(s.max(axis=0) > 0.0)
    out = np.array(points)
    if rows.size == 0:
        return out
    x, z = np.take(x, rows), np.take(z, rows)
    s = np.take(s, np.arange(len(s))[:, None] * s.shape[1] + rows)
    t = direction[0][:, None] * x
    t += direction[1][:, None] * z
    t -= polygon["start"][:, None]
    length = polygon["length"][:, None]
    edge = (s >= 0.0) & (t >= 0.0) & (t <= length)
    corner = (t <= 0.0) & (np.roll(t, 1, axis=0) >= np.roll(length, 1, axis=0))
    count = len(length)
    key = np.concatenate((edge, corner)).view(np.uint8) * np.arange(2 * count, 0, -1, dtype=np.uint8)[:, None]
    region = 2 * count - key.max(axis=0).astype(np.intp)
    if np.any(region == 2 * count):  # in no region (rounding at a border): the nearest edge
        lost = np.flatnonzero(region == 2 * count)
        region[lost] = _nearest_polygon_edge(t[:, lost], x[lost], z[lost], polygon)
    which = region % count
    on_edge = region < count
    tt = np.where(on_edge, np.take(t, which * len(rows) + np.arange(len(rows))), 0.0)
    np.clip(tt, 0.0, np.take(polygon["length"], which), out=tt)
    flat = out.reshape(-1, 3)
    flat[rows, 0] = np.take(vertex[0], which) + tt * np.take(direction[0], which)
    flat[rows, 2] = np.take(vertex[1], which) + tt * np.take(direction[1], which)
    return out


def _clamp_on_twist_axis(points, centre, lo, hi):
    """Points ``(..., 3)`` on the Y axis moved to ``centre + clamp(y - centre, lo, hi)``; the
    others unchanged (bit for bit, so a clamped point stays put when projected again)."""
    y = points[..., 1]
    t = y - centre
    out = np.array(points)
    out[..., 1] = np.where(t < lo, lo + centre, np.where(t > hi, hi + centre, y))
    return out


class KDopLimit(ShapeLimit):
    kind = "kdop"
    label = "k-DOP"
    description = "26-sided polytope on the principal axes of the sampled rotations; the tightest shape"
    SHAPE_PARAMS = {"position": (3,), "rotation": (3, 3), "mins": (13,), "maxs": (13,)}

    @classmethod
    def _fit_shape(cls, points, padding, fixed_axis=None):
        position, rotation = principal_frame(points, fixed_axis)
        along = to_local(points, position, rotation) @ KDOP_AXES.T
        return {
            "position": position,
            "rotation": rotation,
            "mins": along.min(axis=0) - padding,
            "maxs": along.max(axis=0) + padding,
        }

    @classmethod
    def _contains_shape(cls, shape, points, tolerance):
        along = to_local(points, shape["position"], shape["rotation"]) @ KDOP_AXES.T
        inside = (along >= shape["mins"] - tolerance) & (along <= shape["maxs"] + tolerance)
        return np.all(inside, axis=-1)

    @classmethod
    def _project_shape(cls, shape, points):
        if np.ndim(points) >= 2:
            # Twist points against a (symmetric, as fitted) twist k-DOP: a clamp on the axis.
            interval = twist_axis_interval(shape)
            if interval is not None and not np.any(points[..., 0]) and not np.any(points[..., 2]):
                return _clamp_on_twist_axis(points, shape["position"][1], *interval)
            # Swing points against a (symmetric, as fitted) swing k-DOP: its section polygon.
            polygon = swing_plane_polygon(shape)
            if polygon is not None and not np.any(points[..., 1]):
                return _nearest_in_swing_polygon(points, polygon)
        rows, params, lead = flatten_rows(shape, points, _CORE_NDIMS)
        mid = 0.5 * (params["maxs"] + params["mins"])
        half = 0.5 * (params["maxs"] - params["mins"])
        # One structure table per k-DOP (bone), never per point.
        tables = cached_tables(kdop_offsets(shape["mins"], shape["maxs"]))
        if mid.ndim == 1:
            which = 0
        else:
            lead_p = shape["mins"].shape[:-1]
            which = np.broadcast_to(np.arange(int(np.prod(lead_p))).reshape(lead_p), lead).reshape(-1)
        position, rotation = params["position"], params["rotation"]
        # Frame coordinates as rows of components (3, M); only the points outside come back.
        if rotation.ndim == 2:
            local = rotation.T @ rows.T
            local -= (rotation.T @ position)[:, None]
        else:
            local = np.ascontiguousarray(to_local(rows, position, rotation).T)
        index, nearest = _nearest_columns(local, mid, half, tables, which)
        if rotation.ndim == 2 and 2 * index.size >= len(rows):
            # Most points move: back to the shape's space in one product, unmoved rows restored
            # exactly. Returned as a transposed view: the callers read it by component.
            for i in range(3):
                local[i][index] = nearest[i]
            world = rotation @ local
            world += position[:, None]
            if index.size < len(rows):
                moved = np.zeros(len(rows), dtype=bool)
                moved[index] = True
                unmoved = np.flatnonzero(~moved)
                kept = np.take(rows, unmoved, axis=0)
                for i in range(3):
                    world[i][unmoved] = kept[:, i]
            return world.T.reshape(lead + (3,))
        out = np.array(rows)
        if index.size:
            if rotation.ndim == 2:
                world = rotation @ nearest
                world += position[:, None]
            else:
                world = from_local(nearest.T, position[index], rotation[index]).T
            flat = out.reshape(-1)
            for i in range(3):
                np.put(flat, 3 * index + i, world[i])
        return out.reshape(lead + (3,))

    @classmethod
    def _shape_radius(cls, shape):
        """The centre's distance plus the farthest corner of the box of the three primary slabs
        (which holds the k-DOP), in its frame."""
        bounds = np.maximum(shape["mins"][..., :3] ** 2, shape["maxs"][..., :3] ** 2)
        return np.linalg.norm(shape["position"], axis=-1) + np.sqrt(np.sum(bounds, axis=-1))

    @classmethod
    def _validate_shape(cls, shape):
        check_rotation_matrices(shape["rotation"], f"{cls.kind} limit: 'rotation'")
        if np.any(shape["mins"] > shape["maxs"]):
            raise ValueError(f"{cls.kind} limit: 'mins' must not exceed 'maxs'")
        margin = interior_margin(kdop_offsets(shape["mins"], shape["maxs"]))
        if np.any(margin < MIN_INTERIOR):
            raise ValueError(f"{cls.kind} limit: the slabs 'mins'/'maxs' leave no room inside (empty or flat k-DOP)")
