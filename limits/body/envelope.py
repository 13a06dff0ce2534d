# SPDX-License-Identifier: GPL-3.0-or-later
"""The human envelope: published normal ranges of motion, as anatomical rotations.

Every joint a humanoid rig has gets a range from clinical goniometry, written on the segment
frames of :mod:`.retarget` (X, Y, Z of a joint's bone at its neutral posture; for a limb Y runs
along the bone and Z faces forward, for the torso, neck and clavicles X is left, Y up and Z
forward). A joint's anatomical rotation is ``a = n * s * t``: ``n`` the neutral posture
(:data:`NEUTRAL`: arms and legs hanging, feet forward), ``t`` the twist about the joint's long
axis and ``s`` the swing, a turn about an axis across it. The swing may reach each of four
extents along the two cross axes (flexion and extension, abduction and adduction, ...); between
them the boundary is a quarter ellipse. Values are for the left side; the right side is its
mirror image (a turn about X keeps its sign, about Y or Z flips it).

Sources (degrees; the joint's entry in :data:`RANGES` names its own):

- **AAOS**: American Academy of Orthopaedic Surgeons, *Joint Motion: Method of Measuring and
  Recording* (1965), the averages tabled in Norkin & White, *Measurement of Joint Motion: A
  Guide to Goniometry* (F. A. Davis). Shoulder flexion 180, extension 60, abduction 180,
  internal rotation 70, external rotation 90; elbow flexion 150; forearm pronation 80,
  supination 80; wrist flexion 80, extension 70, radial deviation 20, ulnar deviation 30; hip
  flexion 120, extension 30, abduction 45, adduction 30, internal and external rotation 45;
  knee flexion 135; ankle dorsiflexion 20, plantarflexion 50; subtalar inversion 35,
  eversion 15; first metatarsophalangeal flexion 45, extension 70; cervical spine flexion 45,
  extension 45, lateral flexion 45, rotation 60; thoracolumbar spine flexion 80, extension 25,
  lateral flexion 35, rotation 45.
- **Youdas 1992**: J. W. Youdas et al., Normal range of motion of the cervical spine: an initial
  goniometric study, *Physical Therapy* 72 (1992) 770-780: adults of 20-29 reach about 60
  flexion, 75 extension, 45 lateral flexion and 75 rotation (the range falls with age).
- **Neumann**: D. A. Neumann, *Kinesiology of the Musculoskeletal System* (3rd ed., 2017),
  sternoclavicular joint: elevation 45, depression 10, protraction and retraction 15-20,
  posterior (axial) rotation 20-35.
- Where a reference gives no value (the elbow's and knee's sideways play, the knee's rotation,
  the forefoot's turn, the toe's sideways play) the entry says what was assumed and why.

The references measure active motion of healthy adults one plane at a time; real motion
couples them (an arm across the chest is flexion with adduction beyond the adduction alone).
:func:`envelope_samples` gives the envelope as rotations for a preset, which joins them with
the rotations real motion shows; :data:`MARGIN_DEGREES` of play is added around the references
for the spread between people. :func:`impossible_poses` is the other side: poses written in
the same anatomical terms far beyond the references, which a human limit must refuse.

Pure numpy; quaternions ``(w, x, y, z)``.
"""

from dataclasses import dataclass

import numpy as np

from ..geometry.quaternion import (
    as_quaternions,
    exp_map_from_quaternion,
    quaternion_conjugate,
    quaternion_from_exp_map,
    quaternion_from_matrix,
    quaternion_multiply,
    quaternion_short_way,
)
from ..geometry.swing_twist import swing_twist_from_quaternion

#: Play around the references for the spread between people (degrees): added to every extent.
MARGIN_DEGREES = 10.0
#: Further than this beyond the envelope a rotation is a capture solver's error, not a body's (CMU
#: 143_21's head folded onto the chest on every frame): the preset does not learn it, the default
#: fit of a humanoid leaves it out. Every impossible pose is further out (degrees).
SOLVER_ERROR_DEGREES = 15.0

#: The largest swing (degrees): at a half turn the split into swing and twist is undefined.
SWING_CAP_DEGREES = 179.0

_X, _Y, _Z = np.eye(3)


