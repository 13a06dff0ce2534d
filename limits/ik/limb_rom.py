# SPDX-License-Identifier: GPL-3.0-or-later
"""Mukai's range of limb motion: where a two-bone limb's end may be, and how its middle joint
may swivel there (Mukai, "Modeling Ranges of Limb Motion for Real-time Inverse Kinematics",
seed 004). Pure numpy, no bpy.

A *limb* is a root joint (shoulder, hip), a middle joint (elbow, knee) and an end (wrist,
ankle). Instead of one rotation limit per joint, the model bounds the limb as a whole, which
captures how the range of one joint depends on the other (the elbow's swivel on where the arm
points; how far the wrist reaches on the elbow's bend):

* the **direction** ``n`` from the root to the end: a region of the unit sphere;
* the **reach** ``|end - root|`` along each allowed direction: an interval ``[r_min, r_max]``;
* the **swivel** of the middle joint about the root->end axis: a circular interval, which
  (the seed's empirical assumption) depends on the direction only.

Frame and conventions
---------------------
All positions are in one frame fixed to the limb root's parent (typically the root bone's
rest frame, where the limb at rest points along +Y, Blender's bone axis). ``root (3,)`` is the
root joint there (default the origin); queries take *end positions* in the same frame. Angles
are radians, lengths in the frame's units.

Swivel angle (:func:`.limb_geometry.swivel_angle`, :func:`.limb_geometry.mid_position`): with ``n`` the unit root->end axis,
the reference vector ``u(n)`` is the ``pole_reference`` carried along by the shortest rotation
that takes ``rest_direction`` to ``n`` (the swing of :mod:`..geometry.swing_twist`), and ``v = n x u``.
The swivel is ``atan2(m . v, m . u)`` for the middle joint ``m = mid - root``: 0 when the
middle joint bends towards the (carried) pole reference, growing right-handed about ``n``, in
``(-pi, pi]``. Unlike the plane through ``n`` and a fixed vector (singular where ``n`` is
parallel to that vector, in both directions) this frame has one singular direction,
``-rest_direction``: pick the rest direction so that the limb never points away from it
(an arm's rest direction its hanging or T-pose direction, a leg's straight down). At exactly
``-rest_direction`` the reference is ``pole_reference`` itself.

Model (what is stored: :meth:`LimbRangeOfMotion.to_dict`)
----------------------------------------------------------
Directions are sampled by a Fibonacci sphere of ``sample_count`` points (default 400, equal
area, about 10 degrees apart; :func:`.limb_geometry.fibonacci_sphere`). Fitting gathers, for every sample,
the examples whose direction lies within ``radius`` of it and keeps

``coverage``     the arc to the nearest example direction (radians; 0 in the data)
``swivel_min``   ``swivel_max``: the shortest circular interval holding their swivels
                 (``swivel_min`` in ``[-pi, pi)``, ``swivel_min <= swivel_max <= swivel_min + 2 pi``;
                 an interval across +-pi has ``swivel_max > pi``; width ``2 pi`` is the full circle)
``reach_min``    ``reach_max``: their smallest and largest reach, as fractions of ``reach_scale``

Samples with no example within ``radius`` are dropped (``samples`` lists the kept indices).
All tables are rounded outward to half precision (a swivel bound moves by at most 0.002 rad,
a reach bound by 1/2048 of the longest reach), so a kept sample's ranges still hold every
example it gathered. A kept sample costs 12 bytes (an index and five float16); 400 samples
are at most 4.8 kB and an arm's range, which covers about half the sphere, about 2.5 kB
(:meth:`LimbRangeOfMotion.nbytes`). Config: ``sample_count``, ``radius``, ``kernel_radius``,
``threshold``, ``reach_scale``, ``grid`` and ``fill_holes``.

Lookups (derived when first queried, never stored)
--------------------------------------------------
The samples are interpolated once onto an equal-area grid over the sphere
(:mod:`..geometry.sphere_maps`, ``grid x grid`` texels, default 128: 1.6 degree texels): every texel
averages the samples within ``kernel_radius`` of its centre with a smooth compact weight
``(1 - (arc / kernel_radius)^2)^2``. A query direction then reads its four nearest texels
bilinearly: constant time per point, vectorized, continuous across texels and the map's seams.

* Reach bounds interpolate linearly; swivel intervals as their two ends, unwrapped about one
  of the averaged intervals (so intervals across +-pi average like any other).
  ``radius`` defaults to ``kernel_radius`` plus the largest texel diagonal, so every sample
  feeding a query's texels gathered every example near the query: an example's reach and
  swivel lie inside each of those samples' intervals and so inside their weighted average.
  Every fitted example is accepted by construction.
* The direction region is ``F(n) <= threshold`` for the field ``F`` that interpolates the
  samples' ``coverage`` (dropped samples count as ``radius`` away): a smoothed arc distance to
  the data. ``threshold`` is the largest ``F`` of a fitted example, so the region is the data
  dilated by about one sample spacing, following its concave notches. With ``fill_holes``
  (default) forbidden areas enclosed by the region (not connected to the largest forbidden
  area) are allowed, as the seed's closed outer hull does.

Queries: :meth:`~LimbRangeOfMotion.contains` (end, optionally with its swivel),
:meth:`~LimbRangeOfMotion.relocate` (nearest allowed end), :meth:`~LimbRangeOfMotion.swivel_range`,
:meth:`~LimbRangeOfMotion.clamp_swivel`, :meth:`~LimbRangeOfMotion.reach_range` and
:meth:`~LimbRangeOfMotion.limit` (the seed's IK pre-step: relocate the target, clamp the swivel).

Relocation: an allowed end is returned unchanged. Otherwise its direction moves to the region:
for every forbidden texel a table (built with the grid) holds the nearest allowed point, found
from the nearest allowed texel (:func:`..geometry.nearest_boundary.nearest_allowed_texels`) by searching
the great arc towards the texel for the region's edge; a query blends the entries of its four
texels bilinearly and searches the arc from that blend towards itself for the edge (regula
falsi, :data:`SEARCH_STEPS` steps), then slides along the edge to its foot (the edge's normal
from differences of ``F``) and searches across the edge again. Results always land inside and
follow the query without the plateaus and texel-sized steps of a per-texel table (the tests:
0.3 degrees outside the edge, 99 % of steps within 5x the query's, none above a texel); where the
edge is wavy the nearest point itself jumps between bumps, as any nearest-point map must. The
reach is then clamped along the new direction from the query's projection on it (the nearest
point of that ray). So "nearest" is nearest in direction first, then along the ray; the two
agree when the reach bounds vary slowly. Relocation is idempotent: its results are allowed, and allowed ends do not move.

Beyond the seed: circular swivel intervals; smooth, seam-free interpolation between samples
(the seed reads its samples' values directly); a non-convex hull at sub-sample precision
(the coverage field, instead of a polygon around the kept samples) with enclosed holes filled;
directions without data relocate to the nearest allowed direction; half-precision tables
(about the seed's size, with a field the seed did not store); constant-time queries, vectorized.

Costs (``bench/bench_limb_rom.py`` measures them): ``relocate`` is the dearest query, and most
so for forbidden ends (each runs about 30 lookups of ``F``).

The hull follows the data to about 4-5 degrees on average but wobbles with the sample spacing
(its edge sits 0 to 7 degrees outside the data): ``F`` interpolates an unsigned distance, whose
kink at the data's edge the kernel average smooths unevenly. A signed distance (from a fine
raster of the examples) interpolated by local linear fits would give a smoother, tighter edge.
"""

