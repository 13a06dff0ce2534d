# SPDX-License-Identifier: GPL-3.0-or-later
"""Kelly's "sinus texture" joint limit: swing and twist limits painted into an image.

A rotation ``q`` (reference-relative, ``(w, x, y, z)``) is split about the bone axis +Y into a
swing and a twist. The swing is represented by its *direction* ``d = q (+Y) q*``, a unit
vector in the reference frame; the twist by its angle in ``(-pi, pi]`` radians (right-handed
about +Y; the cover of ``q`` does not matter). A texture over the sphere of directions
(:mod:`...geometry.sphere_maps`; default the equal-area octahedral layout centred on the rest direction
+Y, or Kelly's own 256 x 512 two-hemisphere layout) stores per texel:

Parameters
----------
image : (H, W, 4) float array
    Channels (see :data:`MASK`, ...): ``0`` allowed-swing mask (1 allowed, 0 forbidden),
    ``1`` twist minimum and ``2`` twist maximum (radians, ``min <= max``; defined on every
    texel, smoothly continued beyond the allowed region so bilinear lookups near the boundary
    are well behaved), ``3`` stress 0..1 (0 deep inside, 1 at and beyond the boundary).
    Kept at half precision (float16; twist limits rounded outward, so every sample that was
    inside stays inside: steps of at most 0.002 rad, 0.11 degree): the image is all that
    defines the limit, and it is stored (:mod:`...serialize`) in a quarter of the space of
    float64.

Config: ``layout`` (str), ``height`` and ``width`` (int, the texture shape) and ``islands``
(int, the number of connected allowed regions; more than one usually means the data or the
painting left a gap). A stacked model adds a leading bone axis to the image; only models of
one layout and size stack (:meth:`SinusTextureLimit.group_key`).

Derived data, never stored: Kelly's nearest-boundary table, for every forbidden texel the
allowed direction nearest (by arc length on the sphere) to the texel's centre, refined onto
the boundary of the allowed region (:func:`...geometry.nearest_boundary.nearest_allowed_points`). Projection fills
it texel by texel as swings land in forbidden texels (the same entries as the whole table,
to an ulp of numpy's trigonometry), so loading and stacking limits costs no table building;
:meth:`SinusTextureLimit.nearest_table` gives the whole table.

Lookups: the mask by the texel holding ``d`` (nearest texel), twist range and stress by
bilinear interpolation between texel centres (across the layout's seams). ``contains`` tests
the mask, then the twist range. ``project`` (Kelly's "considered in isolation") replaces a
forbidden swing by the table entry of its texel, a constant-time lookup, then clamps the twist
to the range at the resulting swing; :meth:`SinusTextureLimit.project_along` (Kelly's "known
last valid position") searches along the great arc from the previous valid swing instead and
guards against concave boundary jumping.

Kelly's dissertation (2008, seed 003) describes the format; this module follows it with these
changes: directions are looked up in arc length everywhere (the nearest-boundary table, the
morphology that closes sparse data), the default layout has no seam or pole near the rest
direction, twist limits are signed angles (not magnitudes either side of zero), and
projected swings land on the boundary (within 1 % of a texel), not on a texel centre.
"""

import copy

import numpy as np

from ...checks import check_cloud, check_padding
from ...constants import CHUNK_ROWS, CONTAINS_TOLERANCE, IDENTITY_QUATERNION
from ...geometry import sphere_maps as sm
from ...geometry.nearest_boundary import (
    INSET,
    boundary_candidates,
    boundary_texels,
    nearest_allowed_points,
    nearest_points,
    texel_scale,
    toward,
)
from ...geometry.quaternion import as_quaternions, check_finite, quaternion_angle
from ...geometry.sphere_image import (
    bilinear_taps,
    count_islands,
    dilate,
    distance_transform,
    fill_smooth,
    spherical_hull_mask,
    texel_corner,
)
from ...geometry.swing_twist import compose_direction_twist, direction_twist, direction_twist_components
from ...model import ARC_SEARCH, TEXTURE, LimitModel, subset_bones
from ...model import STRESS as STRESS_MAP
from .image import MASK, STRESS, TWIST_MAX, TWIST_MIN, check_channels, check_image

#: Default closing radius (radians) of :meth:`SinusTextureLimit.fit`: gaps in the sampled
#: swings narrower than about twice this are filled.
DEFAULT_CLOSING = 0.12

#: Arc (radians) over which stress falls from 1 at the boundary to 0 inside.
STRESS_RAMP = 0.25
#: :meth:`SinusTextureLimit.project_near` searches the path from the previous pose when the
#: projection lies more than this many texels away from it.
GUARD_TEXELS = 8.0
#: Halvings of the binary search for where a path leaves the allowed region: 2^-12 of the
#: search's sample spacing (a quarter texel), far below the 1 % of a texel the result is then
#: pulled inside (:data:`...geometry.nearest_boundary.INSET`).
CROSSING_BISECTIONS = 12


def _stress_from_mask(mask, layout, depth=None):
    """Stress 0..1: 1 on and beyond the boundary, falling linearly with the arc distance
    ``depth`` to the nearest forbidden texel to 0 at :data:`STRESS_RAMP` radians inside."""
    mask = np.asarray(mask, dtype=bool)
    if mask.all():
        return np.zeros(mask.shape)
    if depth is None:
        depth = distance_transform(~mask, layout, STRESS_RAMP)
    return np.where(mask, 1.0 - np.clip(depth / STRESS_RAMP, 0.0, 1.0), 1.0)


