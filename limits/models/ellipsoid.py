# SPDX-License-Identifier: GPL-3.0-or-later
"""Holden's ellipsoid limit, with an exact nearest-point projection.

Fitting: the ellipsoid is turned to the principal axes of the points (``rotation``, columns =
axes, from numpy's SVD of their covariance, as Holden) and centred on the middle of their extent
along those axes (``position``; Holden centres it on their mean and sizes it by the farther
side, which on lopsided data reaches twice the extent on the near side and accepts far more
than the data). Its semi-axes start as half the extent along each axis
(at least the padding); the whole ellipsoid is then scaled by the largest normalized radius of
any point, so every point is inside (at most sqrt(3), for points at the corners of their
bounding box; a ring of samples with some twist, like a circling shoulder, needs about
sqrt(2)), and finally each semi-axis is grown by the padding.

Projection: a point inside is returned unchanged. For a point ``y`` outside (frame
coordinates, semi-axes ``a``), the nearest surface point is ``p_i = a_i^2 y_i / (a_i^2 + t)``
where ``t > 0`` is the root of the Lagrange condition

    f(t) = sum_i (a_i y_i / (a_i^2 + t))^2 - 1 = 0,

which is decreasing for ``t > -min(a_i^2)``. The root is bracketed by
``lo = max(0, max_i(a_i |y_i| - a_i^2))`` (one term alone reaches 1 there, so ``f(lo) >= 0``) and
``hi = |a * y|`` (``f(hi) <= 0``). Newton's method is run on the equivalent
``h(t) = (f(t) + 1)^(-1/2) - 1``, which is concave and increasing (a power mean of the
``a_i^2 + t``) and nearly linear far away: started at ``lo`` its iterates rise monotonically and
quadratically to the root, never overshooting; a step that leaves the current bracket (only by
rounding) is replaced by bisection. Points on an axis start at the root; a sphere takes one
step; typical ellipsoids 3-8 steps, needle-like ones (axis ratio 1000) about 15, 100x outside
included. At most :data:`NEWTON_ITERATIONS` are run, in batches of rows that stop together once
every row's step is below ``1e-13`` relative. Accuracy: ~1e-12 radians or better (the tests
compare with 200 bisection steps to 1e-9).

Parameters (per shape; concatenated ``[swing, twist]`` in SWING_TWIST mode, see
:mod:`.shape_limit`): ``position (3,)``, ``rotation (3, 3)``, ``scales (3,)`` (semi-axes,
radians), plus the twist ``axis (3,)``.
"""

import numpy as np

from ..constants import CHUNK_ROWS
from .shape_limit import ShapeLimit, check_rotation_matrices, flatten_rows, frame_keeps_y, from_local, principal_frame, to_local

#: Most Newton iterations of the projection (typically 3 to 8 are run; see the module docstring).
NEWTON_ITERATIONS = 40

_CORE_NDIMS = {"position": 1, "rotation": 2, "scales": 1}


def nearest_on_ellipsoid(y, scales, iterations=NEWTON_ITERATIONS):
    """Nearest points ``(n, 3)`` on the axis-aligned ellipsoid ``sum((p / scales)^2) = 1`` to the
    points ``y (n, 3)``, which must lie outside it. ``scales`` is ``(3,)`` or ``(n, 3)``.

    Newton's method on ``h(t) = S(t)^(-1/2) - 1`` with ``S(t) = sum_i (a_i y_i / (a_i^2 + t))^2``:
    ``h`` is concave and increasing (``S^(-1/2)`` is a power mean of the ``a_i^2 + t``), so from the
    lower bound of the bracket the iterates rise monotonically to the root, quadratically, and a
    sphere is solved in one step. A step leaving the bracket (rounding) bisects instead.
    """
    y = np.asarray(y, dtype=float)
    scales = np.asarray(scales, dtype=float)
    out = np.empty_like(y)
    for start in range(0, len(y), CHUNK_ROWS):
        stop = min(start + CHUNK_ROWS, len(y))
        yt = np.ascontiguousarray(y[start:stop].T)  # (3, n): sums over the axis become row additions
        a = scales[:, None] if scales.ndim == 1 else np.ascontiguousarray(scales[start:stop].T)
        out[start:stop] = _nearest_columns(yt, a, iterations).T
    return out


def _row_sum(rows):
    """``rows[0] + rows[1] (+ rows[2])`` for ``(k, n)``, ``k`` 2 or 3."""
    out = rows[0] + rows[1]
    if len(rows) == 3:
        out += rows[2]
    return out


