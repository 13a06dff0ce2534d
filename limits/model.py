# SPDX-License-Identifier: GPL-3.0-or-later
"""The one interface every limit model implements, and the capabilities a model may offer.

A *limit model* describes which rotations a joint may take. It works on rotations already
expressed relative to the joint's reference pose (see :mod:`.joint`), as unit quaternions
``(..., 4)`` in ``(w, x, y, z)`` order, and offers:

``fit(rotations, **options)``  classmethod: build the model from a rotation cloud ``(N, 4)``
``contains(q)``                ``(...,)`` bool: is the rotation allowed
``project(q)``                 ``(..., 4)``: the nearest allowed rotation (identity on allowed ones)
``violation(q)``               ``(...,)`` radians: how far ``q`` is from its projection
``project_sequence(q)``        ``(T, ..., 4)``: a motion limited frame after frame, continuously
``to_dict()`` / ``from_dict``  plain data: ``config`` (str/int/float/bool) and ``params`` (arrays)

Motion: :meth:`LimitModel.project_sequence` limits frames in order so that the limited pose
follows from the previous one (:mod:`.continuity`); a model takes part through three hooks with
working defaults, :meth:`~LimitModel.projection_candidates` (the Euler box offers its other
Euler decomposition), :meth:`~LimitModel.project_near` (the sinus texture checks the path
from the previous pose, Kelly's search) and :meth:`~LimitModel.slide` (the quaternion surface
walks along its tangent planes).

"Nearest" is measured in the model's own parameter space (scaled angle-axis for Holden's
shapes, Euler angles for the Euler box, ...); ``violation`` is always the geodesic angle.

Batching: every model's maths broadcasts over leading axes of its ``params``. Models of one
class with equal ``config`` can be :meth:`LimitModel.stack`-ed into one model whose params have
a leading bone axis ``B``; its ``project(q)`` with ``q`` of shape ``(B, 4)`` applies bone ``b``'s
limit to row ``b``. The live handler uses this to limit a whole rig with a few numpy calls.

Capabilities: beyond the contract a model may offer a stress map, a signed distance, an image
to paint, Kelly's arc search, a mesh to sculpt, metaballs to edit, a fit's calibration
(:data:`CAPABILITIES`). A kind declares them in ``CAPABILITIES``; callers ask
:meth:`LimitModel.offers` (a kind, e.g. from a bone's settings) or :meth:`LimitModel.can` (a
model) and never compare kind names.

A new model is one module or sub-package in ``limits/models/``: subclass :class:`LimitModel`,
add the class to ``MODELS`` in :mod:`..models` (its place there is its place in the model menu),
and the contract tests (``tests/limits/test_contract.py``) run on it. ``FIT_OPTIONS`` names the
keyword options its ``fit`` takes from a bone's settings.
"""

import abc
import copy

import numpy as np

from . import continuity
from .constants import IDENTITY_QUATERNION, MAX_PARAMETER
from .geometry.quaternion import as_quaternions, quaternion_angle, quaternion_normalize

# -- capabilities: what a model offers beyond the contract (:meth:`LimitModel.can`) --------------
#: ``stress(q) (...,)``: how near its edge a rotation is, 0 (comfortable) to 1 (at or outside it)
STRESS = "stress"
#: ``signed_distance(q) (...,)``: radians from the boundary, negative inside
SIGNED_DISTANCE = "signed_distance"
#: an image over swing directions that artists paint with Blender's brushes and edit as an image:
#: ``swing_image()`` ``(image, layout)`` and ``twist_range(q)`` ``(allowed, low, high)`` per swing
TEXTURE = "texture"
#: ``project_along(q, previous)``: where the arc from an allowed rotation leaves the limit (Kelly)
ARC_SEARCH = "arc_search"
#: a distance grid exported as a mesh to sculpt and rebuilt from it (:mod:`..models.sdf.sculpt`)
SCULPT = "sculpt"
#: primitives exported as metaballs to edit and rebuilt from them
METABALLS = "metaballs"
#: ``calibration``: the cross-validated choice of kind and padding its fit made (``auto``)
CALIBRATION = "calibration"
CAPABILITIES = (STRESS, SIGNED_DISTANCE, TEXTURE, ARC_SEARCH, SCULPT, METABALLS, CALIBRATION)


def all_finite(values):
    """Whether every value of a float array is finite (float16 by its exponent bits: numpy
    tests float16 one value at a time, twenty times slower than this)."""
    if values.dtype == np.float16:
        return bool(np.all(values.view(np.uint16) & 0x7C00 != 0x7C00))
    return bool(np.all(np.isfinite(values)))


