# SPDX-License-Identifier: GPL-3.0-or-later
"""A skeleton as arrays, Blender bone frames, forward kinematics, retargeting, bone names.

Conventions are Blender's: armature space is Z up with the character facing -Y (its left
side is +X); a bone's frame has +Y along head -> tail and ``roll`` turns X and Z about it
(:func:`bone_frame_from_head_tail_roll` matches ``Bone.matrix_local``); a pose bone's local
rotation ``L`` acts in the bone's rest frame, so its armature-space orientation is
``R_pose = R_pose[parent] * inv(R_rest[parent]) * R_rest * L``. Quaternions are
``(w, x, y, z)``; lengths are metres (whatever the armature uses); angles radians.
"""

import re
from dataclasses import dataclass, field

import numpy as np

from ..constants import IDENTITY_QUATERNION
from ..geometry.quaternion import (
    as_quaternions,
    as_vectors,
    quaternion_conjugate,
    quaternion_from_matrix,
    quaternion_multiply,
    quaternion_normalize,
    quaternion_rotate,
)

# -- Blender bone frames -------------------------------------------------------------------------

# Blender's vec_roll_to_mat3_normalized thresholds (armature.cc).
_SAFE_THRESHOLD = 6.1e-3
_CRITICAL_THRESHOLD = 2.5e-4


#: How far (metres, or a BVH file's units) a joint's location must travel over a clip for the
#: joint to carry the character's travel (:func:`carries_heading`).
HEADING_TRAVEL = 1e-3


def carries_heading(root, locations=(), travel=HEADING_TRAVEL):
    """Whether a joint carries the character's heading or travel, so its limit is fitted but off
    by default: limiting such a joint to the headings of its samples would stop a character from
    turning. ``root``: it turns the whole character (a hierarchy's root); ``locations``: arrays
    of its location values over time, one per channel, any of which spanning more than
    ``travel`` makes it a mover (a BVH hips joint, a mover bone). Non-finite values are ignored."""
    if root:
        return True
    for values in locations:
        values = np.asarray(values, dtype=float)
        values = values[np.isfinite(values)]
        if len(values) and float(np.ptp(values)) > travel:
            return True
    return False


def bone_frame_from_head_tail_roll(head, tail, roll):
    """Rest orientation of bones, as Blender builds ``Bone.matrix_local``'s rotation.

    Parameters
    ----------
    head, tail : array_like, shape (..., 3)
        Bone ends in armature space (broadcast together).
    roll : array_like, shape (...)
        Roll in radians about the bone's own axis.

    Returns
    -------
    ndarray, shape (..., 3, 3)
        Rotation matrices whose columns are the bone's X, Y, Z axes in armature space
        (``v_armature = M @ v_bone``); column Y is ``normalize(tail - head)``.

    Notes
    -----
    A port of Blender's ``vec_roll_to_mat3_normalized``: the minimal rotation taking +Y to
    the bone direction (with Blender's series expansion near -Y), then the roll about the
    bone. A bone pointing exactly along -Y (within Blender's threshold) gets the fixed
    frame ``diag(-1, -1, 1)`` before rolling, as in Blender. Zero-length bones raise
    ``ValueError``.
    """
    head = as_vectors(head, "head")
    tail = as_vectors(tail, "tail")
    vec = tail - head
    length = np.linalg.norm(vec, axis=-1, keepdims=True)
    if np.any(length <= 1e-12):
        raise ValueError("bones must have non-zero length (head != tail)")
    nor = vec / length
    roll = np.broadcast_to(np.asarray(roll, dtype=float), nor.shape[:-1])
    x, y, z = nor[..., 0], nor[..., 1], nor[..., 2]
    theta = 1.0 + y
    theta_alt = x * x + z * z
    regular = (theta > _SAFE_THRESHOLD) | (theta_alt > _CRITICAL_THRESHOLD**2)
    theta = np.where(theta > _SAFE_THRESHOLD, theta, theta_alt * 0.5 + theta_alt * theta_alt * 0.125)
    theta = np.where(regular, theta, 1.0)
    b = np.empty(nor.shape[:-1] + (3, 3))
    b[..., 0, 0] = 1.0 - x * x / theta
    b[..., 0, 1] = x
    b[..., 0, 2] = -x * z / theta
    b[..., 1, 0] = -x
    b[..., 1, 1] = y
    b[..., 1, 2] = -z
    b[..., 2, 0] = -x * z / theta
    b[..., 2, 1] = z
    b[..., 2, 2] = 1.0 - z * z / theta
    b = np.where(regular[..., None, None], b, np.diag([-1.0, -1.0, 1.0]))
    # Roll: rotation by ``roll`` about the (unit) bone direction, Rodrigues' formula.
    c, s = np.cos(roll)[..., None, None], np.sin(roll)[..., None, None]
    k = np.zeros(nor.shape[:-1] + (3, 3))
    k[..., 0, 1], k[..., 0, 2], k[..., 1, 2] = -z, y, -x
    k[..., 1, 0], k[..., 2, 0], k[..., 2, 1] = z, -y, x
    r = c * np.eye(3) + s * k + (1.0 - c) * nor[..., :, None] * nor[..., None, :]
    return r @ b


