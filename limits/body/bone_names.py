# SPDX-License-Identifier: GPL-3.0-or-later
"""Which anatomical joint a humanoid rig's bone moves, read from its name.

The human preset (:mod:`.retarget`) stores rotations per *anatomical joint*; a rig's bones are
matched to them by name, across the usual conventions:

==================  ==========================================================================
convention          bones (left side; the right mirrors)
==================  ==========================================================================
Rigify              ``DEF-``/``ORG-`` ``upper_arm.L``, ``forearm.L``, ``hand.L``, ``thigh.L``,
                    ``shin.L``, ``foot.L``, ``toe.L``, ``shoulder.L``; ``spine`` (the hips),
                    ``spine.001``-``.003`` (spine to chest), ``spine.004``-``.006`` (neck, head)
Mixamo              ``mixamorig:LeftArm``, ``LeftForeArm``, ``LeftHand``, ``LeftUpLeg``,
                    ``LeftLeg``, ``LeftFoot``, ``LeftToeBase``, ``LeftShoulder``, ``Spine``,
                    ``Spine1``, ``Spine2``, ``Neck``, ``Head``
Unreal mannequin    ``upperarm_l``, ``lowerarm_l``, ``hand_l``, ``thigh_l``, ``calf_l``,
                    ``foot_l``, ``ball_l``, ``clavicle_l``, ``spine_01``-``05``, ``neck_01``-``02``
CMU BVH / ASF       ``LeftArm``/``lhumerus``, ``LeftForeArm``/``lradius``, ``LeftUpLeg``/``lfemur``,
                    ``LeftLeg``/``ltibia``, ``LowerBack``, ``Spine``, ``Spine1``, ``thorax``,
                    ``Neck``, ``Neck1``, ``lowerneck``, ``upperneck``, ``Head``
generic BVH         ``UpperArm_L``, ``LowerArm_L``, ``UpperLeg_L``, ``LowerLeg_L``, ``Chest``,
                    joint-named ``LeftCollar``/``LeftShoulder``/``LeftElbow``/``LeftWrist``,
                    ``LeftHip``/``LeftKnee``/``LeftAnkle``
==================  ==========================================================================

Case, separators (``.``, ``_``, ``-``, space), namespaces (``mixamorig:``) and the usual
prefixes are ignored; sides are read as :func:`.skeleton.mirror_name` reads them (the words
themselves go through :func:`.skeleton.bone_category`). What no convention names is not guessed:
twist and copy segments (``upper_arm.L.001``, ``upperarm_twist_01_l``), fingers, face bones,
Rigify's controls and mechanism bones (in a rig with ``DEF-``/``ORG-`` bones only those are
read, and a ``DEF-`` bone with an ``ORG-`` twin is left to the twin it follows: Rigify's
mechanism drives the ``ORG-`` chain), a second hand below a hand (CMU's ``lhand`` under
``lwrist``), and the hips or root, which carries the character's heading. Pure Python.
"""

import re
from dataclasses import dataclass

from .skeleton import bone_category

#: :func:`.skeleton.bone_category`'s categories -> the anatomical joint the bone moves (its
#: rotation against its parent). ``spine`` and ``neck`` are chains: every bone of the chain
#: takes an equal share of the chain's rotation when posed (its limit, :mod:`.vertebrae`).
JOINT_OF_CATEGORY = {
    "spine": "spine",
    "chest": "spine",
    "neck": "neck",
    "head": "neck",
    "shoulder": "clavicle",
    "upper_arm": "shoulder",
    "forearm": "elbow",
    "hand": "wrist",
    "thigh": "hip",
    "shin": "knee",
    "foot": "ankle",
    "toe": "toe",
}
#: Joints whose rotation is spread over a chain of bones.
CHAIN_JOINTS = ("spine", "neck")
#: Joints that come in left/right pairs (named ``elbow.L``, ``elbow.R``).
SIDED_JOINTS = ("clavicle", "shoulder", "elbow", "wrist", "hip", "knee", "ankle", "toe")
#: Stems :func:`.skeleton.bone_category` does not know (lower case, no separators): Unreal 5's
#: extra spine and neck bones.
EXTRA_STEMS = {"spine04": "spine", "spine05": "spine", "neck02": "neck", "neck2": "neck"}

#: The names :func:`.skeleton.bone_category` reads a name's context for (a sided ``shoulder`` is
#: the upper arm beside a collar or clavicle; a sided ``hip`` is the thigh only without another
#: thigh name): passing only these keeps matching a rig linear in its bones.
_CONTEXT = re.compile(r"clavicle|collar|thigh|upperleg|upleg|femur", re.IGNORECASE)
_RIGIFY_PREFIX = re.compile(r"^(DEF|ORG)-")
#: A generated rig's bones that are no animator's control: deforming, original, mechanism.
_NOT_A_CONTROL = re.compile(r"^(DEF|ORG|MCH)-")
#: A generated rig's bones that only carry its machinery: mechanism and deforming.
_MACHINERY = re.compile(r"^(DEF|MCH)-")
_RIGIFY_SPINE = re.compile(r"^spine(?:\.(\d{3}))?$")
_COPY_SUFFIX = re.compile(r"\.\d{3}$")
#: Rigify's ``spine.NNN`` numbers: 0 is the hips, 1-3 the spine up to the chest, 4-6 the neck
#: and the head.
_RIGIFY_SPINE_JOINT = {1: "spine", 2: "spine", 3: "spine", 4: "neck", 5: "neck", 6: "neck"}


