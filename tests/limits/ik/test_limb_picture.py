# SPDX-License-Identifier: GPL-3.0-or-later
"""The seed's equal-area picture of a limb's range of motion (limits/ik/limb_picture.py)."""

import numpy as np
import pytest
from limb_arms import POLE, REST, ROOT, arm_poses, random_directions

from limits.ik.limb_picture import UNREACHABLE, lambert_directions, limb_range_picture
from limits.ik.limb_rom import LimbRangeOfMotion


def test_the_projection_keeps_areas_and_its_orientation():
    size = 400
    d, on_disc = lambert_directions(size, REST, POLE)
    np.testing.assert_allclose(np.linalg.norm(d, axis=-1), 1.0, atol=1e-12)
    # equal area: the share of the disc within an angle of the centre is that cap's share of the sphere
    for degrees in (30, 90, 150):
        within = (d[on_disc] @ REST) >= np.cos(np.radians(degrees))
        assert within.mean() == pytest.approx((1 - np.cos(np.radians(degrees))) / 2, abs=0.01)
    assert d[size // 2, size // 2] @ REST > 0.999  # the rest direction in the middle
    out = int((2 - np.sqrt(2)) / 4 * size)  # 90 degrees from the centre: rho = 2 sin(45 deg)
    assert d[out, size // 2] @ POLE > 0.99  # the pole reference up
    assert d[size // 2, size - 1 - out] @ np.cross(POLE, REST) > 0.99  # right-handed: right is up x centre


@pytest.fixture(scope="module")
def arm():
    mid, end, _ = arm_poses(8000, seed=1)
    return LimbRangeOfMotion.fit_joints(ROOT, mid, end, pole_reference=POLE, rest_direction=REST)


def test_white_is_where_the_end_cannot_go(arm):
    size = 200
    picture = limb_range_picture(arm, size)
    assert picture.shape == (size, 2 * size, 4)
    _, on_disc = lambert_directions(size, REST, POLE)
    for half in (picture[:, :size, :3], picture[:, size:, :3]):
        white = np.all(half == UNREACHABLE, axis=-1)[on_disc]
        # equal area: the white share of the disc is the share of directions the model refuses
        refused = ~arm.allows_direction(random_directions(200000, np.random.default_rng(0)))
        assert white.mean() == pytest.approx(refused.mean(), abs=0.01)
        assert 0.2 < white.mean() < 0.9
    # colours vary with the reach and the swivel range (not one flat colour)
    reach = picture[:, :size, :3][on_disc & ~np.all(picture[:, :size, :3] == UNREACHABLE, axis=-1)]
    assert np.ptp(reach, axis=0).max() > 0.2