# -- skeleton ------------------------------------------------------------------------------------


@dataclass
class Skeleton:
    """Bones as arrays, parents before children.

    Attributes
    ----------
    names : list of str, length n
    parents : ndarray of int, shape (n,)
        Parent index, ``-1`` for roots; every parent comes before its children.
    heads, tails : ndarray, shape (n, 3)
        Rest positions in armature space (metres).
    rest_rotations : ndarray, shape (n, 4)
        Each bone's rest orientation in armature space (``Bone.matrix_local``'s rotation),
        ``(w, x, y, z)`` with ``w >= 0``.
    rolls : ndarray, shape (n,)
        Blender roll in radians (informative; ``rest_rotations`` is authoritative).
    """

    names: list
    parents: np.ndarray
    heads: np.ndarray
    tails: np.ndarray
    rest_rotations: np.ndarray
    rolls: np.ndarray = field(default=None)

    def __post_init__(self):
        self.names = [str(n) for n in self.names]
        n = len(self.names)
        if len(set(self.names)) != n:
            raise ValueError("bone names must be unique")
        self.parents = np.asarray(self.parents, dtype=np.int64).reshape(-1)
        self.heads = as_vectors(self.heads, "heads").reshape(-1, 3)
        self.tails = as_vectors(self.tails, "tails").reshape(-1, 3)
        self.rest_rotations = quaternion_normalize(as_quaternions(self.rest_rotations, "rest_rotations")).reshape(-1, 4)
        self.rolls = np.zeros(n) if self.rolls is None else np.asarray(self.rolls, dtype=float).reshape(-1)
        for name, arr in (
            ("parents", self.parents),
            ("heads", self.heads),
            ("tails", self.tails),
            ("rest_rotations", self.rest_rotations),
            ("rolls", self.rolls),
        ):
            if len(arr) != n:
                raise ValueError(f"{name} has {len(arr)} entries for {n} bones")
        if np.any((self.parents < -1) | (self.parents >= np.arange(n))):
            raise ValueError("every parent index must be -1 or come before its child")

    @classmethod
    def from_head_tail_roll(cls, names, parents, heads, tails, rolls):
        """Build a skeleton; rest rotations from :func:`bone_frame_from_head_tail_roll`."""
        heads = as_vectors(heads, "heads")
        tails = as_vectors(tails, "tails")
        frames = bone_frame_from_head_tail_roll(heads, tails, rolls)
        return cls(list(names), parents, heads, tails, quaternion_from_matrix(frames), np.asarray(rolls, dtype=float))

    def __len__(self):
        return len(self.names)

    def index(self, name):
        """Index of the bone called ``name`` (``ValueError`` if absent)."""
        try:
            return self.names.index(name)
        except ValueError:
            raise ValueError(f"no bone named {name!r}") from None

    def children(self, bone):
        """Indices of the direct children of bone index ``bone``."""
        return np.flatnonzero(self.parents == bone)

    @property
    def lengths(self):
        """Bone lengths ``(n,)``."""
        return np.linalg.norm(self.tails - self.heads, axis=-1)

    def rest_offsets(self):
        """Each bone's rest rotation relative to its parent's, ``inv(R_rest[p]) * R_rest`` ``(n, 4)``
        (the root's is its rest rotation)."""
        parent_rest = np.where((self.parents >= 0)[:, None], self.rest_rotations[self.parents], IDENTITY_QUATERNION)
        return quaternion_multiply(quaternion_conjugate(parent_rest), self.rest_rotations)

    def mirror_indices(self):
        """``(n,)`` index of each bone's mirror (:func:`mirror_name`), itself when unsided or
        when the mirrored name is absent."""
        lookup = {name: i for i, name in enumerate(self.names)}
        return np.array([lookup.get(mirror_name(name) or name, i) for i, name in enumerate(self.names)])


