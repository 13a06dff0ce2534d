# SPDX-License-Identifier: GPL-3.0-or-later
"""What the live solve of a held IK chain (:mod:`.limited_ik`) and its look-ahead over a keyed
action (:mod:`.ik_lookahead`) share: the solver's settings, the exact keys solutions are
remembered under, the corrective angles a solution is written as, and the limb pre-step."""

import numpy as np

from ...limits.geometry.quaternion import quaternion_conjugate, quaternion_from_exp_map, quaternion_multiply, quaternion_rotate
from ...limits.ik import chain as ik
from ...limits.ik.limb_rom import limb_swivels
from . import corrective

#: Most projected-CCD sweeps a longer chain gets per solve, and the share of its reach a sweep
#: must gain for the next to run (:func:`...limits.ik.chain.solve_chain`).
CHAIN_SWEEPS = 60
SETTLED = 1e-5
#: Solutions remembered per chain (about 1 kB each with its key).
MEMO_SIZE = 4096


def read_location_scale(pose_bones):
    """Every pose bone's ``(location (n, 3), scale (n, 3))``, float32 as Blender holds them."""
    location = np.zeros((len(pose_bones), 3), dtype=np.float32)
    scale = np.zeros_like(location)
    pose_bones.foreach_get("location", location.ravel())
    pose_bones.foreach_get("scale", scale.ravel())
    return location, scale


def basis_bytes(rotations, location, scale, rows, frame=...):
    """The bytes of bones ``rows``' basis: ``rotations`` (a :class:`..io.pose_io.PoseArrays`, frame
    ``frame`` of one over frames) and ``location``, ``scale`` ``(n, 3)``."""
    parts = (rotations.quaternion[frame], rotations.euler[frame], rotations.axis_angle[frame], location, scale)
    return rotations.modes[rows].tobytes() + b"".join(a[rows].tobytes() for a in parts)


def matrix_bytes(matrix):
    """A world matrix's bytes, float32 as Blender holds it."""
    return np.array(matrix, dtype=np.float32).tobytes()


def target_bytes(obj, target):
    """How a held chain's target (or pole) object enters its key: none, the rig, or its world matrix."""
    return b"-" if target is None else b"=" if target == obj else matrix_bytes(target.matrix_world)


def exact_key(basis, world, pole_angle, depends, targets):
    """The key of a chain solved from nothing but ``basis`` (:func:`basis_bytes` of its key rows),
    the rig's ``world`` matrix bytes, the pole angle, the keys of the chains it ``depends`` on
    and its target and pole (:func:`target_bytes`)."""
    return b"|".join((basis, world, np.float64(pole_angle).tobytes(), *depends, *targets))


def corrective_eulers(start, q):
    """The chain bones' corrective angles (:func:`.corrective.euler_of`) taking ``start (n, 4)`` to ``q``."""
    return tuple(corrective.euler_of(d) for d in quaternion_multiply(quaternion_conjugate(start), q))


def limb_prestep(chain, start, target, pole, pole_angle):
    """The seed's IK pre-step for a two-bone chain with a limb range of motion (Mukai, seed 004;
    :mod:`..tasks.limb`), in constant time, for ``F`` targets at once: ``start (F, 2, 4)``, ``target
    (F, 3)``, ``pole (F, 3)`` or None. Returns ``(target, start, turned (F,))`` for the solve.
    The target is relocated into the limb's workspace (the nearest valid end position); the
    free analytic pose reaching it (pole or least change, as the solve would pick) has its
    swivel clamped into the range allowed there by turning the whole limb about the root->end
    axis (the end stays put), and where the clamp moved it (``turned``) that pose is the
    solve's start, without the pole (whose swivel the range forbids). The model's frame is the
    root's rest frame carried by its posed parent, the root's head at the origin."""
    c, model = chain.chain, chain.limb
    frame, head = c.rest_rotations[0], c.heads[0]
    inverse = quaternion_conjugate(frame)
    end = model.relocate(quaternion_rotate(inverse, target - head))
    target = head + quaternion_rotate(frame, end)
    free = ik.solve_two_bone(c, target, pole, pole_angle, None, initial=start).local_rotations
    points = quaternion_rotate(inverse, ik.chain_positions(c, free) - head)
    swivel = limb_swivels(model, points[:, 1], points[:, 2])
    turn = model.clamp_swivel(points[:, 2], swivel) - swivel
    turn = (turn + np.pi) % (2.0 * np.pi) - np.pi
    turned = np.isfinite(turn) & (np.abs(turn) > 1e-12)
    axis = points[:, 2] / np.maximum(np.linalg.norm(points[:, 2], axis=-1, keepdims=True), 1e-300)
    free[:, 0] = quaternion_multiply(quaternion_from_exp_map(axis * np.where(turned, turn, 0.0)[:, None]), free[:, 0])
    return target, np.where(turned[:, None, None], free, start), turned
