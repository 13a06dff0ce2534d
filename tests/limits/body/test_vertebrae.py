# SPDX-License-Identifier: GPL-3.0-or-later
"""limits/body/vertebrae.py: how a spine or neck shares its range among a rig's bones."""

import numpy as np
import pytest

from limits.body import envelope
from limits.body.vertebrae import MAX_TOTAL, bone_weights, segment_weights

CHAINS = [(chain, share) for chain in ("spine", "neck") for share in range(1, 7)]


@pytest.mark.parametrize(("chain", "share"), CHAINS)
def test_segment_shares_add_up_to_the_chain_and_limits_to_at_most_the_cap(chain, share):
    segments = np.array([segment_weights(chain, share, k) for k in range(share)])
    np.testing.assert_allclose(segments.sum(axis=0), 1.0, atol=1e-12)
    limits = np.array([bone_weights(chain, share, k) for k in range(share)])
    assert np.all(limits.sum(axis=0) <= MAX_TOTAL + 1e-12)
    even = np.minimum(1.0 / share, MAX_TOTAL / share)
    assert np.all(limits >= np.minimum(segments, even) - 1e-12)  # an even spread or a spine's passes


def test_the_cap_is_below_every_impossible_chain_pose():
    """Every impossible pose of the spine or neck lies further beyond the chain's envelope than
    the bones' summed shares reach (the envelope's extent times MAX_TOTAL)."""
    for pose in envelope.impossible_poses():
        if pose.joint in ("spine", "neck"):
            outside = envelope.degrees_outside(pose.joint, pose.anatomical())
            angle = np.degrees(2 * np.arccos(min(1.0, abs(pose.anatomical()[0]))))
            assert angle - outside > 0 and angle > MAX_TOTAL * (angle - outside), pose.words


def test_the_head_turns_the_head_and_the_lumbar_spine_bends():
    """White & Panjabi: the atlas and axis carry most of the head's turn; the lumbar segments most
    of the spine's bending forward and back, the thoracic ones most of its twist."""
    head = segment_weights("neck", 2, 1)
    assert head[1] > 0.5 and head[0] < 0.5  # rotation (Y) mostly, flexion (X) less
    lumbar, thoracic = segment_weights("spine", 2, 0), segment_weights("spine", 2, 1)
    assert lumbar[0] > 0.6 and thoracic[1] > 0.6
    with pytest.raises(ValueError, match="no bone 2"):
        segment_weights("spine", 2, 2)
