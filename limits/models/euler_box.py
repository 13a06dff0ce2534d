# SPDX-License-Identifier: GPL-3.0-or-later
"""The Euler box: a min/max range per Euler angle, the limit Blender, Maya and Houdini offer.

This is the baseline the shape limits are compared with, and it exports exactly to Blender's
*Limit Rotation* constraint (``min_x``/``max_x``... in radians, which accept -1000..1000).

Angles: the rotation is decomposed into Blender Euler angles for ``config["order"]`` (one of
:data:`~..constants.EULER_ORDERS`; ``"XYZ"`` means ``R = Rz @ Ry @ Rx``) with
:func:`~..geometry.quaternion.euler_from_quaternion`, which like Blender's ``mat3_normalized_to_eulO``
returns, of the two equivalent triples, the one with the smaller sum of absolute angles. Angles
are then in ``[-pi, pi]``.

Fitting wraps around: for each axis the range is the smallest circular arc holding all the
data's angles (the complement of the largest gap between consecutive sorted angles), grown by
the padding on both sides. ``mins``/``maxs`` are stored in radians with ``mins < maxs``; when the
arc crosses +-pi one bound lies beyond +-pi (e.g. ``[2.9, 3.4]``), which is how Blender's
constraint expresses such a range too. An arc of a full turn or more (``maxs - mins >= 2 pi``)
does not limit that axis.

Projection matches Blender's non-legacy Limit Rotation (``rotlimit_evaluate`` and its
``clamp_angle`` in ``source/blender/blenkernel/intern/constraint.cc``, Blender 4.2 and later,
i.e. without ``LIMIT_ROT_LEGACY_BEHAVIOR``): the decomposed triple is clamped angle by angle on
the circle; an angle outside its arc goes to whichever bound is closer around the circle
(``min`` on a tie), ``max - min >= 2 pi`` leaves the angle free and ``max <= min`` gives ``min``.
The clamped triple is turned back into a rotation. One deliberate difference: a rotation is
*allowed* when either of its two equivalent Euler triples lies in the box (Blender only looks at
the triple its decomposition picks), and allowed rotations are returned unchanged. Blender
would clamp the picked triple even then, moving a rotation the box allows; for disallowed
rotations the result is Blender's. This keeps ``project`` idempotent. At gimbal lock (middle
angle exactly +-pi/2) the decomposition sets the last angle to zero, as Blender does.

"Nearest" is measured in Euler-angle space, one angle at a time; the result is generally not
the geodesically nearest allowed rotation.

Reference pose: models receive rotations relative to the joint's reference pose (see
:mod:`..joint`), while Blender's constraint (owner space Local) sees rotations relative to the
rest pose. The Euler box therefore agrees exactly with the native constraint only when the
reference is the rest pose (``reference="REST"``).

Parameters: ``mins (3,)`` and ``maxs (3,)`` in radians, indexed by axis X, Y, Z (not by order).
There is no SWING_TWIST mode.
"""

import numpy as np

from ..checks import check_cloud, check_padding, finite_rows
from ..constants import CONTAINS_TOLERANCE, EPS, EULER_ORDERS, IDENTITY_QUATERNION
from ..geometry.quaternion import as_quaternions, euler_from_quaternion, quaternion_from_euler, quaternion_toward
from ..model import LimitModel, MovedProjection, RowsPerBone, projection_moved

TWO_PI = 2.0 * np.pi

#: Largest magnitude of a bound, in radians (Blender's Limit Rotation range).
BOUND_LIMIT = 1000.0

_AXIS_INDEX = {"X": 0, "Y": 1, "Z": 2}


def wrap_angle(angle):
    """Angles wrapped to ``[-pi, pi)`` (Blender's ``wrap_rad_angle``)."""
    return angle - TWO_PI * np.floor(angle / TWO_PI + 0.5)


