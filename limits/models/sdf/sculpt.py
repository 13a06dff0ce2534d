# SPDX-License-Identifier: GPL-3.0-or-later
"""Sculpted signed distance fields (seed 000, section 3.4): grid -> mesh -> grid, in numpy.

A signed-distance-grid limit (:mod:`.grid`) is turned into a closed triangle mesh that a
rigger can edit in Blender (move, scale, sculpt, or shrink-wrap an enclosing sphere onto it, as
in the paper's Fig. 3), and the edited mesh is turned back into a signed distance grid.

Grid to mesh (:func:`mesh_from_sdf`)
------------------------------------
Marching tetrahedra on the Kuhn (Freudenthal) split of every grid cell into six tetrahedra
sharing the cell's main diagonal. The split is the same in every cell, so neighbouring cells
agree on their shared faces and there are no ambiguous cases: the surface separating inside
nodes (``phi <= 0``) from outside nodes is a closed two-manifold (every edge shared by exactly
two triangles) once the grid is padded with one layer of outside nodes. A mesh vertex sits on
each grid edge (axis, face diagonal or cell diagonal) whose ends differ in sign, at the zero of
the linear interpolation of ``phi`` along the edge (kept ``1e-3`` of the edge away from its
ends, so no triangle collapses). Triangles are oriented from the inside nodes towards the
outside ones (outward normals), decided on the undistorted edge midpoints so the decision
never depends on rounding. Accuracy: exact where ``phi`` is linear (planes); for a smooth
surface the vertices are within ``O(h^2 kappa)`` of the zero level (``h`` the spacing,
``kappa`` the curvature); near creases of ``phi`` within a fraction of a cell. No Python loop
over cells: loops run over the six tetrahedra, the 16 sign patterns and the 8 corners.

Mesh to grid (:func:`sdf_from_mesh`)
------------------------------------
* Grid: the mesh's bounding box grown by ``margin`` spacings, ``resolution`` nodes per axis
  (spacings differ per axis, like the fitted grids).
* Inside or outside: ray parity. From every grid line along an axis a ray is cast along the
  axis; all its crossings with the mesh are found at once (every triangle is paired with the
  grid lines its bounding box covers, then a 2-D edge-function test per pair, in chunks), and a
  node is inside when an odd number of crossings lie before it. The rays are shifted off the
  grid lines by tiny irrational fractions of a spacing so they never pass through a vertex or
  edge of meshes with "round" coordinates, and the vote of three rays (along X, Y and Z) is
  taken, so a ray grazing an edge in one direction cannot flip a node. The shift classifies a
  point at most ``1e-3`` spacings from the node, so only nodes that close to the surface (where
  ``|phi|`` is that small) can get the other sign.
* Distance: exact point-triangle distances (closest points, Ericson's region test) for every
  node within a cell diagonal ``rho = |spacing|`` of a triangle's bounding box, vectorized over
  node x triangle pairs. Every node whose distance comes out at most ``rho`` is exact (its
  nearest triangle was among its pairs), and every surface point has such a node within
  ``rho`` (a corner of its cell). The other nodes take the nearest of the closest surface
  points of their nearest exact node (an exact distance transform, :mod:`...geometry.distance_transform`)
  and of their six neighbours', then two sweeps in which neighbours share closest points. Bound:
  ``d <= d_hat <= d + 2 rho`` (``d_hat`` is a distance to a real surface point; the exact node
  nearest the true closest point is within ``d + rho`` and its closest point another ``rho``);
  in practice it is a small fraction of a spacing.
* Sign: ``phi = -d`` inside, ``+d`` outside.

The mesh must be closed and manifold (:func:`check_closed_manifold`); self-intersections are
read by parity (a pocket covered twice is outside).
"""

import numpy as np

from ...geometry.distance_transform import distance_transform

#: Crossing points stay this fraction of an edge away from the edge's ends.
EDGE_CLAMP = 1e-3

#: Default margin between the mesh's bounding box and the grid's border, in spacings.
MARGIN_SPACINGS = 2.0