@dataclass(frozen=True)
class Range:
    """A joint's normal range of motion (left side, degrees) from its neutral posture.

    ``twist`` is the axis (``"X"``, ``"Y"``, ``"Z"`` of the segment frame) the joint twists
    about and ``twist_range`` its ``(negative, positive)`` extents; ``swing`` maps each cross
    axis to its ``(negative, positive)`` extents (a turn of the bone about that axis). ``motions``
    names what each extent is, in the same layout; ``source`` where the numbers come from.
    ``between``: extents a reference gives between two cross axes, ``((direction, extent), ...)``
    (direction in degrees from the first cross axis's positive side towards the second's), where
    a quarter ellipse through the axes' extents would cut real motion off."""

    twist: str
    twist_range: tuple
    swing: dict
    motions: dict
    source: str
    between: tuple = ()

    @property
    def cross(self):
        """The two swing axes, in the order of ``swing``."""
        return tuple(self.swing)


RANGES = {
    "shoulder": Range(
        "Y",
        (90.0, 70.0),
        {"X": (60.0, 180.0), "Z": (30.0, 180.0)},
        {"X": ("extension", "flexion"), "Z": ("adduction", "abduction"), "Y": ("external rotation", "internal rotation")},
        "AAOS; adduction past the body 30; horizontal adduction 135 (from 90 of abduction: the arm at "
        "shoulder height 45 across the body), between flexion and adduction",
        between=((-45.0, 90.0),),
    ),
    "elbow": Range(
        "Y",
        (80.0, 80.0),
        {"X": (0.0, 150.0), "Z": (10.0, 10.0)},
        {"X": ("hyperextension", "flexion"), "Z": ("varus", "valgus"), "Y": ("supination", "pronation")},
        "AAOS (forearm rotation on the elbow: most rigs roll the forearm bone); sideways 10: the carrying angle's spread",
    ),
    "wrist": Range(
        "Y",
        (80.0, 80.0),
        {"X": (80.0, 80.0), "Z": (80.0, 80.0)},
        {
            "X": ("flexion or ulnar deviation", "extension or radial deviation"),
            "Z": ("extension", "flexion"),
            "Y": ("supination", "pronation"),
        },
        "AAOS flexion 80 on both cross axes, both ways: which of them flexes depends on how the rig's forearm is rolled "
        "at rest (palm forward, down or in); forearm rotation also here (some rigs roll the hand, not the forearm)",
    ),
    "clavicle": Range(
        "X",
        (35.0, 35.0),
        {"Y": (20.0, 20.0), "Z": (10.0, 45.0)},
        {"Y": ("retraction", "protraction"), "Z": ("depression", "elevation"), "X": ("posterior rotation", "anterior rotation")},
        "Neumann (sternoclavicular joint)",
    ),
    "hip": Range(
        "Y",
        (45.0, 45.0),
        {"X": (30.0, 120.0), "Z": (30.0, 45.0)},
        {"X": ("extension", "flexion"), "Z": ("adduction", "abduction"), "Y": ("external rotation", "internal rotation")},
        "AAOS",
    ),
    "knee": Range(
        "Y",
        (30.0, 30.0),
        {"X": (150.0, 0.0), "Z": (5.0, 5.0)},
        {"X": ("flexion", "hyperextension"), "Z": ("valgus", "varus"), "Y": ("external rotation", "internal rotation")},
        "flexion 150: a deep squat, the calf on the thigh (AAOS's 135 is active flexion alone); rotation 30 (the tibia's "
        "at 90 degrees of flexion); sideways 5 (ligament play)",
    ),
    "ankle": Range(
        "Y",
        (35.0, 15.0),
        {"X": (50.0, 40.0), "Z": (55.0, 55.0)},
        {"X": ("plantarflexion", "dorsiflexion"), "Z": ("adduction", "abduction"), "Y": ("inversion", "eversion")},
        "AAOS plantarflexion 50, inversion 35, eversion 15; dorsiflexion 40: bearing weight (a lunge, a squat) the "
        "ankle dorsiflexes twice AAOS's 20; the turn about the leg 55: the forefoot's 25 and the tibia's 30, which a "
        "rig whose knee is a hinge solves at the ankle",
    ),
    "toe": Range(
        "Y",
        (10.0, 10.0),
        {"X": (45.0, 70.0), "Z": (10.0, 10.0)},
        {"X": ("flexion", "extension"), "Z": ("adduction", "abduction"), "Y": ("twist", "twist")},
        "AAOS (first metatarsophalangeal joint); sideways and twist 10 (the toes' play)",
    ),
    "spine": Range(
        "Y",
        (45.0, 45.0),
        {"X": (25.0, 80.0), "Z": (35.0, 35.0)},
        {"X": ("extension", "flexion"), "Z": ("lateral flexion right", "lateral flexion left"), "Y": ("rotation", "rotation")},
        "AAOS (thoracolumbar spine, pelvis to chest)",
    ),
    "neck": Range(
        "Y",
        (75.0, 75.0),
        {"X": (75.0, 60.0), "Z": (45.0, 45.0)},
        {"X": ("extension", "flexion"), "Z": ("lateral flexion right", "lateral flexion left"), "Y": ("rotation", "rotation")},
        "Youdas 1992, adults of 20-29 (cervical spine, chest to head; AAOS's 45 and 60 are a clinic's "
        "minimum for the neck, not a young adult's range)",
    ),
}


