# SPDX-License-Identifier: GPL-3.0-or-later
"""A generated arm (root, pole, rest direction) and its poses, for the limb range and its picture."""

import numpy as np

from limits.ik.limb_geometry import mid_position

ROOT = np.array([0.1, 1.4, -0.05])


UPPER, LOWER = 0.30, 0.25


POLE = np.array([0.0, 0.0, 1.0])


REST = np.array([0.0, 1.0, 0.0])


MAX_THETA = np.radians(75.0)


NOTCH_THETA, NOTCH_PHI = np.radians(35.0), np.radians(40.0)


MAX_FLEX = 2.3


def polar(d):
    """``(theta, phi)`` of unit directions ``(..., 3)``."""
    return np.arccos(np.clip(d[..., 1], -1.0, 1.0)), np.arctan2(d[..., 0], d[..., 2])


def direction_allowed(d):
    theta, phi = polar(d)
    return (theta <= MAX_THETA) & ~((np.abs(phi) < NOTCH_PHI) & (theta > NOTCH_THETA))


def swivel_centre(d, wrap_offset=0.0):
    theta, phi = polar(d)
    return 0.8 * theta * np.cos(phi) - 0.3 + wrap_offset


def swivel_half(d):
    return 0.35 + 0.2 * polar(d)[0]


def min_flex(d):
    return 0.15 + 0.7 * polar(d)[0]


def reach_of_flex(flex):
    """Shoulder-wrist distance at elbow flexion ``flex`` (0: straight)."""
    return np.sqrt(UPPER**2 + LOWER**2 + 2.0 * UPPER * LOWER * np.cos(flex))


def random_directions(n, rng):
    d = rng.normal(size=(n, 3))
    return d / np.linalg.norm(d, axis=-1, keepdims=True)


def arm_poses(n, seed, wrap_offset=0.0):
    """``n`` allowed arm poses: ``(mid, end, swivel)`` with joints in the parent frame."""
    rng = np.random.default_rng(seed)
    d = np.empty((0, 3))
    while len(d) < n:
        cand = random_directions(4 * n, rng)
        d = np.concatenate((d, cand[direction_allowed(cand)]))[:n]
    flex = rng.uniform(min_flex(d), MAX_FLEX)
    swivel = swivel_centre(d, wrap_offset) + swivel_half(d) * rng.uniform(-1.0, 1.0, n)
    swivel = (swivel + np.pi) % (2.0 * np.pi) - np.pi
    end = ROOT + reach_of_flex(flex)[:, None] * d
    mid = mid_position(ROOT, end, swivel, UPPER, LOWER, POLE, REST)
    return mid, end, swivel
