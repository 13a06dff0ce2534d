# SPDX-License-Identifier: GPL-3.0-or-later
"""Joint rotations that mean the same on any humanoid rig: anatomical rotations.

A pose bone's rotation (its basis, relative to its rest pose, in its own local axes) depends on
how the rig was built: the bone's roll, its local axes, and the rest pose (arms out in a T-pose
or down in an A-pose). The human preset stores rotations that depend on none of these, so that
limits carry over between rigs.

Frames
    Each bone carries a *segment frame*, fixed to the bone and built from the rig's rest
    geometry alone (:func:`segment_frames`), with the character's body axes (:func:`body_frame`:
    left, up, forward, estimated from where the rig's limbs and neck are):

    - ``"BODY"``: the body axes themselves (X left, Y up, Z forward). For the torso, neck, head
      and clavicles, whose rest pose is the neutral upright one on every rig (whichever way
      their bones point).
    - ``"FORWARD"``: Y along the bone, Z the forward axis made perpendicular to it, X = Y x Z.
      For the arms and legs, whose rest direction differs between rigs (T-pose, A-pose): the
      frame turns with the bone, and the forward axis stays the hinge of an arm lowered from a
      T- to an A-pose, so that lowering the arm is the only difference.
    - ``"UP"``: Y along the bone, Z the up axis made perpendicular to it. For feet and toes,
      which point forward.

Anatomical rotation
    Of a joint: the orientation of its bone's segment frame relative to its parent's segment
    frame, ``a = inv(C_parent) * D_parent^-1 * D_bone * C_bone``, with ``D`` each bone's
    armature-space rotation away from its rest and ``C`` the frames at rest. Since
    ``inv(D_parent) * D_bone = R * basis * inv(R)`` (``R`` the bone's rest orientation,
    ``Bone.matrix_local``), :func:`anatomical_from_basis` is ``a = inv(C_p) * R * L * inv(R) *
    C_b`` and :func:`basis_from_anatomical` its exact inverse. Which frame kind a joint's bone
    and its parent use is the joint's, not the bone's (:data:`JOINT_FRAMES`): a thigh's parent
    is the pelvis whether the rig's parent bone points up (Rigify's hips) or sideways (CMU's
    ``LHipJoint``).

Chains
    The spine and the neck are chains of 1 to 6 bones depending on the rig. Their joint is the
    whole chain's rotation (the chest against the pelvis; the head against the chest, all
    ``"BODY"`` frames), and each of a rig's ``m`` chain bones takes ``a ** (1 / m)``
    (:func:`chain_share`), so the chain composes back to ``a``.

Pure numpy; quaternions ``(w, x, y, z)``, matrices with the frame's axes as columns (armature
space).
"""

import numpy as np

from ..constants import EPS
from ..geometry.quaternion import (
    as_quaternions,
    exp_map_from_quaternion,
    matrix_from_quaternion,
    quaternion_conjugate,
    quaternion_from_exp_map,
    quaternion_from_matrix,
    quaternion_multiply,
    quaternion_rotate,
    quaternion_short_way,
)
from ..geometry.swing_twist import swing_twist_from_quaternion
from .bone_names import CHAIN_JOINTS
from .skeleton import armature_positions, armature_rotations