def _check_local(skeleton, local, name="local_rotations"):
    local = as_quaternions(local, name)
    if local.ndim < 2 or local.shape[-2] != len(skeleton):
        raise ValueError(f"{name} must have shape (..., {len(skeleton)}, 4), got {local.shape}")
    return local


def armature_rotations(skeleton, local_rotations):
    """Pose-space (armature-space) orientation of every bone.

    Parameters
    ----------
    skeleton : Skeleton
    local_rotations : array_like, shape (..., n, 4)
        Pose bone rotations relative to rest (Blender ``rotation_quaternion``).

    Returns
    -------
    ndarray, shape (..., n, 4)
        ``R_pose[b] = R_pose[parent] * inv(R_rest[parent]) * R_rest[b] * local[b]``; roots
        ``R_rest[b] * local[b]``. Loops over bones, vectorized over the leading axes.
    """
    local = _check_local(skeleton, local_rotations)
    offsets = skeleton.rest_offsets()
    out = np.empty(local.shape)
    for b, p in enumerate(skeleton.parents):
        rel = quaternion_multiply(offsets[b], local[..., b, :])
        out[..., b, :] = rel if p < 0 else quaternion_multiply(out[..., p, :], rel)
    return out


def armature_positions(skeleton, local_rotations):
    """Posed heads and tails ``(..., n, 3)`` in armature space (no bone translation or scale;
    roots stay at their rest heads)."""
    local = _check_local(skeleton, local_rotations)
    pose = armature_rotations(skeleton, local)
    # Rotation taking rest armature-space vectors of a bone to posed ones.
    delta = quaternion_multiply(pose, quaternion_conjugate(skeleton.rest_rotations))
    heads = np.empty(local.shape[:-1] + (3,))
    for b, p in enumerate(skeleton.parents):
        if p < 0:
            heads[..., b, :] = skeleton.heads[b]
        else:
            offset = skeleton.heads[b] - skeleton.heads[p]
            heads[..., b, :] = heads[..., p, :] + quaternion_rotate(delta[..., p, :], offset)
    tails = heads + quaternion_rotate(delta, skeleton.tails - skeleton.heads)
    return heads, tails


def local_from_armature_rotations(skeleton, pose_rotations):
    """Inverse of :func:`armature_rotations`: local rotations ``(..., n, 4)`` from pose-space
    orientations ``(..., n, 4)``."""
    pose = _check_local(skeleton, pose_rotations, "pose_rotations")
    offsets = skeleton.rest_offsets()
    out = np.empty(pose.shape)
    for b, p in enumerate(skeleton.parents):
        rel = pose[..., b, :] if p < 0 else quaternion_multiply(quaternion_conjugate(pose[..., p, :]), pose[..., b, :])
        out[..., b, :] = quaternion_multiply(quaternion_conjugate(offsets[b]), rel)
    return out