import json

import numpy as np

from ..constants import BONE_AXIS
from ..geometry import sphere_maps as sm
from ..geometry.nearest_boundary import nearest_allowed_texels, texel_scale
from ..geometry.sphere_image import count_islands
from ..serialize import _check_depth, _decode, _encode
from .limb_geometry import DEFAULT_POLE_REFERENCE, _pole_axis, _vectors, fibonacci_sphere, swivel_angle

#: ``kind`` in :meth:`LimbRangeOfMotion.to_dict`.
KIND = "limb_rom"

#: Default number of Fibonacci direction samples (the seed's 400).
DEFAULT_SAMPLE_COUNT = 400

#: Default grid side of the derived lookup (texels of 1.6 degrees).
DEFAULT_GRID = 128

#: Kernel radius of the interpolation, in Fibonacci spacings ``sqrt(4 pi / sample_count)``:
#: just above the Fibonacci sphere's covering radius (0.76 spacings), so every direction has
#: a sample within it.
KERNEL_SPACINGS = 0.8

#: Steps of the regula falsi that finds the region's edge on a great arc (Illinois variant).
SEARCH_STEPS = 12

#: How deep inside the region (in texels of the lookup grid, measured in the coverage field
#: ``F``) the relocation anchors of forbidden texels lie.
ANCHOR_INSET = 0.5

#: Allowed ends may exceed their reach interval by this fraction, and their swivel interval by
#: this many radians (rounding); relocated directions land this far (in ``F``) inside the region.
CONTAINS_TOLERANCE = 1e-9

#: The config keys and their types (``from_dict`` checks them).
CONFIG_TYPES = {
    "sample_count": int,
    "grid": int,
    "radius": float,
    "kernel_radius": float,
    "threshold": float,
    "reach_scale": float,
    "fill_holes": bool,
}

#: The params and their shapes (``None``: the number of kept samples).
PARAM_SHAPES = {
    "root": (3,),
    "rest_direction": (3,),
    "pole_reference": (3,),
    "samples": (None,),
    "coverage": (None,),
    "swivel_min": (None,),
    "swivel_max": (None,),
    "reach_min": (None,),
    "reach_max": (None,),
}

#: Per-sample tables (kept at half precision).
TABLES = ("coverage", "swivel_min", "swivel_max", "reach_min", "reach_max")

_LAYOUT = "equal_area"
_TWO_PI = 2.0 * np.pi

#: Rows per batch of the fit's sample-to-example distances.
_CHUNK = 4096


# -- geometry --------------------------------------------------------------------------------------
# -- small helpers ---------------------------------------------------------------------------------
def _wrap(angle):
    """Angles into ``[-pi, pi)``."""
    return (angle + np.pi) % _TWO_PI - np.pi


def _round_half(values, direction):
    """``values`` at float16 precision (as float64), rounded down (``direction`` -1) or up (+1),
    so an interval widened this way still holds what it held."""
    values = np.asarray(values, dtype=float)
    half = values.astype(np.float16)
    wrong = (half.astype(float) > values) if direction < 0 else (half.astype(float) < values)
    half = np.where(wrong, np.nextafter(half, np.float16(np.inf * direction)), half)
    return half.astype(float)


def _shortest_arc(angles):
    """``(low, high)`` of the shortest circular interval holding ``angles (m,)`` (radians):
    ``low`` in ``[-pi, pi)``, ``low <= high <= low + 2 pi``; the gap it leaves out is the largest
    between neighbouring angles."""
    a = np.sort(_wrap(angles))
    gaps = np.append(np.diff(a), a[0] + _TWO_PI - a[-1])
    widest = int(np.argmax(gaps))
    low = a[(widest + 1) % len(a)]
    return low, low + (_TWO_PI - gaps[widest])