class LimitModel(abc.ABC):
    """Base class. Subclasses define ``kind``, ``label``, ``description``, ``PARAM_SHAPES``,
    ``fit``, ``contains`` and ``project``; the rest is shared.

    ``PARAM_SHAPES`` maps each parameter name to its per-bone shape, with ``None`` for a free
    length (e.g. ``{"mins": (3,), "maxs": (3,)}``); :meth:`from_dict` validates against it.
    """

    kind = ""
    label = ""
    description = ""
    PARAM_SHAPES = {}
    #: Parameters kept at reduced precision: big tables whose last digits carry nothing (a
    #: texture, a distance grid). Rounded on construction (:meth:`round_single`: float32 unless
    #: a model says otherwise), so every path (fit, edit, load, stack) agrees, and stored in a
    #: fraction of the space (:mod:`.serialize` writes them at the narrowest exact precision).
    SINGLE_PRECISION = ()
    #: Parameters that files written by earlier versions hold but that are now derived (rebuilt
    #: or computed on use, never stored): dropped when such a file is read.
    DERIVED_PARAMS = ()
    #: Keyword options of :meth:`fit` that a bone's settings supply (others are not passed).
    FIT_OPTIONS = ("padding",)
    #: What this kind offers beyond the contract (the capabilities above); callers ask
    #: :meth:`offers` / :meth:`can` instead of probing attributes or comparing kinds.
    CAPABILITIES = frozenset()
    #: the fit's :class:`..fitting.cross_validation.Calibration` when ``auto`` chose this model
    calibration = None

    def __init__(self, params, config=None):
        self.params = {
            name: self.round_single(name, value) if name in self.SINGLE_PRECISION else np.asarray(value, dtype=float)
            for name, value in params.items()
        }
        self.config = dict(config or {})

    @classmethod
    def round_single(cls, name, value):
        """``value`` of parameter ``name`` (any float array) rounded to float32 precision, as
        float64 (to nearest; models round bounds outward so a fitted region never shrinks).
        A model may keep a table narrower in memory too (the sinus texture's float16 image)."""
        value = np.asarray(value, dtype=float)
        single = value.astype(np.float32)
        return value if np.array_equal(single, value) else single.astype(float)

    # -- capabilities -----------------------------------------------------------------------
    @classmethod
    def offers(cls, capability):
        """Whether models of this kind can offer ``capability`` (one of :data:`CAPABILITIES`)."""
        if capability not in CAPABILITIES:
            raise ValueError(f"unknown capability {capability!r}; known: {', '.join(CAPABILITIES)}")
        return capability in cls.CAPABILITIES

    def can(self, capability):
        """Whether this model offers ``capability``: its kind's, narrowed by its settings (a
        stacked grid cannot be sculpted) or widened by its fit (a calibration)."""
        return self.offers(capability) or (capability == CALIBRATION and self.calibration is not None)

    # -- the interface -------------------------------------------------------------------
    @classmethod
    @abc.abstractmethod
    def fit(cls, rotations, **options):
        """A model of this kind fitted to the rotation cloud ``rotations (N, 4)``."""

    @abc.abstractmethod
    def contains(self, q):
        """``(...,)`` bool: whether each rotation ``q (..., 4)`` is allowed."""

    @abc.abstractmethod
    def project(self, q):
        """``(..., 4)``: the nearest allowed rotation to each of ``q`` (allowed ones unchanged)."""

    def violation(self, q):
        """Geodesic angle in radians from ``q`` to its projection (0 inside)."""
        q = quaternion_normalize(as_quaternions(q))
        return quaternion_angle(q, self.project(q))

    # -- motion ----------------------------------------------------------------------------
    def projection_candidates(self, q, plain=None):
        """``(K, ..., 4)``: allowed rotations ``q (..., 4)`` may be limited to, the plain
        :meth:`project` first (``plain``, when the caller has it, is not computed again). A
        model whose projection picks one of several answers (a branch, a side) lists the
        others, so a motion can keep the one it is on; :mod:`.continuity` asks only for the
        rows whose plain projection it cannot follow. Default: the plain one."""
        return (self.project(q) if plain is None else np.asarray(plain, dtype=float))[None]

    def project_near(self, q, near):
        """Projection of ``q (..., 4)``, just outside, continuing from ``near`` (inside, a small
        step away): the candidate nearest ``near``. A model can refuse a result that is not
        reached from ``near`` without leaving the limit (the sinus texture)."""
        candidates = self.projection_candidates(q)
        if len(candidates) == 1:
            return candidates[0]
        best = np.argmin(quaternion_angle(candidates, near), axis=0)
        return np.take_along_axis(candidates, best[None, ..., None], axis=0)[0]

    def slide(self, q, start, cap):
        """Allowed rotations ``(n, 4)`` towards ``q (n, 4)`` from ``start`` (allowed: a motion's
        last limited pose), each at most ``cap (n,)`` radians from ``start``: how a motion goes
        on where no projection of ``q`` is within reach (:mod:`.continuity`). Default: a
        projected descent of the distance to ``q`` by :meth:`project_near`
        (:func:`.continuity.descend`); a model that knows its boundary's tangent planes walks
        along them instead (the quaternion surface)."""
        return continuity.descend(self, q, start, cap)

    def subset(self, lead, index):
        """This model for some rows of a query: queries ``(..., n, 4)`` give row ``i`` the
        parameters (for a stacked model, the bone's) that flat row ``index[i]`` of a query shaped
        ``lead + (4,)`` has. :mod:`.continuity` limits the few rows of a motion that need it
        frame after frame this way, instead of the whole stack. Default: the rows' bones' params
        sliced into a new model; :class:`RowsPerBone` models answer with a view instead."""
        bones = subset_bones(self._bone_shape(), lead, index)
        if bones is None:
            return self
        params = {}
        for name, value in self.params.items():
            core = value.shape[len(self._bone_shape()) :]
            params[name] = value.reshape((-1,) + core)[bones]
        return type(self)(params, self.config)

    def _bone_shape(self):
        """The stacked bone axes (``()`` for one bone's model), from the first parameter."""
        name, shape = next(iter(self.PARAM_SHAPES.items()))
        value = self.params[name]
        return value.shape[: value.ndim - len(shape)]

    def project_sequence(self, q, previous=None):
        """``(limited (T, ..., 4), state)``: rotations ``q (T, ..., 4)`` in frame order limited so
        that each limited pose follows from the previous one (:mod:`.continuity`); ``previous``
        (a :class:`.continuity.MotionState`, what an earlier call returned) continues that
        motion, ``None`` starts afresh (the first frame is the plain projection)."""
        return continuity.project_sequence(self, q, previous)

    # -- plain data ----------------------------------------------------------------------
    def to_dict(self):
        return {
            "kind": self.kind,
            "config": dict(self.config),
            "params": {name: np.array(value) for name, value in self.params.items()},
        }

    @classmethod
    def from_dict(cls, data):
        """Rebuild a model from :meth:`to_dict` output, validating shapes and values."""
        if not isinstance(data, dict):
            raise ValueError(f"a limit model must be a mapping, got {type(data).__name__}")
        kind = data.get("kind")
        if cls is LimitModel:
            raise TypeError("LimitModel.from_dict needs a model class; use limits.registry.model_from_dict")
        target = cls
        if kind != target.kind:
            raise ValueError(f"expected a {target.kind!r} limit, got {kind!r}")
        config = data.get("config", {})
        if not isinstance(config, dict) or not all(isinstance(v, (str, int, float, bool)) for v in config.values()):
            raise ValueError(f"{kind} limit: 'config' must map names to plain values, got {config!r}")
        params = data.get("params")
        if not isinstance(params, dict):
            raise ValueError(f"{kind} limit: 'params' missing or not a mapping")
        checked = {}
        for name, shape in target.PARAM_SHAPES.items():
            if name not in params:
                raise ValueError(f"{kind} limit: parameter {name!r} missing")
            try:
                value = np.asarray(params[name])
                if value.dtype.kind != "f" or name not in target.SINGLE_PRECISION:  # (those keep theirs)
                    value = value.astype(float)
            except (TypeError, ValueError):
                raise ValueError(f"{kind} limit: parameter {name!r} is not numeric") from None
            if value.ndim != len(shape) or any(s is not None and s != v for s, v in zip(shape, value.shape)):
                raise ValueError(f"{kind} limit: parameter {name!r} must have shape {shape}, got {value.shape}")
            if not all_finite(value):
                raise ValueError(f"{kind} limit: parameter {name!r} contains NaN or infinity")
            largest = float(np.max(np.abs(value))) if value.size else 0.0
            if largest > MAX_PARAMETER:
                raise ValueError(
                    f"{kind} limit: parameter {name!r} is out of range ({largest:g}; a limit's values are at most {MAX_PARAMETER:g})"
                )
            checked[name] = value
        extra = set(params) - set(target.PARAM_SHAPES) - set(target.DERIVED_PARAMS)
        if extra:
            raise ValueError(f"{kind} limit: unknown parameters {sorted(extra)}")
        model = target(checked, config)
        model.validate()
        return model

    def validate(self):
        """Hook for subclasses: raise ``ValueError`` when params are inconsistent."""
        return

    def region_count(self):
        """How many disconnected allowed regions the limit has (models that can tell; else
        ``None``). More than one usually means the samples or an edit left a gap."""
        return None

    # -- batching ------------------------------------------------------------------------
    def group_key(self):
        """Models with equal keys can be stacked."""
        return (self.kind, tuple(sorted(self.config.items())))

    @classmethod
    def stack(cls, models):
        """One model whose params carry a leading bone axis, from models with one group key."""
        models, params = cls._stacked_params(models)
        return type(models[0])(params, models[0].config)

    @staticmethod
    def _stacked_params(models):
        """``(models (list), params)``: the models' params stacked along a new leading axis;
        ``ValueError`` unless there are models and they share one group key."""
        models = list(models)
        if not models:
            raise ValueError("stack needs at least one model")
        keys = {m.group_key() for m in models}
        if len(keys) != 1:
            raise ValueError(f"cannot stack limit models of different kinds or settings: {sorted(keys)}")
        return models, {name: np.stack([m.params[name] for m in models]) for name in models[0].params}

    def __repr__(self):
        shapes = ", ".join(f"{k}{tuple(v.shape)}" for k, v in self.params.items())
        return f"<{type(self).__name__} {self.config} {shapes}>"


