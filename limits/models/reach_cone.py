# SPDX-License-Identifier: GPL-3.0-or-later
"""A reach cone (after Wilhelms and Van Gelder's reach cones): how far a joint may swing in each
direction, and how far it may twist.

A rotation ``q`` (relative to the joint's reference) is first carried into the joint's own
frame, ``m = frame_left * q * frame_right`` (identity frames: the bone's local axes; the human
preset passes a joint's anatomical segment frames and neutral posture, :mod:`..body.envelope`,
so that ``m`` is the turn away from standing), then split ``m = swing * twist`` about +Y. The
swing vector ``s`` (scaled angle-axis, in the XZ plane) points in the direction
``phi = atan2(s_z, s_x)`` and has the angle ``|s|``. The cone allows ``|s| <= reach(phi)`` and a
twist within ``(low(phi), high(phi))``, each interpolated linearly between :data:`BINS`
directions: how far a joint twists depends on where it points (a shoulder raised forward twists
otherwise than one raised sideways), as the swing and twist of real joints are coupled.

Fitting: each direction's reach is the largest swing angle of the samples within one direction
step of it (so linear interpolation between two directions never cuts a sample off), plus the
padding; a direction no sample comes near keeps only the padding. Each direction's twist range
is the extent of those samples' twists and of every sample swung less than
:data:`NEAR_NEUTRAL` (whose direction means little), plus the padding. Swings are capped at pi.

Projection: the twist is clamped into its range and a swing beyond its reach is shortened along
its own direction onto the cone (not the exact nearest rotation near the cone's corners, which
no reach cone solves in closed form; what was inside is returned unchanged).

Parameters: ``reach (BINS,)`` radians, ``twist (BINS, 2)`` radians (low, high per direction),
``frame_left (4,)``, ``frame_right (4,)`` unit quaternions.
"""

import numpy as np

from ..checks import check_cloud, check_padding
from ..constants import EPS, IDENTITY_QUATERNION
from ..geometry.quaternion import (
    as_quaternions,
    exp_map_from_quaternion,
    quaternion_conjugate,
    quaternion_from_exp_map,
    quaternion_multiply,
    quaternion_normalize,
    quaternion_short_way,
)
from ..geometry.swing_twist import swing_twist_from_quaternion
from ..model import LimitModel, MovedProjection

#: Directions the reach is stored for (every 15 degrees).
BINS = 24
#: Rotations within this (radians) outside the cone count as inside (a projection's round-off).
TOLERANCE = 1e-7
#: Samples swung less than this (radians) count for every direction's twist range.
NEAR_NEUTRAL = np.radians(10.0)


def swing_parts(m):
    """``(phi (...,), swing angle (...,), twist angle (...,))`` of rotations ``m (..., 4)`` split
    about +Y (radians; ``phi`` from +X towards +Z)."""
    swing, twist = swing_twist_from_quaternion(quaternion_short_way(m))
    s = exp_map_from_quaternion(quaternion_short_way(swing))
    t = exp_map_from_quaternion(quaternion_short_way(twist))
    return np.arctan2(s[..., 2], s[..., 0]), np.linalg.norm(s, axis=-1), t[..., 1]


def reach_at(reach, phi):
    """The reach ``(...,)`` in the directions ``phi (...,)``, interpolated linearly between the
    ``reach (..., K)`` table's directions ``2 pi k / K``."""
    reach = np.asarray(reach, dtype=float)
    k = reach.shape[-1]
    x = np.mod(phi, 2.0 * np.pi) * (k / (2.0 * np.pi))
    lo = np.floor(x).astype(np.intp) % k
    hi = (lo + 1) % k
    w = x - np.floor(x)
    if reach.ndim == 1:
        return (1.0 - w) * reach[lo] + w * reach[hi]
    table = np.broadcast_to(reach, np.broadcast_shapes(reach.shape[:-1], np.shape(phi)) + (k,))
    return (1.0 - w) * np.take_along_axis(table, lo[..., None], -1)[..., 0] + w * np.take_along_axis(table, hi[..., None], -1)[
        ..., 0
    ]


