# SPDX-License-Identifier: GPL-3.0-or-later
"""Base class for Holden's limit shapes, fitted in a three-dimensional vector space.

A :class:`ShapeLimit` turns each reference-relative rotation into one or two 3-D points, fits
a convex shape (box, oriented box, ellipsoid, k-DOP) around the points of the rotation cloud,
and limits a rotation by moving its points to the nearest points of the shapes.

Modes (``config["mode"]``)
--------------------------
``"FULL"``
    One shape around the scaled angle-axis vectors (exp map, radians) of the rotations.
``"SWING_TWIST"``
    Each rotation is split as ``q = swing * twist`` about the twist axis (parameter ``axis``,
    default the bone's +Y). One shape is fitted to the swing vectors, a second shape of the same
    kind to the twist vectors; both are projected independently and recomposed.

Swing-twist coordinates: points are written in the *twist frame*, the rotation that takes +Y
to ``axis`` by the shortest arc (the identity for the default axis). There the twist axis is
the Y axis, swing points are ``(x, 0, z)`` (a plane) and twist points are ``(0, angle, 0)``
(a line). Shapes that have their own orientation keep Y as one of their principal axes in this
mode, and every shape is then mirror-symmetric about the swing plane (and about the twist
line), so the nearest point of a swing point stays a pure swing and the nearest point of a
twist point a pure twist. The projected points are flattened back onto the plane / line to
remove rounding, which by that symmetry changes nothing else.

Limits of rotation space: a rotation's exp map has norm below 2 pi (the quaternion cover
keeps rotations up to 360 degrees apart) and a swing's at most pi. A shape grown around data
near those spheres can reach past them; a nearest point out there would name a rotation whose
own point lies elsewhere, so it is pulled back along the segment to the shape's point nearest
the origin, onto the sphere (still in the shape, no longer exactly nearest). This only happens
for data within the padding of 180 degree swings or 360 degree rotations.

Parameters
----------
Each subclass lists its per-shape parameters in ``SHAPE_PARAMS`` (name -> shape of one shape,
e.g. ``{"mins": (3,), "maxs": (3,)}``). The stored parameter concatenates the shapes along its
first axis: one shape in ``"FULL"`` mode, ``[swing, twist]`` in ``"SWING_TWIST"`` mode. So a
box stores ``mins (3,)`` in FULL mode and ``mins (6,)`` (swing mins, then twist mins) in
SWING_TWIST mode; an oriented box's ``rotation`` is ``(3, 3)`` or ``(6, 3)``. Every shape model
also stores ``axis (3,)``, the unit twist axis (unused in FULL mode). A stacked model (see
:meth:`LimitModel.stack`) adds a leading bone axis to every parameter.

Subclasses implement only the vector-space maths, on points ``(..., 3)`` and a ``shape`` dict of
one shape's parameters (possibly with leading axes that broadcast against the points):

``_fit_shape(points (N, 3), padding, fixed_axis=None) -> dict``
``_contains_shape(shape, points, tolerance) -> (...,) bool``
``_project_shape(shape, points) -> (..., 3)`` nearest point of the shape (identity inside)
``_validate_shape(shape)``: raise ``ValueError`` for inconsistent parameters
"""

import numpy as np

from ..checks import check_cloud, check_padding, finite_rows
from ..constants import BONE_AXIS, CHUNK_ROWS, CONTAINS_TOLERANCE, EPS, IDENTITY_QUATERNION
from ..geometry.quaternion import (
    as_quaternions,
    exp_map_from_quaternion,
    half_angle_cos_sin,
    quaternion_from_exp_map,
    quaternion_from_exp_map_components,
    quaternion_multiply,
)
from ..geometry.swing_twist import swing_twist_from_quaternion, unit_axis
from ..model import LimitModel, MovedProjection

#: The two ways a shape model reads a rotation.
MODES = ("FULL", "SWING_TWIST")

#: Projections of at least this many rows first check whether each shape lies inside its ball
#: (see :func:`_keep_in_ball`), to skip that step.
IN_BALL_ROWS = 1024