#: Radians of swing over which a sinus texture's twist range is pooled (15 degrees): a texel
#: holds the twists of every sample swung within about this arc of it. The range of the samples
#: in one texel (about a degree wide) is a few degrees of twist: new motion of the same joint,
#: swung a little differently, falls outside it almost everywhere.
TWIST_RADIUS = np.radians(15.0)


def _twist_envelope(low, high, layout, shape, radius):
    """Per-texel twist bounds ``(H * W,)`` (``inf`` / ``-inf`` where no sample fell) widened to
    the lowest and highest of the texels within about ``radius`` radians: repeated 8-neighbour
    minimum / maximum filters, one texel's mean width a step."""
    steps = int(np.ceil(radius / np.sqrt(4.0 * np.pi / (shape[0] * shape[1])))) if radius > 0 else 0
    if steps == 0:
        return low, high
    neighbours = sm.neighbour_texels(layout, tuple(shape))
    for _ in range(steps):
        low = np.minimum(low, low[neighbours].min(axis=0))
        high = np.maximum(high, high[neighbours].max(axis=0))
    return low, high


# -- the model ----------------------------------------------------------------------------------
class SinusTextureLimit(LimitModel):
    """Kelly's sinus texture: per-direction swing mask and twist range (module docstring)."""

    kind = "sinus_texture"
    label = "Sinus Texture"
    description = "Swing region and per-swing twist range painted into a texture over the sphere (Kelly); any shape"
    PARAM_SHAPES = {"image": (None, None, 4)}
    SINGLE_PRECISION = ("image",)
    DERIVED_PARAMS = ("nearest",)

    @classmethod
    def round_single(cls, name, value):
        """The image at half precision, kept as float16 in memory too (a quarter of float64:
        loading, stacking and tabling a big rig's textures moves that much less), the twist
        range rounded outward (training twists stay inside) but not beyond the +-2 pi that
        validation allows."""
        value = np.asarray(value)
        if value.dtype == np.float16:  # loaded or stacked: already rounded
            return value
        value = value.astype(float)
        half = value.astype(np.float16)
        if np.array_equal(half, value):
            return half
        if name == "image" and value.ndim >= 1 and value.shape[-1] == 4:
            low, high = half[..., TWIST_MIN], half[..., TWIST_MAX]
            low[...] = np.where(low > value[..., TWIST_MIN], np.nextafter(low, np.float16(-np.inf)), low)
            high[...] = np.where(high < value[..., TWIST_MAX], np.nextafter(high, np.float16(np.inf)), high)
            full_turn = np.float16(2.0 * np.pi)  # rounds down: the largest half below 2 pi
            np.clip(low, -full_turn, full_turn, out=low)
            np.clip(high, -full_turn, full_turn, out=high)
        return half

    FIT_OPTIONS = ("padding",)
    CAPABILITIES = frozenset({STRESS_MAP, TEXTURE, ARC_SEARCH})

    def __init__(self, params, config=None):
        super().__init__(params, config)
        self._runtime_cache = None
        self.report = {}

    # -- construction --------------------------------------------------------------------------
    @classmethod
    def fit(
        cls, rotations, padding=0.05, size=None, layout=sm.DEFAULT_LAYOUT, closing=DEFAULT_CLOSING, twist_radius=TWIST_RADIUS
    ):
        """Build the texture from a cloud of reference-relative rotations.

        Parameters
        ----------
        rotations : (N, 4) array
            Unit quaternions ``(w, x, y, z)``.
        padding : float
            Radians: the swing region is grown by this arc and every twist range by this angle
            on both sides (at least 1e-3).
        size : None, int or (H, W)
            Texture shape (see :func:`...geometry.sphere_maps.texture_shape`); default 256 x 256 for the
            octahedral layouts, 512 x 256 (Kelly's 256 wide by 512 high) for ``"kelly"``.
        layout : str
            One of :data:`...geometry.sphere_maps.LAYOUTS`.
        closing : float
            Radians: the swings' texels are closed (dilated by ``closing + padding``, then eroded
            by ``closing``, by arc length on the sphere) so sparse data gives a closed region.

        twist_radius : float
            Radians: a texel's twist range holds the twists of every sample whose swing lies
            within about this arc of it (:data:`TWIST_RADIUS`; 0: only its own samples).

        The twist range of each texel is the range of the samples within ``twist_radius`` of
        it (:func:`_twist_envelope`), filled
        smoothly elsewhere (:func:`...geometry.sphere_image.fill_smooth`), padded, then lowered / raised just enough that
        every sample is inside its bilinearly interpolated range. Stress grows linearly from
        ``STRESS_RAMP`` radians inside (0) to the boundary (1). ``report`` (and config
        ``islands``) counts the connected allowed regions.
        """
        q = check_cloud(rotations)
        padding = check_padding(padding)
        closing = float(closing)
        if not np.isfinite(closing) or closing < 0:
            raise ValueError(f"closing must be a finite, non-negative number of radians, got {closing!r}")
        layout = sm.check_layout(layout)
        shape = sm.texture_shape(size, layout)
        d, twist = direction_twist(q)
        u, v = sm._FORWARD[layout](d[:, 0], d[:, 1], d[:, 2])
        texel = sm.uv_to_texel(u, v, shape)
        count = np.bincount(texel, minlength=shape[0] * shape[1])
        occupied = (count > 0).reshape(shape)

        grown = dilate(occupied, closing + padding, layout)
        if grown.all():
            outside_distance = np.full(shape, np.inf)
        else:
            outside_distance = distance_transform(~grown, layout, closing + STRESS_RAMP)
        mask = (grown & (outside_distance > closing)) | occupied

        low = np.full(count.size, np.inf)
        high = np.full(count.size, -np.inf)
        np.minimum.at(low, texel, twist)
        np.maximum.at(high, texel, twist)
        low, high = _twist_envelope(low, high, layout, shape, twist_radius)
        known = np.isfinite(low)
        measured = np.stack((np.where(known, low, 0.0), np.where(known, high, 0.0)), axis=-1)
        twists = fill_smooth(measured.reshape(shape + (2,)), known.reshape(shape), layout).reshape(-1, 2)
        twists[:, 0] -= padding
        twists[:, 1] += padding
        # every sample inside its bilinear range: lower / raise the four taps by the shortfall
        taps, weights = bilinear_taps(u, v, layout, shape)
        for channel, sign in ((0, 1.0), (1, -1.0)):
            interp = np.sum(twists[taps, channel] * weights, axis=-1)
            short = np.maximum(sign * (interp - twist), 0.0)
            if short.any():
                need = np.zeros(count.size)
                np.maximum.at(need, taps.ravel(), np.repeat(short, 4))
                twists[:, channel] -= sign * need
        inside_depth = np.where(mask, np.maximum(outside_distance - closing, 0.0), 0.0)
        stress = _stress_from_mask(mask, layout, inside_depth)
        image = np.concatenate((mask[..., None].astype(float), twists.reshape(shape + (2,)), stress[..., None]), axis=-1)
        model = cls.from_image(image, layout)
        model.report.update(samples=len(q), occupied_texels=int(occupied.sum()))
        return model

    @classmethod
    def from_image(cls, image, layout=sm.DEFAULT_LAYOUT):
        """A model from an image ``(H, W, 4)`` (channels as in the module docstring), computing
        the island count. Use after painting.

        The mask channel is thresholded at 0.5; stress is clipped to ``[0, 1]``; where the
        twist minimum exceeds the maximum the two are swapped. ``ValueError`` for a wrong
        shape or channel count, non-finite values or a mask that forbids every swing.
        """
        layout = sm.check_layout(layout)
        image = check_image(image, layout).copy()
        image[..., MASK] = (image[..., MASK] >= 0.5).astype(float)
        image[..., STRESS] = np.clip(image[..., STRESS], 0.0, 1.0)
        low = np.minimum(image[..., TWIST_MIN], image[..., TWIST_MAX])
        high = np.maximum(image[..., TWIST_MIN], image[..., TWIST_MAX])
        image[..., TWIST_MIN], image[..., TWIST_MAX] = low, high
        mask = image[..., MASK] > 0.5
        if not mask.any():
            raise ValueError("the sinus texture forbids every swing: at least one texel must be allowed")
        islands, labels = count_islands(mask, layout)
        shape = mask.shape
        model = cls({"image": image}, {"layout": layout, "height": shape[0], "width": shape[1], "islands": islands})
        omega = sm.texel_solid_angles(layout, shape).ravel()
        flat_labels = labels.ravel()
        ids, inverse = np.unique(flat_labels[flat_labels >= 0], return_inverse=True)
        areas = np.bincount(inverse, weights=omega[flat_labels >= 0])
        model.report = {"islands": islands, "island_solid_angles": sorted(areas.tolist(), reverse=True)}
        return model

    @classmethod
    def from_keys(
        cls,
        swing_directions,
        twist_min,
        twist_max,
        mask=None,
        padding=0.05,
        size=None,
        layout=sm.DEFAULT_LAYOUT,
        smoothing=8,
    ):
        """A model from hand-set twist keys, like Kelly's bands.

        Parameters
        ----------
        swing_directions : (K, 3) array
            Directions of the bone (+Y after the swing) at the keys, reference frame.
        twist_min, twist_max : (K,) arrays
            Twist limits at the keys, radians.
        mask : (H, W) array, optional
            Allowed swings (nonzero = allowed). Default: the spherical convex hull of the keys
            (they must lie within one hemisphere) and the great arcs between them, grown by
            ``padding`` radians.
        smoothing : int
            Jacobi sweeps per pyramid level of the interpolation (:func:`...geometry.sphere_image.fill_smooth`).

        Keys sharing a texel are averaged; the twist channels interpolate the keys (which they
        keep exactly) smoothly across the whole texture.
        """
        layout = sm.check_layout(layout)
        dirs = np.asarray(swing_directions, dtype=float).reshape(-1, 3)
        lo = np.asarray(twist_min, dtype=float).reshape(-1)
        hi = np.asarray(twist_max, dtype=float).reshape(-1)
        if len(dirs) == 0 or lo.shape != (len(dirs),) or hi.shape != (len(dirs),):
            raise ValueError("from_keys needs K >= 1 directions (K, 3) and K twist minima and maxima")
        check_finite(np.concatenate((dirs.ravel(), lo, hi)), "twist keys")
        norms = np.linalg.norm(dirs, axis=-1)
        if np.any(norms < 1e-9):
            raise ValueError("twist key directions must not be zero vectors")
        if np.any(lo > hi):
            raise ValueError("a twist key's minimum exceeds its maximum")
        dirs = dirs / norms[:, None]
        padding = check_padding(padding)
        if mask is not None:
            mask = np.asarray(mask)
            if mask.ndim != 2:
                raise ValueError(f"the mask must be a (height, width) array, got shape {mask.shape}")
            shape = sm.texture_shape(mask.shape, layout)
            if size is not None and shape != sm.texture_shape(size, layout):
                raise ValueError(f"the mask's shape {shape} does not match size {size!r}")
            mask = mask > 0.5 if mask.dtype.kind == "f" else mask.astype(bool)
        else:
            shape = sm.texture_shape(size, layout)
            seeds = spherical_hull_mask(dirs, layout, shape).ravel()
            steps = np.linspace(0.0, 1.0, 64)[:, None, None]
            for a in dirs:  # the great arcs between keys (K is small)
                path = ((1 - steps) * a + steps * dirs[None]).reshape(-1, 3)
                path /= np.maximum(np.linalg.norm(path, axis=-1, keepdims=True), 1e-12)
                seeds[sm.direction_to_texel(path, layout, shape)] = True
            mask = dilate(seeds.reshape(shape), padding, layout)
        texel = sm.direction_to_texel(dirs, layout, shape)
        size_flat = shape[0] * shape[1]
        count = np.bincount(texel, minlength=size_flat)
        sums = np.stack((np.bincount(texel, lo, size_flat), np.bincount(texel, hi, size_flat)), axis=-1)
        known = count > 0
        measured = np.where(known[:, None], sums / np.maximum(count, 1)[:, None], 0.0)
        twists = fill_smooth(measured.reshape(shape + (2,)), known.reshape(shape), layout, int(smoothing))
        stress = _stress_from_mask(mask, layout)
        image = np.concatenate((mask[..., None].astype(float), twists, stress[..., None]), axis=-1)
        return cls.from_image(image, layout)

    def region_count(self):
        return int(self.config["islands"])

    def with_mask(self, mask):
        """A new model with ``mask (H, W)`` (nonzero allowed) replacing the mask channel and the
        derived data recomputed; twist and stress channels are kept. For texture painting."""
        self._check_single()
        image = self.params["image"].copy()
        mask = np.asarray(mask)
        if mask.shape != image.shape[:2]:
            raise ValueError(f"the mask must have shape {image.shape[:2]}, got {mask.shape}")
        image[..., MASK] = (mask > 0.5) if mask.dtype.kind == "f" else mask.astype(bool)
        return type(self).from_image(image, self.config["layout"])

    # -- plain data ----------------------------------------------------------------------------
    def validate(self):
        config = self.config
        extra = set(config) - {"layout", "height", "width", "islands"}
        if extra:
            raise ValueError(f"{self.kind} limit: unknown config entries {sorted(extra)}")
        layout = config.get("layout")
        sm.check_layout(layout)
        shape = (config.get("height"), config.get("width"))
        if not all(isinstance(s, int) and not isinstance(s, bool) for s in shape):
            raise ValueError(f"{self.kind} limit: config 'height' and 'width' must be ints, got {shape}")
        sm.texture_shape(shape, layout)
        image = self.params["image"]
        if image.shape[-3:-1] != shape:
            raise ValueError(f"{self.kind} limit: the image must be {shape} texels, got {image.shape}")
        islands = config.get("islands", 1)
        if not isinstance(islands, int) or isinstance(islands, bool) or islands < 1:
            raise ValueError(f"{self.kind} limit: config 'islands' must be a positive int, got {islands!r}")
        check_channels(image, self.kind)

    def group_key(self):
        """Only textures of one layout and size stack."""
        return (self.kind, self.config["layout"], self.config["height"], self.config["width"])

    @classmethod
    def stack(cls, models):
        """:meth:`LimitModel.stack`, without rounding the stacked image to half precision
        again (every model's image was rounded when it was made, and params are not modified in
        place, so the stack is already exact in float16)."""
        models, params = cls._stacked_params(models)
        out = cls.__new__(type(models[0]))
        out.params = params
        out.config = dict(models[0].config)
        out._runtime_cache = None
        out.report = {}
        return out

    def _check_single(self):
        if self.params["image"].ndim != 3:
            raise ValueError("this operation needs a single (unstacked) sinus texture")

    # -- runtime tables ------------------------------------------------------------------------
    def _runtime(self):
        """Flat lookup tables, built once (params are not modified in place). The
        nearest-boundary entries and the twist ranges there are filled as projection needs them
        (:meth:`_nearest`)."""
        if self._runtime_cache is not None:
            return self._runtime_cache
        layout = self.config["layout"]
        h, w = self.config["height"], self.config["width"]
        image = np.ascontiguousarray(self.params["image"]).reshape((-1, h * w, 4))
        size = image.shape[0] * h * w
        self._runtime_cache = {
            "layout": layout,
            "shape": (h, w),
            "bones_shape": self.params["image"].shape[:-3],
            "mask": (image.view(np.uint16)[..., MASK] == 0x3C00).reshape(-1),  # 1.0 (float16 compares are slow)
            # every bone's image with a one-texel border continued across the seams, texels
            # one after another (B * (H + 2) * (W + 2), 4): a lookup gathers whole texels (and
            # so does building it: a texel's four float16 channels are one 8-byte word)
            "padded": np.take(image.view(np.uint64), sm.padded_texels(layout, (h, w)), axis=1).view(np.float16).reshape(-1, 4),
            # the nearest-boundary entries met so far, rows (x, y, z, twist low, twist high), and
            # per texel of every bone its row + 1 (0: not met; np.zeros leaves pages unallocated
            # until written, so a big rig pays for the texels its motion reaches)
            "nearest": np.zeros((0, 5)),
            "slot": np.zeros(size, dtype=np.int32),
            "candidates": {},
        }
        return self._runtime_cache

    def _nearest(self, texel):
        """``(n, 5)``: the nearest-boundary entry ``(x, y, z)`` and the twist range ``(low,
        high)`` there, of each forbidden texel ``texel (n,)`` (flat, with the bone offset),
        computed for the texels not met before (:func:`...geometry.nearest_boundary.nearest_points`)."""
        rt = self._runtime()
        slot = rt["slot"].take(texel)
        if not slot.all():
            self._fill_nearest(np.unique(texel[slot == 0]))
            slot = rt["slot"].take(texel)
        return rt["nearest"].take(slot - 1, axis=0)

    def _fill_nearest(self, texel):
        rt = self._runtime()
        layout, (h, w) = rt["layout"], rt["shape"]
        found = rt["candidates"]
        needed = [b for b in np.unique(texel // (h * w)).tolist() if b not in found]
        if needed:  # the boundaries of every bone met for the first time, in one go
            padded = rt["padded"].view(np.uint16).reshape(-1, h + 2, w + 2, 4)[needed, ..., MASK] == 0x3C00  # 1.0
            for b, boundary in zip(needed, boundary_texels(padded)):
                found[b] = boundary_candidates(boundary, layout, (h, w))
        points = nearest_points(texel, rt["mask"], layout, (h, w), found.__getitem__)
        u, v = sm._FORWARD[layout](points[:, 0], points[:, 1], points[:, 2])
        ranges = _ranges_at_uv(u, v, texel // (h * w), rt, self.params["image"], layout, (h, w))
        rt["slot"][texel] = len(rt["nearest"]) + 1 + np.arange(len(texel), dtype=np.int32)
        rt["nearest"] = np.concatenate((rt["nearest"], np.concatenate((points, ranges), axis=1)))

    def nearest_table(self):
        """Kelly's whole nearest-boundary table ``(..., H, W, 3)`` (derived data; for the
        allowed texels their centres): :func:`...geometry.nearest_boundary.nearest_allowed_points` of each
        bone's mask."""
        h, w = self.config["height"], self.config["width"]
        masks = (self.params["image"][..., MASK] > 0.5).reshape(-1, h, w)
        tables = [nearest_allowed_points(m, self.config["layout"]) for m in masks]
        return np.stack(tables).reshape(self.params["image"].shape[:-1] + (3,))

    #: a :meth:`subset` view's bone of each row (its bone axis), else None
    _subset_bones = None

    def subset(self, lead, index):
        """A view sharing the params and runtime tables, whose bone axis is the rows' bones
        (see :meth:`...model.LimitModel.subset`)."""
        own = self._runtime()["bones_shape"] if self._subset_bones is None else self._subset_bones.shape
        bones = subset_bones(own, lead, index)
        if bones is None:
            return self
        view = copy.copy(self)
        view._subset_bones = bones if self._subset_bones is None else self._subset_bones[bones]
        return view

    def _flat_inputs(self, q):
        """``q`` broadcast against the bone axes: ``(rows (n, 4), bone (n,) or None, lead)``."""
        rt = self._runtime()
        q = as_quaternions(q)
        if self._subset_bones is not None:
            lead = np.broadcast_shapes(q.shape[:-1], self._subset_bones.shape)
            return np.broadcast_to(q, lead + (4,)).reshape(-1, 4), np.broadcast_to(self._subset_bones, lead).reshape(-1), lead
        bones_shape = rt["bones_shape"]
        lead = np.broadcast_shapes(q.shape[:-1], bones_shape)
        rows = np.broadcast_to(q, lead + (4,)).reshape(-1, 4)
        bone = None
        if bones_shape:
            count = int(np.prod(bones_shape))
            bone = np.broadcast_to(np.arange(count).reshape(bones_shape), lead).reshape(-1)
        return rows, bone, lead

    def _lookup(self, rows, bone, stress=False):
        """Per row: direction, twist, texel (flat, with bone offset), allowed, twist range."""
        rt = self._runtime()
        h, w = rt["shape"]
        w_, x_, y_, z_ = rows[:, 0], rows[:, 1], rows[:, 2], rows[:, 3]
        dx, dy, dz, twist = direction_twist_components(w_, x_, y_, z_)
        u, v = sm._FORWARD[rt["layout"]](dx, dy, dz)
        texel = sm.uv_to_texel(u, v, (h, w))
        fx = u * w + 0.5  # padded coordinates (one texel border): x - 0.5 + 1
        fy = v * h + 0.5
        x0 = fx.astype(np.int64)  # fx >= 0.5, so truncation is floor
        y0 = fy.astype(np.int64)
        fx -= x0
        fy -= y0
        base = y0 * (w + 2) + x0
        if bone is not None:
            texel = texel + bone * (h * w)
            base = base + bone * ((h + 2) * (w + 2))
        texels = _bilinear(rt["padded"], base, fx, fy, w + 2)
        out = {
            "direction": (dx, dy, dz),
            "twist": twist,
            "texel": texel,
            "allowed": rt["mask"].take(texel),
            "low": texels[:, TWIST_MIN],
            "high": texels[:, TWIST_MAX],
        }
        if stress:
            out["stress"] = texels[:, STRESS]
        return out

    # -- the interface -------------------------------------------------------------------------
    def contains(self, q, tolerance=CONTAINS_TOLERANCE):
        """``(...,)`` bool: the swing's texel is allowed and the twist lies within the range
        interpolated there (within ``tolerance`` radians). Non-finite rows are not contained."""
        rows, bone, lead = self._flat_inputs(q)
        out = np.empty(len(rows), dtype=bool)
        for start in range(0, len(rows), CHUNK_ROWS):
            stop = start + CHUNK_ROWS
            part, finite = _safe_rows(rows[start:stop])
            r = self._lookup(part, None if bone is None else bone[start:stop])
            t = r["twist"]
            inside = r["allowed"] & (t >= r["low"] - tolerance) & (t <= r["high"] + tolerance)
            out[start:stop] = inside if finite is None else inside & finite
        return out.reshape(lead)

    def swing_image(self):
        """``(image (H, W, C), layout)``: the painted texture itself and its sphere layout."""
        return np.asarray(self.params["image"], dtype=float), self.config["layout"]

    def twist_range(self, q):
        """``(allowed (n,) bool, low (n,), high (n,))``: the texture's bilinear twist range
        (radians) at the swing of each rotation ``q (n, 4)`` (one bone's texture)."""
        look = self._lookup(as_quaternions(q).reshape(-1, 4), None)
        return look["allowed"], look["low"], look["high"]

    def stress(self, q):
        """``(...,)`` stress 0..1 (bilinear) at the swing of ``q (..., 4)``; NaN for non-finite rows."""
        rows, bone, lead = self._flat_inputs(q)
        out = np.empty(len(rows))
        for start in range(0, len(rows), CHUNK_ROWS):
            stop = start + CHUNK_ROWS
            part, finite = _safe_rows(rows[start:stop])
            r = self._lookup(part, None if bone is None else bone[start:stop], stress=True)
            out[start:stop] = r["stress"] if finite is None else np.where(finite, r["stress"], np.nan)
        return out.reshape(lead)

    def project(self, q):
        """Nearest allowed rotations ``(..., 4)``: a forbidden swing goes to the table entry of its
        texel (the nearest allowed direction, on the boundary), then the twist is clamped to the
        range at the resulting swing. Allowed rotations and non-finite rows are returned
        unchanged; the result keeps the cover of ``q``."""
        rows, bone, lead = self._flat_inputs(q)
        out = rows.copy()
        for start in range(0, len(rows), CHUNK_ROWS):
            stop = start + CHUNK_ROWS
            part = rows[start:stop]
            safe, finite = _safe_rows(part)
            r = self._lookup(safe, None if bone is None else bone[start:stop])
            t = r["twist"]
            inside = r["allowed"] & (t >= r["low"] - CONTAINS_TOLERANCE) & (t <= r["high"] + CONTAINS_TOLERANCE)
            move = ~inside if finite is None else finite & ~inside
            moved = np.flatnonzero(move)
            if moved.size == 0:
                continue
            # Mostly moving (far-away input): work on every row and restore the rest at the
            # end, which is cheaper than gathering and scattering most of the chunk.
            rows_all = 2 * moved.size > len(part)
            pick = slice(None) if rows_all else moved
            allowed = r["allowed"][pick]
            dx, dy, dz = (c[pick] for c in r["direction"])
            low = r["low"][pick]
            high = r["high"][pick]
            far = np.flatnonzero(~allowed)
            if far.size:
                nearest = self._nearest(r["texel"][far] if rows_all else r["texel"][moved[far]])
                dx[far], dy[far], dz[far], low[far], high[far] = nearest.T
            twist = np.clip(t[pick], low, high)
            new = compose_direction_twist(dx, dy, dz, twist)
            old = part[pick]
            dot = new[:, 0] * old[:, 0] + new[:, 1] * old[:, 1] + new[:, 2] * old[:, 2] + new[:, 3] * old[:, 3]
            new[dot < 0.0] *= -1.0
            if rows_all:
                keep = ~move
                new[keep] = part[keep]
                out[start:stop] = new
            else:
                out[start + moved] = new
        return out.reshape(lead + (4,))

    def project_along(self, q, previous_valid_q, steps=None, guard_allowed=True):
        """Trajectory-aware projection (Kelly's "considered with known last valid position").

        Parameters
        ----------
        q : (..., 4) array
            New rotations.
        previous_valid_q : (..., 4) array
            The last allowed rotation of each row (broadcast against ``q``); a previous swing
            that is not allowed is first replaced by its table entry.
        steps : int, optional
            Samples along the great arc from the previous swing to the new one before the
            binary search; default: one per quarter texel (at most 4096). ``steps = 2`` is
            Kelly's single midpoint test.
        guard_allowed : bool
            Also stop rows whose new swing is allowed but whose arc from the previous swing
            leaves the allowed region (a jump across a concave notch or between islands).
            With False such rows are treated as by :meth:`project`.

        Returns
        -------
        (..., 4) array. For a forbidden swing (or a guarded jump) the result is the first point
        where the great arc from the previous swing leaves the allowed region: the arc is
        sampled (a midpoint test at every sample, so the path never jumps across a forbidden
        gap wider than the sample spacing: Kelly's "concave boundary jumping"), and the
        crossing between the last allowed sample and the first forbidden one is found by
        binary search (2^-12 of the spacing: :data:`CROSSING_BISECTIONS`), then pulled 1 % of a texel inside. The twist is
        then clamped to the range at that swing. Other rows are treated as by :meth:`project`.
        """
        q = as_quaternions(q)
        prev = as_quaternions(previous_valid_q, "previous_valid_q")
        q, prev = np.broadcast_arrays(q, prev)
        out = self.project(q)
        rows, bone, lead = self._flat_inputs(q)
        prev_rows = np.broadcast_to(prev, lead + (4,)).reshape(-1, 4)
        out = out.reshape(-1, 4)
        rt = self._runtime()
        h, w = rt["shape"]
        safe, finite = _safe_rows(rows)
        safe_prev, finite_prev = _safe_rows(prev_rows)
        good = np.ones(len(rows), dtype=bool)
        for f in (finite, finite_prev):
            if f is not None:
                good &= f
        if not guard_allowed:  # (else every good row's path is searched)
            good &= ~self._lookup(safe, bone)["allowed"]
        todo = np.flatnonzero(good)
        chunk = 256
        for first in range(0, todo.size, chunk):
            part = todo[first : first + chunk]
            sub_bone = None if bone is None else bone[part]
            new = self._march(safe[part], safe_prev[part], sub_bone, steps)
            if new is None:
                continue
            rows_changed, rotations = new
            out[part[rows_changed]] = rotations
        return out.reshape(lead + (4,))

    def project_near(self, q, near):
        """:meth:`project`, continuing from ``near`` (allowed, a small step away): when the arc
        from ``near`` to the projection leaves the allowed region (it would jump a gap or a
        notch), the result is where the arc leaves it instead (:meth:`project_along`, Kelly's
        search from the last valid position). Arcs shorter than :data:`GUARD_TEXELS` texels are
        not searched: they can cut the corner of a forbidden texel, not cross a gap."""
        out = self.project(q)
        far = quaternion_angle(out, near) > GUARD_TEXELS * texel_scale((self.config["height"], self.config["width"]))
        if far.any():  # (searched for those rows only: a march costs far more than a lookup)
            lead = far.shape
            rows = np.flatnonzero(far)
            out = np.broadcast_to(out, lead + (4,)).reshape(-1, 4).copy()
            start = np.broadcast_to(near, lead + (4,)).reshape(-1, 4)[rows]
            out[rows] = self.subset(lead, rows).project_along(out[rows], start)
            out = out.reshape(lead + (4,))
        return out

    def _march(self, rows, prev_rows, bone, steps):
        """:meth:`project_along` for a batch of rows; ``(changed (n,) bool, rotations (k, 4))``
        for the rows whose path leaves the allowed region, or None."""
        rt = self._runtime()
        h, w = rt["shape"]
        layout = rt["layout"]
        offset = 0 if bone is None else bone * (h * w)
        r = self._lookup(rows, bone)
        rp = self._lookup(prev_rows, bone)
        start = np.stack(rp["direction"], axis=-1)
        bad_start = ~rp["allowed"]
        if bad_start.any():
            texel = rp["texel"][bad_start]
            start[bad_start] = self._nearest(texel)[:, :3]
        end = np.stack(r["direction"], axis=-1)

        def allowed(points, off):
            u, v = sm._FORWARD[layout](points[..., 0], points[..., 1], points[..., 2])
            return rt["mask"][sm.uv_to_texel(u, v, (h, w)) + off]

        arc = np.arccos(np.clip(np.sum(start * end, axis=-1), -1.0, 1.0))
        # each row's own sample count, so that a row's result does not depend on the batch
        if steps is None:
            count = np.clip(np.ceil(arc / (0.25 * texel_scale((h, w)))), 2, 4096).astype(np.int64)
        else:
            count = np.full(arc.shape, max(int(steps), 2))
        t = np.minimum(np.arange(1, count.max(initial=2) + 1)[None, :] / count[:, None], 1.0)  # (n, S)
        samples = toward(start[:, None, :], end[:, None, :], arc[:, None] * t)
        off = offset if np.ndim(offset) == 0 else offset[:, None]
        ok = allowed(samples, off)  # (n, S)
        leaves = ~ok.all(axis=1)
        if not leaves.any():
            return None
        idx = np.flatnonzero(leaves)
        ok = ok[idx]
        start, end, arc, t = start[idx], end[idx], arc[idx], t[idx]
        offset = offset if np.ndim(offset) == 0 else offset[idx]
        first_bad = np.argmax(~ok, axis=1)
        lo_t = np.where(first_bad > 0, np.take_along_axis(t, np.maximum(first_bad - 1, 0)[:, None], axis=1)[:, 0], 0.0)
        lo = toward(start, end, arc * lo_t)
        hi = toward(start, end, arc * np.take_along_axis(t, first_bad[:, None], axis=1)[:, 0])
        for _ in range(CROSSING_BISECTIONS):
            mid = lo + hi
            mid /= np.linalg.norm(mid, axis=-1, keepdims=True)
            good = allowed(mid, offset)
            lo = np.where(good[:, None], mid, lo)
            hi = np.where(good[:, None], hi, mid)
        # inset into the texel so rounding keeps it allowed
        u, v = sm._FORWARD[layout](lo[:, 0], lo[:, 1], lo[:, 2])
        texel = sm.uv_to_texel(u, v, (h, w))
        cu = (texel % w + 0.5) / w
        cv = (texel // w + 0.5) / h
        keep = 1.0 - INSET
        swing = sm.uv_to_direction(cu + keep * (u - cu), cv + keep * (v - cv), layout)
        still = allowed(swing, offset)
        swing[~still] = lo[~still]
        uu, vv = sm._FORWARD[layout](swing[:, 0], swing[:, 1], swing[:, 2])
        sub_bone = None if bone is None else bone[idx]
        ranges = self._ranges_at(uu, vv, sub_bone)
        twist = np.clip(r["twist"][idx], ranges[:, 0], ranges[:, 1])
        new = compose_direction_twist(swing[:, 0], swing[:, 1], swing[:, 2], twist)
        flip = np.sum(new * rows[idx], axis=-1) < 0
        new[flip] *= -1.0
        return leaves, new

    def _ranges_at(self, u, v, bone):
        """Bilinear twist ranges ``(n, 2)`` at texture coordinates (with the runtime tables)."""
        rt = self._runtime()
        h, w = rt["shape"]
        fx = u * w + 0.5
        fy = v * h + 0.5
        x0 = fx.astype(np.int64)
        y0 = fy.astype(np.int64)
        fx -= x0
        fy -= y0
        base = y0 * (w + 2) + x0
        if bone is not None:
            base = base + bone * ((h + 2) * (w + 2))
        return _bilinear(rt["padded"], base, fx, fy, w + 2)[:, TWIST_MIN : TWIST_MAX + 1]


def _ranges_at_uv(u, v, bone, rt, image, layout, shape):
    """Twist ranges ``(n, 2)`` at texture coordinates ``u, v (n,)`` of bones ``bone (n,)``: the
    bilinear interpolation of :func:`...geometry.sphere_image.bilinear_taps` (same weights, same sums), with the taps read
    from the runtime's padded image (every bone), which holds the texels the seams wrap to. A tap
    beyond the one-texel border (a point a rounding step outside the texture) takes the wrapped
    path in ``image (B, H * W, 4)``."""
    h, w = shape
    stride = w + 2
    x0, y0, fx, fy = texel_corner(u, v, shape)
    base = y0 + 1
    base *= stride
    base += x0 + 1
    base += bone * ((h + 2) * stride)
    outside = np.flatnonzero((x0 < -1) | (x0 >= w) | (y0 < -1) | (y0 >= h))
    if outside.size:
        base[outside] = 0  # in range; replaced below
    # the weights (1 - fx)(1 - fy), fx(1 - fy), (1 - fx)fy, fx fy summed in tap order, as the
    # sum over bilinear_taps' four taps adds them
    out = _bilinear(rt["padded"], base, fx, fy, stride)[:, TWIST_MIN : TWIST_MAX + 1]
    if outside.size:
        wrapped, wrapped_weights = bilinear_taps(u[outside], v[outside], layout, shape)
        flat = image.reshape(-1, 4)
        wrapped = wrapped + (bone[outside] * (h * w))[:, None]
        out[outside, 0] = np.sum(flat[wrapped, TWIST_MIN] * wrapped_weights, axis=-1)
        out[outside, 1] = np.sum(flat[wrapped, TWIST_MAX] * wrapped_weights, axis=-1)
    return out


def _bilinear(padded, base, fx, fy, stride):
    """Bilinear lookups ``(n, 4)`` of every channel in the padded image ``padded (N, 4)`` (float16:
    the sums are float64) at corner rows ``base (n,)`` with fractions ``fx, fy (n,)``."""
    gx = 1.0 - fx
    gy = 1.0 - fy
    out = padded.take(base, axis=0) * (gx * gy)[:, None]
    out += padded.take(base + 1, axis=0) * (fx * gy)[:, None]
    base = base + stride
    out += padded.take(base, axis=0) * (gx * fy)[:, None]
    out += padded.take(base + 1, axis=0) * (fx * fy)[:, None]
    return out


def _safe_rows(part):
    """``(rows, finite)``: rows that are non-finite or zero replaced by the identity, and the
    ``(n,)`` mask of the good rows (``None`` when all are good)."""
    norm2 = part[:, 0] * part[:, 0]
    norm2 += part[:, 1] * part[:, 1]
    norm2 += part[:, 2] * part[:, 2]
    norm2 += part[:, 3] * part[:, 3]
    with np.errstate(over="ignore", invalid="ignore"):
        finite = np.isfinite(norm2) & (norm2 > 0.0)  # one pass: NaN/inf components and zero rows
    if finite.all():
        return part, None
    return np.where(finite[:, None], part, IDENTITY_QUATERNION), finite


# -- the rim of the allowed region (sinus cone, boundary tour) -----------------------------------
def boundary_rim(model, count=64, samples=512):
    """The rim of the allowed swing region as seen from its centre: ``(directions (count, 3),
    twist_mid (count,))``.

    Rays leave the centre direction (+Y, the rest swing, when it is allowed; otherwise the
    solid-angle weighted mean of the allowed texels) at ``count`` even azimuths; along each,
    ``samples`` steps up to the far pole find the last allowed sample, which is the rim point
    (allowed, within one step of the outer boundary). ``twist_mid`` is the middle of the twist
    range there. Exact for regions that are star-shaped about the centre (cones); for others
    (a ring around a forbidden rest swing, a C shape) it follows the outer boundary as seen from
    the centre. Used for Kelly's sinus cone mesh and the boundary tour.
    """
    image = model.params["image"]
    if image.ndim != 3:
        raise ValueError("boundary_rim needs a single (unstacked) sinus texture")
    layout, shape = model.config["layout"], image.shape[:2]
    mask = image[..., MASK].ravel() > 0.5
    y_axis = np.array([0.0, 1.0, 0.0])
    if mask[sm.direction_to_texel(y_axis, layout, shape)]:
        centre = y_axis
    else:
        omega = sm.texel_solid_angles(layout, shape).ravel()
        centres = sm.texel_centres(layout, shape).reshape(-1, 3)
        centre = (centres[mask] * omega[mask, None]).sum(axis=0)
        centre /= np.linalg.norm(centre)
    helper = np.array([1.0, 0.0, 0.0]) if abs(centre[0]) < 0.9 else np.array([0.0, 0.0, 1.0])
    e1 = np.cross(helper, centre)
    e1 /= np.linalg.norm(e1)
    e2 = np.cross(centre, e1)
    azimuth = np.linspace(0.0, 2.0 * np.pi, count, endpoint=False)
    theta = np.linspace(0.0, np.pi, samples + 1)[1:]
    around = np.cos(azimuth)[:, None] * e1 + np.sin(azimuth)[:, None] * e2  # (count, 3)
    rays = np.cos(theta)[None, :, None] * centre + np.sin(theta)[None, :, None] * around[:, None, :]
    allowed = mask[sm.direction_to_texel(rays, layout, shape)]  # (count, samples)
    last_in = samples - 1 - np.argmax(allowed[:, ::-1], axis=1)
    rim_theta = np.where(allowed.any(axis=1), theta[last_in], 0.0)
    directions = np.cos(rim_theta)[:, None] * centre + np.sin(rim_theta)[:, None] * around
    u, v = sm.direction_to_uv(directions, layout)
    texel = sm.uv_to_texel(u, v, shape)
    twist_mid = 0.5 * (image[..., TWIST_MIN].ravel()[texel].astype(float) + image[..., TWIST_MAX].ravel()[texel])
    return directions, twist_mid
