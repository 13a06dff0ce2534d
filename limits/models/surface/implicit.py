# SPDX-License-Identifier: GPL-3.0-or-later
"""Reaching the surface ``F = iso`` of a field of implicit primitives
(:func:`.primitives.primitive_field`) from points near it, in the field's 3-space: the
steps :mod:`.quaternion_surface` projects with, beyond seed 002's.

- :func:`crossing`: the inside point where a segment from inside to outside crosses the surface
  (Newton's method kept in the bracket: a few field evaluations, where bisection needs dozens).
- :func:`onto_surface`: a point near the surface taken onto it by Newton steps along the
  gradient, then the crossing.
- :func:`nearer`: surface points moved along the surface towards the nearest point of an
  outside point (the paper's step lands where the most influential primitive says, which
  switches as a rotation moves).

``prims`` is ``(centres, radii, stickiness, signs)``: one model's ``(M, ...)`` arrays, or per row
``(R, M, ...)`` (stacked models). Points are ``(R, 3)``; results are inside (``F >= iso``).
"""

import numpy as np

from .primitives import ISO, primitive_field

#: Most root-finding steps of :func:`crossing`.
CROSSING_STEPS = 40
#: The crossing is found when its inside end's field is within this of ``iso`` (some 1e-5 in
#: ``p``, 2e-5 rad: the gradient's norm is some 5-20), or the segment is shorter than
#: ``CROSSING_LENGTH``. A tighter tolerance costs more field evaluations for depths no pose shows.
CROSSING_FIELD = 1e-4
CROSSING_LENGTH = 1e-12
#: Newton steps of :func:`onto_surface` before its crossing.
NEWTON_STEPS = 3
#: Each Newton step goes this much farther than the linear estimate of the surface: the field
#: is concave across most of the surface, so plain Newton steps from outside would stay outside.
NEWTON_REACH = 1.5
#: Steps of :func:`nearer` towards the nearest point. Each is one field evaluation; more steps
#: keep a motion's projection within its reach more often, so it slides less, for the same cost.
NEAREST_STEPS = 4
#: Share of the way to the tangent plane's nearest point each of those steps takes (the plane
#: is only the surface's first-order picture; half steps end nearer on test shapes).
TANGENT_STEP = 0.5


def clamp_ball(p):
    """Points ``p (..., 3)`` outside the unit ball moved onto it (the quaternion chart's edge)."""
    n = np.linalg.norm(p, axis=-1, keepdims=True)
    return np.where(n > 1.0, p / np.maximum(n, 1e-300), p)


def crossing(inner, outer, field, known):
    """Inside points on the surface between ``inner (R, 3)`` (inside) and ``outer`` (outside),
    with the field and its gradient there: ``(points, F, grad)``.

    Newton's method on ``g(s) = F - iso`` along each segment, kept inside the bracket ``[inside
    end, outside end]`` (a step that would leave it, or a slope that does not fall outward,
    bisects instead): it converges quadratically near the surface, some 2 evaluations where
    bisection halved the segment 40 times. The bracket's inside end is returned, so the result
    is inside. ``field(x, rows)`` gives ``(F, grad F)`` at points ``x`` of rows ``rows``
    (indices into ``inner``); ``known`` is ``(F, grad F)`` at ``inner`` (the caller has it)."""
    length = np.linalg.norm(outer - inner, axis=1)
    unit = (outer - inner) / np.maximum(length, 1e-300)[:, None]
    rows = np.arange(len(inner))
    F, grad = known
    lo, hi = np.zeros(len(inner)), length  # the bracket, as distances along the segment
    g_lo, grad_lo = F - ISO, np.array(grad)  # >= 0 (inside)
    at, g_at, slope = lo.copy(), g_lo.copy(), np.einsum("ri,ri->r", grad, unit)
    before = length.copy()  # the step before last (rtsafe's ``dxold``)
    last = length.copy()
    for _ in range(CROSSING_STEPS):
        rows = rows[(g_lo[rows] > CROSSING_FIELD) & (hi[rows] - lo[rows] > CROSSING_LENGTH)]
        if not len(rows):
            break
        a, b, sl = lo[rows], hi[rows], slope[rows]
        # aimed at g = CROSSING_FIELD / 2, not 0: iterates that close in from outside then
        # cross into [0, CROSSING_FIELD] instead of creeping up to the surface from outside
        newton = at[rows] - (g_at[rows] - 0.5 * CROSSING_FIELD) / np.where(sl < 0.0, sl, -1.0)
        # Newton's step when it stays in the bracket and is at most half the step before last
        # (else it is converging slowly, or not at all): bisection otherwise
        useful = (sl < 0.0) & (newton > a) & (newton < b) & (np.abs(newton - at[rows]) <= 0.5 * before[rows])
        s = np.where(useful, newton, 0.5 * (a + b))
        before[rows], last[rows] = last[rows], np.abs(s - at[rows])
        F, grad = field(inner[rows] + s[:, None] * unit[rows], rows)
        g = F - ISO
        ok = g >= 0.0
        lo[rows[ok]], g_lo[rows[ok]], grad_lo[rows[ok]] = s[ok], g[ok], grad[ok]
        hi[rows[~ok]] = s[~ok]
        at[rows], g_at[rows], slope[rows] = s, g, np.einsum("ri,ri->r", grad, unit[rows])
    return inner + lo[:, None] * unit, g_lo + ISO, grad_lo