def _directions(offsets):
    """``(unit directions, reach)`` of offsets ``(n, 3)``; zero or non-finite rows give NaN."""
    reach = np.sqrt(np.einsum("ij,ij->i", offsets, offsets))
    with np.errstate(invalid="ignore", divide="ignore"):
        good = np.isfinite(reach) & (reach > 0.0)
        d = offsets / np.where(good, reach, np.nan)[:, None]
    return d, reach, good


# -- the model -------------------------------------------------------------------------------------
class LimbRangeOfMotion:
    """A limb's range of motion (see the module docstring for the conventions).

    Build with :meth:`fit` or :meth:`fit_joints`; rebuild from plain data with :meth:`from_dict`.
    Queries take end positions ``(..., 3)`` (and swivels ``(...,)``) in the model's frame and
    answer per point; non-finite ends are never contained and relocate to themselves.
    """

    kind = KIND

    def __init__(self, params, config):
        self.params = {name: np.array(params[name], dtype=float) for name in PARAM_SHAPES}
        self.params["samples"] = np.asarray(self.params["samples"]).astype(np.int64)
        self.config = {name: CONFIG_TYPES[name](config[name]) for name in CONFIG_TYPES}
        self._lookup = None

    # -- fitting -----------------------------------------------------------------------------------
    @classmethod
    def fit(
        cls,
        end,
        swivel,
        root=None,
        *,
        pole_reference=DEFAULT_POLE_REFERENCE,
        rest_direction=BONE_AXIS,
        sample_count=DEFAULT_SAMPLE_COUNT,
        radius=None,
        grid=DEFAULT_GRID,
        fill_holes=True,
    ):
        """Fit from example poses.

        Parameters
        ----------
        end : (N, 3) array
            End positions (wrist, ankle) in the frame of the limb root's parent.
        swivel : (N,) array
            Their swivel angles (radians; :func:`.limb_geometry.swivel_angle` with the same ``pole_reference`` and
            ``rest_direction``).
        root : (3,) array, optional
            The root joint (shoulder, hip) in that frame; default the origin.
        pole_reference, rest_direction : (3,) arrays
            The swivel convention (:func:`.limb_geometry.swivel_frame`); stored with the model.
        sample_count : int
            Fibonacci direction samples (12 to 20000).
        radius : float, optional
            Gathering radius (radians). Default: the kernel radius plus the grid's largest texel
            diagonal, which makes every example fitted allowed (module docstring). Smaller radii
            follow the data more closely but no longer guarantee that.
        grid : int
            Side of the derived lookup grid (even, 8 to 1024).
        fill_holes : bool
            Allow forbidden areas enclosed by the allowed directions.

        Examples with a non-finite value or whose end is the root are ignored; ``ValueError`` when
        none is left or shapes disagree.
        """
        end = _vectors(end, "end")
        if end.ndim != 2:
            raise ValueError(f"end must have shape (N, 3), got {end.shape}")
        swivel = np.asarray(swivel, dtype=float)
        if swivel.shape != end.shape[:1]:
            raise ValueError(f"swivel must have shape ({len(end)},) like end, got {swivel.shape}")
        root = np.zeros(3) if root is None else _vectors(root, "root", (3,))
        if not np.all(np.isfinite(root)):
            raise ValueError(f"root must be finite, got {root.tolist()}")
        pole, rest = _pole_axis(pole_reference, rest_direction)
        sample_count = int(sample_count)
        if not 12 <= sample_count <= 20000:
            raise ValueError(f"sample_count must be from 12 to 20000, got {sample_count}")
        grid = _check_grid(grid)
        kernel_radius = KERNEL_SPACINGS * np.sqrt(4.0 * np.pi / sample_count)
        if radius is None:
            radius = kernel_radius + sm.distortion(_LAYOUT, (grid, grid))["max_texel_arc"]
        radius = float(radius)
        if not 0.0 < radius <= np.pi:
            raise ValueError(f"radius must be in (0, pi] radians, got {radius}")

        directions, reach, good = _directions(end - root)
        good &= np.isfinite(swivel)
        if not good.any():
            raise ValueError("no usable example: every end is non-finite or at the root")
        directions, reach, swivel = directions[good], reach[good], _wrap(swivel[good])
        reach_scale = float(reach.max())

        samples = fibonacci_sphere(sample_count)
        nearest = np.full(sample_count, -1.0)  # cosine of the arc to the nearest example
        for start in range(0, len(directions), _CHUNK):
            nearest = np.maximum(nearest, (samples @ directions[start : start + _CHUNK].T).max(axis=1))
        cos_radius = np.cos(radius)
        kept = np.flatnonzero(nearest >= cos_radius)
        table = np.empty((len(kept), 5))
        for row, k in enumerate(kept):  # (fitting only: queries never loop over samples)
            members = np.flatnonzero(directions @ samples[k] >= cos_radius)
            table[row, 1:3] = _shortest_arc(swivel[members])
            table[row, 3] = reach[members].min()
            table[row, 4] = reach[members].max()
        table[:, 0] = np.arccos(np.clip(nearest[kept], -1.0, 1.0))
        full = table[:, 2] - table[:, 1] >= _TWO_PI
        table[:, 2] = np.where(full, table[:, 1] + _TWO_PI, table[:, 2])
        params = {
            "root": root,
            "rest_direction": rest,
            "pole_reference": pole,
            "samples": kept,
            "coverage": _round_half(table[:, 0], -1),
            "swivel_min": _round_half(table[:, 1], -1),
            "swivel_max": _round_half(table[:, 2], +1),
            "reach_min": _round_half(table[:, 3] / reach_scale, -1),
            "reach_max": _round_half(table[:, 4] / reach_scale, +1),
        }
        config = {
            "sample_count": sample_count,
            "grid": grid,
            "radius": radius,
            "kernel_radius": float(kernel_radius),
            "threshold": 0.0,
            "reach_scale": reach_scale,
            "fill_holes": bool(fill_holes),
        }
        # The threshold: the largest coverage field of an example, so every example's direction
        # is allowed; raised if needed so that at least one texel centre is allowed.
        field = _coverage_grid(params, config)
        probe = _Lookup.field_only(field, grid)
        threshold = float(probe.field(directions).max())
        threshold = max(threshold, float(field.min()) + 1e3 * CONTAINS_TOLERANCE)
        config["threshold"] = float(np.nextafter(threshold + 2.0 * CONTAINS_TOLERANCE, np.inf))
        return cls(params, config)

    @classmethod
    def fit_joints(cls, root, mid, end, *, pole_reference=DEFAULT_POLE_REFERENCE, rest_direction=BONE_AXIS, **options):
        """:meth:`fit` from joint positions: ``root`` ``(3,)`` (or ``(N, 3)`` when it moves in
        the frame: then each pose is taken relative to its own root and the model's root is the
        origin), ``mid`` and ``end`` ``(N, 3)``; the swivels come from :func:`.limb_geometry.swivel_angle`."""
        root = _vectors(root, "root")
        mid, end = _vectors(mid, "mid"), _vectors(end, "end")
        swivel = swivel_angle(root, mid, end, pole_reference, rest_direction)
        if root.ndim == 1:
            return cls.fit(end, swivel, root, pole_reference=pole_reference, rest_direction=rest_direction, **options)
        return cls.fit(end - root, swivel, None, pole_reference=pole_reference, rest_direction=rest_direction, **options)

    # -- queries -----------------------------------------------------------------------------------
    def contains(self, end, swivel=None):
        """``(...,)`` bool: is the end position allowed (its direction in the region, its reach in
        the interval there) and, when ``swivel (...,)`` is given, the swivel too."""
        d, reach, good, lead = self._split(end)
        lookup = self._runtime()
        inside = good & lookup.allowed(d)
        low, high = lookup.reach(d)
        tol = CONTAINS_TOLERANCE * self.config["reach_scale"]
        inside &= (reach >= low - tol) & (reach <= high + tol)
        if swivel is not None:
            swivel = np.broadcast_to(np.asarray(swivel, dtype=float), lead).reshape(-1)
            inside &= _in_interval(swivel, *lookup.swivel(d))
        return inside.reshape(lead)

    def relocate(self, end):
        """The nearest allowed end positions ``(..., 3)``: allowed ends unchanged; otherwise the
        direction moved to the nearest allowed direction (by arc) and the reach clamped there
        (module docstring). An end at the root goes to the most central allowed direction at
        its smallest reach. Non-finite ends are returned unchanged. Idempotent."""
        end = _vectors(end, "end")
        lead = end.shape[:-1]
        flat = np.array(end.reshape(-1, 3), dtype=float)
        d, reach, good, _ = self._split(flat)
        lookup = self._runtime()
        root = self.params["root"]
        low, high = lookup.reach(d)
        tol = CONTAINS_TOLERANCE * self.config["reach_scale"]
        allowed = lookup.allowed(d)
        move = np.flatnonzero(finite_rows(flat) & ~(good & allowed & (reach >= low - tol) & (reach <= high + tol)))
        if move.size:
            offsets = flat[move] - root
            dm = np.where(good[move, None], d[move], lookup.home)
            out = ~allowed[move]  # (the home direction of ends at the root is allowed)
            if out.any():
                dm[out] = lookup.nearest_direction(dm[out])
            lo, hi = lookup.reach(dm)
            along = np.clip(np.sum(offsets * dm, axis=-1), lo, hi)
            flat[move] = root + along[:, None] * dm
        return flat.reshape(lead + (3,))

    def swivel_range(self, end):
        """``(low, high)``, two ``(...,)`` arrays: the allowed swivel interval at the direction of
        ``end`` (``low`` in ``[-pi, pi)``, ``low <= high <= low + 2 pi``; ``high - low == 2 pi``
        is the full circle). Defined for every direction (outside the region it continues the
        nearest data); use :meth:`limit` to relocate first. NaN for non-finite ends."""
        d, _, good, lead = self._split(end)
        low, high = self._runtime().swivel(d)
        low, high = np.where(good, low, np.nan), np.where(good, high, np.nan)
        return low.reshape(lead), high.reshape(lead)

    def clamp_swivel(self, end, swivel):
        """Swivels ``(...,)`` moved into :meth:`swivel_range` at ``end``: inside ones unchanged,
        others to the nearer end of the interval (around the circle), in ``[-pi, pi)``."""
        d, _, good, lead = self._split(end)
        swivel = np.broadcast_to(np.asarray(swivel, dtype=float), lead).reshape(-1)
        low, high = self._runtime().swivel(d)
        inside = _in_interval(swivel, low, high)
        above_high = (swivel - high) % _TWO_PI  # how far past ``high``, going up
        below_low = (low - swivel) % _TWO_PI  # how far short of ``low``
        clamped = np.where(above_high <= below_low, _wrap(high), low)
        return np.where(inside | ~good, swivel, clamped).reshape(lead)

    def limit(self, end, swivel):
        """The seed's IK pre-step: ``(end', swivel')``, the target relocated into the workspace
        (:meth:`relocate`) and the swivel clamped at it (:meth:`clamp_swivel`)."""
        moved = self.relocate(end)
        return moved, self.clamp_swivel(moved, swivel)

    def reach_range(self, direction):
        """``(low, high)``, two ``(...,)`` arrays: the reach interval along ``direction (..., 3)``
        (normalized here), in length units."""
        direction = _vectors(direction, "direction")
        lead = direction.shape[:-1]
        d, _, good = _directions(direction.reshape(-1, 3))
        low, high = self._runtime().reach(np.where(good[:, None], d, self._runtime().home))
        return np.where(good, low, np.nan).reshape(lead), np.where(good, high, np.nan).reshape(lead)

    def allows_direction(self, direction):
        """``(...,)`` bool: is ``direction (..., 3)`` in the allowed region."""
        direction = _vectors(direction, "direction")
        d, _, good = _directions(direction.reshape(-1, 3))
        return (good & self._runtime().allowed(d)).reshape(direction.shape[:-1])

    def nearest_direction(self, direction):
        """Unit directions ``(..., 3)``: allowed ones (normalized) unchanged, others moved to the
        nearest allowed direction (module docstring)."""
        direction = _vectors(direction, "direction")
        d, _, good = _directions(direction.reshape(-1, 3))
        d = np.where(good[:, None], d, self._runtime().home)
        lookup = self._runtime()
        out = np.flatnonzero(~lookup.allowed(d))
        if out.size:
            d[out] = lookup.nearest_direction(d[out])
        return d.reshape(direction.shape)

    # -- plain data --------------------------------------------------------------------------------
    def to_dict(self):
        """``{"kind", "config", "params"}``: config of plain values, params numpy arrays."""
        return {"kind": KIND, "config": dict(self.config), "params": {k: np.array(v) for k, v in self.params.items()}}

    @classmethod
    def from_dict(cls, data):
        """Rebuild from :meth:`to_dict` output; ``ValueError`` for anything malformed."""
        if not isinstance(data, dict):
            raise ValueError(f"a limb range of motion must be a mapping, got {type(data).__name__}")
        if data.get("kind") != KIND:
            raise ValueError(f"expected a {KIND!r} model, got {data.get('kind')!r}")
        config, params = data.get("config"), data.get("params")
        if not isinstance(config, dict) or not isinstance(params, dict):
            raise ValueError(f"{KIND}: 'config' and 'params' must be mappings")
        if set(config) != set(CONFIG_TYPES):
            raise ValueError(f"{KIND}: config keys must be {sorted(CONFIG_TYPES)}, got {sorted(config)}")
        for name, kind in CONFIG_TYPES.items():
            value = config[name]
            if kind is bool:
                ok = isinstance(value, bool)
            else:
                ok = isinstance(value, (int, float)) and not isinstance(value, bool) and bool(np.isfinite(value))
                ok = ok and (kind is float or float(value).is_integer())
            if not ok:
                raise ValueError(f"{KIND}: config {name!r} must be {kind.__name__}, got {value!r}")
        if set(params) != set(PARAM_SHAPES):
            raise ValueError(f"{KIND}: params must be {sorted(PARAM_SHAPES)}, got {sorted(params)}")
        checked = {}
        for name, shape in PARAM_SHAPES.items():
            try:
                value = np.asarray(params[name], dtype=float)
            except (TypeError, ValueError):
                raise ValueError(f"{KIND}: parameter {name!r} is not numeric") from None
            if value.ndim != len(shape) or any(s is not None and s != v for s, v in zip(shape, value.shape)):
                raise ValueError(f"{KIND}: parameter {name!r} must have shape {shape}, got {value.shape}")
            if not np.all(np.isfinite(value)):
                raise ValueError(f"{KIND}: parameter {name!r} contains NaN or infinity")
            checked[name] = value
        if not np.array_equal(checked["samples"], np.round(checked["samples"])):
            raise ValueError(f"{KIND}: 'samples' must hold integer indices")
        model = cls(checked, config)
        model.validate()
        return model

    def validate(self):
        """``ValueError`` when params and config do not make a model."""
        c, p = self.config, self.params
        if not 12 <= c["sample_count"] <= 20000:
            raise ValueError(f"{KIND}: sample_count must be from 12 to 20000, got {c['sample_count']}")
        _check_grid(c["grid"])
        for name in ("radius", "kernel_radius"):
            if not (np.isfinite(c[name]) and 0.0 < c[name] <= np.pi):
                raise ValueError(f"{KIND}: {name} must be in (0, pi], got {c[name]!r}")
        if not (np.isfinite(c["threshold"]) and 0.0 < c["threshold"] <= np.pi):
            raise ValueError(f"{KIND}: threshold must be in (0, pi], got {c['threshold']!r}")
        if not (np.isfinite(c["reach_scale"]) and c["reach_scale"] > 0.0):
            raise ValueError(f"{KIND}: reach_scale must be positive, got {c['reach_scale']!r}")
        rest, pole = p["rest_direction"], p["pole_reference"]
        if abs(np.linalg.norm(rest) - 1.0) > 1e-9 or abs(np.linalg.norm(pole) - 1.0) > 1e-9 or abs(rest @ pole) > 1e-9:
            raise ValueError(f"{KIND}: rest_direction and pole_reference must be perpendicular unit vectors")
        samples = p["samples"]
        lengths = {len(p[name]) for name in ("samples",) + TABLES}
        if len(lengths) != 1 or not len(samples):
            raise ValueError(f"{KIND}: samples and their tables must have one non-zero length, got {sorted(lengths)}")
        if samples[0] < 0 or samples[-1] >= c["sample_count"] or np.any(np.diff(samples) <= 0):
            raise ValueError(f"{KIND}: samples must be increasing indices below sample_count ({c['sample_count']})")
        if np.any(p["coverage"] < 0.0) or np.any(p["coverage"] > np.pi):
            raise ValueError(f"{KIND}: coverage must be arcs in [0, pi]")
        low, high = p["swivel_min"], p["swivel_max"]
        if np.any(np.abs(low) > np.pi + 0.01) or np.any(high < low) or np.any(high - low > _TWO_PI + 0.01):
            raise ValueError(f"{KIND}: swivel intervals need -pi <= min <= max <= min + 2 pi")
        if np.any(p["reach_min"] < 0.0) or np.any(p["reach_max"] < p["reach_min"]) or np.any(p["reach_max"] > 1.01):
            raise ValueError(f"{KIND}: reach intervals need 0 <= min <= max <= 1 (fractions of reach_scale)")

    def nbytes(self):
        """Bytes of what defines the model at its stored precision: float16 tables, an index per
        kept sample (2 bytes up to 65536 samples), three vectors and the config's seven numbers
        (8 bytes each)."""
        kept = len(self.params["samples"])
        return kept * (2 * len(TABLES) + 2) + 3 * 3 * 8 + len(CONFIG_TYPES) * 8

    def __repr__(self):
        return f"<LimbRangeOfMotion {len(self.params['samples'])}/{self.config['sample_count']} samples, {self.nbytes()} bytes>"

    # -- internals ---------------------------------------------------------------------------------
    def _runtime(self):
        if self._lookup is None:
            self._lookup = _Lookup.build(self.params, self.config)
        return self._lookup

    def _split(self, end):
        """``(directions (n, 3), reach (n,), good (n,), lead shape)`` of ends ``(..., 3)``; bad
        rows (non-finite, at the root) get the home direction."""
        end = _vectors(end, "end")
        lead = end.shape[:-1]
        d, reach, good = _directions(end.reshape(-1, 3) - self.params["root"])
        d = np.where(good[:, None], d, self._runtime().home)
        return d, reach, good, lead