#: Ray shifts off the grid lines, fractions of a spacing (irrational, below 1e-3), per ray axis.
RAY_SHIFT = (
    (np.sqrt(2.0) - 1.0) * 1e-3,
    (np.sqrt(5.0) - 2.0) * 1e-3,
    (np.sqrt(3.0) - 1.5) * 1e-3,
    (np.pi - 3.0) * 1e-3,
    (np.e - 2.5) * 1e-3,
    (np.sqrt(7.0) - 2.5) * 1e-3,
)

#: Triangle x line / node x triangle pairs handled per numpy batch.
CHUNK_PAIRS = 1 << 18

#: Neighbour-sharing sweeps of the distance refinement.
PROPAGATION_SWEEPS = 2

#: The six Kuhn tetrahedra of a unit cell, as corner offsets ``(6, 4, 3)``: for every order
#: ``(a, b, c)`` of the axes, ``0 -> e_a -> e_a + e_b -> (1, 1, 1)``.
_KUHN = np.array(
    [
        [(0, 0, 0), tuple(int(k == a) for k in range(3)), tuple(int(k in (a, b)) for k in range(3)), (1, 1, 1)]
        for a, b in ((0, 1), (0, 2), (1, 0), (1, 2), (2, 0), (2, 1))
    ],
    dtype=np.intp,
)


def _triangle_table():
    """``(edges (16, 2, 3, 2), count (16,))``: for each pattern of inside corners of a
    tetrahedron (bit ``v`` set when corner ``v`` is inside), its 0..2 triangles as three edges
    ``(inside corner, outside corner)`` each (orientation is fixed later)."""
    edges = np.zeros((16, 2, 3, 2), dtype=np.intp)
    count = np.zeros(16, dtype=np.intp)
    for code in range(16):
        inside = [v for v in range(4) if code >> v & 1]
        outside = [v for v in range(4) if not code >> v & 1]
        if len(inside) == 1:
            edges[code, 0] = [(inside[0], o) for o in outside]
            count[code] = 1
        elif len(inside) == 3:
            edges[code, 0] = [(i, outside[0]) for i in inside]
            count[code] = 1
        elif len(inside) == 2:
            (a, b), (c, d) = inside, outside
            edges[code, 0] = [(a, c), (a, d), (b, d)]  # the quad ac, ad, bd, bc split on ac-bd
            edges[code, 1] = [(a, c), (b, d), (b, c)]
            count[code] = 2
    return edges, count


_TABLE_EDGES, _TABLE_COUNT = _triangle_table()