class MovedProjection:
    """Mixin for models whose ``_project(q)`` returns ``(projected (..., 4), moved (...,) bool)``:
    ``project`` from it, and a ``violation`` that is exactly 0 for rotations the model leaves
    alone and NaN for non-finite rows."""

    def project(self, q):
        """Nearest allowed rotations ``(..., 4)``; allowed rotations and non-finite rows are
        returned unchanged."""
        return self._project(q)[0]

    def violation(self, q):
        """Geodesic angle in radians from ``q`` to its projection; exactly 0 inside."""
        q = as_quaternions(q)
        finite = np.all(np.isfinite(q), axis=-1)
        q = quaternion_normalize(np.where(finite[..., None], q, IDENTITY_QUATERNION))
        projected, moved = self._project(q)
        angle = np.where(moved, quaternion_angle(q, projected), 0.0)
        return np.where(finite, angle, np.nan)


def projection_moved(q, plain):
    """``(...,)`` bool: rows of ``q (..., 4)`` that their projection ``plain`` moved (a
    projection returns the rows it leaves alone, and non-finite ones, as they are)."""
    return np.any(plain != q, axis=-1) & np.all(np.isfinite(q), axis=-1)


def subset_bones(bone_shape, lead, index):
    """For :meth:`LimitModel.subset`: ``(n,)`` flat bone of each row ``index`` of a query shaped
    ``lead`` against a model stacked over ``bone_shape`` (``None`` for one bone's model)."""
    if not bone_shape:
        return None
    if len(bone_shape) == 1 and tuple(lead) == tuple(bone_shape):  # one row per bone (a motion's frame)
        return np.array(index, dtype=np.intp)
    count = int(np.prod(bone_shape))
    bones = np.arange(count).reshape(bone_shape)
    return np.broadcast_to(bones, np.broadcast_shapes(tuple(lead), bone_shape)).reshape(-1)[np.asarray(index, dtype=np.intp)]


