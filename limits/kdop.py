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
   ``k`` bounds a face and ``p`` satisfies the planes around that face (precomputed adjacency).
2. *Edge* ``(k, l)``, ``l`` the neighbour most violated at the face projection: the
   multipliers solve a 2x2 system; ``p`` is the projection onto the planes' common line, the
   answer if both multipliers are ``>= 0`` and ``p`` lies on the edge's segment.
3. *Vertex* where that projection fell off the segment, with the plane ``m`` that ends it: the
   answer if the 3x3 multipliers are ``>= 0``.
4. Points failing all three guesses (a few percent; e.g. when the most violated plane is not
   active, or at vertices where more than three planes meet) take the exhaustive fallback: the
   nearest of their projections onto every edge segment, which is the nearest boundary point.

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

from .model import register_model
from .shape_limit import (
    ShapeLimit,
    check_rotation_matrices,
    flatten_rows,
    from_local,
    principal_frame,
    rows_differ,
    select_rows,
    to_local,
)

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
_PLANE_AXIS = np.arange(_PLANES) % _AXES
_PLANE_SIGN = np.where(np.arange(_PLANES) < _AXES, 1.0, -1.0)

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
_GRAM_FLAT = _GRAM.reshape(-1)
del _cross, _cross_norm, _system

#: Slack (radians) when testing feasibility and the sign of multipliers.
FEASIBILITY_TOLERANCE = 1e-10

#: Smallest depth (radians) of a valid k-DOP's interior (fitted ones have at least the padding).
MIN_INTERIOR = 1e-7