class ReachConeLimit(MovedProjection, LimitModel):
    kind = "reach_cone"
    label = "Reach Cone"
    description = "How far the joint swings in each direction and how far it twists (the human preset's anatomical ranges)"
    PARAM_SHAPES = {"reach": (None,), "twist": (None, 2), "frame_left": (4,), "frame_right": (4,)}
    FIT_OPTIONS = ("padding", "frame_left", "frame_right")

    @classmethod
    def fit(cls, rotations, padding=0.05, frame_left=IDENTITY_QUATERNION, frame_right=IDENTITY_QUATERNION, bins=BINS):
        """The cone of the cloud ``rotations (N, 4)`` in the frame ``frame_left * q *
        frame_right`` (module docstring), grown by ``padding`` radians."""
        q = check_cloud(rotations)
        padding = check_padding(padding)
        left = quaternion_normalize(as_quaternions(frame_left, "frame_left"))
        right = quaternion_normalize(as_quaternions(frame_right, "frame_right"))
        phi, angle, twist = swing_parts(quaternion_multiply(left, quaternion_multiply(q, right)))
        step = 2.0 * np.pi / bins
        centres = np.arange(bins) * step
        # a sample counts for the two directions it lies between (so the interpolation keeps it)
        near = np.abs(np.angle(np.exp(1j * (phi[:, None] - centres[None])))) < step
        reach = np.max(np.where(near, angle[:, None], 0.0), axis=0, initial=0.0)
        reach = np.minimum(reach + padding, np.pi)
        counts = near | (angle < NEAR_NEUTRAL)[:, None]
        low = np.min(np.where(counts, twist[:, None], np.inf), axis=0, initial=np.inf)
        high = np.max(np.where(counts, twist[:, None], -np.inf), axis=0, initial=-np.inf)
        empty = ~np.isfinite(low)
        low, high = np.where(empty, 0.0, low) - padding, np.where(empty, 0.0, high) + padding
        whole = high - low >= 2.0 * np.pi
        low, high = np.where(whole, -np.pi, np.maximum(low, -np.pi)), np.where(whole, np.pi, np.minimum(high, np.pi))
        return cls({"reach": reach, "twist": np.stack((low, high), axis=-1), "frame_left": left, "frame_right": right})

    def validate(self):
        reach, twist = self.params["reach"], self.params["twist"]
        if reach.shape[-1] < 3:
            raise ValueError(f"reach_cone limit: 'reach' needs at least 3 directions, got {reach.shape[-1]}")
        if twist.shape[-2] != reach.shape[-1]:
            raise ValueError(
                f"reach_cone limit: 'twist' needs a (low, high) per direction ({reach.shape[-1]}), got {twist.shape[-2]}"
            )
        if np.any(reach < 0.0) or np.any(reach > np.pi + EPS):
            raise ValueError("reach_cone limit: every 'reach' must be between 0 and pi")
        if np.any(twist[..., 0] > twist[..., 1]) or np.any(np.abs(twist) > np.pi + EPS):
            raise ValueError("reach_cone limit: 'twist' must be (low, high) within -pi..pi")
        for name in ("frame_left", "frame_right"):
            if np.any(np.abs(np.linalg.norm(self.params[name], axis=-1) - 1.0) > 1e-6):
                raise ValueError(f"reach_cone limit: {name!r} must be a unit quaternion")

    def group_key(self):
        return (self.kind, self.params["reach"].shape[-1])

    def _frame(self, q):
        return quaternion_multiply(self.params["frame_left"], quaternion_multiply(q, self.params["frame_right"]))

    def _excess(self, q):
        """``(phi, angle, twist, swing excess, twist excess)`` of rotations ``q``, radians."""
        phi, angle, twist = swing_parts(self._frame(q))
        reach = reach_at(self.params["reach"], phi)
        low, high = self._twist_range(phi)
        return phi, angle, twist, angle - reach, np.maximum(twist - high, low - twist)

    def _twist_range(self, phi):
        """``(low, high)`` twist (radians) allowed in the directions ``phi``."""
        table = self.params["twist"]
        return reach_at(table[..., 0], phi), reach_at(table[..., 1], phi)

    def contains(self, q):
        q = quaternion_normalize(as_quaternions(q))
        *_, swing_out, twist_out = self._excess(q)
        return (swing_out <= TOLERANCE) & (twist_out <= TOLERANCE)

    def _project(self, q):
        q = as_quaternions(q)
        finite = np.all(np.isfinite(q), axis=-1)
        safe = quaternion_normalize(np.where(finite[..., None], q, IDENTITY_QUATERNION))
        phi, angle, twist, swing_out, twist_out = self._excess(safe)
        moved = finite & ((swing_out > TOLERANCE) | (twist_out > TOLERANCE))
        if not moved.any():
            return q.copy(), moved
        reach = reach_at(self.params["reach"], phi)
        new_angle = np.where(swing_out > 0.0, reach, angle)
        low, high = self._twist_range(phi)
        new_twist = np.clip(twist, low, high)
        swing = np.stack((np.cos(phi) * new_angle, np.zeros_like(phi), np.sin(phi) * new_angle), axis=-1)
        turn = np.stack((np.zeros_like(phi), new_twist, np.zeros_like(phi)), axis=-1)
        m = quaternion_multiply(quaternion_from_exp_map(swing), quaternion_from_exp_map(turn))
        inverse_left = quaternion_conjugate(self.params["frame_left"])
        inverse_right = quaternion_conjugate(self.params["frame_right"])
        out = quaternion_multiply(inverse_left, quaternion_multiply(m, inverse_right))
        out = np.where((np.sum(out * safe, axis=-1) < 0.0)[..., None], -out, out)  # the cover of q
        return np.where(moved[..., None], out, q), moved
