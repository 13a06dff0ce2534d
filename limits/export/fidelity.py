# SPDX-License-Identifier: GPL-3.0-or-later
"""How faithful an exported limit is to the learned one: one measure for every export.

An export (Blender's IK limits, an engine's cone or pyramid, a ragdoll's constraint limits)
replaces the learned limit by a simpler region of local rotations. Two figures say what was
lost:

- the *share of the samples* the export accepts (the bone's fitted rotation cloud);
- its *volume* (the share of all rotations it accepts, Haar measure) against the learned
  limit's, estimated by Monte Carlo with a fixed seed, the same draws for both regions.

Limits hold a few percent of all rotations at most, so the draws are uniform (Haar) in a ball
of rotations around the rest pose that holds both regions, and the ball's own share of all
rotations, ``(r - sin r) / pi`` for a radius of ``r`` radians, scales the result. A region
filling a share ``p`` of the ball has the relative standard error
``sqrt((1 - p) / (VOLUME_ROTATIONS p))``: at most 1% for ``p >= 0.1``. A region accepting
draws near the ball's surface may reach out of it: the ball doubles (up to all rotations) and
the draws are made again.

Regions are anything with ``contains(q (M, 4)) -> (M,) bool`` on *local* rotations (the pose
bone's, relative to its rest orientation), e.g. a :class:`~..joint.JointLimit`.
"""

import dataclasses
import math

import numpy as np

from ..checks import check_cloud
from ..geometry.quaternion import as_quaternions, quaternion_normalize

#: Random rotations of the volume estimate (see the module docstring).
VOLUME_ROTATIONS = 100_000

#: A region accepting draws this close to the ball's surface (share of the radius) may reach
#: out of it: the ball doubles and the draws are made again.
BALL_MARGIN = 0.9

#: Seed of the volume draws: the same rotations for every export and run.
VOLUME_SEED = 12


def rotation_ball_share(radius):
    """Share of all rotations within ``radius`` radians of one rotation (Haar measure)."""
    radius = min(float(radius), np.pi)
    return (radius - math.sin(radius)) / np.pi


def rotations_in_ball(count, radius, rng):
    """``count`` rotations ``(count, 4)`` uniform (Haar) among those within ``radius`` radians
    of the identity: uniform axes, angles by the inverse of the CDF ``t - sin t``."""
    radius = min(float(radius), np.pi)
    t = np.linspace(0.0, radius, 4097)
    cdf = t - np.sin(t)
    angles = np.interp(rng.uniform(0.0, cdf[-1], count), cdf, t)
    axes = rng.normal(size=(count, 3))
    axes /= np.linalg.norm(axes, axis=-1, keepdims=True)
    half = 0.5 * angles[:, None]
    return np.concatenate((np.cos(half), np.sin(half) * axes), axis=-1)


def rotation_angles(q):
    """``(...,)`` radians each rotation ``q (..., 4)`` turns (either cover)."""
    return 2.0 * np.arccos(np.clip(np.abs(quaternion_normalize(as_quaternions(q))[..., 0]), 0.0, 1.0))


def region_volumes(regions, rotations, count=VOLUME_ROTATIONS, seed=VOLUME_SEED):
    """Shares of all rotations ``(len(regions),)`` that each region accepts (``None`` entries
    give ``nan``), from ``count`` seeded draws in a ball around the rest pose first just wider
    than the largest angle of ``rotations (N, 4)`` (see the module docstring)."""
    q = check_cloud(rotations)
    radius = min(np.pi, 1.5 * float(np.max(rotation_angles(q))) + 0.2)
    while True:
        probes = rotations_in_ball(int(count), radius, np.random.default_rng(seed))
        accepted = [None if region is None else np.asarray(region.contains(probes), dtype=bool) for region in regions]
        angle = rotation_angles(probes)
        near_surface = angle > BALL_MARGIN * radius
        if radius >= np.pi or not any(np.any(a & near_surface) for a in accepted if a is not None):
            break
        radius = min(np.pi, 2.0 * radius)
    ball = rotation_ball_share(radius)
    return np.array([np.nan if a is None else ball * float(np.mean(a)) for a in accepted])


@dataclasses.dataclass(frozen=True)
class Fidelity:
    """How faithful an export is. ``sample_share``: share of the bone's ``samples`` it accepts;
    ``volume`` and ``limit_volume``: shares of all rotations accepted by the export and by the
    learned limit (``None`` without one)."""

    samples: int
    sample_share: float
    volume: float
    limit_volume: float | None

    @property
    def volume_ratio(self):
        """The export's volume over the learned limit's (``None`` without a learned limit,
        ``inf`` when the learned limit accepts none of the random rotations)."""
        if self.limit_volume is None:
            return None
        return self.volume / self.limit_volume if self.limit_volume > 0 else math.inf

    def summary(self):
        """One line: ``accepts 99.2% of 240 samples; volume 2.10x the learned limit's (0.99% vs
        0.47% of all rotations)``."""
        parts = [f"accepts {100 * self.sample_share:.1f}% of {self.samples} samples"]
        if self.limit_volume is None:
            parts.append(f"volume {100 * self.volume:.2f}% of all rotations (no learned limit to compare)")
        else:
            parts.append(
                f"volume {self.volume_ratio:.2f}x the learned limit's "
                f"({100 * self.volume:.2f}% vs {100 * self.limit_volume:.2f}% of all rotations)"
            )
        return "; ".join(parts)

    def to_dict(self):
        """Plain data for export files (``volume_ratio`` ``None`` when not finite)."""
        ratio = self.volume_ratio
        return {
            "samples": int(self.samples),
            "sample_share": float(self.sample_share),
            "volume": float(self.volume),
            "limit_volume": None if self.limit_volume is None else float(self.limit_volume),
            "volume_ratio": None if ratio is None or not math.isfinite(ratio) else float(ratio),
        }


def fidelity(region, rotations, limit=None, sample_tolerance=None, count=VOLUME_ROTATIONS, seed=VOLUME_SEED):
    """:class:`Fidelity` of an exported ``region`` for the local rotations ``rotations (N, 4)``
    it stands for and, when given, the learned ``limit``. ``sample_tolerance`` (radians) is
    passed to ``region.contains`` for the samples when given (float32 storage and locked axes
    count as inside)."""
    return fidelities([region], rotations, limit, sample_tolerance, count, seed)[0]


def fidelities(regions, rotations, limit=None, sample_tolerance=None, count=VOLUME_ROTATIONS, seed=VOLUME_SEED):
    """:func:`fidelity` of several exports of one bone at once (the learned limit's volume is
    estimated once, on the same draws)."""
    q = check_cloud(rotations)
    regions = list(regions)
    volumes = region_volumes([*regions, limit], q, count, seed)
    out = []
    for region, volume in zip(regions, volumes):
        inside = region.contains(q) if sample_tolerance is None else region.contains(q, sample_tolerance)
        out.append(
            Fidelity(
                samples=len(q),
                sample_share=float(np.mean(inside)),
                volume=float(volume),
                limit_volume=None if limit is None else float(volumes[-1]),
            )
        )
    return out