def _nearest_columns(yt, a, iterations=NEWTON_ITERATIONS, scale=None):
    """:func:`nearest_on_ellipsoid` on points as rows of components ``yt (3, n)``, semi-axes
    ``a (3, 1)`` or ``(3, n)``; returns ``(3, n)``.

    Also for points in a coordinate plane or on an axis: then ``yt``/``a`` hold only the
    non-zero components (``(k, n)``, ``(k, 1)``) and ``scale`` is the smallest squared
    semi-axis of all three; the zero components change no sum, so the results are the same."""
    a2 = a * a
    ay = np.abs(a * yt)
    lo = ay - a2
    lo = np.maximum(lo[0], lo[1]) if len(lo) == 2 else lo[0] if len(lo) == 1 else lo.max(axis=0)  # (the same)
    np.maximum(lo, 0.0, out=lo)
    hi = ay * ay
    hi = _row_sum(hi) if len(hi) > 1 else hi[0]
    np.sqrt(hi, out=hi)
    if scale is None:
        scale = a2.min(axis=0)
    d = _newton(ay, a2, lo, hi, scale, iterations) + a2
    out = a2 * yt
    out /= d
    return out


def _newton(ay, a2, lo, hi, scale, iterations):
    """The root ``t (n,)`` of ``h`` (see :func:`nearest_on_ellipsoid`) for ``ay = |a y| (3, n)``,
    ``a2 = a^2 (3, 1)`` or ``(3, n)``, the bracket ``lo``/``hi (n,)`` (owned: may be reused) and
    ``scale = min(a^2)`` (one value or ``(n,)``).

    Each row stops at the first step below ``1e-13`` relative and keeps that value. The rows
    still iterating are gathered (by index) whenever a fifth of them has stopped, so a batch
    costs about as many row steps as its rows need; rows that stopped but are not gathered out
    yet keep their value by a masked copy. Every row runs the same arithmetic as alone.

    The bracket moves only where ``S`` is off 1: from below the iterates rise, so usually every
    ``S > 1`` (``lo`` becomes ``t``, ``hi`` stays) and no masked update is needed. And it is
    moved after the step's test, for the rows going on only: a step from ``t`` inside the old
    bracket is inside the new one exactly when it is inside the old one (with ``S > 1`` it
    rises from ``t``, the new lower end; with ``S < 1`` it falls from ``t``, the new upper end;
    otherwise the bracket stays). That needs ``lo <= t <= hi``, which every step keeps once the
    bracket starts ordered and finite: it does when ``hi <= 1e300`` and every ``a^2 >= 1e-150``
    (then ``sqrt(fl(x^2)) = x`` for each term, so ``hi >= a_i |y_i| >= lo``); else the bracket
    is moved before the test, as written above. On the first step ``t`` is ``lo``, which the
    move leaves unchanged. Each step's temporaries are written into buffers kept across steps
    (views of the first rows after a gather).
    """
    k, n = ay.shape
    per_row = a2.shape[1] > 1
    scale_per_row = np.ndim(scale) == 1 and scale.shape == lo.shape and n > 1
    # (NaN rows fail the first test: they take the written order too.)
    moved_first = n > 0 and not (hi.max() <= 1e300 and a2.min() >= 1e-150)
    d_buf, r2_buf = np.empty((k, n)), np.empty((k, n))
    s_buf, slope_buf, step_buf, tol_buf = np.empty(n), np.empty(n), np.empty(n), np.empty(n)
    above_buf, below_buf, active_buf = np.empty(n, dtype=bool), np.empty(n, dtype=bool), np.empty(n, dtype=bool)
    result = lo.copy()
    t = result
    place = None  # rows of ``result`` that ``t`` holds (None: all, in order)
    stopped = None  # rows of ``t`` that stopped but are still carried along
    m = n
    d, r2, s, slope, step, tol = d_buf, r2_buf, s_buf, slope_buf, step_buf, tol_buf
    above, below, active = above_buf, below_buf, active_buf

    def move_bracket(t, lo, hi, first):
        """The bracket after a step from ``t`` (``t`` is never written in place: ``lo`` may
        become ``t`` itself)."""
        if not first:
            np.greater(s, 1.0, out=above)
            lo = t if above.all() else np.where(above, t, lo)
        np.less(s, 1.0, out=below)
        return lo, (np.where(below, t, hi) if below.any() else hi)

    for step_index in range(iterations):
        first = step_index == 0
        np.add(t, a2, out=d)
        np.divide(ay, d, out=r2)
        r2 *= r2
        if k == 1:  # (a copy of the one row: the same sums)
            s = r2[0]
            np.divide(s, d[0], out=slope)
        else:
            np.add(r2[0], r2[1], out=s)
            if k == 3:
                s += r2[2]
            r2 /= d
            np.add(r2[0], r2[1], out=slope)
            if k == 3:
                slope += r2[2]
        moved = moved_first
        if moved:
            lo, hi = move_bracket(t, lo, hi, first)
        np.sqrt(s, out=step)
        step -= 1.0
        step *= s
        step /= slope
        t_new = t + step
        inside = active  # (a free buffer until the stopping test)
        np.greater_equal(t_new, lo, out=inside)
        np.less_equal(t_new, hi, out=below)
        inside &= below
        if not inside.all():
            if not moved:
                lo, hi = move_bracket(t, lo, hi, first)
                moved = True
            t_new = np.where(inside, t_new, 0.5 * (lo + hi))
        if stopped is not None:
            np.copyto(t_new, t, where=stopped)
        np.add(t_new, scale, out=tol)
        tol *= 1e-13
        np.subtract(t_new, t, out=step)
        np.abs(step, out=step)
        np.greater(step, tol, out=active)
        if stopped is not None:
            active &= ~stopped
        count = int(np.count_nonzero(active))
        if count == 0:
            t = t_new
            break
        if not moved:
            lo, hi = move_bracket(t, lo, hi, first)
        t = t_new
        if 5 * count <= 4 * m:  # gather the rows still iterating
            if place is None:
                result = t
                keep = np.flatnonzero(active)
                place = keep
            else:
                result[place] = t
                keep = np.flatnonzero(active)
                place = np.take(place, keep)
            t, lo, hi = np.take(t, keep), np.take(lo, keep), np.take(hi, keep)
            ay = np.take(ay, keep, axis=1)
            if scale_per_row:
                scale = np.take(scale, keep)
            if per_row:
                a2 = np.take(a2, keep, axis=1)
            m = count
            d, r2 = d_buf[:, :m], r2_buf[:, :m]
            s, slope, step, tol = s_buf[:m], slope_buf[:m], step_buf[:m], tol_buf[:m]
            above, below, active = above_buf[:m], below_buf[:m], active_buf[:m]
            stopped = None
        elif count < m:
            stopped = ~active
    if place is None:
        return t
    result[place] = t
    return result