def clamp_angle(angle, lo, hi):
    """Blender's ``clamp_angle``, vectorized: clamp ``angle`` to the directed arc from ``lo`` to
    ``hi`` on the circle (radians, broadcasting). An angle outside goes to the circularly
    nearer bound (``lo`` on a tie)."""
    lo_rel = wrap_angle(lo - angle)
    hi_rel = wrap_angle(hi - angle)
    plain = angle + np.minimum(np.maximum(0.0, lo_rel), hi_rel)
    crossed_inside = (hi_rel >= 0.0) | (lo_rel <= 0.0)
    nearer = angle + np.where(np.abs(hi_rel) < np.abs(lo_rel), hi_rel, lo_rel)
    out = np.where(lo_rel < hi_rel, plain, np.where(crossed_inside, angle, nearer))
    out = np.where(hi <= lo, lo, out)
    return np.where(hi - lo >= TWO_PI, angle, out)


def angle_in_arc(angle, lo, hi, tolerance=0.0):
    """``angle`` lies on the directed arc from ``lo`` to ``hi`` (within ``tolerance`` radians)."""
    offset = np.mod(angle - lo, TWO_PI)
    return (hi - lo >= TWO_PI) | (offset <= hi - lo + tolerance) | (offset >= TWO_PI - tolerance)


def circular_ranges(angles, padding):
    """Per column, the smallest circular arc holding all ``angles (N, k)`` (radians), padded.

    Returns ``(mins, maxs)`` of shape ``(k,)`` with ``mins < maxs``, the arc's middle in
    ``[-pi, pi)``; an arc of a full turn or more gives ``(-pi, pi)``.
    """
    a = np.sort(wrap_angle(np.asarray(angles, dtype=float)), axis=0)
    gaps = np.diff(a, axis=0, append=a[:1] + TWO_PI)  # gap after each sorted angle; last wraps
    largest = np.argmax(gaps, axis=0)
    cols = np.arange(a.shape[1])
    start = a[(largest + 1) % len(a), cols]
    width = TWO_PI - gaps[largest, cols]
    mins = start - padding
    maxs = start + width + padding
    shift = TWO_PI * np.floor((0.5 * (mins + maxs)) / TWO_PI + 0.5)
    mins, maxs = mins - shift, maxs - shift
    full = maxs - mins >= TWO_PI
    return np.where(full, -np.pi, mins), np.where(full, np.pi, maxs)


# -- the fast kernel ---------------------------------------------------------------------------------
# Rows are handled in chunks of KERNEL_CHUNK_ROWS with few, reused temporaries, so a chunk's working set
# stays in the cache. The Euler angles come straight from the quaternion's (strided) components
# for the configured order: the entries of Blender's matrix that mat3_normalized_to_eulO reads,
# all scaled by |q|^2 / 2 (which atan2 and the gimbal-lock threshold do not mind), and three
# atan2. The inside test is a circular distance to each arc's middle, for both triples at once.
# Only the rotations outside are gathered (one np.take of their rows), clamped for the three
# axes at once (angles in turns from the point opposite each middle: a floor and a clip) and
# turned back into quaternions (half angles by one tangent of a quarter angle, one division per
# rotation), then scattered back. Selections are multiplications by 0 and 1 or sign copies:
# np.where on unpredictable masks costs ~4 ns an element, a multiply ~0.5 ns. Rows with a
# non-finite, tiny or huge norm, and rows near gimbal lock, go through the reference maths
# (:meth:`EulerBoxLimit._reference_project`), the original implementation.

#: Rows per batch of this kernel (twice the shared :data:`..constants.CHUNK_ROWS`): small
#: enough for the cache, large enough that the ~100 numpy calls of a batch cost little (both
#: halving and doubling it were slower).
KERNEL_CHUNK_ROWS = 32768

#: Squared norms the kernel takes; others (NaN, inf, below ``EPS``, overflowing) go the
#: reference way. A little inside ``EPS`` so the two never disagree at the border.
_NORM2_LOW = 4.0 * EPS * EPS
_NORM2_HIGH = 1e150

#: Rows with ``cos(middle angle)`` at or below this, near gimbal lock, go the reference way:
#: the first and last angles are ill-conditioned there (an error of ``eps / cos``), so only the
#: reference's own arithmetic reproduces its angles. Elsewhere the two agree to ~1e-13 rad. Few
#: rows: about ``NEAR_LOCK^2 / 2`` of uniformly random rotations.
_NEAR_LOCK = 1e-2