def retarget_local_rotations(src_skeleton, src_local, dst_skeleton, mapping):
    """Transfer each mapped bone's armature-space rotation away from rest.

    Parameters
    ----------
    src_skeleton, dst_skeleton : Skeleton
        Both in the same armature space (same up and forward axes).
    src_local : array_like, shape (F, ns, 4)
        Source local rotations.
    mapping : dict
        Destination bone name -> source bone name (see :func:`match_bone_names`).

    Returns
    -------
    ndarray, shape (F, nd, 4)
        Destination local rotations. A mapped bone gets
        ``dst_pose[b] = src_pose[m] * inv(src_rest[m]) * dst_rest[b]``; an unmapped bone keeps
        the identity local rotation (it follows its parent). Retargeting a skeleton onto
        itself with the identity mapping reproduces ``src_local`` (up to the quaternion cover).
    """
    src_local = _check_local(src_skeleton, src_local, "src_local")
    src_pose = armature_rotations(src_skeleton, src_local)
    src_delta = quaternion_multiply(src_pose, quaternion_conjugate(src_skeleton.rest_rotations))
    src_index = {name: i for i, name in enumerate(src_skeleton.names)}
    for dst_name, src_name in mapping.items():
        dst_skeleton.index(dst_name)
        if src_name not in src_index:
            raise ValueError(f"mapping names source bone {src_name!r} which the source skeleton lacks")
    lead = src_local.shape[:-2]
    offsets = dst_skeleton.rest_offsets()
    pose = np.empty(lead + (len(dst_skeleton), 4))
    for b, (name, p) in enumerate(zip(dst_skeleton.names, dst_skeleton.parents, strict=True)):
        if name in mapping:
            pose[..., b, :] = quaternion_multiply(src_delta[..., src_index[mapping[name]], :], dst_skeleton.rest_rotations[b])
        else:  # identity local rotation: follow the parent
            rel = np.broadcast_to(offsets[b], lead + (4,))
            pose[..., b, :] = rel if p < 0 else quaternion_multiply(pose[..., p, :], rel)
    local = local_from_armature_rotations(dst_skeleton, pose)
    unmapped = [b for b, name in enumerate(dst_skeleton.names) if name not in mapping]
    local[..., unmapped, :] = IDENTITY_QUATERNION
    return local


# -- bone names ----------------------------------------------------------------------------------

_SEP = r"[._\-\s]"
_SIDE_LETTER = {"L": "R", "R": "L", "l": "r", "r": "l"}
_SIDE_WORD = {"left": "right", "right": "left", "Left": "Right", "Right": "Left", "LEFT": "RIGHT", "RIGHT": "LEFT"}
_PREFIXES = re.compile(r"^(?:.*:|CC_Base_|Bip0*1[ _]|DEF-|joint_)", re.IGNORECASE)
_NUMBER_SUFFIX = re.compile(r"\.\d{3}$")

#: Canonical humanoid bone -> normalized stems, most specific first (rank = position).
#: Stems are lower case without separators or side markers.
BONE_SYNONYMS = {
    "hips": ("hips", "hip", "pelvis", "root", "cog"),
    "spine": ("spine", "abdomen", "lowerback", "spine01", "spine1", "waist", "torso"),
    "chest": ("chest", "upperchest", "spine2", "thorax", "spine02", "upperback", "spine03", "chest2", "spine1"),
    "neck": ("neck", "lowerneck", "neck1", "neck01", "necktwist01", "upperneck"),
    "head": ("head",),
    "shoulder": ("clavicle", "collar", "shoulder"),
    "upper_arm": ("upperarm", "arm", "humerus", "shldr", "shoulder"),
    "forearm": ("forearm", "lowerarm", "radius", "elbow"),
    "hand": ("hand", "wrist"),
    "thigh": ("thigh", "upperleg", "upleg", "femur", "hip"),
    "shin": ("shin", "lowerleg", "calf", "tibia", "leg", "knee"),
    "foot": ("foot", "ankle"),
    "toe": ("toe", "toes", "toebase", "toe0", "ball"),
}
#: Canonical bones that come in left/right pairs.
SIDED_BONES = ("shoulder", "upper_arm", "forearm", "hand", "thigh", "shin", "foot", "toe")
#: Stems of a category that name the same bone (all rank 0): the proximal one in the list
#: wins (CMU's ``LeftWrist`` is the hand, its child ``lhand`` the fingers).
_EQUAL_RANK = {"hand": ("hand", "wrist"), "foot": ("foot", "ankle")}