# -- grid to mesh ----------------------------------------------------------------------------------
def mesh_from_sdf(phi, lower, spacing):
    """The zero level of a signed distance grid as a closed, outward-oriented triangle mesh.

    Parameters
    ----------
    phi : (I, J, K) float array
        Signed distance at the nodes (negative inside), e.g. an :class:`~.grid.SdfGridLimit`'s
        ``params["phi"]``; units of the parameter space (radians).
    lower : (3,) float array
        Position of node ``(0, 0, 0)``.
    spacing : (3,) float array
        Node spacing per axis, positive.

    Returns
    -------
    vertices : (V, 3) float array
        Positions in the grid's parameter coordinates (radians).
    triangles : (T, 3) int array
        Vertex indices, counter-clockwise seen from outside (normals point out of the region).
        Empty ``(0, 3)`` when no node is inside (or every node is).

    Notes
    -----
    Marching tetrahedra (module docstring): watertight and manifold for any sign pattern,
    because the grid is first padded with one layer of outside nodes; regions touching the
    grid's border are closed along it.
    """
    phi = np.asarray(phi, dtype=float)
    if phi.ndim != 3 or min(phi.shape) < 1:
        raise ValueError(f"phi must be a 3-D grid, got shape {phi.shape}")
    if not np.all(np.isfinite(phi)):
        raise ValueError("phi contains NaN or infinity")
    lower = np.asarray(lower, dtype=float).reshape(3)
    spacing = np.asarray(spacing, dtype=float).reshape(3)
    if np.any(spacing <= 0):
        raise ValueError(f"spacing must be positive, got {spacing}")
    outside_value = max(float(np.abs(phi).max()), float(spacing.max()))
    padded = np.pad(phi, 1, constant_values=outside_value)
    origin = lower - spacing
    shape = np.array(padded.shape)
    inside = padded <= 0.0
    cells = tuple(shape - 1)

    # Cells with corners of both signs.
    any_in = np.zeros(cells, dtype=bool)
    all_in = np.ones(cells, dtype=bool)
    for di in (0, 1):
        for dj in (0, 1):
            for dk in (0, 1):
                corner = inside[di : di + cells[0], dj : dj + cells[1], dk : dk + cells[2]]
                any_in |= corner
                all_in &= corner
    active = np.argwhere(any_in & ~all_in)  # (C, 3)
    if not len(active):
        return np.zeros((0, 3)), np.zeros((0, 3), dtype=np.intp)

    # Their tetrahedra: (C * 6, 4, 3) node coordinates and the inside pattern.
    tet = (active[:, None, None, :] + _KUHN[None]).reshape(-1, 4, 3)
    flat = np.ravel_multi_index((tet[..., 0], tet[..., 1], tet[..., 2]), padded.shape)  # (Q, 4)
    tet_inside = inside.ravel()[flat]
    code = tet_inside @ (1 << np.arange(4))
    count = _TABLE_COUNT[code]

    tri_in, tri_out, tri_tet = [], [], []
    for slot in (0, 1):
        rows = np.flatnonzero(count > slot)
        edges = _TABLE_EDGES[code[rows], slot]  # (R, 3, 2) corners within the tetrahedron
        tri_in.append(np.take_along_axis(flat[rows], edges[..., 0], axis=1))
        tri_out.append(np.take_along_axis(flat[rows], edges[..., 1], axis=1))
        tri_tet.append(rows)
    tri_in = np.concatenate(tri_in)  # (T, 3) flat index of each edge's inside node
    tri_out = np.concatenate(tri_out)
    tri_tet = np.concatenate(tri_tet)

    # One vertex per crossing edge.
    size = padded.size
    keys = np.minimum(tri_in, tri_out).astype(np.int64) * size + np.maximum(tri_in, tri_out)
    unique_keys, first, triangles = np.unique(keys.ravel(), return_index=True, return_inverse=True)
    triangles = triangles.reshape(-1, 3)
    a = tri_in.ravel()[first]
    b = tri_out.ravel()[first]
    pa = padded.ravel()[a]
    pb = padded.ravel()[b]
    t = np.clip(pa / (pa - pb), EDGE_CLAMP, 1.0 - EDGE_CLAMP)
    ia = np.stack(np.unravel_index(a, padded.shape), axis=-1).astype(float)
    ib = np.stack(np.unravel_index(b, padded.shape), axis=-1).astype(float)
    vertices = origin + spacing * (ia + t[:, None] * (ib - ia))

    # Orientation, decided on the edge midpoints (index space): normal away from the inside.
    mid_in = np.stack(np.unravel_index(tri_in, padded.shape), axis=-1).astype(float)
    mid_out = np.stack(np.unravel_index(tri_out, padded.shape), axis=-1).astype(float)
    mid = 0.5 * (mid_in + mid_out)  # (T, 3 vertices, 3)
    normal = np.cross(mid[:, 1] - mid[:, 0], mid[:, 2] - mid[:, 0])
    corners = tet[tri_tet].astype(float)  # (T, 4, 3)
    labels = tet_inside[tri_tet]
    n_in = labels.sum(axis=1, keepdims=True)
    centre_in = (corners * labels[..., None]).sum(axis=1) / n_in
    centre_out = (corners * ~labels[..., None]).sum(axis=1) / (4 - n_in)
    flip = np.einsum("ij,ij->i", normal, centre_out - centre_in) < 0.0
    triangles[flip] = triangles[flip][:, ::-1]
    return vertices, triangles.astype(np.intp)


