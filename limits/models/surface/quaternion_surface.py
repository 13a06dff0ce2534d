# SPDX-License-Identifier: GPL-3.0-or-later
"""The quaternion implicit surface limit of Herda, Urtasun, Fua and Hanson (seed 002), with
negative primitives that carve the holes the paper's surface covers.

Space
-----
The allowed rotations are the inside of an implicit surface in the 3-D space of quaternion
vector parts ``p = (qx, qy, qz)`` (sections 3.2-4). To make that space a faithful chart, the
*coherent quaternion field* of section 3.2 is built once for the whole cloud (all clips at once,
not clip by clip): the pole ``c`` is the cloud's mean rotation (Markley, cover-insensitive),
every rotation takes the cover with ``q . c >= 0`` and ``p`` is the vector part of
``conj(c) q``. Neighbours then have positive dot products everywhere except across the
equator ``q . c = 0`` (rotations 180 degrees from the mean; ``fit_report`` counts any close
pairs that straddle it). The map ``q -> p`` is one-to-one on that hemisphere, so ``q`` and
``-q`` give identical answers, and its inverse is ``q = c (sqrt(1 - |p|^2), p)``. With the
default reference pose (the data mean) ``c`` is the identity and ``p`` is exactly the paper's
``(qx, qy, qz)`` of the reference-relative rotation. Lengths in ``p`` are about half the
rotation angle (``|p| = sin(theta / 2)`` from the pole): padding ``a`` radians is ``a / 2``.

Fit (:meth:`QuaternionSurfaceLimit.fit`)
----------------------------------------
1. Coherent field and points ``p (N, 3)`` (above).
2. Surface points (4.1): ``L x L`` solid angles about the centre of mass, thickness ``T``
   (:func:`~.primitives.surface_points`); at most ``max_surface_points`` of them (an
   evenly drawn subset, fixed seed) enter the optimization.
3. Implicit surface (4.2-4.3): eq. 5 primitives of stickiness ``k = 5``, eq. 6 with
   ``alpha1 = 0``, ``alpha2 = 0.01``, split the worst primitive (eq. 7, six children on one
   axis), re-optimize after each split, stop when the energy stabilizes, clean up, re-optimize
   (:func:`~.primitives.fit_primitives`).
4. Coverage (beyond the paper, the project's convention that the training rotations are
   allowed): the fit approximates the *surface* of the data, so about half the surface points
   lie just outside. Positive radii grow locally until every training rotation is inside
   (:func:`_grow`: each uncovered sample asks its most influential primitive for the radius it
   needs), then all by ``padding / 2``. ``grow=False`` skips this (the paper's surface, to
   check eq. 6).
5. Carving (beyond the paper; its sections 4.3, 5.1 and 6 propose it). The data's own occupancy
   finds the gaps the positive primitives cover: a grid of ``carve_resolution`` cells along the
   cloud's longest side; the distance from every cell centre to the nearest occupied cell
   (exact Euclidean distance transform); *gap cells* are inside the surface and farther than
   ``gap = max(carve_gap, 2.5 s, 2 h)`` from any sample (``s`` the cloud's typical sample
   spacing ``(occupied volume / N)^(1/3)``, ``h`` the cell size). Each 6-connected component of
   gap cells holding at least a ball of radius ``gap`` is a hole. Holes are carved greedily, the
   largest first: a negative primitive at the gap cell farthest from the data, influence radius
   ``R = d - h - padding / 2`` (so it never reaches a sample: the training rotations stay
   inside), ``e = 0.85 R``, ``k = 2 / (R - e)`` (peak ``k e + 1 = 12.3``); repeat on the cells of
   that hole still inside, until fewer than a ball's worth remain, the remaining cells are too
   close to the data, a further primitive would carve less than a quarter ball's worth, or
   ``max_negative`` primitives are placed. ``fit_report["holes"]`` lists
   every hole: centre ``p`` and as a quaternion, cells, cells carved, primitives used.
   ``carve=False`` gives the paper's surface (it covers the holes, as the paper says).

By hand: :meth:`QuaternionSurfaceLimit.with_primitive` adds a primitive (e.g. a negative one);
in Blender, negative metaball elements (:mod:`....rig.tasks.metaball`).

Queries
-------
``contains``: ``F(p) >= iso - CONTAINS_TOLERANCE`` (``iso = 1``; the tolerance only absorbs
rounding of the quaternion round trip). Non-finite rows are outside.

``project`` (5.1 and Fig. 15): rotations inside are returned unchanged. For the others: take the
positive primitive with the largest ``f_i(p)`` (the nearest by ``r - e`` when none reaches
``p``); ``d = |p - c_i| - e_i``; step ``p' = p + d grad F / |grad F|`` (towards ``c_i`` where
the gradient vanishes; where ``d <= MIN_STEP``, i.e. ``p`` is in ``S_i`` but carved, a Newton
step ``(iso - F) / |grad F|`` no longer than ``|p - c_i|``); if ``p'`` is outside, repeat
from ``p'``, at most :data:`GRADIENT_STEPS` times. A row still outside then steps to the nearest
*anchor* (a positive primitive centre with ``F >= iso`` or, when carving covers them all, an
inside node of a coarse grid; ``validate`` refuses a model without one). The last segment
``[outside, inside]`` is then solved for the surface (Newton's method kept inside the bracket,
:func:`.implicit.crossing`: a few field evaluations, where bisection needs dozens), its inside end kept.
Beyond the paper, :data:`.implicit.NEAREST_STEPS` steps along the surface towards the nearest point
(:func:`.implicit.nearer`): the paper's point depends on which primitive is the most influential, which
switches as a rotation moves, and projections of a motion would jump with it. Steps leave the unit
ball never (clamped to ``|p| <= 1``). ``last_projection`` counts the gradient steps used and
the fallbacks. The result is on the input's cover.

Motion (:mod:`...continuity`): where a motion cannot take the projection,
:meth:`~QuaternionSurfaceLimit.slide` walks along the surface towards the rotation (the
tangent-plane steps of the projection, their length within the frame's reach), and
:meth:`~QuaternionSurfaceLimit.project_near` brings a point just outside onto the surface by
Newton steps along the gradient.

``violation`` is the geodesic angle moved (exactly 0 inside, NaN for non-finite rows).

Parameters (``params``)
-----------------------
``pole (4,)``          the coherent field's pole ``c`` (w, x, y, z)
``centres (M, 3)``     primitive centres in ``p`` space
``radii (M,)``         ``e_i >= 0``
``stickiness (M,)``    ``k_i > 0``
``signs (M,)``         ``+1`` (positive) or ``-1`` (negative, carving)

``config`` is empty. Models stack when they have the same number of primitives (the count is
part of the group key).
"""