#: Segment frame kinds (module docstring).
FRAME_KINDS = ("BODY", "FORWARD", "UP")
#: Per joint (without side): the frame kind of its bone and of its parent's.
JOINT_FRAMES = {
    "spine": ("BODY", "BODY"),
    "neck": ("BODY", "BODY"),
    "clavicle": ("BODY", "BODY"),
    "shoulder": ("FORWARD", "BODY"),
    "elbow": ("FORWARD", "FORWARD"),
    "wrist": ("FORWARD", "FORWARD"),
    "hip": ("FORWARD", "BODY"),
    "knee": ("FORWARD", "FORWARD"),
    "ankle": ("UP", "FORWARD"),
    "toe": ("UP", "UP"),
}
#: Blender's body axes (left +X, up +Z): the fallback when a rig's bones do not tell.
BLENDER_LEFT = np.array([1.0, 0.0, 0.0])
BLENDER_UP = np.array([0.0, 0.0, 1.0])
#: Estimated body axes within this of an armature axis are that axis (degrees): rigs are built
#: upright, and a spine's lean or a hip's offset must not tilt every frame.
SNAP_DEGREES = 20.0
#: A bone closer than this (cosine) to its frame's reference axis takes the other body axis.
PARALLEL_COSINE = 0.99
#: Which way a hinge's limb frames face: an elbow flexes towards its upper arm frame's +Z, a knee
#: towards -Z (the frames' Z is forward; :mod:`.envelope` writes flexion about X).
HINGE_FLEXION = {"elbow": 1.0, "knee": -1.0}
#: Joints whose neutral is the rig's own neutral posture whichever way their bones point, and the
#: neutral rotation (a matrix: bone frame in its parent's): a foot flat on the ground points
#: forward from its shin (a quarter turn about X; feet bones slope down to the toes by rigs'
#: taste), toes and hands straight on.
NEUTRAL_AT_REST = {
    "ankle": np.array([[1.0, 0.0, 0.0], [0.0, 0.0, -1.0], [0.0, 1.0, 0.0]]),
    "toe": np.eye(3),
    "wrist": np.eye(3),
}
#: A hinge bent more than this in the neutral posture bends that way (degrees).
HINGE_BEND_DEGREES = 3.0
#: A hinge's bend direction is read from motion frames bent more than this (degrees) ...
HINGE_MOTION_DEGREES = 20.0
#: ... when there are at least this many of them ...
HINGE_MOTION_FRAMES = 5
#: ... and their bend directions agree (the length of their mean unit vector).
HINGE_CONCENTRATION = 0.8


def _unit(v, what):
    v = np.asarray(v, dtype=float)
    n = np.linalg.norm(v, axis=-1, keepdims=True)
    if np.any(n <= EPS) or not np.all(np.isfinite(v)):
        raise ValueError(f"{what} must be finite and non-zero, got {v.tolist()}")
    return v / n


def body_frame(up, left):
    """The body axes as a rotation matrix ``(3, 3)``: columns left, up, forward (= left x up).

    ``up (3,)`` is kept; ``left (3,)`` is made perpendicular to it. ``ValueError`` when they are
    parallel or zero."""
    up = _unit(up, "up")
    left = np.asarray(left, dtype=float) - np.dot(left, up) * up
    left = _unit(left, "left (perpendicular to up)")
    return np.stack((left, up, np.cross(left, up)), axis=-1)


def body_frame_from_rest(heads, joints):
    """Estimate a rig's body axes from its matched bones at rest.

    Parameters
    ----------
    heads : array_like, shape (n, 3)
        Bone heads in armature space.
    joints : sequence of str or None, length n
        Each bone's anatomical joint (:func:`.bone_names.match_joints`), ``None`` unmatched.

    Returns
    -------
    ndarray, shape (3, 3)
        :func:`body_frame` with up from the hips' heads to the neck chain's (the spine's when
        there is no neck), and left from the right side's heads to the left side's, joint by
        joint, each snapped to the nearest armature axis within :data:`SNAP_DEGREES` (rigs are
        built upright: Z up in Blender, Y up from a BVH file). Blender's axes (Z up, X left)
        stand in for what the bones do not tell.
    """
    heads = np.asarray(heads, dtype=float).reshape(-1, 3)
    by_joint = {}
    for head, joint in zip(heads, joints, strict=True):
        if joint is not None:
            by_joint.setdefault(joint, []).append(head)
    mean = {joint: np.mean(points, axis=0) for joint, points in by_joint.items()}
    up = BLENDER_UP
    hips = [mean[j] for j in ("hip.L", "hip.R") if j in mean]
    top = mean.get("neck", mean.get("spine"))
    if hips and top is not None and np.linalg.norm(top - np.mean(hips, axis=0)) > EPS:
        up = top - np.mean(hips, axis=0)
    sides = [mean[j] - mean[j[:-1] + "R"] for j in mean if j.endswith(".L") and j[:-1] + "R" in mean]
    left = np.mean(sides, axis=0) if sides else BLENDER_LEFT
    try:
        return body_frame(_snapped(up), _snapped(left))
    except ValueError:
        return body_frame(BLENDER_UP, BLENDER_LEFT)


def _snapped(v):
    """``v`` turned onto the nearest armature axis when within :data:`SNAP_DEGREES` of it."""
    v = _unit(v, "body axis")
    axis = np.zeros(3)
    k = int(np.argmax(np.abs(v)))
    axis[k] = np.sign(v[k])
    return axis if np.dot(v, axis) > np.cos(np.radians(SNAP_DEGREES)) else v