# -- mesh checks -------------------------------------------------------------------------------------
def _edge_counts(triangles):
    tri = np.asarray(triangles)
    edges = np.concatenate((tri[:, [0, 1]], tri[:, [1, 2]], tri[:, [2, 0]]))
    edges = np.sort(edges, axis=1)
    _, counts = np.unique(edges, axis=0, return_counts=True)
    return counts


def check_closed_manifold(triangles):
    """Raise ``ValueError`` unless the triangles form closed two-manifold surfaces.

    Parameters
    ----------
    triangles : (T, 3) int array
        Vertex indices. Orientation is not checked (the inside test does not need it).

    Raises
    ------
    ValueError
        "mesh has no faces"; "mesh is open: 12 boundary edges" (edges used by one triangle);
        "non-manifold: 3 edges shared by more than two faces"; or both counts in one message;
        "mesh has 2 degenerate triangles (a vertex used twice)".
    """
    tri = np.asarray(triangles)
    if tri.ndim != 2 or tri.shape[1] != 3 or len(tri) == 0:
        raise ValueError("mesh has no faces")
    degenerate = int(np.count_nonzero((tri[:, 0] == tri[:, 1]) | (tri[:, 1] == tri[:, 2]) | (tri[:, 2] == tri[:, 0])))
    if degenerate:
        raise ValueError(f"mesh has {degenerate} degenerate triangle{'' if degenerate == 1 else 's'} (a vertex used twice)")
    counts = _edge_counts(tri)
    boundary = int(np.count_nonzero(counts == 1))
    shared = int(np.count_nonzero(counts > 2))
    problems = []
    if boundary:
        problems.append(f"mesh is open: {boundary} boundary edge{'' if boundary == 1 else 's'}")
    if shared:
        problems.append(f"non-manifold: {shared} edge{'' if shared == 1 else 's'} shared by more than two faces")
    if problems:
        raise ValueError("; ".join(problems))


def signed_volume(vertices, triangles):
    """Volume enclosed by a closed mesh ``(V, 3)``/``(T, 3)``: positive when its normals point
    outwards (cubic units of the coordinates, e.g. radians^3)."""
    p = np.asarray(vertices, dtype=float)[np.asarray(triangles)]
    return float(np.einsum("ij,ij->i", p[:, 0], np.cross(p[:, 1], p[:, 2])).sum() / 6.0)


# -- mesh to grid --------------------------------------------------------------------------------------
def _box_pairs(lo, hi):
    """Enumerate integer boxes in chunks: per row ``r`` the index ranges ``lo[r] .. hi[r]``
    (inclusive, ``(R, D)``). Yields ``(row (P,), index (P, D))`` for runs of whole rows holding
    about :data:`CHUNK_PAIRS` pairs (a row is never split), row-major inside a box."""
    count = np.maximum(hi - lo + 1, 0)
    sizes = np.prod(count, axis=1)
    ends = np.cumsum(sizes)
    start_row = 0
    while start_row < len(lo):
        base = ends[start_row] - sizes[start_row]
        stop_row = max(int(np.searchsorted(ends, base + CHUNK_PAIRS, side="right")), start_row + 1)
        part = slice(start_row, stop_row)
        part_sizes = sizes[part]
        total = int(part_sizes.sum())
        if total:
            row = np.repeat(np.arange(start_row, stop_row), part_sizes)
            local = np.arange(total) - np.repeat(np.cumsum(part_sizes) - part_sizes, part_sizes)
            index = np.empty((total, lo.shape[1]), dtype=np.intp)
            for d in range(lo.shape[1] - 1, -1, -1):
                c = count[row, d]
                index[:, d] = lo[row, d] + local % c
                local //= c
            yield row, index
        start_row = stop_row