#: Rows per batch of the projection (keeps the per-row arrays in the CPU cache).
CHUNK_ROWS = 8192

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
        ``t_lo <= t <= t_hi``.
    ``pair_plane_lo``/``pair_plane_hi (P*676,)`` int
        The plane ending that segment at ``t_lo`` / ``t_hi``.
    ``pair_is_edge (P*676,)`` bool
        Planes ``k`` and ``l`` meet in an edge of positive length (else the other pair entries
        are meaningless but finite).
    ``face_is_facet (P*26,)`` bool, ``face_adjacent (P*26, D)`` int
        Plane ``k`` bounds a face (at least 3 edges, in more than one direction); the planes
        sharing an edge with it, padded with ``k`` itself. ``face_axis``, ``face_sign``, ``face_half``, ``face_gram``
        ``(P*26, D)``: slab index, side, half-width and ``n_k . n_j`` of those planes.
    ``half (P, 13)``
        Half-widths of the slabs.
    ``edge_origin``/``edge_direction (P, E, 3)``, ``edge_length (P, E)``, ``edge_count (P,)``
        Every edge once, as a segment; rows are padded by repeating edge 0.
    ``interior_margin (P,)``
        Depth (radians) of the mean of the edges' ends inside the nearest plane: zero or
        negative for empty or flat k-DOPs.
    """
    offsets = np.asarray(offsets, dtype=float).reshape(-1, _PLANES)
    count = len(offsets)
    # (P, 26, 26, 26) temporaries: a few k-DOPs at a time.
    parts = [_line_segments(offsets[i : i + 16]) for i in range(0, count, 16)]
    origin, t_lo, t_hi, plane_lo, plane_hi, parallel_ok = (np.concatenate(arrays) for arrays in zip(*parts, strict=True))
    finite = np.isfinite(t_lo) & np.isfinite(t_hi)
    t_lo, t_hi = np.where(finite, t_lo, 0.0), np.where(finite, t_hi, 0.0)
    length = t_hi - t_lo
    is_edge = ~_PARALLEL & parallel_ok & finite & (length > 1e-12)

    degree = is_edge.sum(axis=-1)
    width = max(int(degree.max()), 1)
    order = np.argsort(~is_edge, axis=-1, kind="stable")[..., :width]
    adjacent = np.where(np.arange(width) < degree[..., None], order, np.arange(_PLANES)[None, :, None])
    half = 0.5 * (offsets[:, :_AXES] + offsets[:, _AXES:])
    face_axis = _PLANE_AXIS[adjacent]
    # A face has edges in two directions at least (a plane touching the k-DOP along one line,
    # however many planes share that line, is no face).
    directions = _LINE_DIR[np.arange(_PLANES)[:, None], adjacent] * (np.arange(width) < degree[..., None])[..., None]
    turns = np.linalg.norm(np.cross(directions[..., :, None, :], directions[..., None, :, :]), axis=-1)
    is_facet = (degree >= 3) & (turns.max(axis=(-2, -1)) > 1e-6)

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
    return {
        "pair_origin": origin.reshape(-1, 3),
        "pair_t_lo": t_lo.reshape(-1),
        "pair_t_hi": t_hi.reshape(-1),
        "pair_plane_lo": plane_lo.reshape(-1),
        "pair_plane_hi": plane_hi.reshape(-1),
        "pair_is_edge": is_edge.reshape(-1),
        "face_is_facet": is_facet.reshape(-1),
        "face_adjacent": adjacent.reshape(-1, width),
        "face_axis": face_axis.reshape(-1, width),
        "face_sign": _PLANE_SIGN[adjacent].reshape(-1, width),
        "face_half": np.take_along_axis(half[:, None, :], face_axis.reshape(count, 1, -1), axis=2).reshape(-1, width),
        "face_gram": np.broadcast_to(_GRAM[np.arange(_PLANES)[:, None], adjacent], adjacent.shape).reshape(-1, width),
        "face_width": np.array([width]),
        "half": half,
        "edge_origin": edge_origin,
        "edge_direction": edge_direction,
        "edge_length": edge_length,
        "edge_origin_along": np.einsum("pei,pei->pe", edge_origin, edge_direction),
        "edge_origin_sq": np.einsum("pei,pei->pe", edge_origin, edge_origin),
        "edge_count": edge_count,
        "interior_margin": np.where(edge_count > 0, margin, -np.inf),
    }


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


def _argmax_rows(values, count):
    """``values (D, count).argmax(axis=0)`` for small ``D``, up to near-ties: much faster than
    numpy's ``argmax`` over an axis of a few entries.

    The floats are mapped to order-preserving integers whose 5 lowest bits are replaced by the
    row index (the first row winning ties), so one integer ``max`` finds value and index. Values
    within 32 units in the last place may swap order; the callers only use the index as a guess
    that is verified afterwards.
    """
    key = values.view(np.int64).copy()
    key ^= (key >> 63) & np.int64(0x7FFFFFFFFFFFFFFF)
    key &= np.int64(~31)
    key |= (31 - np.arange(len(values), dtype=np.int64))[:, None]
    return 31 - (key.max(axis=0) & 31)


def _solve_outside(y, c_flat, count, rows, k, sk, tables, which):
    """Nearest points for points ``y (n, 3)`` outside their k-DOP, by guessed active sets.

    ``c_flat`` holds the chunk's centred slab coordinates ``axes . y - mid`` as a flattened
    ``(13, count)`` array, ``rows (n,)`` the points' columns in it, ``k (n,)`` their most
    violated plane and ``sk (n,)`` its violation, ``which`` their k-DOP (int or ``(n,)``). Each
    guess is kept only if it passes the KKT test (see the module docstring); the edge and vertex
    guesses are only made for the points the face guess leaves. Returns ``(points (n, 3),
    solved (n,) bool)``; unsolved rows need the exhaustive edge scan.
    """
    tol = FEASIBILITY_TOLERANCE
    take = np.take
    width = int(tables["face_width"][0])

    def violation(planes, at_rows, half_width):
        return _PLANE_SIGN[planes] * c_flat[_PLANE_AXIS[planes] * count + at_rows] - half_width

    # 1. Face k: its plane projection must satisfy the planes around the face. (D, n) layout.
    face_index = which * _PLANES + k
    flat_index = (face_index * width)[None, :] + np.arange(width)[:, None]
    s_face = take(tables["face_sign"], flat_index) * c_flat[take(tables["face_axis"], flat_index) * count + rows]
    s_face -= take(tables["face_half"], flat_index)
    s_face -= sk * take(tables["face_gram"], flat_index)
    face = (s_face.max(axis=0) <= tol) & take(tables["face_is_facet"], face_index)
    points = y - sk[:, None] * take(NORMALS, k, axis=0)
    rest = np.flatnonzero(~face)
    if rest.size == 0:
        return points, face
    j = _argmax_rows(s_face[:, rest], len(rest))

    # 2. Edge of planes k and k2, k2 the neighbour most violated at the face projection.
    y, rows, k, sk, face_index = y[rest], rows[rest], k[rest], sk[rest], face_index[rest]
    if np.ndim(which):
        which = which[rest]
    n = len(rest)
    r = np.arange(n)
    k2 = take(tables["face_adjacent"], face_index * width + j)
    pair = face_index * _PLANES + k2
    line = k * _PLANES + k2
    is_edge = take(tables["pair_is_edge"], pair)
    g = _GRAM_FLAT[line]
    inv = 1.0 / np.where(is_edge, 1.0 - g * g, 1.0)
    half = tables["half"][which]
    s2 = violation(k2, rows, half[_PLANE_AXIS[k2]] if half.ndim == 1 else half[r, _PLANE_AXIS[k2]])
    lam_k = (sk - g * s2) * inv
    lam_2 = (s2 - g * sk) * inv
    origin = take(tables["pair_origin"], pair, axis=0)
    direction = take(_LINE_DIR_FLAT, line, axis=0)
    t = np.einsum("ij,ij->i", y - origin, direction)
    t_lo, t_hi = take(tables["pair_t_lo"], pair), take(tables["pair_t_hi"], pair)
    on_segment = (t >= t_lo) & (t <= t_hi)
    edge = is_edge & (lam_k >= -tol) & (lam_2 >= -tol) & on_segment

    # 3. Vertex at the end of that edge where the projection fell off, with the plane k3 ending it.
    low = t < t_lo
    k3 = np.where(low, take(tables["pair_plane_lo"], pair), take(tables["pair_plane_hi"], pair))
    a, b, c = g, _GRAM_FLAT[k * _PLANES + k3], _GRAM_FLAT[k2 * _PLANES + k3]
    s3 = violation(k3, rows, half[_PLANE_AXIS[k3]] if half.ndim == 1 else half[r, _PLANE_AXIS[k3]])
    det = 1.0 + 2.0 * a * b * c - a * a - b * b - c * c
    regular = np.abs(det) > 1e-9
    inv = 1.0 / np.where(regular, det, 1.0)
    lam_k = ((1.0 - c * c) * sk + (b * c - a) * s2 + (a * c - b) * s3) * inv
    lam_2 = ((b * c - a) * sk + (1.0 - b * b) * s2 + (a * b - c) * s3) * inv
    lam_3 = ((a * c - b) * sk + (a * b - c) * s2 + (1.0 - a * a) * s3) * inv
    corner = is_edge & ~on_segment & regular & (lam_k >= -tol) & (lam_2 >= -tol) & (lam_3 >= -tol)

    t = np.where(edge, t, np.where(low, t_lo, t_hi))
    points[rest] = origin + t[:, None] * direction
    solved = face
    solved[rest] = edge | corner
    return points, solved


def nearest_in_kdop(y, mid, half, tables, which=0):
    """Nearest points of k-DOPs to ``y (m, 3)`` (frame coordinates); points inside unchanged.

    ``mid``/``half`` are the slabs' middles and half-widths, ``(13,)`` for one k-DOP
    (``which = 0``) or ``(m, 13)`` with ``which (m,)`` each point's k-DOP in ``tables`` (see
    :func:`cached_tables`). Only the nearer plane of a slab can be violated, so the most
    violated plane comes from the 13 values ``|axes . y - mid| - half``.
    """
    out = y.copy()
    per_row = mid.ndim == 2
    if not per_row:
        mid_col, half_col = mid[:, None], half[:, None]
    for start in range(0, len(y), CHUNK_ROWS):
        stop = min(start + CHUNK_ROWS, len(y))
        yc = y[start:stop]
        count = len(yc)
        c = KDOP_AXES @ yc.T  # (13, count): reductions over the slabs run along rows
        c -= mid[start:stop].T if per_row else mid_col
        violation = np.abs(c)
        violation -= half[start:stop].T if per_row else half_col
        rows = np.flatnonzero(violation.max(axis=0) > 0.0)
        if rows.size == 0:
            continue
        axis = _argmax_rows(violation[:, rows], len(rows))
        flat = axis * count + rows
        worst = violation.ravel()[flat]
        c_flat = c.ravel()
        k = axis + np.where(c_flat[flat] < 0.0, _AXES, 0)
        bones = which[start + rows] if per_row else which
        points, solved = _solve_outside(yc[rows], c_flat, count, rows, k, worst, tables, bones)
        out[start + rows] = points
        if not solved.all():
            rest = rows[~solved]
            out[start + rest] = _nearest_on_edges(yc[rest], tables, which[start + rest] if per_row else which)
    return out


@register_model
class KDopLimit(ShapeLimit):
    kind = "kdop"
    ui_order = 50
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
        local = to_local(rows, params["position"], params["rotation"])
        nearest = nearest_in_kdop(local, mid, half, tables, which)
        moved = rows_differ(nearest, local)
        out = select_rows(moved, from_local(nearest, params["position"], params["rotation"]), rows)
        return out.reshape(lead + (3,))

    @classmethod
    def _validate_shape(cls, shape):
        check_rotation_matrices(shape["rotation"], f"{cls.kind} limit: 'rotation'")
        if np.any(shape["mins"] > shape["maxs"]):
            raise ValueError(f"{cls.kind} limit: 'mins' must not exceed 'maxs'")
        margin = kdop_tables(kdop_offsets(shape["mins"], shape["maxs"]))["interior_margin"]
        if np.any(margin < MIN_INTERIOR):
            raise ValueError(f"{cls.kind} limit: the slabs 'mins'/'maxs' leave no room inside (empty or flat k-DOP)")