class _Arcs:
    """Each axis's arc as its middle ``mid_*`` and half width ``half_*`` (``inf`` for a full
    turn, ``-inf`` for none), in the order's slots ``i, j, k``. ``mid_j2`` is the middle of the
    arc that the alternative middle angle ``pi - tj`` must lie in, reflected onto ``tj``.
    For the clamp (no tolerance; ``max <= min`` keeps only ``min``, the middle then) angles are
    measured in turns from the point opposite the middle: ``shift`` moves there, ``lo``, ``up``
    bound the arc and ``base`` is a quarter of that point's angle, each ``(3, bones)``. The
    others are plain floats for one bone, ``(bones,)`` arrays for stacked params (see
    :meth:`take`)."""

    NAMES = ("mid", "half")

    def __init__(self, mins, maxs, order, tolerance):
        self.axes = tuple(_AXIS_INDEX[c] for c in order)
        i, j, _ = self.axes
        self.parity = 1.0 if (j - i) % 3 == 1 else -1.0
        mins = np.asarray(mins, dtype=float).reshape(-1, 3)
        maxs = np.asarray(maxs, dtype=float).reshape(-1, 3)
        # angle_in_arc's set: [mins - tolerance, mins + max(width + tolerance, 0)] around the circle
        width = maxs - mins
        start = mins - tolerance
        end = mins + np.maximum(width + tolerance, 0.0)
        full = (width >= TWO_PI) | (end - start >= TWO_PI)
        empty = (width + tolerance < 0.0) & (tolerance <= 0.0)
        columns = {
            "mid": wrap_angle(0.5 * (start + end)),
            "half": np.where(full, np.inf, np.where(empty, -np.inf, 0.5 * (end - start))),
        }
        fields = {}
        for slot, axis in zip("ijk", self.axes, strict=True):
            for name in self.NAMES:
                fields[f"{name}_{slot}"] = columns[name][:, axis]
        fields["mid_j2"] = wrap_angle(np.pi - columns["mid"][:, j])
        # The clamp, for the three slots at once ((3, bones) arrays): angles in turns from the
        # point opposite the middle.
        mid = np.stack([fields[f"mid_{slot}"] for slot in "ijk"])
        clamp = np.maximum(np.stack([fields[f"half_{slot}"] for slot in "ijk"]), 0.0) / TWO_PI
        fields["shift"] = 0.5 - mid / TWO_PI
        fields["lo"], fields["up"] = 0.5 - clamp, 0.5 + clamp
        fields["base"] = 0.25 * (mid - np.pi)
        if mins.shape[0] == 1:  # one bone: plain floats, (3, 1) columns
            fields = {name: float(value[0]) if value.ndim == 1 else value for name, value in fields.items()}
        self.stacked = mins.shape[0] > 1
        self.fields = fields
        self.__dict__.update(fields)

    def take(self, index):
        """A copy with the array fields indexed by ``index`` (bones per row, or rows)."""
        out = object.__new__(_Arcs)
        out.axes, out.parity, out.stacked = self.axes, self.parity, self.stacked
        out.fields = {name: _take(value, index, self.stacked) for name, value in self.fields.items()}
        out.__dict__.update(out.fields)
        return out


def _take(value, index, stacked):
    if not stacked:
        return value
    return value[..., index]


def _bone_rows(bone, start, index):
    return None if bone is None else bone[start + index]


