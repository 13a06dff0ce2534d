# SPDX-License-Identifier: GPL-3.0-or-later
"""Shared by the limit model tests (test_model_registry.py and each model's test file): the
model kinds, reference-relative test clouds and query rotations."""

import contextlib
import warnings

import numpy as np

from limits.geometry.quaternion import quaternion_from_exp_map, quaternion_random

KINDS = ("euler_box", "box", "oriented_box", "ellipsoid", "kdop")
SHAPES = KINDS[1:]
CASES = [("euler_box", None)] + [(kind, mode) for kind in SHAPES for mode in ("FULL", "SWING_TWIST")]
CASE_IDS = [f"{kind}-{mode}" if mode else kind for kind, mode in CASES]


def options(mode):
    return {} if mode is None else {"mode": mode}


def random_rotation_matrix(rng):
    m, r = np.linalg.qr(rng.normal(size=(3, 3)))
    m = m * np.sign(np.diag(r))
    return m if np.linalg.det(m) > 0 else -m


def cloud(seed, n=400, centre=(0.2, -0.1, 0.3), spread=(0.6, 0.3, 0.12)):
    """Reference-relative rotations: an anisotropic, turned Gaussian in exp-map space."""
    rng = np.random.default_rng(seed)
    v = (rng.normal(size=(n, 3)) * spread) @ random_rotation_matrix(rng).T + centre
    return quaternion_from_exp_map(v)


def queries(seed, n=3000):
    """Rotations everywhere (both covers) plus some near the data."""
    rng = np.random.default_rng(seed)
    near = quaternion_from_exp_map(rng.normal(size=(n // 3, 3)) * 0.5 + (0.2, -0.1, 0.3))
    return np.concatenate((quaternion_random(n - len(near), rng), near))


@contextlib.contextmanager
def no_warnings():
    """Turn numpy's RuntimeWarnings (invalid value, division by zero...) into failures."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        yield