def onto_surface(start, F, grad, inside, outside, prims, known):
    """Points ``start (R, 3)`` near the surface (field ``F`` and gradient ``grad`` there) onto
    it, inside: Newton steps along the gradient (``NEWTON_REACH (iso - F) / |grad F|^2``, from
    either side), each point kept as the latest inside or outside end of a bracket that starts
    as ``(inside, outside)`` (points known to be inside and outside; ``known``: ``(F, grad F)``
    at ``inside``), until the steps cross the surface; then
    :func:`crossing` on the bracket. ``prims``: the rows' primitive arrays. Returns ``(points,
    F, grad)`` as :func:`crossing` does."""
    inside, outside = inside.copy(), outside.copy()
    F_in, grad_in = np.array(known[0]), np.array(known[1])
    was_in = F >= ISO
    inside[was_in], outside[~was_in] = start[was_in], start[~was_in]
    F_in[was_in], grad_in[was_in] = F[was_in], grad[was_in]
    active = np.arange(len(start))
    x, g, Fx = start, grad, F
    for _ in range(NEWTON_STEPS):
        norm2 = np.sum(g * g, axis=1)
        ok = norm2 > 1e-20
        active, x, g, Fx, norm2 = active[ok], x[ok], g[ok], Fx[ok], norm2[ok]
        if not len(active):
            break
        x = clamp_ball(x + (NEWTON_REACH * (ISO - Fx) / norm2)[:, None] * g)
        Fx, _, g = primitive_field(x, *rows_of(prims, active), gradient=True)
        now_in = Fx >= ISO
        inside[active[now_in]], outside[active[~now_in]] = x[now_in], x[~now_in]
        F_in[active[now_in]], grad_in[active[now_in]] = Fx[now_in], g[now_in]
        going = now_in == was_in[active]  # (not across yet)
        active, x, g, Fx = active[going], x[going], g[going], Fx[going]
    return crossing(inside, outside, field_and_gradient(prims), known=(F_in, grad_in))


def nearer(x, surface, prims, known, reach=None, steps=NEAREST_STEPS):
    """Surface points ``surface (R, 3)`` (``known``: ``(F, grad F)`` there) moved along the
    surface nearer the outside points ``x``; ``(points, F, grad)``.

    ``steps`` steps, each to the surface's linear picture at the current point
    (a Newton step along the normal) and :data:`TANGENT_STEP` of the way along it towards the
    point nearest ``x``: one field evaluation a step. Then :func:`onto_surface`; the result is
    kept where it is nearer ``x``. ``reach (R,)``: the most the steps along the surface may add
    up to, as chords of the unit quaternion sphere (``|dp|`` stretched by the change of ``w``
    it brings) -- how a motion slides (:meth:`.quaternion_surface.QuaternionSurfaceLimit.slide`).

    The paper's projection lands where the step to the most influential primitive crosses the
    surface; which primitive that is switches as a rotation moves, and the projection jumps
    with it. Moved towards the nearest point, projections of a moving rotation agree far more
    often (fewer pops, fewer slides) and land nearer. Going back onto the surface only once,
    at the end, keeps each step at one field evaluation."""
    F_s, grad_s = known
    p, F, g = surface, F_s, grad_s
    used = np.zeros(len(p))
    for _ in range(steps):
        norm2 = np.sum(g * g, axis=1, keepdims=True)
        n = g / np.sqrt(np.maximum(norm2, 1e-300))
        d = x - p
        tangent = TANGENT_STEP * (d - np.sum(d * n, axis=1, keepdims=True) * n)
        if reach is not None:
            length = np.linalg.norm(tangent, axis=1)
            w = np.sqrt(np.maximum(1.0 - np.sum(p * p, axis=1), 1e-12))
            stretch = np.sqrt(1.0 + (np.sum(p * tangent, axis=1) / np.maximum(length, 1e-300) / w) ** 2)
            allowed = np.minimum(length, np.maximum(reach - used, 0.0) / stretch)
            used += allowed * stretch
            tangent *= (allowed / np.maximum(length, 1e-300))[:, None]
        step = tangent + (ISO - F)[:, None] * g / np.maximum(norm2, 1e-300)
        p = clamp_ball(np.where(norm2 > 1e-24, p + step, p))
        F, _, g = primitive_field(p, *prims, gradient=True)
    moved, F, g = onto_surface(p, F, g, surface, x, prims, known=known)
    keep = (np.sum(grad_s * grad_s, axis=1) > 1e-24) & (np.sum((moved - x) ** 2, axis=1) < np.sum((surface - x) ** 2, axis=1))
    return (
        np.where(keep[:, None], moved, surface),
        np.where(keep, F, F_s),
        np.where(keep[:, None], g, grad_s),
    )


def field_and_gradient(prims):
    """``field(x, rows) -> (F, grad F)`` at points ``x`` of some rows, for :func:`crossing`."""
    return lambda x, rows: primitive_field(x, *rows_of(prims, rows), gradient=True)[::2]


def rows_of(prims, rows):
    """Primitive arrays for some rows: per-row arrays ``(R, M, ...)`` are indexed, one model's
    ``(M, ...)`` shared."""
    centres = prims[0]
    if centres.ndim == 2:
        return prims
    return tuple(v[rows] for v in prims)