#: Margin (radians) between a shape's bound and its ball, far above the rounding of the points.
BALL_MARGIN = 1e-9


# -- small shared helpers -----------------------------------------------------------------------
def rows_differ(a, b):
    """``(...,)`` bool: the 3-vectors ``a`` and ``b`` differ in some component."""
    if a.shape == b.shape and a.flags.c_contiguous and b.flags.c_contiguous:
        differ = a != b
    else:  # compare per component: broadcasting over a short last axis is slow
        return (a[..., 0] != b[..., 0]) | (a[..., 1] != b[..., 1]) | (a[..., 2] != b[..., 2])
    return differ[..., 0] | differ[..., 1] | differ[..., 2]


def clamp_rows(points, mins, maxs):
    """``np.minimum(np.maximum(points, mins), maxs)`` for ``(..., 3)`` arrays, per component
    (broadcasting over the short last axis is slow)."""
    shape = np.broadcast_shapes(np.shape(points), np.shape(mins), np.shape(maxs))
    if len(shape) < 2:
        return np.minimum(np.maximum(points, mins), maxs)
    out = np.empty(shape)
    for i in range(shape[-1]):
        np.minimum(np.maximum(points[..., i], mins[..., i]), maxs[..., i], out=out[..., i])
    return out


def select_rows(mask, a, b):
    """``np.where(mask[..., None], a, b)`` for arrays of short rows ``(..., k)``.

    Copies the side chosen by most rows and patches the others in: much faster than ``where``
    broadcast over a short last axis, and exact (no arithmetic).
    """
    shape = np.broadcast_shapes(np.shape(mask) + (1,), np.shape(a), np.shape(b))
    mask = np.broadcast_to(mask, shape[:-1])
    count = int(np.count_nonzero(mask))
    major, minor, patch = (a, b, ~mask) if 2 * count >= mask.size else (b, a, mask)
    out = np.array(np.broadcast_to(major, shape), dtype=np.result_type(a, b))
    if 0 < count < mask.size:
        index = np.nonzero(patch)
        out[index] = np.broadcast_to(minor, shape)[index]
    return out


def check_rotation_matrices(rotation, name="rotation"):
    """Raise ``ValueError`` unless ``rotation (..., 3, 3)`` is orthonormal with determinant +1."""
    gram = np.einsum("...ki,...kj->...ij", rotation, rotation)
    if not np.allclose(gram, np.eye(3), atol=1e-6) or np.any(np.linalg.det(rotation) <= 0):
        raise ValueError(f"{name} must be a rotation matrix (orthonormal, determinant +1)")


def to_local(points, position, rotation):
    """Frame coordinates ``rotation^T @ (points - position)``, shapes ``(..., 3)``, ``(..., 3, 3)``."""
    if rotation.ndim == 2 and np.ndim(position) <= 1 and np.ndim(points) >= 2:
        # One frame: subtract per component (broadcasting over the short last axis is slow).
        if np.ndim(position) == 0 and position == 0.0:
            return points @ rotation
        d = np.empty(points.shape)
        position = np.broadcast_to(position, (3,))
        for i in range(3):
            np.subtract(points[..., i], position[i], out=d[..., i])
        return d @ rotation
    d = points - position
    if rotation.ndim == 2:
        return d @ rotation
    return np.einsum("...ji,...j->...i", rotation, d)


def from_local(local, position, rotation):
    """Inverse of :func:`to_local`: ``rotation @ local + position``."""
    if rotation.ndim == 2:
        out = local @ rotation.T
        if np.ndim(position) <= 1 and out.ndim >= 2:
            if np.ndim(position) == 0 and position == 0.0:
                out += 0.0  # as ``+ position``: -0.0 becomes 0.0
                return out
            position = np.broadcast_to(position, (3,))
            for i in range(3):
                out[..., i] += position[i]
            return out
        return out + position
    return np.einsum("...ij,...j->...i", rotation, local) + position