def segment_frames(directions, kinds, body):
    """Segment frames ``(n, 3, 3)`` of bones pointing along ``directions (n, 3)`` (armature
    space, at rest), of frame ``kinds`` (:data:`FRAME_KINDS`, one per bone), on a body with
    axes ``body (3, 3)`` (:func:`body_frame`). A bone within :data:`PARALLEL_COSINE` of its
    reference axis takes the other one (forward for up, up for forward)."""
    directions = _unit(np.asarray(directions, dtype=float).reshape(-1, 3), "bone directions")
    kinds = list(kinds)
    if len(kinds) != len(directions):
        raise ValueError(f"{len(directions)} directions but {len(kinds)} frame kinds")
    left, up, forward = body.T
    out = np.empty((len(kinds), 3, 3))
    for i, (y, kind) in enumerate(zip(directions, kinds, strict=True)):
        if kind == "BODY":
            out[i] = body
            continue
        if kind not in FRAME_KINDS:
            raise ValueError(f"frame kind must be one of {FRAME_KINDS}, got {kind!r}")
        ref = forward if kind == "FORWARD" else up
        if abs(np.dot(ref, y)) > PARALLEL_COSINE:
            ref = up if kind == "FORWARD" else forward
        z = ref - np.dot(ref, y) * y
        z /= np.linalg.norm(z)
        out[i] = np.stack((np.cross(y, z), y, z), axis=-1)
    return out


def _rotation_between(a, b):
    """The least rotation matrix ``(3, 3)`` turning direction ``a (3,)`` onto ``b (3,)``."""
    a, b = a / np.linalg.norm(a), b / np.linalg.norm(b)
    axis, cos = np.cross(a, b), float(np.dot(a, b))
    if np.linalg.norm(axis) < EPS:
        if cos > 0.0:
            return np.eye(3)
        other = np.eye(3)[int(np.argmin(np.abs(a)))]
        axis = np.cross(a, other)
    k = np.array([[0.0, -axis[2], axis[1]], [axis[2], 0.0, -axis[0]], [-axis[1], axis[0], 0.0]])
    return np.eye(3) + k + k @ k / (1.0 + cos) if cos > -1.0 + EPS else np.eye(3) + 2.0 * k @ k / np.dot(axis, axis)


def _frames_as_quaternions(frame):
    return quaternion_from_matrix(np.asarray(frame, dtype=float))


def anatomical_from_basis(basis, rest, bone_frame, parent_frame):
    """Anatomical rotations ``(..., 4)`` of pose-bone basis rotations ``basis (..., 4)``.

    ``rest (..., 4)`` is the bone's rest orientation (``Bone.matrix_local``), ``bone_frame``
    and ``parent_frame (..., 3, 3)`` the segment frames of the bone and of its parent at rest
    (all broadcast). ``a = inv(C_p) * R * basis * inv(R) * C_b``, on the cover ``w >= 0``."""
    r = as_quaternions(rest, "rest")
    c_b, c_p = _frames_as_quaternions(bone_frame), _frames_as_quaternions(parent_frame)
    delta = quaternion_multiply(r, quaternion_multiply(as_quaternions(basis, "basis"), quaternion_conjugate(r)))
    return quaternion_short_way(quaternion_multiply(quaternion_conjugate(c_p), quaternion_multiply(delta, c_b)))


def basis_from_anatomical(anatomical, rest, bone_frame, parent_frame):
    """Inverse of :func:`anatomical_from_basis`: the basis rotations ``(..., 4)`` that pose
    the bone at ``anatomical (..., 4)``: ``L = inv(R) * C_p * a * inv(C_b) * R``."""
    r = as_quaternions(rest, "rest")
    c_b, c_p = _frames_as_quaternions(bone_frame), _frames_as_quaternions(parent_frame)
    delta = quaternion_multiply(c_p, quaternion_multiply(as_quaternions(anatomical, "anatomical"), quaternion_conjugate(c_b)))
    return quaternion_short_way(quaternion_multiply(quaternion_conjugate(r), quaternion_multiply(delta, r)))


def chain_share(anatomical, share, weights=None):
    """Each of ``share`` chain bones' part ``a ** (1 / share)`` of chain rotations ``(..., 4)``
    (the same axis, the angle divided; taken the short way), or with ``weights (3,)`` a bone's
    part per axis of the frame: the rotation vector's components times them
    (:func:`.vertebrae.bone_weights`)."""
    if int(share) != share or share < 1:
        raise ValueError(f"a chain share is a whole number of bones >= 1, got {share}")
    v = exp_map_from_quaternion(quaternion_short_way(as_quaternions(anatomical, "anatomical")))
    return quaternion_from_exp_map(v / share if weights is None else v * np.asarray(weights, dtype=float))


