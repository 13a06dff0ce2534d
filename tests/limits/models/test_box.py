# SPDX-License-Identifier: GPL-3.0-or-later
"""The box limit model (pure numpy): the component path of SWING_TWIST projections."""

import numpy as np
from model_helpers import cloud

from limits.geometry.quaternion import quaternion_random
from limits.registry import model_class


def test_box_swing_twist_component_path_equals_the_generic_one(monkeypatch):
    """Large SWING_TWIST box projections about +Y clamp on component arrays: the generic
    pipeline's results (the moved flags exactly, rotations to 1e-14: numpy's vector and scalar
    loops may differ in the last bit, depending on where an array sits), on uniform, near, tiny,
    identity, pure swing / twist, half-turn, huge and non-finite rows, in one and several
    batches."""
    from limits.models.box import BoxLimit
    from limits.models.shape_limit import ShapeLimit

    model = model_class("box").fit(cloud(31), mode="SWING_TWIST")
    rng = np.random.default_rng(32)
    tiny = np.zeros((2000, 4))
    tiny[:, 0] = 1.0
    tiny[:, 1:] = rng.normal(size=(2000, 3)) * 10.0 ** rng.uniform(-20, -5, size=(2000, 1))
    tiny[:500, 1:] = 0.0
    tiny[500:600, 0] = -1.0
    pure = quaternion_random(2000, rng)  # pure swings and twists, half turns, signed zeros
    pure[:500, 2] = 0.0
    pure[500:1000, 2] = -0.0
    pure[1000:1500, 1::2] = 0.0
    pure[1500:1800, 0] = 0.0
    pure[1800:, 0] = -0.0
    clean = np.concatenate((quaternion_random(20000, rng), tiny, pure, np.zeros((10, 4)), 1e200 * quaternion_random(50, rng)))
    clean = clean[rng.permutation(len(clean))]
    odd = clean[:3000].copy()
    odd[::30, 2] = np.nan
    odd[1::30, 0] = np.inf
    near = cloud(33, n=20000)
    queries = [clean, clean[:5000], odd, near, near[:2000].reshape(40, 50, 4)]
    with np.errstate(over="ignore", invalid="ignore"):  # the huge rows
        fast = [model._project(x) for x in queries]
        monkeypatch.setattr(BoxLimit, "_project_rows", ShapeLimit._project_rows)
        generic = [model._project(x) for x in queries]
    for (rotations, moved), (rotations_generic, moved_generic) in zip(fast, generic, strict=True):
        assert rotations.shape == rotations_generic.shape and moved.shape == moved_generic.shape
        np.testing.assert_allclose(rotations, rotations_generic, rtol=1e-14, atol=1e-14)
        assert np.array_equal(moved, moved_generic)
        assert 0 < moved.sum() < moved.size