import numpy as np

from ...checks import check_padding
from ...constants import CHUNK_ROWS, CONTAINS_TOLERANCE, IDENTITY_QUATERNION
from ...geometry.distance_transform import distance_transform, label_components
from ...geometry.quaternion import (
    as_quaternions,
    check_finite,
    quaternion_angle,
    quaternion_conjugate,
    quaternion_mean,
    quaternion_multiply,
    quaternion_toward,
    slerp,
)
from ...model import METABALLS, LimitModel, MovedProjection, RowsPerBone
from .implicit import CROSSING_FIELD, clamp_ball, crossing, field_and_gradient, nearer, onto_surface, rows_of
from .primitives import ISO, STICKINESS, fit_primitives, primitive_field, surface_points

#: Fewest rotations a fit accepts.
MIN_SAMPLES = 8

#: Projection: most gradient steps (then the crossing, :mod:`.implicit`).
GRADIENT_STEPS = 8

#: Tangent-plane steps of a slide (:meth:`QuaternionSurfaceLimit.slide`): its reach is a
#: frame's, mostly spent by the first.
SLIDE_STEPS = 2

#: Smallest gradient step (units of ``p``).
MIN_STEP = 1e-4

#: Nodes per axis of the anchor search grid (only when no positive centre is inside).
ANCHOR_GRID = 24

#: Negative primitives: ``e = NEGATIVE_CORE * R``.
NEGATIVE_CORE = 0.85


def _to_points(q, pole):
    """``p (R, 3)`` of rotations ``q (R, 4)`` in the chart of ``pole`` ((4,) or (R, 4))."""
    rel = quaternion_multiply(quaternion_conjugate(pole), q)
    sign = np.where(rel[..., :1] < 0.0, -1.0, 1.0)
    return rel[..., 1:] * sign


def _from_points(p, pole):
    """Unit quaternions ``(R, 4)`` of ``p (R, 3)`` (``|p| <= 1``) in the chart of ``pole``."""
    w = np.sqrt(np.maximum(1.0 - np.sum(p * p, axis=-1), 0.0))
    rel = np.concatenate((w[..., None], p), axis=-1)
    out = quaternion_multiply(pole, rel)
    return out / np.linalg.norm(out, axis=-1, keepdims=True)


def _incoherent_pairs(q, pole, chord=0.05):
    """Close rotation pairs ``|q_i + q_j| < chord`` with negative dot product after the pole's
    hemisphere is chosen (both must be within ``chord`` of the equator)."""
    dots = q @ pole
    near = np.flatnonzero(np.abs(dots) < chord)
    if len(near) < 2:
        return 0
    sub = q[near][:2000]
    d = np.linalg.norm(sub[:, None, :] + sub[None, :, :], axis=-1)
    return int(np.count_nonzero(np.triu(d < chord, 1)))


def _negative_shape(reach):
    """``(e, k)`` of a negative primitive reaching ``reach`` (its influence radius)."""
    e = NEGATIVE_CORE * reach
    return e, 2.0 / (reach - e)


