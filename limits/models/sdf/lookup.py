# SPDX-License-Identifier: GPL-3.0-or-later
"""Trilinear lookups on the SDF grid (:mod:`.grid`): the cell geometry of a batch of query
points laid out axes first, gathers of the 8 cell corners from flat node tables, and
interpolation.

Grids are flat ``(bones * n^3,)`` tables in C order: node ``(i, j, k)`` of bone ``b`` is item
``b n^3 + (i n + j) n + k``.
"""

import numpy as np

from .space import TWO_PI

#: The 8 cell corners as offsets (di, dj, dk).
_CORNERS = [(di, dj, dk) for di in (0, 1) for dj in (0, 1) for dk in (0, 1)]


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