def finite_rows(points):
    """``(n,)`` bool: rows of ``points (n, 3)`` with only finite values."""
    return np.isfinite(points).all(axis=-1)


def _in_interval(angle, low, high):
    """``angle`` in the circular interval ``[low, high]`` (with :data:`CONTAINS_TOLERANCE`)."""
    past_low = (angle - low) % _TWO_PI
    return (past_low <= high - low + CONTAINS_TOLERANCE) | (past_low >= _TWO_PI - CONTAINS_TOLERANCE) | (high - low >= _TWO_PI)


def _check_grid(grid):
    try:
        ok = not isinstance(grid, bool) and float(grid).is_integer() and 8 <= int(grid) <= 1024 and int(grid) % 2 == 0
    except (TypeError, ValueError, OverflowError):
        ok = False
    if not ok:
        raise ValueError(f"grid must be an even int from 8 to 1024, got {grid!r}")
    return int(grid)


# -- the derived lookup ----------------------------------------------------------------------------
def _kernel_rows(centres, samples, radius):
    """``(weights (T, S), nearest (T,))``: the interpolation weights of samples ``(S, 3)`` at
    texel centres ``(T, 3)``, ``(1 - (arc / radius)^2)^2`` within ``radius``, and each texel's
    nearest sample (for texels no sample reaches)."""
    dots = np.clip(centres @ samples.T, -1.0, 1.0)
    arc = np.arccos(dots) / radius
    weights = np.where(arc < 1.0, (1.0 - arc * arc) ** 2, 0.0)
    return weights, np.argmax(dots, axis=1)


