# SPDX-License-Identifier: GPL-3.0-or-later
"""The signed-distance-field limit of Engell-Norregard, Niebe and Erleben (seed 000).

The allowed region is a set in a three-dimensional parameter space: the rotations within a
*tube* of radius ``tube`` (radians, in that space) of the densified motion samples, plus every
pocket the tube encloses. It is stored as a signed distance ``phi`` sampled on a regular grid:
``phi < 0`` inside, ``phi > 0`` outside, ``phi = 0`` on the region's boundary.

The grid lives in a parameter space (:mod:`.space`); :mod:`.build` builds it from the
motion (:meth:`SdfGridLimit.fit`); lookups are trilinear (:mod:`.lookup`) and the
projection's fast path is in :mod:`.projection`.

Queries
-------
``contains``: trilinear ``phi <= tolerance`` (eq. 5 of the paper with its epsilon folded into
``phi``; the default tolerance :data:`...constants.CONTAINS_TOLERANCE` only absorbs rounding). Points
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
"""

import numpy as np

from ...checks import check_cloud, check_padding
from ...constants import CHUNK_ROWS, CONTAINS_TOLERANCE, IDENTITY_QUATERNION
from ...geometry.distance_transform import label_components
from ...geometry.quaternion import as_quaternions, exp_map_from_quaternion_components, quaternion_from_exp_map_components
from ...model import SCULPT, SIGNED_DISTANCE, LimitModel, RowsPerBone
from .build import sdf_from_rotations
from .lookup import _finite_rows, _gather, _Geometry, _interpolate, _packed_interpolate
from .projection import EXTRA_STEPS, SdfProjection
from .space import _WRAP, SPACES, TWO_PI, _check_space, _to_window, coordinates_from_quaternion, quaternion_from_coordinates

#: Allowed grid resolutions (nodes per axis).
MIN_RESOLUTION, MAX_RESOLUTION = 8, 128


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


# -- the model ---------------------------------------------------------------------------------------------
class SdfGridLimit(SdfProjection, RowsPerBone, LimitModel):
    """Signed distance field on a grid in exp-map (or ZYZ) space; see the module docstring."""

    kind = "sdf_grid"
    LEAD_PARAM = "lower"
    label = "SDF Grid"
    description = "Signed distance field around the sampled motion (tube plus enclosed pockets); tight and non-convex"
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
    CAPABILITIES = frozenset({SIGNED_DISTANCE, SCULPT})

    def can(self, capability):
        """A grid is sculpted as one bone's exp-map grid (a stacked or Z-Y-Z grid is not)."""
        if capability == SCULPT:
            return self.config["space"] == "EXP_MAP" and self.params["phi"].ndim == 3
        return super().can(capability)

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
            least :data:`~...constants.MIN_PADDING`).
        resolution : int
            Grid nodes per axis, 8..128.
        space : {"EXP_MAP", "ZYZ"}
        epsilon : float
            Seed 000's threshold: radius (radians of the space) of the tube around the samples,
            > 0. The tube used is ``epsilon + padding``, at least 1.15 grid spacings.
        segments : array_like, optional
            Clip starts (bool mask ``(N,)`` or start indices), as for :func:`~...cloud.densify_slerp`.
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
        q = check_cloud(rotations)
        norms = np.linalg.norm(q, axis=-1)
        if np.any(norms < 1e-6):
            raise ValueError("the rotation cloud contains zero quaternions")
        q = q / norms[:, None]
        space = _check_space(space)
        n = _check_resolution(resolution)
        tube0 = _check_epsilon(epsilon) + check_padding(padding)
        params, report = sdf_from_rotations(q, space, n, tube0, segments, bridge, densify)
        model = cls(params, {"space": space, "resolution": n})
        model.fit_report = report
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
            return np.array(exp_map_from_quaternion_components(rows[:, 0], rows[:, 1], rows[:, 2], rows[:, 3]))
        return np.ascontiguousarray(self._grid_points(rows, bone).T)

    def _quaternions(self, x, out=None):
        """Quaternions ``(R, 4)`` of points ``x (3, R)`` (into ``out`` if given)."""
        if self.config["space"] == "EXP_MAP":
            q = np.stack(quaternion_from_exp_map_components(x[0], x[1], x[2]), axis=-1)
        else:
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