def flatten_rows(shape, points, core_ndims):
    """Broadcast ``points (..., 3)`` against the leading (bone) axes of a shape's parameters
    and flatten both to rows, for shapes whose maths selects rows.

    Returns ``(rows (M, 3), params, lead_shape)``: parameters without leading axes are passed
    through unchanged (they apply to every row), the others become ``(M, *core)`` arrays.
    ``core_ndims`` maps each parameter name to the number of its own (non-leading) axes.
    """
    leads = [value.shape[: value.ndim - core_ndims[name]] for name, value in shape.items()]
    lead = np.broadcast_shapes(points.shape[:-1], *leads)
    rows = np.broadcast_to(points, lead + (3,)).reshape(-1, 3)
    params = {}
    for name, value in shape.items():
        core = value.shape[value.ndim - core_ndims[name] :]
        if value.ndim == len(core):
            params[name] = value
        else:
            params[name] = np.broadcast_to(value, lead + core).reshape((-1,) + core)
    return rows, params, lead


def frame_keeps_y(rotation):
    """The frame ``rotation (3, 3)`` keeps the Y axis: its row and column 1 are the unit Y
    vector (as fitted swing and twist shapes are, see :func:`principal_frame`)."""
    return rotation[1].tolist() == [0.0, 1.0, 0.0] and rotation[:, 1].tolist() == [0.0, 1.0, 0.0]


def principal_frame(points, fixed_axis=None):
    """Centre and principal axes of a point cloud, by numpy's SVD of its covariance.

    Parameters
    ----------
    points : (N, 3) array
    fixed_axis : None or int
        When given, that coordinate axis is kept as a frame axis (column ``fixed_axis`` of the
        result is the unit vector along it) and only the other two axes are fitted. Used for
        swing and twist clouds, whose twist axis is the frame's Y axis.

    Returns
    -------
    position : (3,) array
        Mean of the points.
    rotation : (3, 3) array
        Orthonormal, determinant +1; its columns are the principal axes, largest spread first.
        Each column's largest component is made positive so the result is reproducible.
        Degenerate clouds (a point, a line, a plane) give a valid frame too.
    """
    points = np.asarray(points, dtype=float)
    position = points.mean(axis=0)
    centred = points - position
    if fixed_axis is None:
        free = [0, 1, 2]
        rotation = np.linalg.svd(centred.T @ centred / len(points))[0]
    else:
        free = [i for i in range(3) if i != fixed_axis]
        sub = centred[:, free]
        rotation = np.zeros((3, 3))
        rotation[fixed_axis, fixed_axis] = 1.0
        rotation[np.ix_(free, free)] = np.linalg.svd(sub.T @ sub / len(points))[0]
    largest = np.argmax(np.abs(rotation), axis=0)
    signs = np.where(rotation[largest, np.arange(3)] < 0, -1.0, 1.0)
    rotation = rotation * signs
    if np.linalg.det(rotation) < 0:
        rotation[:, free[-1]] *= -1.0
    return position, rotation


def twist_frame(axis):
    """Rotation matrices ``(..., 3, 3)`` taking +Y to the unit ``axis (..., 3)`` by the shortest arc.

    Column 1 is ``axis``; for the default +Y axis the frame is the identity. For ``axis = -Y``
    (where the shortest arc is not unique) the half turn about X is used.
    """
    a = unit_axis(axis)
    x, y, z = a[..., 0], a[..., 1], a[..., 2]
    opposite = 1.0 + y <= 1e-12
    inv = 1.0 / np.where(opposite, 1.0, 1.0 + y)
    frame = np.stack(
        (
            np.stack((y + z * z * inv, x, -x * z * inv), axis=-1),
            np.stack((-x, y, -z), axis=-1),
            np.stack((-x * z * inv, z, y + x * x * inv), axis=-1),
        ),
        axis=-2,
    )
    half_turn = np.diag([1.0, -1.0, -1.0])
    return np.where(opposite[..., None, None], half_turn, frame)


