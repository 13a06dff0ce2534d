# SPDX-License-Identifier: GPL-3.0-or-later
"""Conversions keep NaN and infinity non-finite, so sampling's one NaN filter can drop them
(issue 11, item 3): they must never come out as the identity (the rest pose)."""

import numpy as np
import pytest

from limits.geometry.quaternion import quaternion_from_axis_angle, quaternion_normalize

NAN, INF = float("nan"), float("inf")
pytestmark = pytest.mark.filterwarnings("ignore:invalid value:RuntimeWarning")  # inf / inf, as before


@pytest.mark.parametrize("row", [[NAN, 0, 0, 0], [1, NAN, 0, 0], [INF, 0, 0, 0], [1, 0, -INF, 0], [NAN] * 4])
def test_normalize_keeps_non_finite_rows_non_finite(row):
    out = quaternion_normalize([row, [0, 2.0, 0, 0], [0.0, 0, 0, 0]])
    assert not np.isfinite(out[0]).all()
    np.testing.assert_array_equal(out[1:], [[0, 1.0, 0, 0], [1.0, 0, 0, 0]]), "finite rows as before"


@pytest.mark.parametrize("row", [[0.5, NAN, 0, 0], [0.5, 0, 0, INF], [NAN, 0, 1, 0], [INF, 0, 1, 0], [NAN] * 4])
def test_axis_angle_with_nan_or_inf_is_not_the_identity(row):
    out = quaternion_from_axis_angle([row, [1.3, 0, 0, 0]])
    assert not np.isfinite(out[0]).all()
    np.testing.assert_array_equal(out[1], [1.0, 0, 0, 0]), "a zero axis is still the identity, as in Blender"
