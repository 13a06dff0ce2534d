# SPDX-License-Identifier: GPL-3.0-or-later
"""How a spine or a neck shares its range among a rig's bones: by the motion segments each
bone spans.

The human envelope (:mod:`.envelope`) gives the whole chain's range: the chest against the
pelvis, the head against the chest. A rig spans it with 1 to 6 bones, each limited alone. Real
spines do not bend evenly: the lumbar segments carry most of the bending forward and back, the
thoracic ones most of the twist, and at the top of the neck the atlas and the axis carry half
of the head's turn. A bone's anatomical share of the chain's range, per motion, is the summed
range of the motion segments it spans over the whole chain's (:func:`segment_weights`).

Which segments a bone spans: the neck's top bone (the head) turns on the atlas and the axis
(C0-C1, C1-C2) and the other neck bones share C2-C3 to C7-T1 evenly, from the chest up; a
spine's bones share L5-S1 to T1-T2 evenly, from the pelvis up (a bone may span part of a
segment).

Source: A. A. White and M. M. Panjabi, *Clinical Biomechanics of the Spine*, 2nd ed. (1990),
representative ranges per motion segment (degrees): flexion and extension together, lateral
bending to one side, axial rotation to one side.

Pure numpy.
"""

import numpy as np

#: Per chain, its motion segments from the bottom up: ``(name, flexion-extension, lateral
#: bending, axial rotation)`` in degrees (White & Panjabi 1990, representative values).
SEGMENTS = {
    "neck": (
        ("C7-T1", 9, 4, 2),
        ("C6-C7", 17, 7, 6),
        ("C5-C6", 20, 8, 7),
        ("C4-C5", 20, 11, 7),
        ("C3-C4", 15, 11, 7),
        ("C2-C3", 10, 10, 3),
        ("C1-C2", 20, 5, 40),
        ("C0-C1", 25, 5, 5),
    ),
    "spine": (
        ("L5-S1", 17, 3, 1),
        ("L4-L5", 16, 6, 2),
        ("L3-L4", 15, 8, 2),
        ("L2-L3", 14, 6, 2),
        ("L1-L2", 12, 6, 2),
        ("T12-L1", 12, 8, 2),
        ("T11-T12", 12, 9, 2),
        ("T10-T11", 9, 7, 2),
        ("T9-T10", 6, 6, 4),
        ("T8-T9", 6, 6, 7),
        ("T7-T8", 6, 6, 8),
        ("T6-T7", 5, 6, 8),
        ("T5-T6", 4, 6, 8),
        ("T4-T5", 4, 6, 8),
        ("T3-T4", 4, 5, 8),
        ("T2-T3", 4, 5, 8),
        ("T1-T2", 4, 6, 9),
    ),
}
#: The neck's top bone (the head) spans this many segments at the top: C1-C2 and C0-C1.
HEAD_SEGMENTS = 2
#: A chain's bones together may turn at most this many times its range, per motion: below the
#: tightest impossible chain pose's ratio to the envelope (:func:`.envelope.impossible_poses`: the
#: head bent back 110 degrees is 1.29 of the neck's extension with the margin).
MAX_TOTAL = 1.25


def _segment_ranges(chain):
    """``(segments, 3)`` ranges in the segment frames' axis order: X flexion-extension, Y axial
    rotation, Z lateral bending (:mod:`.retarget`'s torso and neck frames)."""
    table = np.array([row[1:] for row in SEGMENTS[chain]], dtype=float)
    return table[:, [0, 2, 1]]


def _even_spans(count, share):
    """``(share, count)``: ``count`` segments shared evenly, in order, by ``share`` bones."""
    edges = np.linspace(0.0, count, share + 1)
    lo, hi = edges[:-1, None], edges[1:, None]
    k = np.arange(count)[None, :]
    return np.clip(np.minimum(hi, k + 1) - np.maximum(lo, k), 0.0, 1.0)


def _spans(chain, share):
    """``(share, segments)`` fraction of each segment that each of ``share`` bones spans
    (bones from the bottom of the chain up)."""
    count = len(SEGMENTS[chain])
    if chain == "neck" and share > 1:
        out = np.zeros((share, count))
        out[:-1, : count - HEAD_SEGMENTS] = _even_spans(count - HEAD_SEGMENTS, share - 1)
        out[-1, count - HEAD_SEGMENTS :] = 1.0
        return out
    return _even_spans(count, share)


def segment_weights(chain, share, place):
    """Bone ``place``'s (0: the chain's bottom bone) share ``(3,)`` of the range of a ``chain``
    (``"spine"`` or ``"neck"``) of ``share`` bones by the motion segments it spans, per motion:
    about X (flexion-extension), Y (rotation) and Z (lateral flexion). Over a chain's bones they
    add up to 1."""
    if chain not in SEGMENTS:
        raise KeyError(f"no motion segments for {chain!r} (chains: {', '.join(SEGMENTS)})")
    if int(share) != share or share < 1 or not 0 <= place < share:
        raise ValueError(f"a chain of {share} bones has no bone {place}")
    ranges = _segment_ranges(chain)
    return _spans(chain, int(share))[int(place)] @ ranges / ranges.sum(axis=0)


def _raw_weights(chain, share, place):
    return np.maximum(1.0 / share, segment_weights(chain, share, place))


def bone_weights(chain, share, place):
    """Bone ``place``'s share ``(3,)`` of its chain's range, per motion, that its limit allows:
    the larger of its even share and its segments' (:func:`segment_weights`), so a rig or a solver
    may spread a bend evenly or as a spine does. Over a chain they add up to at most
    :data:`MAX_TOTAL` (scaled down where more): a chain pose further than that beyond its range is
    refused by some bone however it is spread."""
    total = np.sum([_raw_weights(chain, share, k) for k in range(share)], axis=0)
    return _raw_weights(chain, share, place) * np.minimum(1.0, MAX_TOTAL / total)