def _keep_in_ball(model, shape, points, radius):
    """Points of a shape ``(..., 3)`` pulled inside the ball ``|p| < radius`` (minus 1e-6 rad).

    A rotation's shape point always lies in that ball: an exp map has norm below 2 pi (the
    cover of the quaternion), a swing at most pi. A shape grown around data near that sphere
    can reach beyond it, and the nearest point of the shape may then lie outside the ball,
    where it names a rotation whose own point is elsewhere (the far cover, or the antipodal
    swing with the twist turned by 2 pi). Such points are moved along the segment towards
    the shape's point nearest the origin (in the shape and, like the data, in the ball) until
    they reach the sphere: still in the shape, now a faithful rotation, though no longer the
    exact nearest one. Other points are returned as they are.
    """
    limit = radius - 1e-6
    norm_sq = points[..., 0] ** 2 + points[..., 1] ** 2 + points[..., 2] ** 2
    outside = norm_sq > limit * limit
    if not outside.any():
        return points
    anchor = np.broadcast_to(model._project_shape(shape, np.zeros(3)), points.shape)
    d = points - anchor
    ad = np.sum(anchor * d, axis=-1)
    dd = np.maximum(np.sum(d * d, axis=-1), EPS)
    aa = np.sum(anchor * anchor, axis=-1)
    t = (-ad + np.sqrt(np.maximum(ad * ad - dd * (aa - limit * limit), 0.0))) / dd
    pulled = anchor + np.clip(t, 0.0, 1.0)[..., None] * d
    return np.where(outside[..., None], pulled, points)


def _is_bone_axis(axis):
    """Every twist axis in ``axis (..., 3)`` points along +Y: the twist frame is the identity."""
    axis = np.asarray(axis)
    return bool(np.all(axis[..., 0] == 0.0) and np.all(axis[..., 2] == 0.0) and np.all(axis[..., 1] > 0.0))


def _general_swing_twist_points(q, axis):
    swing, twist = swing_twist_from_quaternion(q, axis)
    frame = twist_frame(axis)
    swing_points = to_local(exp_map_from_quaternion(swing), 0.0, frame)
    swing_points[..., 1] = 0.0
    twist_vector = exp_map_from_quaternion(twist)
    a = unit_axis(axis)
    angle = twist_vector[..., 0] * a[..., 0] + twist_vector[..., 1] * a[..., 1] + twist_vector[..., 2] * a[..., 2]
    twist_points = np.zeros(angle.shape + (3,))
    twist_points[..., 1] = angle
    return swing_points, twist_points


def _bone_axis_split(q):
    """Swing ``x``, ``z`` and twist angle ``(n...)`` of ``q (n..., 4)`` for the +Y axis, in one
    pass (the swing's ``y`` and the twist's ``x``, ``z`` are zero).

    With twist ``(w, 0, y, 0) / n``, ``n = |(w, y)|``, the swing ``q * conj(twist)`` is
    ``(n, u_x / n, 0, u_z / n)`` with ``u = (x w + z y, z w - x y)``: its exp map is
    ``u * 2 atan2(|u|, n^2) / |u|`` and the twist angle is ``2 atan2(y, w)``. Rows where the
    twist or the swing is degenerate or tiny take the general path.
    """
    w, x, y, z = q[..., 0], q[..., 1], q[..., 2], q[..., 3]
    n2 = w * w + y * y
    ux = x * w + z * y
    uz = z * w - x * y
    u = np.sqrt(ux * ux + uz * uz)
    n = np.sqrt(n2) * EPS
    regular = (n > EPS * EPS) & (u > n) & (np.abs(y) > n)
    scale = 2.0 * np.arctan2(u, n2) / np.where(regular, u, 1.0)
    swing_x, swing_z, angle = ux * scale, uz * scale, 2.0 * np.arctan2(y, w)
    if not regular.all():
        index = np.nonzero(~regular)
        swing_points, twist_points = _general_swing_twist_points(q[index], BONE_AXIS)
        swing_x[index], swing_z[index], angle[index] = swing_points[..., 0], swing_points[..., 2], twist_points[..., 1]
    return swing_x, swing_z, angle