def _angles(chunk, axes, parity):
    """``(chunk, comps, ti, tj, tk, left)`` for rows ``chunk (n, 4)``.

    ``comps`` are the components ``(w, vi, vj, vk)`` in the order's slots (views of the returned
    ``chunk``, a copy when some rows had to be replaced), ``ti, tj, tk`` Blender's first Euler
    triple (before it picks the one with the smaller sum) in the slots. ``left`` is ``None``
    when the kernel takes every row, else the mask of rows it leaves to the reference maths:
    non-finite, tiny or huge ones (replaced by the identity here), and those near gimbal lock,
    where the two angles it couples are ill-conditioned and only the very same arithmetic gives
    the very same angles.
    """
    i, j, k = axes
    # Strided views: the arithmetic barely minds, a transposed copy would cost more. Few
    # temporaries, reused, so that a chunk's working set stays in the cache.
    w, vi, vj, vk = chunk[:, 0], chunk[:, 1 + i], chunk[:, 1 + j], chunk[:, 1 + k]
    with np.errstate(over="ignore", invalid="ignore"):
        d_k = np.multiply(w, w)
        d_i = np.multiply(vi, vi)
        d_i += d_k  # w^2 + vi^2
        half = np.multiply(vk, vk)
        d_k += half  # w^2 + vk^2
        half += d_i
        t = np.multiply(vj, vj)
        half += t  # |q|^2
        good = half > _NORM2_LOW
        good &= half < _NORM2_HIGH
    if not good.all():  # the reference maths takes these rows; the identity stands in here
        left = ~good
        chunk = chunk.copy()
        chunk[left] = IDENTITY_QUATERNION
        chunk, comps, ti, tj, tk, more = _angles(chunk, axes, parity)
        return chunk, comps, ti, tj, tk, left if more is None else left | more
    # The entries of Blender's matrix that mat3_normalized_to_eulO reads, times |q|^2 / 2.
    half *= 0.5
    d_i -= half  # m[i, i]
    d_k -= half  # m[k, k]
    plus, minus = (np.add, np.subtract) if parity > 0 else (np.subtract, np.add)
    y_i = np.multiply(w, vi)  # parity * m[k, j]
    plus(y_i, np.multiply(vj, vk, out=t), out=y_i)
    y_j = np.multiply(w, vj)  # -parity * m[k, i]
    minus(y_j, np.multiply(vi, vk, out=t), out=y_j)
    y_k = np.multiply(w, vk)  # parity * m[j, i]
    plus(y_k, np.multiply(vi, vj, out=t), out=y_k)
    cy = np.multiply(d_i, d_i)  # hypot(m[i, i], m[j, i]); the kernel's norms keep this finite
    cy += np.multiply(y_k, y_k, out=t)
    np.sqrt(cy, out=cy)
    ti = np.arctan2(y_i, d_k, out=d_k)
    tj = np.arctan2(y_j, cy, out=y_j)
    tk = np.arctan2(y_k, d_i, out=d_i)
    half *= _NEAR_LOCK
    locked = np.less_equal(cy, half, out=good)
    return chunk, (w, vi, vj, vk), ti, tj, tk, locked if locked.any() else None


def _allowed(ti, tj, tk, a):
    """Either Euler triple lies in the arcs ``a``. The alternative one is ``(ti + pi,
    pi - tj, tk + pi)``: the circular distances of its first and last angles from the middles
    follow from the primary ones, its middle angle is ``tj`` reflected. With ``d = |angle -
    middle|`` in ``[0, 2 pi]``, the circular distance is within ``h`` when ``d <= h`` or
    ``d >= 2 pi - h``, and at least ``pi - h`` when ``pi - h <= d <= pi + h`` (comparisons are
    cheaper than forming ``min(d, 2 pi - d)``)."""
    d = np.empty_like(ti)

    def offset(angle, middle):
        np.subtract(angle, middle, out=d)
        return np.abs(d, out=d)

    def near(h):  # circular distance <= h
        inside = d <= h
        inside |= d >= TWO_PI - h
        return inside

    def far(h):  # circular distance >= pi - h
        outside = d >= np.pi - h
        outside &= d <= np.pi + h
        return outside

    offset(ti, a.mid_i)
    primary = near(a.half_i)
    alternative = far(a.half_i)
    offset(tk, a.mid_k)
    primary &= near(a.half_k)
    alternative &= far(a.half_k)
    offset(tj, a.mid_j)
    primary &= near(a.half_j)
    offset(tj, a.mid_j2)
    alternative &= near(a.half_j)
    return np.logical_or(primary, alternative, out=primary)