class RigFrames:
    """A rig's joints ready for anatomical rotations: for every matched bone, its rest
    orientation, its segment frame and its parent's.

    Parameters
    ----------
    skeleton : :class:`.skeleton.Skeleton`
        The rig at rest (armature space).
    matches : dict
        ``{bone name: BoneMatch}`` (:func:`.bone_names.match_joints`).
    directions : array_like, shape (n, 3), optional
        Each bone's pointing direction at rest (default: its rest Y axis, head to tail); a BVH
        reader passes the direction to a zero-length bone's children instead.
    body : ndarray, shape (3, 3), optional
        The body axes (default: :func:`body_frame_from_rest`).
    posture : array_like, shape (n, 4), optional
        Local rotations of the rig's neutral posture when its rest pose is not one
        (:func:`neutral_posture`): the frames are built on that posture and carried back to
        the rest pose. Default: the rest pose is neutral.
    motion : array_like, shape (F, n, 4), optional
        Local rotations of motion the rig plays: where an elbow or knee is straight in the
        neutral posture, the motion shows which way it bends (:func:`hinge_turns`).

    ``assumed`` lists, in words, what the frames rest on (the hinges' bend directions).
    """

    def __init__(self, skeleton, matches, directions=None, body=None, posture=None, motion=None):
        self.skeleton = skeleton
        self.matches = dict(matches)
        self.assumed = []
        if directions is None:
            directions = matrix_from_quaternion(skeleton.rest_rotations)[:, :, 1]
        directions = np.asarray(directions, dtype=float).reshape(-1, 3)
        heads, delta = skeleton.heads, None
        if posture is not None:
            posture = as_quaternions(posture, "posture").reshape(len(skeleton), 4)
            delta = quaternion_multiply(armature_rotations(skeleton, posture), quaternion_conjugate(skeleton.rest_rotations))
            heads = armature_positions(skeleton, posture)[0]
            directions = quaternion_rotate(delta, directions)
        joints = [self.matches[name].joint if name in self.matches else None for name in skeleton.names]
        self.body = body_frame_from_rest(heads, joints) if body is None else np.asarray(body, dtype=float)
        self.bones = [b for b, name in enumerate(skeleton.names) if name in self.matches]
        kinds = [JOINT_FRAMES[self.matches[skeleton.names[b]].base] for b in self.bones]
        parents = skeleton.parents[self.bones]
        self.bone_frames = segment_frames(directions[self.bones], [k[0] for k in kinds], self.body)
        self.parent_frames = segment_frames(directions[parents], [k[1] for k in kinds], self.body)
        bent = self._bent_hinges(directions)
        posed = np.tile(np.eye(3), (len(skeleton), 1, 1))
        if delta is not None:  # carried back to the rest pose with each bone
            posed = matrix_from_quaternion(delta)
            self.bone_frames = np.swapaxes(posed[self.bones], -1, -2) @ self.bone_frames
            self.parent_frames = np.swapaxes(posed[parents], -1, -2) @ self.parent_frames
        moving = self._moving_hinges(motion) if motion is not None else {}
        turns = {}
        for joint, b, limb in self._hinges():
            base = self.matches[self.skeleton.names[b]].base
            if joint in moving:
                turn, count = moving[joint]
                self.assumed.append(
                    f"{joint} bends the way the motion bends it ({count} frames; {np.degrees(turn):+.0f} degrees)"
                )
            elif joint in bent:
                turn = bent[joint]
                self.assumed.append(f"{joint} bends the way it is bent at rest ({np.degrees(turn):+.0f} degrees)")
            else:
                self.assumed.append(f"{joint} is straight at rest: assumed to bend {'forward' if base == 'elbow' else 'back'}")
                continue
            turns.update(dict.fromkeys(limb, turn))
        self._turn(turns, parents)
        at_rest = self._neutral_at_rest(posture, motion) if delta is not None and motion is not None else set()
        self._chained(posed, parents, directions, at_rest)

    def _hinges(self):
        """``[(joint, hinge bone, limb bones)]`` for every matched elbow and knee: the limb
        bones (upper arm, forearm, hand; thigh, shin) share the hinge's bend direction."""
        out = []
        for b in self.bones:
            match = self.matches[self.skeleton.names[b]]
            p = self.skeleton.parents[b]
            if match.base not in HINGE_FLEXION or p < 0 or p not in self.bones:
                continue
            out.append((match.joint, b, [p, b]))
        return out

    def _turn_towards(self, joint_bone, flexion_direction, frame):
        """The turn about ``frame``'s Y that makes the hinge bone's flexion go towards
        ``flexion_direction`` (armature space; :data:`HINGE_FLEXION`)."""
        target = HINGE_FLEXION[self.matches[self.skeleton.names[joint_bone]].base] * flexion_direction
        return float(np.arctan2(np.dot(target, frame[:, 0]), np.dot(target, frame[:, 2])))

    def _bent_hinges(self, directions):
        """``{joint: turn}``: for an elbow or knee bent in the neutral posture (``directions``
        posed as the frames were built), the turn about their own Y that gives its limb's frames
        that bend."""
        out = {}
        for joint, b, (p, _) in self._hinges():
            u, f = directions[p] / np.linalg.norm(directions[p]), directions[b] / np.linalg.norm(directions[b])
            bend = f - np.dot(f, u) * u
            if np.degrees(np.arcsin(min(1.0, np.linalg.norm(bend)))) < HINGE_BEND_DEGREES or np.dot(f, u) < 0.0:
                continue
            out[joint] = self._turn_towards(b, bend / np.linalg.norm(bend), self.bone_frames[self.bones.index(p)])
        return out

    def _moving_hinges(self, motion):
        """``{joint: (turn, frames)}`` as :meth:`_bent_hinges`, from the direction ``motion
        (F, n, 4)`` bends each elbow and knee: over :data:`HINGE_MOTION_FRAMES` frames bent more
        than :data:`HINGE_MOTION_DEGREES`, their directions agreeing
        (:data:`HINGE_CONCENTRATION`) and within a quarter turn of the way the hinge bends on a
        body (a knee bending forward is a skeleton's odd bone, not a bend)."""
        motion = as_quaternions(motion, "motion").reshape(-1, len(self.skeleton), 4)
        out = {}
        for joint, b, _ in self._hinges():
            swing, _ = swing_twist_from_quaternion(self.anatomical(self.skeleton.names[b], motion[:, b]))
            v = exp_map_from_quaternion(quaternion_short_way(swing))
            angle = np.linalg.norm(v, axis=-1)
            bent = angle > np.radians(HINGE_MOTION_DEGREES)
            if bent.sum() < HINGE_MOTION_FRAMES:
                continue
            axis = np.mean(v[bent] / angle[bent, None], axis=0)
            if np.linalg.norm(axis) < HINGE_CONCENTRATION:
                continue
            flexion_axis = 0.0 if HINGE_FLEXION[self.matches[self.skeleton.names[b]].base] > 0 else np.pi
            turn = float(np.angle(np.exp(1j * (flexion_axis - np.arctan2(axis[2], axis[0])))))
            if abs(turn) <= np.pi / 2:
                out[joint] = (turn, int(bent.sum()))
        return out

    def _neutral_at_rest(self, posture, motion):
        """The feet, toes and hands (bone indices) whose ``motion (F, n, 4)`` stays nearer their
        rest than the ``posture (n, 4)`` frame's pose (median angle of their local rotations):
        the posture frame was chosen for the legs, spine and arms, and its wrist or toe may be
        bent anywhere; the rig's rest is its author's straight hand."""
        motion = as_quaternions(motion, "motion").reshape(-1, len(self.skeleton), 4)
        out = set()
        for b in self.bones:
            if self.matches[self.skeleton.names[b]].base not in NEUTRAL_AT_REST:
                continue
            to_rest = np.abs(motion[:, b, 0])
            to_posture = np.abs(np.sum(motion[:, b] * posture[b], axis=-1))
            if np.median(to_rest) > np.median(to_posture):  # (|cos| of half the angle)
                out.add(b)
        return out

    def _chained(self, posed, parents, directions, at_rest=()):
        """Frames that follow from the parent's, in the neutral posture (``posed`` ``(n, 3, 3)``:
        each bone's turn from rest to it; ``directions`` posed): a forearm's or shin's is its
        parent's swung onto the bone (an elbow or knee has no twist of its own at rest), a
        foot's, toe's or hand's its parent's turned by the joint's neutral rotation
        (:data:`NEUTRAL_AT_REST`: a foot flat, toes and hand straight, however the bones point).
        A foot, toe or hand in ``at_rest`` keeps its rest relation instead (:meth:`_neutral_at_rest`)."""
        for k, b in enumerate(self.bones):
            match, p = self.matches[self.skeleton.names[b]], parents[k]
            base = match.base
            if p < 0 or (base not in NEUTRAL_AT_REST and base not in HINGE_FLEXION):
                continue
            parent = posed[p] @ self.parent_frames[k]
            if base in HINGE_FLEXION:
                frame = _rotation_between(parent[:, 1], directions[b]) @ parent
            else:
                if b in at_rest:
                    self.assumed.append(f"{match.joint}'s neutral is its rest (its motion stays nearer it than the posture's)")
                    self.bone_frames[k] = self.parent_frames[k] @ NEUTRAL_AT_REST[base]
                    self._inherit(k, b, parents)
                    continue
                frame = parent @ NEUTRAL_AT_REST[base]
            self.bone_frames[k] = posed[b].T @ frame
            self._inherit(k, b, parents)

    def _inherit(self, k, b, parents):
        """Bone ``b``'s children take its frame (``k``: its index in ``self.bones``) as their parent's."""
        for j, other in enumerate(parents):
            if other == b:
                self.parent_frames[j] = self.bone_frames[k]

    def _turn(self, turns, parents):
        """Turn the frames of the bones in ``turns`` (``{bone: angle}``) about their own Y."""
        if not turns:
            return

        def about_y(angle):
            c, s = np.cos(angle), np.sin(angle)
            return np.array([[c, 0.0, s], [0.0, 1.0, 0.0], [-s, 0.0, c]])

        for k, (b, p) in enumerate(zip(self.bones, parents)):
            if b in turns:
                self.bone_frames[k] = self.bone_frames[k] @ about_y(turns[b])
            if p in turns:
                self.parent_frames[k] = self.parent_frames[k] @ about_y(turns[p])

    def frames_of(self, name):
        """``(rest rotation (4,), segment frame (3, 3), parent's segment frame (3, 3))`` of the
        matched bone ``name``."""
        return self._at(name)

    def _at(self, name):
        k = self.bones.index(self.skeleton.index(name))
        return self.skeleton.rest_rotations[self.skeleton.index(name)], self.bone_frames[k], self.parent_frames[k]

    def anatomical(self, name, basis):
        """Bone ``name``'s basis rotations ``(N, 4)`` as anatomical rotations of its joint's
        bone (for a chain bone: its own part, not the chain's)."""
        return anatomical_from_basis(basis, *self._at(name))

    def basis(self, name, anatomical, weights=None):
        """The basis rotations ``(N, 4)`` of bone ``name`` for its joint's anatomical rotations
        ``(N, 4)`` (a chain joint's are shared out over its chain first, evenly or by
        ``weights``: :func:`chain_share`)."""
        match = self.matches[name]
        if match.base in CHAIN_JOINTS:
            anatomical = chain_share(anatomical, match.share, weights)
        return basis_from_anatomical(anatomical, *self._at(name))

    def joint_rotations(self, basis):
        """Anatomical rotations per joint ``{joint: (F, 4)}`` of a whole pose sequence
        ``basis (F, n, 4)`` (``skeleton.names`` order): a limb joint's from its bone (the first
        matched one, in bone order), a chain joint's composed over its first chain, parent to
        child."""
        basis = as_quaternions(basis, "basis")
        if basis.ndim != 3 or basis.shape[1] != len(self.skeleton):
            raise ValueError(f"basis must have shape (F, {len(self.skeleton)}, 4), got {basis.shape}")
        out, chain_top = {}, {}
        for b in self.bones:
            name = self.skeleton.names[b]
            match = self.matches[name]
            a = self.anatomical(name, basis[:, b])
            if match.base not in CHAIN_JOINTS:
                out.setdefault(match.joint, a)
                continue
            p = self.skeleton.parents[b]
            below = (
                p >= 0 and self.skeleton.names[p] in self.matches and self.matches[self.skeleton.names[p]].joint == match.joint
            )
            if not below:
                if match.joint in out:
                    continue  # a second chain (DEF- beside ORG-): the first is the joint
                chain_top[match.joint] = b
                out[match.joint] = a
            elif chain_top.get(match.joint) is not None and self._in_chain(b, chain_top[match.joint]):
                out[match.joint] = quaternion_short_way(quaternion_multiply(out[match.joint], a))
        return out

    def _in_chain(self, b, top):
        while b >= 0 and b != top:
            b = self.skeleton.parents[b]
        return b == top