def _interpolate(weights, nearest, values):
    """Kernel averages ``(T, C)`` of per-sample ``values (S, C)``; texels without weight take their
    nearest sample's values."""
    total = weights.sum(axis=1)
    safe = np.where(total > 0.0, total, 1.0)
    return np.where((total > 0.0)[:, None], (weights @ values) / safe[:, None], values[nearest])


def _coverage_grid(params, config):
    """The coverage field ``F`` at the texel centres ``(grid * grid,)``: the kernel average of every
    sample's arc to the data, dropped samples counting ``radius``."""
    grid, count = config["grid"], config["sample_count"]
    coverage = np.full(count, config["radius"])
    coverage[params["samples"]] = np.minimum(params["coverage"], config["radius"])
    centres = sm.texel_centres(_LAYOUT, (grid, grid)).reshape(-1, 3)
    weights, nearest = _kernel_rows(centres, fibonacci_sphere(count), config["kernel_radius"])
    return _interpolate(weights, nearest, coverage[:, None])[:, 0]


class _Lookup:
    """Bilinear lookups in the padded grid (one-texel border across the seams): the coverage field,
    reach and swivel bounds, and the relocation anchors. Built from a model's data; never stored."""

    def __init__(self, grid):
        self.grid = grid
        self.stride = grid + 2

    @classmethod
    def field_only(cls, field, grid):
        lookup = cls(grid)
        lookup.field_table = _padded(field, grid)
        return lookup

    @classmethod
    def build(cls, params, config):
        grid = config["grid"]
        lookup = cls(grid)
        threshold = config["threshold"]
        lookup.threshold = threshold
        lookup.target = threshold - CONTAINS_TOLERANCE  # relocated directions land this far inside
        field = _coverage_grid(params, config)
        centres = sm.texel_centres(_LAYOUT, (grid, grid)).reshape(-1, 3)
        if config["fill_holes"]:
            field = _fill_holes(field, field <= lookup.target, grid, lookup.target - CONTAINS_TOLERANCE)
        lookup.field_table = _padded(field, grid)

        # Ranges: kernel averages over the kept samples, each swivel interval unwrapped about the
        # interval of the texel's nearest kept sample.
        kept = fibonacci_sphere(config["sample_count"])[params["samples"]]
        weights, nearest = _kernel_rows(centres, kept, config["kernel_radius"])
        reference = 0.5 * (params["swivel_min"] + params["swivel_max"])[nearest]  # (T,)
        half = 0.5 * (params["swivel_max"] - params["swivel_min"])
        centre = _wrap(0.5 * (params["swivel_min"] + params["swivel_max"])[None, :] - reference[:, None])
        total = weights.sum(axis=1)
        reach = _interpolate(weights, nearest, np.stack((params["reach_min"], params["reach_max"]), axis=-1))
        reach *= config["reach_scale"]
        safe = np.where(total > 0.0, total, 1.0)
        unwrapped = np.where(total > 0.0, np.sum(weights * centre, axis=1) / safe, 0.0) + reference
        width = np.where(total > 0.0, (weights @ half) / safe, half[nearest])
        lookup.reach_low = _padded(reach[:, 0], grid)
        lookup.reach_high = _padded(reach[:, 1], grid)
        lookup.swivel_centre = _padded(unwrapped, grid)
        lookup.swivel_half = _padded(width, grid)

        # Anchors: allowed texel centres stand for themselves; forbidden texels hold the allowed
        # point where the great arc from their nearest allowed texel leaves the region.
        field_at_centres = lookup.field(centres)
        allowed = field_at_centres <= lookup.target
        if not allowed.any():
            raise ValueError(f"{KIND}: the threshold allows no direction")
        # The edge they hold is ANCHOR_INSET texels (in F) inside the region's, so that the blend
        # of neighbouring anchors is allowed even where the edge wiggles from texel to texel.
        anchors = centres.copy()
        forbidden = np.flatnonzero(~allowed)
        if forbidden.size:
            deep_target = lookup.target - ANCHOR_INSET * texel_scale((grid, grid))
            deep = field_at_centres <= deep_target
            if not deep.any():
                deep, deep_target = allowed, lookup.target
            index, _ = nearest_allowed_texels(deep.reshape(grid, grid), _LAYOUT)
            anchors[forbidden] = lookup.edge(centres[index[forbidden]], centres[forbidden], deep_target)
        lookup.anchors = [_padded(anchors[:, i], grid) for i in range(3)]
        lookup.home = centres[np.argmin(np.where(allowed, field, np.inf))]
        return lookup

    # -- lookups -----------------------------------------------------------------------------------
    def taps(self, d):
        """``(base (n,), weights (4, n))``: the padded index of the first of the four texels
        around unit directions ``d (n, 3)`` and the bilinear weights of the four (base, base + 1,
        base + stride, base + stride + 1)."""
        u, v = sm._FORWARD[_LAYOUT](d[:, 0], d[:, 1], d[:, 2])
        x = u * self.grid - 0.5
        y = v * self.grid - 0.5
        x0 = np.clip(np.floor(x), -1, self.grid - 1)
        y0 = np.clip(np.floor(y), -1, self.grid - 1)
        fx = np.clip(x - x0, 0.0, 1.0)
        fy = np.clip(y - y0, 0.0, 1.0)
        base = (y0.astype(np.int64) + 1) * self.stride + (x0.astype(np.int64) + 1)
        gx, gy = 1.0 - fx, 1.0 - fy
        return base, (gx * gy, fx * gy, gx * fy, fx * fy)

    def _read(self, table, base, weights):
        s = self.stride
        return (
            table.take(base) * weights[0]
            + table.take(base + 1) * weights[1]
            + table.take(base + s) * weights[2]
            + table.take(base + s + 1) * weights[3]
        )

    def field(self, d, taps=None):
        base, weights = self.taps(d) if taps is None else taps
        return self._read(self.field_table, base, weights)

    def allowed(self, d):
        return self.field(d) <= self.threshold

    def reach(self, d):
        taps = self.taps(d)
        return self._read(self.reach_low, *taps), self._read(self.reach_high, *taps)

    def swivel(self, d):
        """``(low, high)`` at unit directions ``d (n, 3)``: the four texels' intervals unwrapped
        about the first's centre, their ends averaged (see :func:`_wrap`)."""
        base, weights = self.taps(d)
        s = self.stride
        first = self.swivel_centre.take(base)
        low = np.zeros(len(base))
        high = np.zeros(len(base))
        for offset, weight in zip((0, 1, s, s + 1), weights):
            centre = first + _wrap(self.swivel_centre.take(base + offset) - first)
            half = self.swivel_half.take(base + offset)
            low += weight * (centre - half)
            high += weight * (centre + half)
        width = np.minimum(high - low, _TWO_PI)
        low = _wrap(low)
        return low, low + width

    def nearest_direction(self, d):
        """Allowed directions ``(n, 3)`` for forbidden unit directions ``d (n, 3)``: the blend of
        the four texels' anchors (or the heaviest texel's when the blend is not allowed), then
        the region's edge on the great arc from it towards ``d``."""
        base, weights = self.taps(d)
        anchor = np.stack([self._read(table, base, weights) for table in self.anchors], axis=-1)
        anchor /= np.maximum(np.linalg.norm(anchor, axis=-1, keepdims=True), 1e-300)
        bad = ~(self.field(anchor) <= self.target)
        if bad.any():
            heaviest = base[bad] + np.array([0, 1, self.stride, self.stride + 1])[np.argmax(np.stack(weights)[:, bad], axis=0)]
            anchor[bad] = np.stack([table.take(heaviest) for table in self.anchors], axis=-1)
        return self.refine(self.edge(anchor, d, self.target), d)

    def refine(self, e, d):
        """Edge points ``e (n, 3)`` (allowed) moved along the edge to the foot of ``d (n, 3)``: the
        edge's outward normal at ``e`` from central differences of ``F`` (a quarter texel apart),
        the tangential offset of ``d`` taken, and the edge searched again across the normal
        there. Rows where that search has no allowed start keep ``e``."""
        h = 0.25 * texel_scale((self.grid, self.grid))
        helper = np.where(np.abs(e[:, :1]) < 0.9, np.array([1.0, 0.0, 0.0]), np.array([0.0, 0.0, 1.0]))
        t1 = np.cross(e, helper)
        t1 /= np.linalg.norm(t1, axis=-1, keepdims=True)
        t2 = np.cross(e, t1)
        g1 = self.field(_normalized(e + h * t1)) - self.field(_normalized(e - h * t1))
        g2 = self.field(_normalized(e + h * t2)) - self.field(_normalized(e - h * t2))
        normal = g1[:, None] * t1 + g2[:, None] * t2
        norm = np.linalg.norm(normal, axis=-1, keepdims=True)
        normal = np.where(norm > 0.0, normal / np.where(norm > 0.0, norm, 1.0), 0.0)
        offset = d - np.sum(d * e, axis=-1, keepdims=True) * e
        offset -= np.sum(offset * normal, axis=-1, keepdims=True) * normal
        foot = _normalized(e + offset)
        reach = 2.0 * h
        start = _normalized(foot - reach * normal)
        stop = _normalized(foot + reach * normal)
        ok = (norm[:, 0] > 0.0) & (self.field(start) <= self.target) & (self.field(stop) > self.threshold)
        if ok.any():
            e = e.copy()
            e[ok] = self.edge(start[ok], stop[ok], self.target)
        return e

    def edge(self, inside, outside, target):
        """Points ``(n, 3)`` near where the great arc from ``inside`` (``F`` at most ``target``) to
        ``outside`` (forbidden) unit directions crosses ``F = target``, with ``F <= target``: the
        Illinois regula falsi on ``t`` along the chord ``inside + t (outside - inside)``, keeping
        the end at or below ``target``. Near-antipodal pairs, and ``inside`` points above
        ``target``, return ``inside``."""
        span = outside - inside
        g_lo = self.field(inside) - target
        g_hi = self.field(outside) - target
        usable = (np.sum(inside * outside, axis=-1) > -0.999) & (g_lo <= 0.0)
        t_lo, t_hi = np.zeros(len(inside)), np.ones(len(inside))
        best = inside.copy()
        last = np.zeros(len(inside), dtype=np.int8)
        for _ in range(SEARCH_STEPS):
            denom = g_hi - g_lo
            t = t_lo + (t_hi - t_lo) * np.where(denom > 0.0, -g_lo / np.where(denom > 0.0, denom, 1.0), 0.5)
            t = np.clip(t, t_lo, t_hi)
            p = inside + t[:, None] * span
            p /= np.maximum(np.linalg.norm(p, axis=-1, keepdims=True), 1e-300)
            g = self.field(p) - target
            low_side = (g <= 0.0) & usable
            best = np.where(low_side[:, None], p, best)
            # Illinois: halve the value kept at an end that stays twice in a row
            g_hi = np.where(low_side & (last == 1), 0.5 * g_hi, g_hi)
            g_lo = np.where(~low_side & (last == -1), 0.5 * g_lo, g_lo)
            t_lo, g_lo = np.where(low_side, t, t_lo), np.where(low_side, g, g_lo)
            t_hi, g_hi = np.where(low_side, t_hi, t), np.where(low_side, g_hi, g)
            last = np.where(low_side, 1, -1).astype(np.int8)
        return best