def _bone_axis_swing_twist_points(q):
    """:meth:`ShapeLimit._swing_twist_points` for the +Y axis, ``q (n..., 4)`` (see
    :func:`_bone_axis_split`)."""
    swing_x, swing_z, angle = _bone_axis_split(q)
    zero = np.zeros(angle.shape)
    return np.stack((swing_x, zero, swing_z), axis=-1), np.stack((zero, angle, zero), axis=-1)


def _bone_axis_compose(swing_x, swing_y, swing_z, angle):
    """``swing * twist (..., 4)`` for the +Y axis, written out, from the swing's exp map
    components and the twist angle; the twist is ``(cos(a / 2), 0, sin(a / 2), 0)``."""
    a, b, e, d = quaternion_from_exp_map_components(swing_x, swing_y, swing_z)
    c, s = half_angle_cos_sin(angle)
    return np.stack((a * c - e * s, b * c - d * s, a * s + e * c, b * s + d * c), axis=-1)


def _bone_axis_rotations(swing_points, twist_points):
    """:meth:`ShapeLimit._rotations` for the +Y axis (see :func:`_bone_axis_compose`)."""
    return _bone_axis_compose(swing_points[..., 0], swing_points[..., 1], swing_points[..., 2], twist_points[..., 1])


# -- the base class ------------------------------------------------------------------------------
class ShapeLimit(MovedProjection, LimitModel):
    """A limit made of convex shapes in exp-map space (see the module docstring).

    Subclasses set ``kind``, ``label``, ``description`` and ``SHAPE_PARAMS`` and implement the
    four ``_*_shape`` methods; ``PARAM_SHAPES`` is derived from ``SHAPE_PARAMS``.
    """

    SHAPE_PARAMS = {}
    FIT_OPTIONS = ("padding", "mode", "twist_axis")

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        shapes = {name: (None, *shape[1:]) for name, shape in cls.SHAPE_PARAMS.items()}
        shapes["axis"] = (3,)
        cls.PARAM_SHAPES = shapes

    # -- fitting -------------------------------------------------------------------------------
    @classmethod
    def fit(cls, rotations, mode="FULL", padding=0.05, twist_axis=BONE_AXIS):
        """Fit the shape(s) to a cloud of reference-relative rotations.

        Parameters
        ----------
        rotations : (N, 4) array
            Unit quaternions ``(w, x, y, z)``, cover already chosen (e.g. unrolled).
        mode : {"FULL", "SWING_TWIST"}
        padding : float
            Radians added around the data on every side (at least :data:`..constants.MIN_PADDING`).
        twist_axis : (3,) array
            Axis of the swing-twist split, in the bone's frame (normalized here).
        """
        q = check_cloud(rotations)
        if mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
        padding = check_padding(padding)
        axis = unit_axis(np.asarray(twist_axis, dtype=float).reshape(3))
        if mode == "FULL":
            shapes = [cls._fit_shape(exp_map_from_quaternion(q), padding)]
        else:
            swing_points, twist_points = cls._swing_twist_points(q, axis)
            shapes = [cls._fit_shape(swing_points, padding, fixed_axis=1), cls._fit_shape(twist_points, padding, fixed_axis=1)]
        params = {name: np.concatenate([s[name] for s in shapes], axis=0) for name in cls.SHAPE_PARAMS}
        params["axis"] = axis
        return cls(params, {"mode": mode})

    # -- the interface ---------------------------------------------------------------------------
    def contains(self, q, tolerance=CONTAINS_TOLERANCE):
        """``(...,)`` bool: the rotations ``q (..., 4)`` lie in every shape (within ``tolerance``
        radians in shape space). Non-finite rows are not contained."""
        q = as_quaternions(q)
        finite = finite_rows(q)
        points = self._points(np.where(finite[..., None], q, IDENTITY_QUATERNION))
        inside = finite
        for shape, p in zip(self._shapes(), points, strict=True):
            inside = inside & self._contains_shape(shape, p, tolerance)
        return inside

    def _project(self, q):
        """``(projected (..., 4), moved (...,) bool)``; large unbatched inputs in batches of
        :data:`CHUNK_ROWS` rows."""
        q = as_quaternions(q)
        shapes = self._shapes()
        size = q.size // 4
        # Shapes lying well inside their ball skip ``_keep_in_ball`` (its test costs about as
        # much as a box's projection); the bound is worth computing for large inputs only.
        in_ball = self._in_ball(shapes) if size >= IN_BALL_ROWS else None
        if size > CHUNK_ROWS and self._unbatched():
            flat = q.reshape(-1, 4)
            out = np.empty(flat.shape)
            moved = np.empty(len(flat), dtype=bool)
            for start in range(0, size, CHUNK_ROWS):
                stop = min(start + CHUNK_ROWS, size)
                out[start:stop], moved[start:stop] = self._project_rows(flat[start:stop], shapes, in_ball)
            return out.reshape(q.shape), moved.reshape(q.shape[:-1])
        return self._project_rows(q, shapes, in_ball)

    def _radii(self):
        """The radius of the ball holding each shape's points: an exp map's norm is below 2 pi,
        a swing's at most pi (see :func:`_keep_in_ball`)."""
        return (2.0 * np.pi,) if self.config["mode"] == "FULL" else (np.pi, 2.0 * np.pi)

    def _in_ball(self, shapes):
        """Per shape: True when the whole shape lies inside the ball of :func:`_keep_in_ball`
        (with a margin far above rounding), so no projected point can need pulling back."""
        flags = []
        for shape, radius in zip(shapes, self._radii(), strict=True):
            bound = self._shape_radius(shape)
            flags.append(bool(np.all(np.isfinite(bound)) and np.all(bound < radius - 1e-6 - BALL_MARGIN)))
        return flags

    def _unbatched(self):
        """No parameter has a leading (bone) axis."""
        if self.params["axis"].ndim != 1:
            return False
        return all(self.params[name].ndim == len(core) for name, core in self.SHAPE_PARAMS.items())

    def _project_rows(self, q, shapes, in_ball=None):
        finite = None
        safe = q
        if not np.isfinite(q).all():
            finite = finite_rows(q)
            safe = np.where(finite[..., None], q, IDENTITY_QUATERNION)
        points = self._points(safe)
        projected = [self._project_shape(shape, p) for shape, p in zip(shapes, points, strict=True)]
        if self.config["mode"] == "SWING_TWIST":
            # Flatten onto the swing plane / twist line (components, not a broadcast product).
            swing, twist = (p.copy() if np.may_share_memory(p, p_old) else p for p, p_old in zip(projected, points, strict=True))
            swing[..., 1] = 0.0
            twist[..., 0] = 0.0
            twist[..., 2] = 0.0
            projected = [swing, twist]
        if in_ball is None:
            in_ball = [False] * len(shapes)
        projected = [
            p if inside else _keep_in_ball(self, shape, p, r)
            for shape, p, r, inside in zip(shapes, projected, self._radii(), in_ball, strict=True)
        ]
        moved = np.zeros((), dtype=bool)
        for p, p_new in zip(points, projected, strict=True):
            moved = moved | rows_differ(p_new, p)
        if finite is not None:
            moved = moved & finite
        lead = moved.shape
        count = int(np.count_nonzero(moved))
        subset_ok = self.config["mode"] == "FULL" or self.params["axis"].ndim == 1
        if q.shape[:-1] == lead and subset_ok and 4 * count < moved.size:
            # Few rows moved (live use): rotations only for those.
            out = q.copy()
            if count:
                index = np.nonzero(moved)
                out[index] = self._rotations([np.broadcast_to(p, lead + (3,))[index] for p in projected])
            return out, moved
        out = self._rotations(projected)
        if out.shape != lead + (4,) or not out.flags.c_contiguous:
            out = np.array(np.broadcast_to(out, lead + (4,)))
        if count < moved.size:
            # Restore the unmoved rows by index (a boolean mask of random bits is slow), read
            # with ``take`` (faster than fancy indexing of short rows).
            keep = np.flatnonzero(~moved)
            out.reshape(-1, 4)[keep] = np.take(np.broadcast_to(q, lead + (4,)).reshape(-1, 4), keep, axis=0)
        return out, moved

    # -- rotations <-> shape points ----------------------------------------------------------------
    @staticmethod
    def _swing_twist_points(q, axis):
        """Swing points ``(..., 3)`` ``(x, 0, z)`` and twist points ``(0, angle, 0)`` in the
        twist frame of ``axis``."""
        if _is_bone_axis(axis) and q.ndim >= 2:
            return _bone_axis_swing_twist_points(q)
        return _general_swing_twist_points(q, axis)

    def _points(self, q):
        if self.config["mode"] == "FULL":
            return [exp_map_from_quaternion(q)]
        return list(self._swing_twist_points(q, self.params["axis"]))

    def _rotations(self, points):
        if self.config["mode"] == "FULL":
            return quaternion_from_exp_map(points[0])
        if _is_bone_axis(self.params["axis"]) and points[0].ndim >= 2 and points[0].shape == points[1].shape:
            return _bone_axis_rotations(points[0], points[1])
        axis = unit_axis(self.params["axis"])
        swing = quaternion_from_exp_map(from_local(points[0], 0.0, twist_frame(axis)))
        twist = quaternion_from_exp_map(axis * points[1][..., 1:2])
        return quaternion_multiply(swing, twist)

    def _shapes(self):
        """The parameters of each shape: ``[full]`` or ``[swing, twist]``, as dicts of views."""
        count = 1 if self.config["mode"] == "FULL" else 2
        shapes = []
        for index in range(count):
            shape = {}
            for name, core in self.SHAPE_PARAMS.items():
                value = self.params[name]
                size = core[0]
                cut = [slice(None)] * value.ndim
                cut[value.ndim - len(core)] = slice(index * size, (index + 1) * size)
                shape[name] = value[tuple(cut)]
            shapes.append(shape)
        return shapes

    # -- validation ------------------------------------------------------------------------------
    def validate(self):
        mode = self.config.get("mode")
        if mode not in MODES:
            raise ValueError(f"{self.kind} limit: config 'mode' must be one of {MODES}, got {mode!r}")
        extra = set(self.config) - {"mode"}
        if extra:
            raise ValueError(f"{self.kind} limit: unknown config entries {sorted(extra)}")
        count = 1 if mode == "FULL" else 2
        for name, core in self.SHAPE_PARAMS.items():
            value = self.params[name]
            length = value.shape[value.ndim - len(core)]
            if length != count * core[0]:
                raise ValueError(
                    f"{self.kind} limit: parameter {name!r} must hold {count} x {core[0]} values in {mode} mode, got {length}"
                )
        if np.any(np.linalg.norm(self.params["axis"], axis=-1) <= EPS):
            raise ValueError(f"{self.kind} limit: twist 'axis' must not have zero length")
        for shape in self._shapes():
            self._validate_shape(shape)

    # -- to be implemented by the shapes -----------------------------------------------------------
    @classmethod
    def _fit_shape(cls, points, padding, fixed_axis=None):  # pragma: no cover - abstract
        raise NotImplementedError

    @classmethod
    def _contains_shape(cls, shape, points, tolerance):  # pragma: no cover - abstract
        raise NotImplementedError

    @classmethod
    def _project_shape(cls, shape, points):  # pragma: no cover - abstract
        raise NotImplementedError

    @classmethod
    def _shape_radius(cls, shape):
        """An upper bound ``(...,)`` of ``|p|`` over the points ``p`` of a shape (its parameters
        may have leading axes); ``inf`` when unknown."""
        return np.inf

    @classmethod
    def _validate_shape(cls, shape):
        """Raise ``ValueError`` when one shape's parameters are inconsistent."""