def _project_columns(points, position, rotation, shape_scales):
    """:meth:`EllipsoidLimit._project_shape` for one ellipsoid and points ``(n, 3)``, worked as
    rows of components: the frame product and the inside test run on contiguous rows, and only
    the points outside are gathered (by index). Returns a C-contiguous ``(n, 3)`` copy of the
    points with the outside rows written in (the caller's row comparison reads it whole)."""
    a = shape_scales
    columns = points.T
    used = _used_components(points, position, rotation)
    if used is not None:  # swing points (x, 0, z) or twist points (0, y, 0): a 2-D or 1-D problem
        pick = slice(0, 3, 2) if len(used) == 2 else slice(1, 2)  # (slices: cheaper than lists)
        frame = rotation[pick, pick]
        position, a = position[pick], a[pick]
    else:
        used, frame = [0, 1, 2], rotation
    local = np.empty((len(used), columns.shape[1]))
    for row, i in enumerate(used):  # per component: broadcasting over a strided axis is slow
        np.subtract(columns[i], position[row], out=local[row])
    # (On the twist axis the frame is [[1.0]]: a product would change nothing. In the swing
    # plane np.dot calls the same BLAS product as ``@`` with less overhead.)
    if len(used) == 2:
        local = np.dot(frame.T, local)
    elif len(used) == 3:
        local = frame.T @ local
    # In the general path's order (np.sum of squares of ``local / a``).
    inside = local[0] / a[0]
    inside *= inside
    for row in range(1, len(used)):
        term = local[row] / a[row]
        term *= term
        inside += term
    outside = np.flatnonzero(inside > 1.0)  # (indices: masks of random bits select slowly)
    out = points.copy()
    if outside.size:
        scales, scale = a[:, None], (shape_scales * shape_scales).min()
        if outside.size <= CHUNK_ROWS:  # (one batch: its result is the answer, no copy)
            nearest = _nearest_columns(np.take(local, outside, axis=1), scales, scale=scale)
        else:
            nearest = np.empty((len(used), outside.size))
            for start in range(0, outside.size, CHUNK_ROWS):
                part = outside[start : start + CHUNK_ROWS]
                nearest[:, start : start + CHUNK_ROWS] = _nearest_columns(np.take(local, part, axis=1), scales, scale=scale)
        world = nearest if len(used) == 1 else np.dot(frame, nearest) if len(used) == 2 else frame @ nearest
        world += position[:, None]
        for row, i in enumerate(used):
            out[:, i][outside] = world[row]
    return out