def _carve(points, centres, radii, stickiness, signs, padding, gap_floor, resolution, max_negative):
    """Find and carve holes (module docstring, step 5). Returns new primitive arrays and the report."""
    lo = points.min(axis=0)
    hi = points.max(axis=0)
    extent = float(np.max(hi - lo))
    report = {"holes": [], "gap": 0.0, "cell": 0.0}
    if extent <= 1e-9:
        return centres, radii, stickiness, signs, report
    h = extent / resolution
    margin = 3.0 * h + 0.25 * extent
    lo = lo - margin
    shape = tuple(int(np.ceil((hi + margin - lo)[a] / h)) + 1 for a in range(3))
    cell = np.clip(np.rint((points - lo) / h).astype(np.intp), 0, np.array(shape) - 1)
    occupied = np.zeros(shape, dtype=bool)
    occupied[tuple(cell.T)] = True
    d2, _ = distance_transform(occupied, np.full(3, h))
    dist = np.sqrt(d2)
    spacing = (np.count_nonzero(occupied) * h**3 / len(points)) ** (1.0 / 3.0)
    gap = max(gap_floor, 2.5 * spacing, 2.0 * h)
    report.update(gap=gap, cell=h)
    axes = [lo[a] + h * np.arange(shape[a]) for a in range(3)]
    nodes = np.stack(np.meshgrid(*axes, indexing="ij"), axis=-1).reshape(-1, 3)
    far = np.flatnonzero(dist.ravel() > gap)
    if not len(far):
        return centres, radii, stickiness, signs, report
    F = _field_chunked(nodes[far], centres, radii, stickiness, signs)
    candidate = np.zeros(occupied.size, dtype=bool)
    candidate[far[F >= ISO]] = True
    labels, count = label_components(candidate.reshape(shape))
    if not count:
        return centres, radii, stickiness, signs, report
    flat = labels.ravel()
    ids, sizes = np.unique(flat[flat >= 0], return_counts=True)
    ball = 4.0 / 3.0 * np.pi * gap**3 / h**3
    order = np.argsort(-sizes)
    placed = 0
    for label, size in zip(ids[order], sizes[order]):
        if size < ball:
            break
        cells = np.flatnonzero(flat == label)
        hole = {"centre": None, "rotation": None, "cells": int(size), "carved_cells": 0, "primitives": 0}
        remaining = cells
        while placed < max_negative and len(remaining) >= ball:
            best = remaining[int(np.argmax(dist.ravel()[remaining]))]
            reach = float(dist.ravel()[best]) - h - 0.5 * padding
            if reach <= 0.5 * gap:
                break
            e, k = _negative_shape(reach)
            centres = np.vstack((centres, nodes[best]))
            radii = np.append(radii, e)
            stickiness = np.append(stickiness, k)
            signs = np.append(signs, -1.0)
            placed += 1
            hole["primitives"] += 1
            if hole["centre"] is None:
                hole["centre"] = nodes[best].tolist()
            F = _field_chunked(nodes[remaining], centres, radii, stickiness, signs)
            if np.count_nonzero(F < ISO) < 0.25 * ball and hole["primitives"] > 1:
                # carves almost nothing: undo it and leave this hole
                centres, radii, stickiness, signs = centres[:-1], radii[:-1], stickiness[:-1], signs[:-1]
                placed -= 1
                hole["primitives"] -= 1
                break
            remaining = remaining[F >= ISO]
        hole["carved_cells"] = int(size - len(remaining))
        if hole["primitives"]:
            report["holes"].append(hole)
        if placed >= max_negative:
            break
    return centres, radii, stickiness, signs, report


def _field_chunked(x, centres, radii, stickiness, signs):
    out = np.empty(len(x))
    for start in range(0, len(x), CHUNK_ROWS):
        stop = start + CHUNK_ROWS
        out[start:stop] = primitive_field(x[start:stop], centres, radii, stickiness, signs)[0]
    return out


def _grow(points, centres, radii, stickiness, signs, rounds=30):
    """Positive primitives grown, or added, until every point of ``points (N, 3)`` is inside
    (``F >= iso``), the surface bounded by the data.

    Local first: each round, every uncovered point asks its most influential positive
    primitive for ``(iso - F) / (df/de)`` more radius (``df/de = k`` inside the sphere,
    ``k (2 - t) / 2`` in the blend, floored at ``k / 4``), and each primitive takes the largest
    request (times 1.1). A point that would have its primitive more than double gets a
    primitive of its own instead (centred on it, of the median positive radius): growing one
    sphere out to a far sample swells it across rotations no sample is near. Points still
    uncovered after ``rounds`` rounds get a common growth of all positive radii (bisection;
    ``F`` grows monotonically with every ``e_i``).

    Returns
    -------
    centres, radii, stickiness, signs : arrays of the (possibly more) primitives
    growth : (M,) float array
        How much each radius grew (an added primitive: its radius).
    """
    start = radii.copy()
    radii = radii.copy()
    for _ in range(rounds):
        F = _field_chunked(points, centres, radii, stickiness, signs)
        out = F < ISO
        if not out.any():
            break
        positive = signs > 0
        x = points[out]
        d = np.linalg.norm(x[:, None, :] - centres, axis=-1)
        t = stickiness * (d - radii)
        f = np.where(d <= radii, 1.0 - t, np.where(t <= 2.0, 0.25 * (t - 2.0) ** 2, 0.0))
        score = np.where(positive, np.where(f > 0, f, -(d - radii - 2.0 / stickiness) - 1e6), -np.inf)
        best = np.argmax(score, axis=1)
        tb = t[np.arange(len(x)), best]
        kb = stickiness[best]
        slope = np.where(tb <= 0.0, kb, np.maximum(0.5 * kb * (2.0 - tb), 0.25 * kb))
        # beyond the reach, first bring the sphere's blend to the point
        reach = np.maximum(tb - 2.0, 0.0) / kb
        need = 1.1 * ((ISO - F[out]) / slope + reach) + 1e-6
        far = need > radii[best]
        if far.any():  # one new primitive, on the uncovered point farthest from any sphere
            pick = np.argmax(np.where(far, need, -np.inf))
            centres = np.concatenate((centres, x[pick][None]))
            radii = np.concatenate((radii, [np.median(radii[positive])]))
            start = np.concatenate((start, [0.0]))
            stickiness = np.concatenate((stickiness, stickiness[best[pick]][None]))
            signs = np.concatenate((signs, [1.0]))
            need, best = need[~far], best[~far]
        grow = np.zeros(len(radii))
        np.maximum.at(grow, best, need)
        radii = radii + grow
    positive = signs > 0
    out = points[_field_chunked(points, centres, radii, stickiness, signs) < ISO]
    if len(out):

        def ok(delta):
            grown = np.where(positive, radii + delta, radii)
            return bool(np.all(_field_chunked(out, centres, grown, stickiness, signs) >= ISO))

        hi = 1e-3
        while not ok(hi) and hi < 4.0:
            hi *= 2.0
        lo = 0.0
        for _ in range(30):
            mid = 0.5 * (lo + hi)
            lo, hi = (lo, mid) if ok(mid) else (mid, hi)
        radii = np.where(positive, radii + hi, radii)
    return centres, radii, stickiness, signs, radii - start


