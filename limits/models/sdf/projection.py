# SPDX-License-Identifier: GPL-3.0-or-later
"""The projection of the SDF grid limit (:class:`.grid.SdfGridLimit`): its fast path,
kept out of the model's readable interface.

What it computes is in :mod:`.grid`'s docstring (two gradient steps, a few more, then a
bisection towards the nearest inside node). How:

Projection runs in chunks of :data:`...constants.CHUNK_ROWS` rows with the points laid out axes
first. One 16-byte gather per cell corner fetches float32 ``phi`` and gradient (on open grids each
corner is gathered from the table shifted by its offset, with the cells' first-corner index);
float32 ``phi`` only decides where it cannot be wrong (its error is bounded, and rows near the
tolerance are looked up in float64) and gives the first step's length. The second step's length
and the test after it use the float64 grid, so results meet the same ``phi <= tolerance / 2``;
most rows are inside after the first step, so the second gathers the gradient only for the rows it
still moves. Rows still outside after the two steps are finished together after the last chunk.
Rows beyond the grid box on all three (open) axes are clamped onto one of its 8 corners, so they
all have that corner's projection: when they are more than an eighth of a chunk, it is taken from
a per-model cache of the 8 corners (computed by the same steps on first use; derived, never
stored).
"""

import numpy as np

from ...constants import CONTAINS_TOLERANCE, IDENTITY_QUATERNION
from ...geometry.distance_transform import distance_transform
from .lookup import _finite_rows, _gather, _interpolate, _packed_interpolate
from .space import _difference, quaternion_from_coordinates

#: Projection: further gradient steps for rotations the two paper steps leave outside, and
#: bisection steps of the last-resort fallback.
EXTRA_STEPS = 4
BISECTION_STEPS = 40


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


class SdfProjection:
    """The projection steps of :class:`.grid.SdfGridLimit` (a mixin: it reads the model's
    parameters, caches and lookups)."""

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
        late, late_x = self._steps(
            x.take(keep, axis=1), inside[keep], finite[keep], geo.rows(keep), rows.take(keep, axis=0), part[: len(keep)]
        )
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
                moved = _step(
                    xs, pa[again], _packed_interpolate(self._packed_corners(index[..., again]), fraction[:, again])[1:], gs, 0.0
                )
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
