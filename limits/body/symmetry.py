# SPDX-License-Identifier: GPL-3.0-or-later
"""The body's symmetry: a bone's samples seen in the mirror, as its partner's samples.

A left arm that was only ever raised to the front in the training clips says nothing about the
right arm raised to the front, but the body is (nearly) symmetric: mirroring each side's samples
through the character's symmetry plane doubles what both sides learn from (issue 13).

A sample is a bone's pose-basis rotation ``q``: relative to its rest orientation, in its own
local axes. In the armature's axes (parents at rest) the same rotation is
``d = r q r*``, with ``r`` the bone's rest orientation (the rotation part of Blender's
``bone.matrix_local``). Its mirror image through a plane with unit normal ``n`` is the rotation
``S D S`` (``S = I - 2 n n^T``), whose quaternion is ``(w, -S v)`` for ``d = (w, v)``: the axis
is reflected and the sense reversed. The partner bone's basis rotation is then
``r'* d' r'`` with the partner's rest orientation ``r'``. Rolls and local axes of either bone do
not matter (they are in ``r`` and ``r'``); the two bones need only be mirror images at rest
(see :func:`symmetry_plane`, which checks that their heads are).
"""

import numpy as np

from ..geometry.quaternion import as_quaternions, as_vectors, quaternion_conjugate, quaternion_mean, quaternion_multiply
from .skeleton import armature_positions, armature_rotations, mirror_name

#: A pair of bones is a mirror pair when each head, mirrored, lies within this share of the bone's
#: length or of the head's distance from the plane's centre (at least :data:`MIN_TOLERANCE`,
#: in the armature's units) of its partner's head.
HEAD_TOLERANCE = 0.2
MIN_TOLERANCE = 1e-3


def reflect_rotations(q, normal):
    """``(..., 4)``: rotations ``q`` (armature axes) mirrored through the plane with normal
    ``normal (3,)``: ``(w, -S v)``."""
    q = as_quaternions(q)
    n = np.asarray(normal, dtype=float)
    n = n / np.linalg.norm(n)
    v = q[..., 1:]
    reflected = v - 2.0 * np.sum(v * n, axis=-1, keepdims=True) * n  # S v
    return np.concatenate((q[..., :1], -reflected), axis=-1)


def mirrored_samples(q, rest, partner_rest, normal):
    """``(N, 4)``: the basis rotations ``q (N, 4)`` of a bone with rest orientation ``rest``
    (a quaternion, armature axes) seen in the mirror, as basis rotations of its partner with
    rest orientation ``partner_rest``. The sign of each row's ``w`` is kept (the mirror image of
    a rotation turns as far)."""
    q = as_quaternions(q).reshape(-1, 4)
    r, r2 = as_quaternions(rest), as_quaternions(partner_rest)
    d = quaternion_multiply(quaternion_multiply(r, q), quaternion_conjugate(r))
    out = quaternion_multiply(quaternion_multiply(quaternion_conjugate(r2), reflect_rotations(d, normal)), r2)
    return out * np.where(out[:, :1] * q[:, :1] < 0.0, -1.0, 1.0)


