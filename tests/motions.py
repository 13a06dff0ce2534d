# SPDX-License-Identifier: GPL-3.0-or-later
"""Generated motion around a non-convex limit, for the continuity tests (numpy only; the
exp-map function is passed in, so the Blender tests can use the add-on's own)."""

import numpy as np


def ring_motion(from_exp_map, frames=3000, radius=0.9, width=0.2, span=0.75 * np.pi):
    """A training take: the swing sweeps a C-shaped ring in exp-map space (a hole in the middle,
    a notch at the back), radius and twist oscillating, in time order like captured motion."""
    t = np.linspace(0.0, 1.0, frames)
    a = span * np.sin(2 * np.pi * 3 * t)
    r = radius + width * np.sin(2 * np.pi * 37 * t)
    twist = 0.2 * np.sin(2 * np.pi * 23 * t)
    return from_exp_map(np.stack([r * np.cos(a), twist, r * np.sin(a)], axis=-1))


def ring_paths(from_exp_map, frames=160):
    """New motion around that limit: across the hole, circling inside the hole, circling
    outside the ring through the notch, along the ring with a twist beyond it, and circling far
    outside (2 rad: where a limit's nearest point switches sides, a quaternion surface's too)."""
    t = np.linspace(0.0, 1.0, frames)
    a = 2 * np.pi * t
    out = {
        "across": np.stack([-1.3 + 2.6 * t, 0.05 * np.sin(6 * t), 0.1 * np.sin(3 * t)], axis=-1),
        "inner": np.stack([0.5 * np.cos(a), 0.1 * np.sin(5 * a), 0.5 * np.sin(a)], axis=-1),
        "outer": np.stack([1.35 * np.cos(a), 0.3 * np.sin(3 * a), 1.35 * np.sin(a)], axis=-1),
        "twist": np.stack([0.9 * np.cos(a), 0.6 * np.sin(2 * a), 0.9 * np.sin(a)], axis=-1),
        "far": np.stack([2.0 * np.cos(a), 0.3 * np.sin(3 * a), 2.0 * np.sin(a)], axis=-1),
    }
    return {name: from_exp_map(v) for name, v in out.items()}