def _normalized(v):
    return v / np.maximum(np.linalg.norm(v, axis=-1, keepdims=True), 1e-300)


def _padded(values, grid):
    """Texel values ``(grid * grid,)`` with a one-texel border across the seams, flat
    ``((grid + 2) ** 2,)``."""
    return np.ascontiguousarray(values[sm.padded_texels(_LAYOUT, (grid, grid))])


def _fill_holes(field, allowed, grid, value):
    """``field (T,)`` lowered to ``value`` on forbidden texels not connected (8-neighbours, across
    seams) to the largest forbidden area: the holes the allowed region encloses."""
    if allowed.all():
        return field
    count, labels = count_islands(~allowed.reshape(grid, grid), _LAYOUT)
    if count < 2:
        return field
    labels = labels.ravel()
    ids, sizes = np.unique(labels[labels >= 0], return_counts=True)
    holes = (labels >= 0) & (labels != ids[np.argmax(sizes)])
    return np.where(holes, np.minimum(field, value), field)


# -- JSON ------------------------------------------------------------------------------------------
def limb_to_json(model):
    """A compact JSON string for ``model`` (arrays packed as :mod:`..serialize` packs a limit's)."""
    return json.dumps(_encode(model.to_dict()), separators=(",", ":"))


def limb_from_json(text):
    """Parse and validate :func:`limb_to_json` output; ``ValueError`` for anything else."""
    try:
        data = json.loads(text)
    except (TypeError, ValueError, RecursionError) as err:
        raise ValueError(f"not a limb range of motion: invalid JSON ({err})") from None
    _check_depth(data)
    try:
        return LimbRangeOfMotion.from_dict(_decode(data))
    except ValueError:
        raise
    except (TypeError, KeyError, IndexError, AttributeError, OverflowError) as err:
        raise ValueError(f"not a limb range of motion: {type(err).__name__}: {err}") from None


def limb_swivels(model, mid, end):
    """Swivels ``(N,)`` of limb poses (middle joints and ends ``(N, 3)`` in the model's frame)
    in ``model``'s convention."""
    return swivel_angle(model.params["root"], mid, end, model.params["pole_reference"], model.params["rest_direction"])