def symmetry_plane(heads, partner_heads, lengths):
    """``(normal (3,), point (3,), mirrored (P,) bool)``: the plane the pairs of bones mirror
    through, from the heads ``(P, 3)`` of one side and of their partners (armature space), and
    which pairs are mirror images about it (each head, mirrored, near the partner's:
    :data:`HEAD_TOLERANCE`). A pair whose heads coincide (a centre bone paired
    with itself) says nothing about the plane. Each pair proposes the plane halfway between its
    heads; the proposal most pairs agree with is refined from those pairs, so a pair that does
    not mirror does not tilt it. Raises ``ValueError`` when no pair gives a plane."""
    a = as_vectors(heads).reshape(-1, 3)
    b = as_vectors(partner_heads).reshape(-1, 3)
    tolerance = np.maximum(HEAD_TOLERANCE * np.asarray(lengths, dtype=float).reshape(-1), MIN_TOLERANCE)
    across = a - b
    span = np.linalg.norm(across, axis=-1)
    use = np.flatnonzero(span > MIN_TOLERANCE)
    if not use.size:
        raise ValueError("no left/right pair of bones apart: the symmetry plane is undefined")

    def plane(pairs):
        directions = across[pairs] * np.where(across[pairs] @ across[pairs[0]] < 0.0, -1.0, 1.0)[:, None]
        normal = directions.sum(axis=0)  # (pairs far apart weigh more: their direction is surer)
        normal /= np.linalg.norm(normal)
        point = 0.5 * (a[pairs] + b[pairs]).mean(axis=0)
        mirrored_a = a - 2.0 * ((a - point) @ normal)[:, None] * normal
        reach = np.maximum(tolerance, HEAD_TOLERANCE * np.linalg.norm(a - point, axis=-1))
        return normal, point, np.linalg.norm(mirrored_a - b, axis=-1) <= reach

    # each pair proposes the plane between its heads; the one most pairs agree with is refined
    # from those pairs (a pair that does not mirror does not tilt the plane)
    proposals = [plane(use[i : i + 1]) for i in range(use.size)]
    best = max(proposals, key=lambda p: int(p[2].sum()))
    agree = np.flatnonzero(best[2] & (span > MIN_TOLERANCE))
    return plane(agree) if agree.size else best


class BodyMirror:
    """How a skeleton mirrors: each bone's partner (itself for a centre bone), and for each the
    pose the pair mirrors in (``poses[name]``: ``"rest"``, or ``"neutral"``: the given neutral
    pose, for a pair whose rest orientations are not mirror images).

    In a pose ``N`` (local rotations; the identity for the rest pose) with bone frames ``F``
    (armature axes) and symmetry plane normal ``n``, a sample ``q`` of bone ``p`` moves the
    bone by ``D = F_p N_p* q F_p*`` (armature axes, parents held in ``N``); its mirror image
    ``S D S`` (``S = I - 2 n n^T``) is the sample ``N_b F_b* (S D S) F_b`` of the partner ``b``.
    Only the pair's own frames enter, so each pair may mirror in its own pose. For the rest
    pose this is :func:`mirrored_samples`."""

    def __init__(self, names):
        self.names = list(names)
        self.partners, self.poses = {}, {}
        self._index = {name: i for i, name in enumerate(self.names)}
        self._pair = {}  # name -> (frames (n, 4), local pose (n, 4), normal (3,))

    @classmethod
    def of(cls, skeleton, neutral=None):
        """The mirror of ``skeleton`` (a :class:`.skeleton.Skeleton`): the pairs that mirror in
        its rest pose, then those that mirror in ``neutral`` (``(n, 4)`` local rotations, e.g.
        the mean of each bone's samples) only; ``None`` when no pose has a symmetry plane that
        most pairs agree on (:func:`mirror_pairs`)."""
        n = len(skeleton)
        poses = [("rest", np.tile([1.0, 0.0, 0.0, 0.0], (n, 1)))]
        if neutral is not None:
            poses.append(("neutral", as_quaternions(neutral).reshape(n, 4)))
        out = cls(skeleton.names)
        for pose, local in poses:
            heads, tails = armature_positions(skeleton, local)
            found = mirror_pairs(skeleton.names, heads, tails, skeleton.lengths)
            if found is None:
                continue
            partners, normal = found
            frames = armature_rotations(skeleton, local)
            for name, partner in partners.items():
                # a centre bone mirrors onto itself only about the rest pose's plane: a neutral
                # pose's plane is a few degrees off, and that skews the bone's own samples
                if name not in out.partners and (pose == "rest" or partner != name):
                    out.partners[name], out.poses[name] = partner, pose
                    out._pair[name] = (frames, local, normal)
        return out if out.partners else None

    def normal(self, bone):
        """The unit normal (armature axes) of the symmetry plane ``bone`` mirrors through."""
        return self._pair[bone][2]

    def mirrored(self, q, bone, partner):
        """``q (N, 4)``, samples of bone ``partner``, seen in the mirror as samples of ``bone``."""
        if self.partners.get(bone) != partner:
            raise ValueError(f"{partner} is not the mirror bone of {bone}")
        q = as_quaternions(q).reshape(-1, 4)
        frames, local, normal = self._pair[bone]
        i, j = self._index[bone], self._index[partner]
        from_neutral = quaternion_multiply(quaternion_conjugate(local[j]), q)
        seen = mirrored_samples(from_neutral, frames[j], frames[i], normal)
        out = quaternion_multiply(local[i], seen)
        return out * np.where(out[:, :1] * q[:, :1] < 0.0, -1.0, 1.0)