def _parity(points, lower, spacing, n, axis, shift):
    """Inside (odd crossings) of every node, from rays along ``axis`` shifted by ``shift (2,)``
    spacings off their grid lines. ``points (T, 3, 3)``: triangle corners."""
    u, w = (axis + 1) % 3, (axis + 2) % 3
    origin_u = lower[u] + shift[0] * spacing[u]
    origin_w = lower[w] + shift[1] * spacing[w]
    pu = (points[:, :, u] - origin_u) / spacing[u]
    pw = (points[:, :, w] - origin_w) / spacing[w]
    lo = np.stack((np.ceil(pu.min(axis=1)), np.ceil(pw.min(axis=1))), axis=1)
    hi = np.stack((np.floor(pu.max(axis=1)), np.floor(pw.max(axis=1))), axis=1)
    lo = np.clip(lo, 0, n - 1).astype(np.intp)
    hi = np.clip(hi, -1, n - 1).astype(np.intp)
    hi = np.where(hi < lo, lo - 1, hi)
    counts = np.zeros(n * n * (n + 1), dtype=np.int64)
    for t, line in _box_pairs(lo, hi):
        lu, lw = line[:, 0], line[:, 1]
        # 2-D edge functions of the ray point (lu, lw) against the projected triangle.
        du = pu[t] - lu[:, None]  # (P, 3)
        dw = pw[t] - lw[:, None]
        e0 = du[:, 1] * dw[:, 2] - dw[:, 1] * du[:, 2]
        e1 = du[:, 2] * dw[:, 0] - dw[:, 2] * du[:, 0]
        e2 = du[:, 0] * dw[:, 1] - dw[:, 0] * du[:, 1]
        hit = ((e0 > 0) & (e1 > 0) & (e2 > 0)) | ((e0 < 0) & (e1 < 0) & (e2 < 0))
        if not hit.any():
            continue
        e0, e1, e2 = e0[hit], e1[hit], e2[hit]
        x = points[t[hit], :, axis]
        crossing = (e0 * x[:, 0] + e1 * x[:, 1] + e2 * x[:, 2]) / (e0 + e1 + e2)
        # The crossing counts for the nodes strictly after it on the line.
        after = np.floor((crossing - lower[axis]) / spacing[axis]) + 1.0
        after = np.clip(after, 0, n).astype(np.int64)
        counts += np.bincount((lu[hit] * n + lw[hit]) * (n + 1) + after, minlength=counts.size)
    odd = (np.cumsum(counts.reshape(n, n, n + 1)[..., :n], axis=-1) & 1).astype(bool)  # (u, w, axis)
    return np.transpose(odd, np.argsort((u, w, axis)))


def inside_mesh(points, lower, spacing, n):
    """Nodes of the ``n^3`` grid inside a closed mesh: the majority of three shifted ray-parity
    tests (along X, Y and Z). ``points (T, 3, 3)``: triangle corners. Returns ``(n, n, n)`` bool."""
    votes = np.zeros((n, n, n), dtype=np.int8)
    for axis in range(3):
        votes += _parity(points, lower, spacing, n, axis, RAY_SHIFT[2 * axis : 2 * axis + 2])
    return votes >= 2