class RowsPerBone:
    """Mixin for models whose maths runs on flat rows: :meth:`_rows` flattens queries against
    the stacked bone axes, :meth:`_per_row` picks each row's bone parameters. ``LEAD_PARAM``
    names a parameter with a one-dimensional core (its leading axes are the bone axes).
    :meth:`subset` is a view sharing params and caches, whose bone axis is the rows' bones."""

    LEAD_PARAM = ""
    #: a :meth:`subset` view's bone of each row (its bone axis), else None
    _subset_bones = None

    def _lead(self):
        return self.params[self.LEAD_PARAM].shape[:-1]

    def subset(self, lead, index):
        own = self._lead() if self._subset_bones is None else self._subset_bones.shape
        bones = subset_bones(own, lead, index)
        if bones is None:
            return self
        view = copy.copy(self)  # (params and the caches built so far are shared)
        view._subset_bones = bones if self._subset_bones is None else self._subset_bones[bones]
        return view

    def _rows(self, q):
        """``(rows (R, 4), bone (R,) or None, lead shape)`` for queries ``q (..., 4)``."""
        if self._subset_bones is not None:
            lead = np.broadcast_shapes(q.shape[:-1], self._subset_bones.shape)
            return np.broadcast_to(q, lead + (4,)).reshape(-1, 4), np.broadcast_to(self._subset_bones, lead).reshape(-1), lead
        lead_params = self._lead()
        lead = np.broadcast_shapes(q.shape[:-1], lead_params)
        rows = np.broadcast_to(q, lead + (4,)).reshape(-1, 4)
        if not lead_params:
            return rows, None, lead
        count = int(np.prod(lead_params))
        bone = np.broadcast_to(np.arange(count).reshape(lead_params), lead).reshape(-1)
        return rows, bone, lead

    def _per_row(self, name, bone):
        """Parameter ``name`` for each row's bone (as it is when not stacked)."""
        value = self.params[name]
        if bone is None:
            return value
        flat = value.reshape((-1,) + value.shape[len(self._lead()) :])
        return flat[bone]