# Words a CMU/DAZ one-letter side prefix may precede ("lhumerus", "rShldr", "LHipJoint").
_KNOWN_STEMS = {s for stems in BONE_SYNONYMS.values() for s in stems} | {
    "hipjoint",
    "fingers",
    "thumb",
    "buttock",
    "eye",
    "handindex1",
    "fingerbase",
}


def _normal(text):
    return re.sub(r"[^0-9a-z]", "", text.lower())


def _strip(name):
    name = _NUMBER_SUFFIX.sub("", name)
    while True:
        stripped = _PREFIXES.sub("", name, count=1)
        if stripped == name or not stripped:
            return name
        name = stripped


def _side_split(name):
    """``(side 'L'/'R'/None, name without prefixes and side marker)``."""
    base = _strip(name)
    patterns = (
        (rf"{_SEP}([LlRr])$", 1),  # upper_arm.L, Toes_L
        (rf"^([LlRr]){_SEP}", 1),  # L_Thigh, "L UpperArm"
        (rf"{_SEP}([LlRr]){_SEP}", 1),  # Bip01_L_UpperArm
        (r"^(left|right)", 1),
        (r"(left|right)$", 1),
    )
    for pattern, group in patterns:
        m = re.search(pattern, base, flags=re.IGNORECASE if "left" in pattern else 0)
        if m:
            side = m.group(group)[0].upper()
            rest = (base[: m.start()] + " " + base[m.end() :]).strip()
            return side, rest
    m = re.match(r"^([LlRr])([A-Za-z].*)$", base)
    if m and not base.isupper() and (_normal(m.group(2)) in _KNOWN_STEMS) and (m.group(2)[0].isupper() or base[0].islower()):
        return m.group(1).upper(), m.group(2)
    return None, base


def _side_word(text):
    """The first ``left``/``right`` (any case) at the start or end of ``text`` or next to a
    separator, as a match object, else ``None`` (so ``Brightness`` is not sided)."""
    for m in re.finditer(r"left|right", text, flags=re.IGNORECASE):
        start, end = m.span()
        if start == 0 or end == len(text) or text[start - 1] in "._- :" or text[end] in "._- ":
            return m
    return None


def mirror_name(name):
    """The name of the mirror bone, or ``None`` for an unsided name.

    Handles ``.L/.R``, ``_L/_R``, ``-l/-r`` and space separated markers (suffix, prefix or
    between separators, as ``CC_Base_L_Thigh``), ``Left``/``Right`` in any case at either end
    or next to a separator or namespace (``LeftArm``, ``hand_left``, ``mixamorig:LeftArm``),
    and the CMU/DAZ one-letter prefix (``lhumerus``, ``rShldr``). Letter case is preserved; a
    Blender ``.001`` suffix is kept. Agrees with ``bpy.utils.flip_name`` on Blender's own
    conventions and is more lenient (namespaces, CMU/DAZ prefixes, ``CC_Base_L_``).
    """
    number = _NUMBER_SUFFIX.search(name)
    suffix = number.group(0) if number else ""
    base = name[: len(name) - len(suffix)]
    for pattern in (rf"{_SEP}([LlRr])$", rf"^([LlRr]){_SEP}", rf"{_SEP}([LlRr]){_SEP}"):
        m = re.search(pattern, base)
        if m:
            start, end = m.span(1)
            return base[:start] + _SIDE_LETTER[base[start:end]] + base[end:] + suffix
    m = _side_word(base)
    if m:
        word = m.group(0)
        if word in _SIDE_WORD:
            swapped = _SIDE_WORD[word]
        else:
            swapped = "right" if word.lower() == "left" else "left"
            swapped = swapped.capitalize() if word[0].isupper() else swapped
        return base[: m.start()] + swapped + base[m.end() :] + suffix
    side, _ = _side_split(base)
    if side is not None and base[0] in _SIDE_LETTER:
        return _SIDE_LETTER[base[0]] + base[1:] + suffix
    return None