class QuaternionSurfaceLimit(MovedProjection, RowsPerBone, LimitModel):
    """Allowed rotations inside an implicit surface of spherical primitives in quaternion
    vector-part space (seed 002), with negative primitives carving holes (module docstring)."""

    kind = "quaternion_surface"
    LEAD_PARAM = "pole"
    label = "Quaternion Surface"
    description = "Implicit surface of blended spheres in quaternion space (Herda et al.), holes carved by negative spheres"
    PARAM_SHAPES = {
        "pole": (4,),
        "centres": (None, 3),
        "radii": (None,),
        "stickiness": (None,),
        "signs": (None,),
    }
    FIT_OPTIONS = ("padding",)
    CAPABILITIES = frozenset({METABALLS})

    def __init__(self, params, config=None):
        super().__init__(params, config)
        # anchor points per bone, built on first use; a dict made here, so that :meth:`subset`
        # views (shallow copies) build them for the model they share
        self._anchors = {}
        #: Facts about the fit (not stored).
        self.fit_report = {}
        #: Statistics of the last projection: ``rows``, ``steps`` (histogram of gradient steps
        #: per projected row), ``fallbacks``.
        self.last_projection = {}

    # -- fitting -------------------------------------------------------------------------------
    @classmethod
    def fit(
        cls,
        rotations,
        padding=0.05,
        divisions=7,
        thickness=0.1,
        stickiness=STICKINESS,
        alpha2=0.01,
        max_primitives=31,
        tolerance=0.02,
        min_density=0.05,
        max_surface_points=1500,
        grow=True,
        carve=True,
        carve_gap=0.05,
        carve_resolution=32,
        max_negative=8,
    ):
        """Fit the implicit surface to a rotation cloud.

        Parameters
        ----------
        rotations : (N, 4) array
            Unit quaternions ``(w, x, y, z)`` relative to the reference pose, any covers;
            ``N >= MIN_SAMPLES``, finite.
        padding : float
            Radians of room around the data (grows the surface by ``padding / 2`` in ``p``).
        divisions, thickness : int, float
            ``L`` and ``T`` of section 4.1 (paper: 7, 0.1).
        stickiness : float
            ``k`` of the fitted primitives (paper: 5), per unit of ``p``.
        alpha2 : float
            Centre-of-mass weight of eq. 6 (paper: 0.01).
        max_primitives : int
            Budget of positive primitives for the subdivision (``1 + 5 s`` after ``s`` splits).
        tolerance : float
            Splitting stops when a split lowers eq. 6 by less than this fraction.
        min_density : float
            Clean-up threshold on a primitive's density of surface points (fraction of the cloud's).
        max_surface_points : int
            Surface points used by the optimization (a fixed-seed subset when there are more).
        grow : bool
            Coverage step (module docstring, step 4).
        carve : bool
            Carve holes (step 5).
        carve_gap : float
            Smallest gap (units of ``p``, about half radians) that counts as a hole.
        carve_resolution : int
            Occupancy cells along the cloud's longest side.
        max_negative : int
            Most negative primitives placed.

        Returns
        -------
        QuaternionSurfaceLimit
            With ``fit_report``: ``samples``, ``surface_points``, ``energies``, ``splits``,
            ``removed``, ``positive``, ``growth``, ``holes``, ``gap``, ``incoherent_pairs``,
            ``seconds`` (per stage).
        """
        import time

        t0 = time.perf_counter()
        q = as_quaternions(rotations, "rotation cloud")
        if q.ndim != 2:
            raise ValueError(f"the rotation cloud must have shape (N, 4), got {q.shape}")
        if len(q) < MIN_SAMPLES:
            raise ValueError(f"a quaternion surface needs at least {MIN_SAMPLES} rotations, got {len(q)}")
        check_finite(q, "rotation cloud")
        norms = np.linalg.norm(q, axis=-1)
        if np.any(norms < 1e-6):
            raise ValueError("the rotation cloud contains zero quaternions")
        q = q / norms[:, None]
        padding = check_padding(padding)
        divisions = int(divisions)
        if divisions < 1 or not 0.0 < float(thickness) <= 1.0:
            raise ValueError(f"divisions must be >= 1 and thickness in (0, 1], got {divisions}, {thickness}")
        if not float(stickiness) > 0.0:
            raise ValueError(f"stickiness must be positive, got {stickiness}")

        pole = quaternion_mean(q)
        q = np.where((q @ pole)[:, None] < 0.0, -q, q)
        incoherent = _incoherent_pairs(q, pole)
        points = _to_points(q, pole)
        t1 = time.perf_counter()

        surface = points[surface_points(points, divisions, float(thickness))]
        if len(surface) > max_surface_points:
            pick = np.random.default_rng(0).choice(len(surface), int(max_surface_points), replace=False)
            surface = surface[np.sort(pick)]
        t2 = time.perf_counter()
        centres, radii, report = fit_primitives(
            surface, float(stickiness), float(alpha2), int(max_primitives), float(tolerance), float(min_density)
        )
        positive = len(radii)
        stick = np.full(positive, float(stickiness))
        signs = np.ones(positive)
        t3 = time.perf_counter()
        growth = np.zeros(positive)
        if grow:
            centres, radii, stick, signs, growth = _grow(points, centres, radii, stick, signs)
            radii = radii + 0.5 * padding
            growth = growth + 0.5 * padding
        t4 = time.perf_counter()
        carved = {"holes": [], "gap": 0.0, "cell": 0.0}
        if carve:
            centres, radii, stick, signs, carved = _carve(
                points,
                centres,
                radii,
                stick,
                signs,
                0.5 * padding if grow else 0.0,
                float(carve_gap),
                int(carve_resolution),
                int(max_negative),
            )
            for hole in carved["holes"]:
                hole["rotation"] = _from_points(np.array(hole["centre"]), pole).tolist()
        t5 = time.perf_counter()
        model = cls({"pole": pole, "centres": centres, "radii": radii, "stickiness": stick, "signs": signs})
        model.validate()
        model.fit_report = {
            "samples": len(q),
            "surface_points": len(surface),
            "energies": report["energies"],
            "energy": report["energy"],
            "splits": report["splits"],
            "removed": report["removed"],
            "positive": positive,
            "growth": growth.tolist(),
            "holes": carved["holes"],
            "gap": carved["gap"],
            "incoherent_pairs": incoherent,
            "seconds": {
                "field": t1 - t0,
                "surface": t2 - t1,
                "primitives": t3 - t2,
                "grow": t4 - t3,
                "carve": t5 - t4,
                "total": t5 - t0,
            },
        }
        return model

    @classmethod
    def from_primitives(cls, pole, centres, radii, stickiness, signs):
        """A validated model from primitive arrays (e.g. read back from a metaball)."""
        params = {
            "pole": np.asarray(pole, dtype=float).reshape(4),
            "centres": np.asarray(centres, dtype=float).reshape(-1, 3),
            "radii": np.asarray(radii, dtype=float).reshape(-1),
            "stickiness": np.asarray(stickiness, dtype=float).reshape(-1),
            "signs": np.asarray(signs, dtype=float).reshape(-1),
        }
        for name, value in params.items():
            if not np.all(np.isfinite(value)):
                raise ValueError(f"{cls.kind} limit: {name} contains NaN or infinity")
        norm = np.linalg.norm(params["pole"])
        if norm <= 1e-12:
            raise ValueError(f"{cls.kind} limit: pole is not a rotation (a zero quaternion)")
        params["pole"] = params["pole"] / norm
        model = cls(params)
        model.validate()
        return model

    def with_primitive(self, centre, radius, sign=-1.0, stickiness=None):
        """A new model with one more primitive (carving by hand when ``sign`` is -1).

        Parameters
        ----------
        centre : (3,) array or (4,) quaternion
            In ``p`` space, or a rotation (reference-relative) mapped into it.
        radius : float
            Influence radius ``R`` in units of ``p`` (about half radians).
        sign : float
            ``-1`` carves, ``+1`` adds.
        stickiness : float, optional
            ``k``; default: a negative primitive's shape (``e = 0.85 R``) or, for a positive
            one, ``STICKINESS`` with ``e = R - 2 / k`` (at least 0).
        """
        centre = np.asarray(centre, dtype=float).reshape(-1)
        if centre.shape == (4,):
            centre = _to_points(centre[None], self.params["pole"])[0]
        if centre.shape != (3,) or not float(radius) > 0:
            raise ValueError("with_primitive needs a (3,) or (4,) centre and a positive radius")
        reach = float(radius)
        if stickiness is None:
            if sign < 0:
                e, k = _negative_shape(reach)
            else:
                k = STICKINESS
                e = max(reach - 2.0 / k, 0.0)
        else:
            k = float(stickiness)
            e = max(reach - 2.0 / k, 0.0)
        p = self.params
        return type(self).from_primitives(
            p["pole"],
            np.vstack((p["centres"], centre)),
            np.append(p["radii"], e),
            np.append(p["stickiness"], k),
            np.append(p["signs"], 1.0 if sign > 0 else -1.0),
        )

    # -- plain data ------------------------------------------------------------------------------
    def validate(self):
        p = self.params
        if self.config:
            raise ValueError(f"{self.kind} limit: unknown config entries {sorted(self.config)}")
        m = p["radii"].shape[-1]
        for name in ("stickiness", "signs"):
            if p[name].shape[-1] != m:
                raise ValueError(f"{self.kind} limit: {name!r} must have {m} entries like 'radii', got {p[name].shape[-1]}")
        if p["centres"].shape[-2] != m:
            raise ValueError(f"{self.kind} limit: 'centres' must have {m} rows like 'radii', got {p['centres'].shape[-2]}")
        if m == 0:
            raise ValueError(f"{self.kind} limit: no primitives")
        if np.any(p["radii"] < 0):
            raise ValueError(f"{self.kind} limit: 'radii' must not be negative")
        if np.any(p["stickiness"] <= 0):
            raise ValueError(f"{self.kind} limit: 'stickiness' must be positive")
        if np.any((p["signs"] != 1.0) & (p["signs"] != -1.0)):
            raise ValueError(f"{self.kind} limit: 'signs' must be +1 or -1")
        if np.any(np.abs(np.linalg.norm(p["pole"], axis=-1) - 1.0) > 1e-6):
            raise ValueError(f"{self.kind} limit: 'pole' must be a unit quaternion")
        if p["pole"].ndim == 1:
            if not len(self._anchor_points()):
                raise ValueError(
                    f"{self.kind} limit: the region is empty (no positive primitive's centre nor any grid node is inside the surface)"
                )

    def group_key(self):
        """Surfaces of any primitive counts stack (:meth:`stack` pads them)."""
        return (self.kind, tuple(sorted(self.config.items())))

    @classmethod
    def stack(cls, models):
        """:meth:`...model.LimitModel.stack`, every model's primitives padded to the largest count
        with inert ones (sign 0: they add exactly 0 to the field and its gradient, and are never
        a row's most influential primitive), so a rig's surfaces, whose fits each found their
        own count, are one group: the live handler limits them with one call, and a motion
        steps their bones together instead of one group after another (one group costs far
        less than several). The field is the same up to the order of the sum over primitives
        (last-bit differences)."""
        models = list(models)
        count = max((m.params["radii"].shape[-1] for m in models), default=0)
        padded = []
        for m in models:
            extra = count - m.params["radii"].shape[-1]
            if extra == 0:
                padded.append(m)
                continue
            p = dict(m.params)
            p["centres"] = np.concatenate((p["centres"], np.zeros(p["centres"].shape[:-2] + (extra, 3))), axis=-2)
            for name, value in (("radii", 0.0), ("stickiness", STICKINESS), ("signs", 0.0)):
                p[name] = np.concatenate((p[name], np.full(p[name].shape[:-1] + (extra,), value)), axis=-1)
            padded.append(type(m)(p, m.config))
        return super().stack(padded)

    # -- evaluation ------------------------------------------------------------------------------
    def _prims(self, bone):
        return tuple(self._per_row(name, bone) for name in ("centres", "radii", "stickiness", "signs"))

    def _anchor_points(self, bone=None):
        """Inside points of one model (``bone`` picks it): the positive primitive centres with
        ``F >= iso`` or, when carving covers them all, the inside nodes of an
        :data:`ANCHOR_GRID`-cubed grid over the positive primitives' influence boxes."""
        c, e, k, s = (v if bone is None else v.reshape((-1,) + v.shape[len(self._lead()) :])[bone] for v in self._raw())
        F = primitive_field(c, c, e, k, s)[0]
        inside = c[(s > 0) & (F >= ISO)]
        if len(inside) or not np.any(s > 0):
            return inside
        reach = (e + 2.0 / k)[s > 0]
        lo = np.min(c[s > 0] - reach[:, None], axis=0)
        hi = np.max(c[s > 0] + reach[:, None], axis=0)
        axes = [np.linspace(lo[a], hi[a], ANCHOR_GRID) for a in range(3)]
        nodes = np.stack(np.meshgrid(*axes, indexing="ij"), axis=-1).reshape(-1, 3)
        nodes = nodes[np.sum(nodes * nodes, axis=1) <= 1.0]
        return nodes[_field_chunked(nodes, c, e, k, s) >= ISO]

    def _raw(self):
        return tuple(self.params[name] for name in ("centres", "radii", "stickiness", "signs"))

    def field(self, q):
        """``F (...,)`` at rotations ``q (..., 4)`` (either cover)."""
        q = as_quaternions(q)
        rows, bone, lead = self._rows(q)
        out = np.empty(len(rows))
        for start in range(0, len(rows), CHUNK_ROWS):
            sl = slice(start, start + CHUNK_ROWS)
            sub = None if bone is None else bone[sl]
            p = _to_points(rows[sl], self._per_row("pole", sub))
            out[sl] = primitive_field(p, *self._prims(sub))[0]
        return out.reshape(lead)

    def contains(self, q, tolerance=CONTAINS_TOLERANCE):
        """``(...,)`` bool: ``F >= iso - tolerance``; non-finite rows are outside."""
        q = as_quaternions(q)
        rows, bone, lead = self._rows(q)
        finite = np.isfinite(rows).all(axis=-1)
        safe = rows if finite.all() else np.where(finite[:, None], rows, IDENTITY_QUATERNION)
        out = np.empty(len(rows), dtype=bool)
        for start in range(0, len(rows), CHUNK_ROWS):
            sl = slice(start, start + CHUNK_ROWS)
            sub = None if bone is None else bone[sl]
            p = _to_points(safe[sl], self._per_row("pole", sub))
            out[sl] = primitive_field(p, *self._prims(sub))[0] >= ISO - tolerance
        return (out & finite).reshape(lead)

    def _project(self, q):
        q = as_quaternions(q)
        rows, bone, lead = self._rows(q)
        out = np.array(rows)
        moved = np.zeros(len(rows), dtype=bool)
        stats = self._stats()
        for start in range(0, len(rows), CHUNK_ROWS):
            sl = slice(start, start + CHUNK_ROWS)
            sub = None if bone is None else bone[sl]
            out[sl], moved[sl] = self._project_rows(rows[sl], sub, stats)
        self.last_projection = stats
        return out.reshape(lead + (4,)), moved.reshape(lead)

    def slide(self, q, start, cap):
        """:meth:`...model.LimitModel.slide` along the surface. Where the rotation ``cap`` from
        ``start`` towards ``q`` is inside, that rotation; else from ``start`` (or where the
        way to that rotation leaves the surface, when ``start`` is inside it) the tangent-plane
        steps of :func:`.implicit.nearer` towards ``q``, their length along the surface
        within the rest of ``cap``, kept when within ``cap`` of ``start`` and nearer ``q``.
        Cheaper than the default descent by :meth:`project_near` (:func:`...continuity.descend`),
        whose steps go mostly along the normal and so creep along the surface, and as near ``q``."""
        q = as_quaternions(q)
        rows, bone, lead = self._rows(q)
        start = np.broadcast_to(as_quaternions(start), lead + (4,)).reshape(-1, 4)
        cap = np.broadcast_to(np.asarray(cap, dtype=float), lead).reshape(-1)
        out = np.array(rows)
        for first in range(0, len(rows), CHUNK_ROWS):
            sl = slice(first, first + CHUNK_ROWS)
            out[sl] = self._slide_rows(rows[sl], start[sl], cap[sl], None if bone is None else bone[sl])
        return out.reshape(lead + (4,))

    def _slide_rows(self, rows, start, cap, bone):
        rows = np.where(np.isfinite(rows).all(axis=1)[:, None], rows, start)  # (no way towards those: stay)
        pole = self._per_row("pole", bone)
        prims = self._prims(bone)
        distance = quaternion_angle(start, rows)
        toward = slerp(start, rows, np.minimum(1.0, cap / np.maximum(distance, 1e-300)))
        out = np.array(toward)
        # the field at ``toward`` and at ``start``, in one call
        n = len(rows)
        both = _to_points(np.concatenate((toward, start)), pole if bone is None else np.concatenate((pole, pole)))
        F, _, grad = primitive_field(both, *rows_of(prims, np.r_[np.arange(n), np.arange(n)]), gradient=True)
        todo = np.flatnonzero(F[:n] < ISO)
        if not len(todo):
            return out
        y = both[:n]
        sub = rows_of(prims, todo)
        pole = pole if bone is None else pole[todo]
        x, F, grad = both[n:][todo], F[n:][todo], grad[n:][todo]
        deep = np.flatnonzero(F > ISO + CROSSING_FIELD)
        if len(deep):  # (inside: onto the surface on the way to ``toward`` first)
            x[deep], F[deep], grad[deep] = crossing(
                x[deep], y[todo[deep]], field_and_gradient(rows_of(sub, deep)), known=(F[deep], grad[deep])
            )
        on_surface = quaternion_toward(_from_points(x, pole), start[todo])
        reach = 2.0 * np.sin(cap[todo] / 4.0) - 2.0 * np.sin(quaternion_angle(on_surface, start[todo]) / 4.0)
        moved, _, _ = nearer(_to_points(rows[todo], pole), x, sub, (F, grad), reach=reach, steps=SLIDE_STEPS)
        result = quaternion_toward(_from_points(moved, pole), start[todo])
        kept = (quaternion_angle(result, start[todo]) <= cap[todo]) & (
            quaternion_angle(result, rows[todo]) < quaternion_angle(on_surface, rows[todo])
        )
        out[todo] = np.where(kept[:, None], result, on_surface)
        return out

    def project_near(self, q, near):
        """:meth:`...model.LimitModel.project_near`: a rotation ``q`` just outside is brought onto
        the surface by Newton steps along the field's gradient (``(iso - F) / |grad F|^2``; a
        point near the surface lands next to it, where the paper's step to the most influential
        sphere overshoots), then the crossing on the segment to the last point inside (the
        Newton point, else ``near``). Each row costs some 5 field evaluations where
        :meth:`project` takes 12 or more (a descent, :func:`...continuity.descend`, asks this several
        times a frame; a motion on this surface slides by :meth:`slide` instead). Rows whose
        Newton steps and ``near`` are both outside are projected."""
        q = as_quaternions(q)
        rows, bone, lead = self._rows(q)
        near_rows = np.broadcast_to(as_quaternions(near), lead + (4,)).reshape(-1, 4)
        out = np.array(rows)
        for start in range(0, len(rows), CHUNK_ROWS):
            sl = slice(start, start + CHUNK_ROWS)
            out[sl] = self._near_rows(rows[sl], near_rows[sl], None if bone is None else bone[sl])
        return out.reshape(lead + (4,))

    def _near_rows(self, rows, near, bone):
        if not (np.isfinite(rows).all() and np.isfinite(near).all()):
            return self._project_rows(rows, bone, self._stats())[0]
        pole = self._per_row("pole", bone)
        prims = self._prims(bone)
        p = _to_points(rows, pole)
        F, _, grad = primitive_field(p, *prims, gradient=True)
        todo = np.flatnonzero(F < ISO - CONTAINS_TOLERANCE)
        if not len(todo):
            return rows
        sub = rows_of(prims, todo)
        pole = pole if bone is None else pole[todo]
        inner = _to_points(near[todo], pole)
        F_in, _, grad_in = primitive_field(inner, *sub, gradient=True)
        lost = F_in < ISO
        found, _, _ = onto_surface(p[todo], F[todo], grad[todo], inner, p[todo], sub, known=(F_in, grad_in))
        result = _from_points(found, pole)
        if lost.any():  # (``near`` outside: not a continuation, a plain projection)
            result[lost] = self._project_rows(rows[todo[lost]], None if bone is None else bone[todo[lost]], self._stats())[0]
        result = quaternion_toward(result, rows[todo])
        out = np.array(rows)
        out[todo] = result
        return out

    @staticmethod
    def _stats():
        return {"rows": 0, "steps": np.zeros(GRADIENT_STEPS + 1, dtype=np.int64), "fallbacks": 0}

    def _project_rows(self, rows, bone, stats):
        finite = np.isfinite(rows).all(axis=-1)
        safe = rows if finite.all() else np.where(finite[:, None], rows, IDENTITY_QUATERNION)
        pole = self._per_row("pole", bone)
        p = _to_points(safe, pole)
        F = primitive_field(p, *self._prims(bone))[0]
        todo = np.flatnonzero(finite & (F < ISO - CONTAINS_TOLERANCE))
        moved = np.zeros(len(rows), dtype=bool)
        if not len(todo):
            return rows, moved
        sub = None if bone is None else bone[todo]
        prims = self._prims(sub)
        surface, known = self._surface_point(p[todo], prims, sub, stats)
        inner, _, _ = nearer(p[todo], surface, prims, known)
        result = _from_points(inner, pole if bone is None else pole[todo])
        result = quaternion_toward(result, rows[todo])
        out = np.array(rows)
        out[todo] = result
        moved[todo] = True
        return out, moved

    def _surface_point(self, x, prims, bone, stats):
        """Points ``x (R, 3)`` outside -> ``(surface, (F, grad F) there)``: inside points on
        the surface (module docstring). ``prims``: the rows' primitive arrays."""
        c, e, k, s = prims
        outer = x.copy()
        inner = np.full_like(x, np.nan)
        F_in, grad_in = np.zeros(len(x)), np.zeros_like(x)
        active = np.arange(len(x))
        steps = np.zeros(len(x), dtype=np.intp)
        stats["rows"] += len(x)
        F, f, grad = primitive_field(x, c, e, k, s, gradient=True)  # (at ``outer[active]``)
        for _ in range(GRADIENT_STEPS):
            if not len(active):
                break
            ca, ea, ka, sa = rows_of(prims, active)
            pts = outer[active]
            positive = np.broadcast_to(sa > 0, f.shape)
            rows_ = np.arange(len(active))
            best = np.argmax(np.where(positive & (f > 0), f, -np.inf), axis=1)
            far = np.flatnonzero(~np.any(positive & (f > 0), axis=1))
            if len(far):  # (no positive primitive reaches: the nearest by r - e)
                cf = ca[far] if ca.ndim == 3 else ca
                gap = np.linalg.norm(pts[far][:, None, :] - cf, axis=-1) - (ea[far] if ea.ndim == 2 else ea)
                best[far] = np.argmax(np.where(positive[far], -gap, -np.inf), axis=1)
            cb = ca[best] if ca.ndim == 2 else ca[rows_, best]
            d = np.linalg.norm(pts - cb, axis=1) - (ea[best] if ea.ndim == 1 else ea[rows_, best])
            norm = np.linalg.norm(grad, axis=1)
            toward = cb - pts
            tnorm = np.linalg.norm(toward, axis=1)
            has_grad = norm > 1e-12
            direction = np.where(
                has_grad[:, None], grad / np.where(has_grad, norm, 1.0)[:, None], toward / np.maximum(tnorm, 1e-300)[:, None]
            )
            newton = np.where(has_grad, (ISO - F) / np.where(has_grad, norm, 1.0), 0.0)
            # the paper's step d; where it vanishes (inside S_i but outside the surface, e.g. a
            # carved region) a Newton step, never past the primitive's centre
            length = np.where(d > MIN_STEP, d, np.minimum(newton, tnorm))
            length = np.maximum(length, MIN_STEP)
            nxt = clamp_ball(pts + length[:, None] * direction)
            F, f, grad = primitive_field(nxt, ca, ea, ka, sa, gradient=True)
            ok = F >= ISO
            steps[active] += 1
            inner[active[ok]], F_in[active[ok]], grad_in[active[ok]] = nxt[ok], F[ok], grad[ok]
            outer[active[~ok]] = nxt[~ok]
            active, F, f, grad = active[~ok], F[~ok], f[~ok], grad[~ok]
        if len(active):
            stats["fallbacks"] += len(active)
            owners = np.zeros(len(active), dtype=np.intp) if bone is None else bone[active]
            for b in np.unique(owners):
                rows_b = active[owners == b]
                anchors = self._anchors_for(None if bone is None else int(b))
                d2 = np.sum((outer[rows_b][:, None, :] - anchors[None]) ** 2, axis=-1)
                inner[rows_b] = anchors[np.argmin(d2, axis=1)]
            F_in[active], _, grad_in[active] = primitive_field(inner[active], *rows_of(prims, active), gradient=True)
        np.add.at(stats["steps"], steps, 1)
        found, F, grad = crossing(inner, outer, field_and_gradient(prims), known=(F_in, grad_in))
        return found, (F, grad)

    def _anchors_for(self, bone):
        anchors = self._anchors
        if bone not in anchors:
            anchors[bone] = self._anchor_points(bone)
            if not len(anchors[bone]):
                raise ValueError(f"{self.kind} limit: the region is empty")
        return anchors[bone]