def closest_points_on_triangles(p, a, b, c):
    """Closest points ``(P, 3)`` of triangles ``(a, b, c)`` (each ``(P, 3)``) to points ``p (P, 3)``.

    Ericson's Voronoi-region test ("Real-Time Collision Detection", 5.1.5), vectorized; exact up
    to rounding. Degenerate (zero-area) triangles give a point of the triangle too.
    """
    p, a, b, c = (np.asarray(x, dtype=float) for x in (p, a, b, c))
    ab, ac = b - a, c - a
    # Coordinates as separate contiguous rows: the dot products are then plain 1-D arithmetic.
    abx, aby, abz = ab.T.copy()
    acx, acy, acz = ac.T.copy()

    def dots(q):
        qx, qy, qz = q.T.copy()
        return abx * qx + aby * qy + abz * qz, acx * qx + acy * qy + acz * qz

    d1, d2 = dots(p - a)
    d3, d4 = dots(p - b)
    d5, d6 = dots(p - c)
    va = d3 * d6 - d5 * d4
    vb = d5 * d2 - d1 * d6
    vc = d1 * d4 - d3 * d2
    # The point is a + v ab + w ac. Face region first; each later region overrides (the
    # reverse order of Ericson's early returns).
    with np.errstate(divide="ignore", invalid="ignore"):
        denom = va + vb + vc
        v = vb / denom
        w = vc / denom
        d43, d56 = d4 - d3, d5 - d6
        region = (va <= 0) & (d43 >= 0) & (d56 >= 0)  # edge BC
        t = d43 / (d43 + d56)
        v = np.where(region, 1.0 - t, v)
        w = np.where(region, t, w)
        region = (vb <= 0) & (d2 >= 0) & (d6 <= 0)  # edge AC
        v = np.where(region, 0.0, v)
        w = np.where(region, d2 / (d2 - d6), w)
        region = (vc <= 0) & (d1 >= 0) & (d3 <= 0)  # edge AB
        v = np.where(region, d1 / (d1 - d3), v)
        w = np.where(region, 0.0, w)
    region = (d6 >= 0) & (d5 <= d6)  # vertex C
    v = np.where(region, 0.0, v)
    w = np.where(region, 1.0, w)
    region = (d3 >= 0) & (d4 <= d3)  # vertex B
    v = np.where(region, 1.0, v)
    w = np.where(region, 0.0, w)
    region = (d1 <= 0) & (d2 <= 0)  # vertex A
    v = np.where(region, 0.0, v)
    w = np.where(region, 0.0, w)
    bad = ~(np.isfinite(v) & np.isfinite(w))  # degenerate triangles only
    if bad.any():
        v[bad] = 0.0
        w[bad] = 0.0
    return a + ab * v[:, None] + ac * w[:, None]


def _near_distances(points, lower, spacing, n, rho):
    """Squared distance and closest surface point of every node within ``rho`` of a triangle's
    bounding box: ``(d2 (n^3,), closest (n^3, 3))``, ``inf`` where not computed."""
    lo = np.ceil((points.min(axis=1) - rho - lower) / spacing)
    hi = np.floor((points.max(axis=1) + rho - lower) / spacing)
    lo = np.clip(lo, 0, n - 1).astype(np.intp)
    hi = np.clip(hi, -1, n - 1).astype(np.intp)
    hi = np.where(hi < lo, lo - 1, hi)
    centre = points.mean(axis=1)
    reach = (np.sqrt(np.max(np.sum((points - centre[:, None]) ** 2, axis=2), axis=1)) + rho) ** 2
    d2 = np.full(n**3, np.inf)
    closest = np.zeros((n**3, 3))
    for t, node in _box_pairs(lo, hi):
        x = lower + spacing * node
        # Skip the box's corners: nodes farther than rho from the triangle's bounding sphere.
        offset = x - centre[t]
        keep = np.einsum("ij,ij->i", offset, offset) <= reach[t]
        t, node, x = t[keep], node[keep], x[keep]
        f = (node[:, 0] * n + node[:, 1]) * n + node[:, 2]
        corner = points[t]
        cp = closest_points_on_triangles(x, corner[:, 0], corner[:, 1], corner[:, 2])
        diff = x - cp
        dist2 = np.einsum("ij,ij->i", diff, diff)
        np.minimum.at(d2, f, dist2)
        best = dist2 == d2[f]  # the minimizing pairs (ties: any of them)
        closest[f[best]] = cp[best]
    return d2, closest


def _neighbours(index, shape):
    """``(6, I, J, K)``: ``index`` at the six neighbours of each node (edges repeat themselves)."""
    out = []
    for axis in range(3):
        for shift in (1, -1):
            rolled = np.roll(index, shift, axis=axis)
            edge = [slice(None)] * 3
            edge[axis] = 0 if shift == 1 else -1
            rolled[tuple(edge)] = index[tuple(edge)]
            out.append(rolled)
    return np.stack(out)