def mirror_local_rotation(q):
    """Mirror local rotations ``(..., 4)`` across the armature's X = 0 plane.

    ``(w, x, y, z) -> (w, x, -y, -z)``: Blender's X-mirror convention for bones whose rolls
    are mirror images (``.R`` has the negated roll of ``.L``), as in
    :func:`humanoid_skeleton`. Rest orientations of such bone pairs are related the same way.
    """
    return as_quaternions(q) * np.array([1.0, 1.0, -1.0, -1.0])


def _side_stems(names):
    """``{side: set of stems}`` of a list of names (the context of :func:`bone_category`)."""
    out = {}
    for name in names:
        side, rest = _side_split(name)
        out.setdefault(side, set()).add(_normal(rest))
    return out


def _categories(name, side_stems):
    """All ``(category, rank)`` readings of ``name``, and its side."""
    side, rest = _side_split(name)
    stem = _normal(rest)
    on_side = side_stems.get(side, set())
    options = []
    for category, stems in BONE_SYNONYMS.items():
        if stem not in stems or (category in SIDED_BONES) != (side is not None):
            continue
        if side is not None and stem == "shoulder" and (category == "upper_arm") != bool(on_side & {"clavicle", "collar"}):
            continue
        if category == "thigh" and stem == "hip" and on_side & (set(stems) - {"hip"}):
            continue
        options.append((category, 0 if stem in _EQUAL_RANK.get(category, ()) else stems.index(stem)))
    return side, options or [(stem, 0)]


def bone_category(name, context=()):
    """Canonical ``(side, category, rank)`` of a bone name, e.g. ``('L', 'upper_arm', 1)``.

    ``side`` is ``'L'``, ``'R'`` or ``None``; ``rank`` 0 is the most usual name of the
    category (see :data:`BONE_SYNONYMS`). ``context`` is the list the name comes from: a
    sided ``shoulder`` means the upper arm when the same side also has a ``collar`` or
    ``clavicle`` (CMU's ``LeftCollar`` + ``LeftShoulder``), and a sided ``hip`` means the
    thigh only when no other thigh name is there. Unknown stems are their own category with
    rank 0, so identical stems still match. A stem with several readings (``spine1``)
    returns the best ranked one; :func:`match_bone_names` considers them all.
    """
    side, options = _categories(name, _side_stems(context))
    category, rank = min(options, key=lambda o: o[1])
    return side, category, rank


def match_bone_names(dst_names, src_names):
    """Map destination bone names to source bone names across naming conventions.

    Parameters
    ----------
    dst_names, src_names : sequence of str
        Bone names, parents before children (the order breaks ties: the proximal bone wins).

    Returns
    -------
    dict
        ``{dst_name: src_name}`` for every destination bone with a counterpart; one-to-one.

    Notes
    -----
    Exact (case-insensitive) names match first. Otherwise names are compared after removing
    namespaces and rig prefixes (``mixamorig:``, ``CC_Base_``, ``Bip01``, ``DEF-``), separators,
    case and side markers (see :func:`mirror_name`), and through :data:`BONE_SYNONYMS`
    (Blender metarig, Mixamo, CMU BVH and ASF, Bandai, DAZ, Character Creator, Unreal,
    3ds Max Biped names), keeping sides apart. The best ranked readings pair up first.
    """
    dst_names, src_names = list(dst_names), list(src_names)
    dst_context, src_context = _side_stems(dst_names), _side_stems(src_names)
    by_key = {}
    for j, name in enumerate(src_names):
        side, options = _categories(name, src_context)
        for category, rank in options:
            by_key.setdefault((side, category), []).append((rank, j))
    src_lower = {n.lower(): j for j, n in enumerate(src_names)}
    candidates = []
    for i, name in enumerate(dst_names):
        exact = src_lower.get(name.lower())
        if exact is not None:
            candidates.append((-1, exact, i, exact))
        side, options = _categories(name, dst_context)
        for category, rank in options:
            for src_rank, j in by_key.get((side, category), ()):
                candidates.append((rank + src_rank, j, i, j))
    candidates.sort()
    mapping, used = {}, set()
    for _, _, i, j in candidates:
        if dst_names[i] in mapping or j in used:
            continue
        mapping[dst_names[i]] = src_names[j]
        used.add(j)
    return {n: mapping[n] for n in dst_names if n in mapping}