def _quaternion_about(axis, degrees):
    return quaternion_from_exp_map(np.asarray(axis, dtype=float) * np.radians(degrees))


#: Each joint's neutral posture (anatomical rotation, :mod:`.retarget`'s frames): an upper arm
#: or thigh hangs (its Y down, its Z forward: a half turn about Z of the parent's body frame);
#: a foot points forward from its shin (a quarter turn about X); every other joint is straight.
NEUTRAL = {
    joint: (
        _quaternion_about(_Z, 180.0)
        if joint in ("shoulder", "hip")
        else _quaternion_about(_X, 90.0)
        if joint == "ankle"
        else np.array([1.0, 0.0, 0.0, 0.0])
    )
    for joint in RANGES
}

_AXIS_INDEX = {"X": 0, "Y": 1, "Z": 2}
#: The mirror image of a rotation vector across the body's middle plane: its X component kept,
#: Y and Z flipped (every frame of :mod:`.retarget` has the same axes on both sides).
_MIRROR = np.array([1.0, -1.0, -1.0])


def base_of(joint):
    """``"elbow"`` of ``"elbow.R"``; a joint name without a side is its own base."""
    return joint.split(".")[0]


def _mirrored(joint):
    return joint.endswith(".R")


def range_of(joint):
    """The :class:`Range` of ``joint`` (``"elbow.L"``, ``"spine"``); ``KeyError`` naming the
    joints when it has none."""
    base = base_of(joint)
    if base not in RANGES:
        raise KeyError(f"no range of motion for {joint!r} (joints: {', '.join(sorted(RANGES))})")
    return RANGES[base]


def motion(joint, vector_degrees):
    """The anatomical rotations ``(..., 4)`` of ``joint`` turned from its neutral posture by the
    rotation vectors ``vector_degrees (..., 3)`` (the segment frame's X, Y, Z; degrees; written
    for the left side, mirrored for a right joint): ``a = n * exp(v)``."""
    v = np.radians(np.asarray(vector_degrees, dtype=float))
    if _mirrored(joint):
        v = v * _MIRROR
    neutral = NEUTRAL[base_of(joint)]
    return quaternion_short_way(quaternion_multiply(np.broadcast_to(neutral, v.shape[:-1] + (4,)), quaternion_from_exp_map(v)))


def _swing_extent(rng, cross_angles):
    """The swing's allowed angle (radians) in the directions ``cross_angles (...,)`` of the
    cross plane (0: the first cross axis's positive extent, pi/2: the second's): quarter
    ellipses through the four extents, widened to the extents ``between`` them (linear in the
    direction from the neighbouring axes' extents), each with :data:`MARGIN_DEGREES`, at most
    :data:`SWING_CAP_DEGREES`."""
    (a_neg, a_pos), (b_neg, b_pos) = (np.radians(np.asarray(rng.swing[k]) + MARGIN_DEGREES) for k in rng.cross)
    c, s = np.cos(cross_angles), np.sin(cross_angles)
    a = np.where(c >= 0.0, a_pos, a_neg)
    b = np.where(s >= 0.0, b_pos, b_neg)
    extent = 1.0 / np.sqrt((c / a) ** 2 + (s / b) ** 2)
    if rng.between:
        points = [(0.0, a_pos), (90.0, b_pos), (180.0, a_neg), (270.0, b_neg)]
        points += [(d % 360.0, np.radians(r + MARGIN_DEGREES)) for d, r in rng.between]
        points.sort()
        angles = np.radians([d for d, _ in points] + [points[0][0] + 360.0])
        extents = [r for _, r in points] + [points[0][1]]
        extent = np.maximum(extent, np.interp(np.mod(cross_angles, 2.0 * np.pi), angles, extents))
    return np.minimum(extent, np.radians(SWING_CAP_DEGREES))