def sdf_from_mesh(vertices, triangles, resolution=32, margin=MARGIN_SPACINGS):
    """Signed distance grid of a closed triangle mesh (negative inside).

    Parameters
    ----------
    vertices : (V, 3) float array
        Positions in parameter coordinates (radians of the exp map for a joint limit).
    triangles : (T, 3) int array
        Vertex indices of a closed, manifold mesh (see :func:`check_closed_manifold`; not
        checked here). Orientation does not matter.
    resolution : int
        Nodes per axis, ``n``; the grid is ``(n, n, n)``.
    margin : float
        Spacings between the mesh's bounding box and the grid's border on every side, at least
        1 (so the border nodes are outside).

    Returns
    -------
    phi : (n, n, n) float array
        Signed distance to the mesh at the nodes (radians); see the module docstring for the
        inside test and the distance bound (exact within a cell diagonal of the surface).
    lower : (3,) float array
        Position of node ``(0, 0, 0)``.
    spacing : (3,) float array
        Node spacing per axis.
    """
    v = np.asarray(vertices, dtype=float)
    tri = np.asarray(triangles)
    if v.ndim != 2 or v.shape[1] != 3 or not len(v):
        raise ValueError(f"vertices must be (V, 3), got shape {v.shape}")
    if not np.all(np.isfinite(v)):
        raise ValueError("mesh vertices contain NaN or infinity")
    if tri.ndim != 2 or tri.shape[1] != 3 or not len(tri):
        raise ValueError("mesh has no faces")
    if not np.issubdtype(tri.dtype, np.integer) or tri.min() < 0 or tri.max() >= len(v):
        raise ValueError(f"triangle indices must be integers in 0..{len(v) - 1}")
    n = int(resolution)
    if n < 4:
        raise ValueError(f"resolution must be at least 4 nodes per axis, got {resolution}")
    margin = float(margin)
    if not 1.0 <= margin <= 0.5 * (n - 3):
        raise ValueError(f"margin must be between 1 and {0.5 * (n - 3)} spacings, got {margin}")
    used = v[np.unique(tri)]
    low, high = used.min(axis=0), used.max(axis=0)
    extent = high - low
    if np.any(extent <= 1e-9 * max(float(extent.max()), 1e-300)) or extent.max() <= 0.0:
        raise ValueError("the mesh is flat (it encloses no volume)")
    spacing = extent / (n - 1 - 2.0 * margin)
    lower = low - margin * spacing
    points = v[tri]  # (T, 3, 3)
    shape = (n, n, n)

    inside = inside_mesh(points, lower, spacing, n)

    rho = float(np.linalg.norm(spacing))  # a cell diagonal
    d2, closest = _near_distances(points, lower, spacing, n, rho)
    exact = d2 <= rho * rho
    nodes = (lower + spacing * np.stack(np.meshgrid(*[np.arange(n)] * 3, indexing="ij"), axis=-1)).reshape(-1, 3)
    if exact.all():
        d = np.sqrt(d2)
    else:
        _, nearest = distance_transform(exact.reshape(shape), spacing)
        best = np.where(exact, d2, np.inf)
        best_point = closest.copy()
        candidates = np.concatenate((nearest.reshape(1, -1), _neighbours(nearest, shape).reshape(6, -1)))
        for sweep in range(PROPAGATION_SWEEPS + 1):
            if sweep:  # neighbours share their closest points
                candidates = _neighbours(np.arange(n**3).reshape(shape), shape).reshape(6, -1)
                points_from = best_point.copy()
            else:
                points_from = closest
            for c in candidates:
                diff = nodes - points_from[c]
                value = np.einsum("ij,ij->i", diff, diff)
                better = value < best
                best[better] = value[better]
                best_point[better] = points_from[c][better]
        d = np.sqrt(best)
    phi = np.where(inside.ravel(), -d, d).reshape(shape)
    return phi, lower, spacing