@dataclass(frozen=True)
class BoneMatch:
    """A bone matched to an anatomical joint: ``joint`` (``"elbow.L"``, ``"spine"``),
    ``share``, the number of bones of its chain that share a chain joint's rotation (1 for a
    limb joint), and ``place``, the bone's place in its chain (0: the bottom bone)."""

    joint: str
    share: int = 1
    place: int = 0

    @property
    def base(self):
        """The joint without its side (``"elbow"``)."""
        return self.joint.split(".")[0]


def is_mechanism_name(name):
    """Whether ``name`` is a generated rig's deforming (``DEF-``), original (``ORG-``) or
    mechanism (``MCH-``) bone rather than a control."""
    return bool(_NOT_A_CONTROL.match(name))


def is_machinery_name(name):
    """Whether ``name`` is a generated rig's mechanism (``MCH-``) or deforming (``DEF-``) bone:
    it follows the original (``ORG-``) bones and the controls, never poses them."""
    return bool(_MACHINERY.match(name))


def joint_side(joint):
    """``'L'``, ``'R'`` or ``None`` of a joint name such as ``"elbow.L"``."""
    _, _, side = joint.partition(".")
    return side or None


def _rigify(names):
    """Whether ``names`` follow Rigify's generated-rig convention (DEF-/ORG- bones)."""
    return any(_RIGIFY_PREFIX.match(n) for n in names)


def _reading(name, clean, context, rigify_spine):
    """``(joint, None)`` or ``(None, why not)`` for one name (``clean``: without DEF-/ORG-)."""
    m = _RIGIFY_SPINE.match(clean) if rigify_spine else None
    if m:
        number = int(m.group(1) or 0)
        if number == 0:
            return None, "the hips (carries the heading)"
        joint = _RIGIFY_SPINE_JOINT.get(number)
        return (joint, None) if joint else (None, "a spine bone beyond Rigify's spine.006")
    if _COPY_SUFFIX.search(clean):
        return None, "a twist or copy segment (.NNN)"
    side, category, _ = bone_category(clean, context)
    joint = JOINT_OF_CATEGORY.get(category) or EXTRA_STEMS.get(category)
    if category == "hips":
        return None, "the hips or root (carries the heading)"
    if joint is None:
        return None, "no naming convention matches"
    if (joint in SIDED_JOINTS) != (side is not None):
        return None, "no side" if side is None else "a sided name for a middle joint"
    return (f"{joint}.{side}" if side else joint), None


def match_joints(names, parents):
    """Match bones to anatomical joints.

    Parameters
    ----------
    names : sequence of str
        Bone names, parents before children.
    parents : sequence of int
        Parent index of each bone, ``-1`` for a root.

    Returns
    -------
    matches : dict
        ``{bone name: BoneMatch}``.
    unmatched : dict
        ``{bone name: why it was not matched}`` for every other bone.
    """
    names = [str(n) for n in names]
    parents = [int(p) for p in parents]
    if len(parents) != len(names):
        raise ValueError(f"{len(names)} names but {len(parents)} parents")
    rigify = _rigify(names)
    # A generated rig's mechanism drives the ORG- bones and its deforming bones follow them
    # (through tweak bones and B-bones): a limit holds on the ORG- twin, not beside it.
    org_twins = {n[4:] for n in names if n.startswith("ORG-")} if rigify else set()
    clean = [_RIGIFY_PREFIX.sub("", n) for n in names]
    rigify_spine = any(_RIGIFY_SPINE.match(c) and c != "spine" for c in clean)
    context = [c for c in clean if _CONTEXT.search(c)]
    joints, unmatched = [None] * len(names), {}
    for i, name in enumerate(names):
        if rigify and not _RIGIFY_PREFIX.match(name):
            unmatched[name] = "a Rigify control or mechanism bone (the DEF- and ORG- bones are limited)"
            continue
        if name.startswith("DEF-") and name[4:] in org_twins:
            unmatched[name] = "a Rigify deforming bone: it follows its ORG- bone, which is limited"
            continue
        joint, why = _reading(name, clean[i], context, rigify_spine)
        if joint is not None and parents[i] < 0:
            joint, why = None, "a root (carries the heading)"
        if joint is not None and joint not in CHAIN_JOINTS:
            p = parents[i]
            while p >= 0 and joints[p] != joint:
                p = parents[p]
            if p >= 0:
                joint, why = None, f"below {names[p]}, already matched as {joint}"
        joints[i] = joint
        if joint is None:
            unmatched[name] = why
    # A chain joint's share: the bones of its run (the same joint, parent to child).
    run_top, place = list(range(len(names))), [0] * len(names)
    for i, p in enumerate(parents):
        if joints[i] in CHAIN_JOINTS and p >= 0 and joints[p] == joints[i]:
            run_top[i], place[i] = run_top[p], place[p] + 1
    sizes = {}
    for i, joint in enumerate(joints):
        if joint is not None:
            sizes[run_top[i]] = sizes.get(run_top[i], 0) + 1
    matches = {
        name: BoneMatch(joint, sizes[run_top[i]], place[i]) if joint in CHAIN_JOINTS else BoneMatch(joint)
        for i, (name, joint) in enumerate(zip(names, joints, strict=True))
        if joint is not None
    }
    return matches, unmatched