def _parts(joint, anatomical):
    """``(swing vector components along the two cross axes (..., 2), twist angle (...,))`` of
    anatomical rotations, in the left side's terms (radians)."""
    rng = range_of(joint)
    q = as_quaternions(anatomical, "anatomical")
    relative = quaternion_multiply(quaternion_conjugate(NEUTRAL[base_of(joint)]), q)
    twist_axis = np.zeros(3)
    twist_axis[_AXIS_INDEX[rng.twist]] = 1.0
    swing, twist = swing_twist_from_quaternion(quaternion_short_way(relative), twist_axis)
    sv, tv = exp_map_from_quaternion(quaternion_short_way(swing)), exp_map_from_quaternion(quaternion_short_way(twist))
    if _mirrored(joint):
        sv, tv = sv * _MIRROR, tv * _MIRROR
    cross = np.stack([sv[..., _AXIS_INDEX[k]] for k in rng.cross], axis=-1)
    return cross, tv[..., _AXIS_INDEX[rng.twist]]


def degrees_outside(joint, anatomical):
    """How far (degrees, ``(...,)``; 0 inside) anatomical rotations of ``joint`` stand outside
    its envelope (references plus :data:`MARGIN_DEGREES`): the larger of the swing's excess
    over its extent in its direction and the twist's over its range."""
    rng = range_of(joint)
    cross, twist = _parts(joint, anatomical)
    angle = np.linalg.norm(cross, axis=-1)
    extent = _swing_extent(rng, np.arctan2(cross[..., 1], cross[..., 0]))
    t_neg, t_pos = np.radians(np.asarray(rng.twist_range) + MARGIN_DEGREES)
    twist_out = np.maximum(twist - t_pos, -t_neg - twist)
    return np.degrees(np.maximum(np.maximum(angle - extent, twist_out), 0.0))


def envelope_samples(joint, directions=32, radii=6, twists=9):
    """Anatomical rotations ``(N, 4)`` filling ``joint``'s envelope: swings in ``directions``
    directions at ``radii`` fractions of their extent (the boundary included), each with
    ``twists`` twists across the range, plus the neutral posture. Deterministic."""
    rng = range_of(joint)
    cross_angle = np.linspace(0.0, 2.0 * np.pi, directions, endpoint=False)
    fraction = np.linspace(1.0 / radii, 1.0, radii)
    t_neg, t_pos = np.radians(np.asarray(rng.twist_range) + MARGIN_DEGREES)
    twist = np.linspace(-t_neg, t_pos, twists)
    ca, fr, tw = (g.ravel() for g in np.meshgrid(cross_angle, fraction, twist, indexing="ij"))
    swing = fr * _swing_extent(rng, ca)
    v_swing = np.zeros((len(ca), 3))
    a, b = (_AXIS_INDEX[k] for k in rng.cross)
    v_swing[:, a], v_swing[:, b] = swing * np.cos(ca), swing * np.sin(ca)
    v_twist = np.zeros((len(ca), 3))
    v_twist[:, _AXIS_INDEX[rng.twist]] = tw
    q = quaternion_multiply(quaternion_from_exp_map(v_swing), quaternion_from_exp_map(v_twist))
    v = exp_map_from_quaternion(q)
    samples = motion(joint, np.degrees(v))
    return np.concatenate((NEUTRAL[base_of(joint)][None], samples))


@dataclass(frozen=True)
class ImpossiblePose:
    """A pose no human body makes: ``joint`` turned from neutral by ``vector`` (degrees about
    the segment frame's X, Y, Z, left side's terms), described in ``words``."""

    words: str
    joint: str
    vector: tuple

    def anatomical(self):
        return motion(self.joint, self.vector)