def _limited(comps, ti, tj, tk, a):
    """The clamped rotations ``(w, vi, vj, vk)`` (on the side of ``comps``) for rows outside."""
    first = np.abs(ti)
    tmp = np.abs(tj)
    first += tmp
    first += np.abs(tk, out=tmp)
    # The alternative triple (ti -+ pi, +-pi - tj, tk -+ pi) has the absolute angles pi - |t|,
    # the sum 3 pi - first: Blender keeps the triple with the smaller sum.
    use = first > 1.5 * np.pi
    # The kept triple's angles, in turns from the points opposite the arcs' middles, for the
    # three axes at once; the alternative adds half a turn, its middle angle is +-pi - tj.
    u = np.empty((3, len(ti)))
    np.multiply(ti, 1.0 / TWO_PI, out=u[0])
    np.multiply(use, -2.0 / TWO_PI, out=u[1])
    u[1] += 1.0 / TWO_PI
    u[1] *= tj
    np.multiply(tk, 1.0 / TWO_PI, out=u[2])
    u += np.multiply(use, 0.5, out=first)
    u += a.shift
    # Blender's clamp_angle: the fraction of a turn past the opposite point, clipped to the
    # arc, so an angle outside goes to the circularly nearer bound (min on a tie, fraction 0).
    f = np.floor(u)
    np.subtract(u, f, out=f)
    np.maximum(f, a.lo, out=f)
    np.minimum(f, a.up, out=f)
    f *= 0.5 * np.pi  # a quarter of the clamped angle: (2 pi (f - 1/2) + middle) / 4
    f += a.base
    # Half angles by t = tan(angle / 4): cos = (1 - t^2) / (1 + t^2), sin = 2 t / (1 + t^2)
    # (one fast tangent instead of a sine and a cosine); the divisions are left for once a row.
    t = np.tan(f, out=f)
    c = np.multiply(t, t, out=u)
    n = c + 1.0
    np.subtract(1.0, c, out=c)
    t += t
    (ci, cj, ck), (si, sj, sk) = c, t
    # q_k * q_j * q_i with q_axis = (cos, sin * axis), e_i x e_j = parity e_k; times n_i n_j n_k.
    plus, minus = (np.add, np.subtract) if a.parity > 0 else (np.subtract, np.add)
    cc, ss, cs, sc = ci * cj, si * sj, ci * sj, si * cj
    qw = ck * cc
    qi = ck * sc
    qj = ck * cs
    qk = sk * cc
    plus(qw, np.multiply(sk, ss, out=tmp), out=qw)
    minus(qi, np.multiply(sk, cs, out=tmp), out=qi)
    plus(qj, np.multiply(sk, sc, out=tmp), out=qj)
    minus(qk, np.multiply(ck, ss, out=tmp), out=qk)
    w, vi, vj, vk = comps
    dot = np.multiply(qw, w, out=cc)
    dot += np.multiply(qi, vi, out=tmp)
    dot += np.multiply(qj, vj, out=tmp)
    dot += np.multiply(qk, vk, out=tmp)
    dot += 0.0  # -0 to +0: only a negative dot flips the result, as in quaternion_toward
    factor = np.multiply(n[0], n[1], out=tmp)
    factor *= n[2]
    np.divide(1.0, factor, out=factor)
    np.copysign(factor, dot, out=factor)
    qw *= factor
    qi *= factor
    qj *= factor
    qk *= factor
    return qw, qi, qj, qk


def _project_chunk(chunk, comps, ti, tj, tk, a, out):
    """Project the rows ``chunk (n, 4)`` (components ``comps`` in the order's slots, first
    Euler triple ``ti, tj, tk``) into ``out (n, 4)``; returns the ``(n,)`` mask of moved rows."""
    moved = ~_allowed(ti, tj, tk, a)
    count = int(np.count_nonzero(moved))
    columns = (0,) + tuple(1 + axis for axis in a.axes)
    if count == 0:
        out[...] = chunk
        return moved
    if count == len(chunk):
        for column, value in zip(columns, _limited(comps, ti, tj, tk, a), strict=True):
            out[:, column] = value
        return moved
    rows = np.flatnonzero(moved)  # gathering the moved rows pays even when most rows move
    block = np.take(chunk, rows, axis=0)  # a third of the time of four strided gathers
    gathered = tuple(block[:, column] for column in columns)
    limited = _limited(gathered, ti[rows], tj[rows], tk[rows], a.take(rows))
    out[...] = chunk
    for column, value in zip(columns, limited, strict=True):
        out[:, column][rows] = value  # four 1-D scatters: a (count, 4) one costs twice as much
    return moved