# -- a humanoid ----------------------------------------------------------------------------------

# name, parent, head, tail, roll (left side only for sided bones; the right side mirrors).
_HUMANOID = (
    ("hips", None, (0.0, 0.02, 0.95), (0.0, 0.02, 1.07), 0.0),
    ("spine", "hips", (0.0, 0.02, 1.07), (0.0, 0.0, 1.25), 0.0),
    ("chest", "spine", (0.0, 0.0, 1.25), (0.0, 0.01, 1.45), 0.0),
    ("neck", "chest", (0.0, 0.01, 1.45), (0.0, -0.01, 1.58), 0.0),
    ("head", "neck", (0.0, -0.01, 1.58), (0.0, -0.01, 1.80), 0.0),
    ("shoulder.L", "chest", (0.03, -0.01, 1.42), (0.17, 0.02, 1.44), np.pi / 2),
    ("upper_arm.L", "shoulder.L", (0.18, 0.02, 1.44), (0.46, 0.02, 1.44), np.pi / 2),
    ("forearm.L", "upper_arm.L", (0.46, 0.02, 1.44), (0.72, 0.02, 1.44), np.pi / 2),
    ("hand.L", "forearm.L", (0.72, 0.02, 1.44), (0.90, 0.02, 1.44), np.pi / 2),
    ("thigh.L", "hips", (0.10, 0.02, 0.95), (0.10, 0.0, 0.52), 0.0),
    ("shin.L", "thigh.L", (0.10, 0.0, 0.52), (0.10, 0.04, 0.09), 0.0),
    ("foot.L", "shin.L", (0.10, 0.04, 0.09), (0.10, -0.10, 0.02), 0.0),
    ("toe.L", "foot.L", (0.10, -0.10, 0.02), (0.10, -0.18, 0.02), 0.0),
)


def humanoid_skeleton():
    """A 21-bone humanoid in Blender conventions, about 1.8 m tall, in T-pose.

    Z up, facing -Y, left side +X, metres; names as Blender's metarig (``hips`` root,
    ``spine``, ``chest``, ``neck``, ``head``, ``shoulder``, ``upper_arm``, ``forearm``,
    ``hand``, ``thigh``, ``shin``, ``foot``, ``toe`` with ``.L``/``.R``). Arms lie along +-X.
    ``.R`` bones mirror ``.L`` ones (x negated, roll negated), so
    :func:`mirror_local_rotation` mirrors poses. Frames: spine and leg bones have X = +X
    (positive X rotation bends the spine forward, the knee backward = flexion); arm bones
    roll 90 degrees so that X points down and Z forward on the left (positive X rotation
    bends the elbow forward = flexion; positive Z raises the arm).
    """
    names, parents, heads, tails, rolls = [], [], [], [], []
    for name, parent, head, tail, roll in _HUMANOID:
        sides = (
            ((name, parent, 1.0),)
            if not name.endswith(".L")
            else (
                (name, parent, 1.0),
                (name[:-2] + ".R", parent[:-2] + ".R" if parent.endswith(".L") else parent, -1.0),
            )
        )
        for bone, par, sign in sides:
            names.append(bone)
            parents.append(-1 if par is None else names.index(par))
            heads.append((sign * head[0], head[1], head[2]))
            tails.append((sign * tail[0], tail[1], tail[2]))
            rolls.append(sign * roll)
    # Order: parents before children holds because .R bones follow their .R parents.
    return Skeleton.from_head_tail_roll(names, parents, np.array(heads), np.array(tails), np.array(rolls))