def _used_components(points, position, rotation):
    """The non-zero components of swing points ``(x, 0, z)`` (``[0, 2]``) or twist points
    ``(0, y, 0)`` (``[1]``) against an ellipsoid whose frame keeps the Y axis and that is
    centred in the plane / on the axis (as fitted in SWING_TWIST mode); None otherwise. The
    other components stay zero in the frame and on the way back."""
    if not frame_keeps_y(rotation):
        return None
    if position[1] == 0.0 and _all_zero(points[:, 1]):
        return [0, 2]
    if position[0] == 0.0 and position[2] == 0.0 and _all_zero(points[:, 0]) and _all_zero(points[:, 2]):
        return [1]
    return None


def _all_zero(column):
    """``not np.any(column)`` for a strided column, faster: the largest magnitude is 0 (NaN is
    not)."""
    return column.size == 0 or np.abs(column).max() == 0.0


class EllipsoidLimit(ShapeLimit):
    kind = "ellipsoid"
    label = "Ellipsoid"
    description = "Ellipsoid on the principal axes of the sampled rotations; smooth, exact nearest-point projection"
    SHAPE_PARAMS = {"position": (3,), "rotation": (3, 3), "scales": (3,)}

    @classmethod
    def _fit_shape(cls, points, padding, fixed_axis=None):
        position, rotation = principal_frame(points, fixed_axis)
        local = to_local(points, position, rotation)
        lo, hi = local.min(axis=0), local.max(axis=0)
        middle = 0.5 * (lo + hi)
        position = from_local(middle, position, rotation)
        half = np.maximum(0.5 * (hi - lo), padding)
        radius = np.max(np.linalg.norm((local - middle) / half, axis=-1))
        return {"position": position, "rotation": rotation, "scales": radius * half + padding}

    @classmethod
    def _contains_shape(cls, shape, points, tolerance):
        local = to_local(points, shape["position"], shape["rotation"])
        a = shape["scales"]
        limit = 1.0 + tolerance / a.min(axis=-1)
        return np.sum((local / a) ** 2, axis=-1) <= limit * limit

    @classmethod
    def _project_shape(cls, shape, points):
        position, rotation, a = shape["position"], shape["rotation"], shape["scales"]
        if np.ndim(points) == 2 and rotation.ndim == 2 and position.ndim == 1 and a.ndim == 1:
            return _project_columns(points, position, rotation, a)
        rows, params, lead = flatten_rows(shape, points, _CORE_NDIMS)
        local = to_local(rows, params["position"], params["rotation"])
        a = params["scales"]
        # Per component (a sum over a short last axis is slow), in np.sum's order.
        inside = (local[..., 0] / a[..., 0]) ** 2
        inside += (local[..., 1] / a[..., 1]) ** 2
        inside += (local[..., 2] / a[..., 2]) ** 2
        outside = np.flatnonzero(inside > 1.0)  # (indices: masks of random bits select slowly)
        out = rows.copy()
        if outside.size:

            def pick(value, core_ndim):
                return value if value.ndim == core_ndim else np.take(value, outside, axis=0)

            nearest = nearest_on_ellipsoid(np.take(local, outside, axis=0), pick(a, 1))
            out[outside] = from_local(nearest, pick(params["position"], 1), pick(params["rotation"], 2))
        return out.reshape(lead + (3,))

    @classmethod
    def _shape_radius(cls, shape):
        """The centre's distance plus the largest semi-axis."""
        return np.linalg.norm(shape["position"], axis=-1) + np.max(shape["scales"], axis=-1)

    @classmethod
    def _validate_shape(cls, shape):
        check_rotation_matrices(shape["rotation"], f"{cls.kind} limit: 'rotation'")
        if np.any(shape["scales"] <= 0):
            raise ValueError(f"{cls.kind} limit: 'scales' must be positive")