def _check_order(order):
    if order not in EULER_ORDERS:
        raise ValueError(f"Euler order must be one of {EULER_ORDERS}, got {order!r}")
    return order


class EulerBoxLimit(RowsPerBone, MovedProjection, LimitModel):
    kind = "euler_box"
    FIT_OPTIONS = ("padding", "order")
    label = "Euler Box"
    description = "Min/max per Euler angle, like Blender's Limit Rotation constraint (the usual baseline)"
    PARAM_SHAPES = {"mins": (3,), "maxs": (3,)}
    LEAD_PARAM = "mins"

    @classmethod
    def fit(cls, rotations, order="XYZ", padding=0.05, mode="FULL", twist_axis=None):
        """Fit per-axis circular ranges to reference-relative rotations ``(N, 4)``.

        ``order`` is the Blender Euler order; ``padding`` radians are added on both sides.
        ``mode`` may only be ``"FULL"`` and ``twist_axis`` is ignored (accepted so every model
        can be fitted with the same options).
        """
        q = check_cloud(rotations)
        order = _check_order(order)
        if mode != "FULL":
            raise ValueError(f"the Euler box has no {mode!r} mode (only 'FULL')")
        mins, maxs = circular_ranges(euler_from_quaternion(q, order), check_padding(padding))
        return cls({"mins": mins, "maxs": maxs}, {"order": order})

    # -- the interface ---------------------------------------------------------------------------
    def contains(self, q, tolerance=CONTAINS_TOLERANCE):
        """``(...,)`` bool: either Euler triple of ``q (..., 4)`` is in the box (``tolerance``
        radians per angle). Non-finite rows are not contained."""
        q = as_quaternions(q)
        rows, bone, lead = self._rows(q)
        inside = np.empty(len(rows), dtype=bool)
        arcs = self._arcs(tolerance)
        for start in range(0, len(rows), KERNEL_CHUNK_ROWS):
            stop = min(start + KERNEL_CHUNK_ROWS, len(rows))
            chunk = rows[start:stop]
            _, _, ti, tj, tk, left = _angles(chunk, arcs.axes, arcs.parity)
            a = arcs.take(bone[start:stop]) if bone is not None else arcs
            inside[start:stop] = _allowed(ti, tj, tk, a)
            if left is not None:
                bad = np.flatnonzero(left)
                inside[start + bad] = self._reference_contains(chunk[bad], _bone_rows(bone, start, bad), tolerance)
        return inside.reshape(lead)

    def _project(self, q):
        q = as_quaternions(q)
        rows, bone, lead = self._rows(q)
        out = np.empty((len(rows), 4))
        moved = np.empty(len(rows), dtype=bool)
        arcs = self._arcs(0.0)
        for start in range(0, len(rows), KERNEL_CHUNK_ROWS):
            stop = min(start + KERNEL_CHUNK_ROWS, len(rows))
            chunk = rows[start:stop]
            safe, comps, ti, tj, tk, left = _angles(chunk, arcs.axes, arcs.parity)
            a = arcs.take(bone[start:stop]) if bone is not None else arcs
            moved[start:stop] = _project_chunk(safe, comps, ti, tj, tk, a, out[start:stop])
            if left is not None:
                bad = np.flatnonzero(left)
                out[start + bad], moved[start + bad] = self._reference_project(chunk[bad], _bone_rows(bone, start, bad))
        return out.reshape(lead + (4,)), moved.reshape(lead)

    def projection_candidates(self, q, plain=None):
        """``(3, ..., 4)``: :meth:`project` (``plain``, when given), then the clamp of each of
        the two Euler triples of ``q``. Blender clamps the triple with the smaller sum of
        absolute angles, which switches along a motion; a motion keeps the triple it is on
        (:mod:`..continuity`)."""
        q = as_quaternions(q)
        if plain is None:
            plain, moved = self._project(q)
        else:
            plain = np.asarray(plain, dtype=float)
            moved = projection_moved(q, plain)
        rows, bone, lead = self._rows(q)
        mins, maxs = self._bone_params(bone)
        finite = finite_rows(rows)
        safe = np.where(finite[:, None], rows, IDENTITY_QUATERNION)
        keep = ~moved.reshape(-1)[:, None]
        out = [plain]
        for euler in self._triples(safe):
            clamped = quaternion_toward(quaternion_from_euler(clamp_angle(euler, mins, maxs), self.config["order"]), safe)
            out.append(np.where(keep, rows, clamped).reshape(lead + (4,)))
        return np.stack(out)

    def subset(self, lead, index):
        self.__dict__.setdefault("_arcs_cache", {})  # (a view made before the first query shares it too)
        return super().subset(lead, index)

    def _arcs(self, tolerance):
        """The kernel's constants for the current params, kept while they stay the same (they
        cost more than a small batch of rotations)."""
        mins, maxs = self.params["mins"], self.params["maxs"]
        key = (mins.tobytes(), maxs.tobytes(), mins.shape, self.config["order"], float(tolerance))
        cache = self.__dict__.setdefault("_arcs_cache", {})
        arcs = cache.get(key)
        if arcs is None:
            if len(cache) >= 4:
                cache.clear()
            arcs = cache[key] = _Arcs(mins, maxs, self.config["order"], tolerance)
        return arcs

    def _bone_params(self, bone):
        return self._per_row("mins", bone), self._per_row("maxs", bone)

    # -- the reference maths (rows the fast kernel leaves: non-finite, tiny or huge) ------------
    def _triples(self, q):
        order = self.config["order"]
        euler = euler_from_quaternion(q, order)
        i, j, k = (_AXIS_INDEX[c] for c in order)
        alternative = euler.copy()
        alternative[..., i] += np.pi
        alternative[..., j] = np.pi - alternative[..., j]
        alternative[..., k] += np.pi
        return euler, alternative

    @staticmethod
    def _in_box(euler, mins, maxs, tolerance):
        return np.all(angle_in_arc(euler, mins, maxs, tolerance), axis=-1)

    def _reference_contains(self, q, bone, tolerance):
        mins, maxs = self._bone_params(bone)
        finite = finite_rows(q)
        euler, alternative = self._triples(np.where(finite[..., None], q, IDENTITY_QUATERNION))
        return finite & (self._in_box(euler, mins, maxs, tolerance) | self._in_box(alternative, mins, maxs, tolerance))

    def _reference_project(self, q, bone):
        mins, maxs = self._bone_params(bone)
        finite = finite_rows(q)
        safe = np.where(finite[..., None], q, IDENTITY_QUATERNION)
        euler, alternative = self._triples(safe)
        allowed = self._in_box(euler, mins, maxs, 0.0) | self._in_box(alternative, mins, maxs, 0.0)
        clamped = clamp_angle(euler, mins, maxs)
        limited = quaternion_toward(quaternion_from_euler(clamped, self.config["order"]), safe)
        moved = finite & ~allowed
        return np.where(moved[..., None], limited, q), moved

    # -- validation ------------------------------------------------------------------------------
    def validate(self):
        order = self.config.get("order")
        if order not in EULER_ORDERS:
            raise ValueError(f"{self.kind} limit: config 'order' must be one of {EULER_ORDERS}, got {order!r}")
        extra = set(self.config) - {"order"}
        if extra:
            raise ValueError(f"{self.kind} limit: unknown config entries {sorted(extra)}")
        mins, maxs = self.params["mins"], self.params["maxs"]
        if np.any(mins > maxs):
            raise ValueError(f"{self.kind} limit: 'mins' must not exceed 'maxs'")
        if np.any(np.abs(mins) > BOUND_LIMIT) or np.any(np.abs(maxs) > BOUND_LIMIT):
            raise ValueError(f"{self.kind} limit: bounds must lie within +-{BOUND_LIMIT:g} radians (Blender's range)")