#: The impossible set, written for the left side (:func:`impossible_poses` adds the right's).
_IMPOSSIBLE = (
    ImpossiblePose("knee hyperextended 30 degrees", "knee", (30.0, 0.0, 0.0)),
    ImpossiblePose("knee bent sideways 45 degrees (outwards)", "knee", (0.0, 0.0, 45.0)),
    ImpossiblePose("knee bent sideways 45 degrees (inwards)", "knee", (0.0, 0.0, -45.0)),
    ImpossiblePose("knee twisted 90 degrees", "knee", (0.0, 90.0, 0.0)),
    ImpossiblePose("elbow hyperextended 30 degrees", "elbow", (-30.0, 0.0, 0.0)),
    ImpossiblePose("elbow bent sideways 45 degrees", "elbow", (0.0, 0.0, 45.0)),
    ImpossiblePose("forearm twisted 150 degrees", "elbow", (0.0, 150.0, 0.0)),
    ImpossiblePose("wrist flexed 120 degrees", "wrist", (0.0, 0.0, 120.0)),
    ImpossiblePose("wrist extended 120 degrees", "wrist", (0.0, 0.0, -120.0)),
    ImpossiblePose("wrist bent 120 degrees towards the thumb", "wrist", (120.0, 0.0, 0.0)),
    ImpossiblePose("ankle twisted 90 degrees (inverted)", "ankle", (0.0, -90.0, 0.0)),
    ImpossiblePose("ankle twisted 90 degrees (everted)", "ankle", (0.0, 90.0, 0.0)),
    ImpossiblePose("ankle dorsiflexed 70 degrees", "ankle", (70.0, 0.0, 0.0)),
    ImpossiblePose("foot pointed 110 degrees", "ankle", (-110.0, 0.0, 0.0)),
    ImpossiblePose("toe bent up 130 degrees", "toe", (130.0, 0.0, 0.0)),
    ImpossiblePose("toe bent down 110 degrees", "toe", (-110.0, 0.0, 0.0)),
    ImpossiblePose("hip extended 80 degrees", "hip", (-80.0, 0.0, 0.0)),
    ImpossiblePose("hip adducted 80 degrees (across the other leg)", "hip", (0.0, 0.0, -80.0)),
    ImpossiblePose("hip abducted 110 degrees", "hip", (0.0, 0.0, 110.0)),
    ImpossiblePose("thigh twisted 110 degrees", "hip", (0.0, 110.0, 0.0)),
    ImpossiblePose("shoulder extended 120 degrees (arm up behind the back)", "shoulder", (-120.0, 0.0, 0.0)),
    ImpossiblePose("upper arm twisted 170 degrees", "shoulder", (0.0, -170.0, 0.0)),
    ImpossiblePose("arm through the body (adducted 90 degrees)", "shoulder", (0.0, 0.0, -90.0)),
    ImpossiblePose("head twisted 120 degrees on the neck", "neck", (0.0, 120.0, 0.0)),
    ImpossiblePose("head bent back 110 degrees", "neck", (-110.0, 0.0, 0.0)),
    ImpossiblePose("head tilted 100 degrees to the side", "neck", (0.0, 0.0, 100.0)),
    ImpossiblePose("spine twisted 90 degrees", "spine", (0.0, 90.0, 0.0)),
    ImpossiblePose("spine bent back 70 degrees", "spine", (-70.0, 0.0, 0.0)),
    ImpossiblePose("spine bent 80 degrees to the side", "spine", (0.0, 0.0, 80.0)),
    ImpossiblePose("spine folded forward 140 degrees", "spine", (140.0, 0.0, 0.0)),
    ImpossiblePose("clavicle raised 90 degrees", "clavicle", (0.0, 0.0, 90.0)),
    ImpossiblePose("clavicle pulled back 60 degrees", "clavicle", (0.0, 60.0, 0.0)),
)


def impossible_poses():
    """The impossible set: :class:`ImpossiblePose` per side for sided joints (``"knee.L"``,
    ``"knee.R"``), once for the spine and neck."""
    out = []
    for pose in _IMPOSSIBLE:
        if pose.joint in ("spine", "neck"):
            out.append(pose)
            continue
        for side in ("L", "R"):
            out.append(
                ImpossiblePose(f"{pose.words} ({'left' if side == 'L' else 'right'})", f"{pose.joint}.{side}", pose.vector)
            )
    return out


#: The turn taking +Y onto each twist axis: a reach cone twists about +Y.
_TWIST_TURNS = {"X": _quaternion_about(_Z, -90.0), "Y": np.array([1.0, 0.0, 0.0, 0.0]), "Z": _quaternion_about(_X, 90.0)}


def cone_frames(joint, rest, bone_frame, parent_frame):
    """``(frame_left, frame_right)`` that carry a bone's basis rotation ``L`` into ``joint``'s
    envelope terms for :class:`..models.reach_cone.ReachConeLimit` (reference: the rest pose):
    ``m = T^-1 n^-1 a T`` with ``a`` the anatomical rotation (:mod:`.retarget`: ``a = C_p^-1 R L
    R^-1 C_b``, ``rest`` ``R (4,)``, ``bone_frame`` ``C_b`` and ``parent_frame`` ``C_p``
    ``(3, 3)``), ``n`` the joint's neutral posture and ``T`` the turn taking +Y onto its twist
    axis, so that ``m`` is the turn from neutral, twisting about +Y."""
    turn = _TWIST_TURNS[range_of(joint).twist]
    r = as_quaternions(rest, "rest")
    c_b, c_p = (
        quaternion_from_matrix(np.asarray(bone_frame, dtype=float)),
        quaternion_from_matrix(np.asarray(parent_frame, dtype=float)),
    )
    inverse = quaternion_conjugate
    left = quaternion_multiply(
        inverse(turn), quaternion_multiply(inverse(NEUTRAL[base_of(joint)]), quaternion_multiply(inverse(c_p), r))
    )
    right = quaternion_multiply(inverse(r), quaternion_multiply(c_b, turn))
    return left, right