def mirror_pairs(names, heads, tails, lengths):
    """``({bone name: partner name}, normal)`` of bones that mirror through one plane, their
    heads and tails ``(n, 3)`` given (armature space, in some pose): left/right names
    (:func:`.skeleton.mirror_name`) whose heads and tails mirror each other's, and centre bones
    (no side in the name, head and tail on the plane) mapped to themselves; ``None`` when fewer
    than half the left/right pairs agree on a plane."""
    index = {name: i for i, name in enumerate(names)}
    pairs = {}
    for name in names:
        other = mirror_name(name)
        if other and other != name and other in index and mirror_name(other) == name:
            pairs[name] = other
    if not pairs:
        return None
    left = list(pairs)
    mine = [index[n] for n in left]
    theirs = [index[pairs[n]] for n in left]
    lengths = np.asarray(lengths, dtype=float)
    try:
        normal, point, mirrored = symmetry_plane(heads[mine], heads[theirs], lengths[mine])
    except ValueError:
        return None
    if mirrored.sum() < 0.5 * len(left):
        return None

    def mirror(p):
        return p - 2.0 * ((p - point) @ normal)[..., None] * normal

    reach = np.maximum(HEAD_TOLERANCE * np.maximum(lengths, np.linalg.norm(tails - point, axis=-1)), MIN_TOLERANCE)
    tails_mirror = np.linalg.norm(mirror(tails[mine]) - tails[theirs], axis=-1) <= reach[mine]
    ok = dict(zip(left, mirrored & tails_mirror))
    partners = {n: pairs[n] for n in left if ok[n] and ok[pairs[n]]}
    for name in names:
        i = index[name]
        on_plane = max(abs(float((heads[i] - point) @ normal)), abs(float((tails[i] - point) @ normal)))
        if name not in pairs and on_plane <= max(HEAD_TOLERANCE * lengths[i], MIN_TOLERANCE):
            partners[name] = name
    return partners, normal


def neutral_pose(names, clouds):
    """``(n, 4)`` each bone's mean sample (``clouds`` ``{name: (N, 4)}``; the identity for a bone
    without samples): the pose a pair mirrors in when its rest does not (:meth:`BodyMirror.of`)."""
    out = np.tile([1.0, 0.0, 0.0, 0.0], (len(names), 1))
    for i, name in enumerate(names):
        q = clouds.get(name)
        if q is not None and len(q):
            out[i] = quaternion_mean(q)
    return out


def learn_from_both_sides(mirror, clouds, labels):
    """The clouds with each bone's partner's samples seen in the mirror added after its own.

    ``clouds`` ``{bone: (N, 4)}`` and ``labels`` ``{bone: (N,)}`` (the clip of each sample: a
    mirrored sample keeps its clip, so a clip left out of a cross-validation fold leaves with both
    its sides). Returns ``(clouds, labels, {bone: (partner, mirrored count)})``; bones without a
    partner with samples are unchanged, and so is everything when ``mirror`` is ``None``."""
    out, out_labels, mirrored = dict(clouds), dict(labels), {}
    if mirror is None:
        return out, out_labels, mirrored
    for name, partner in mirror.partners.items():
        if name in clouds and partner in clouds and len(clouds[partner]):
            seen = mirror.mirrored(clouds[partner], name, partner)
            out[name] = np.concatenate((clouds[name], seen))
            out_labels[name] = np.concatenate((labels[name], labels[partner]))
            mirrored[name] = (partner, len(seen))
    return out, out_labels, mirrored
