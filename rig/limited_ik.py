# SPDX-License-Identifier: GPL-3.0-or-later
"""Limited IK, live: enforcement solves the IK chains that hold limited bones itself.

Blender's IK solver runs after every constraint of its chain's bones, so no constraint on a
chain bone can limit what it makes of the chain (see :mod:`.corrective`). While live
enforcement is on, an IK constraint whose chain holds a limited bone is therefore *held*: muted
(its settings, target and pole untouched), and each frame, from the evaluated rig,

1. the chain's starting pose (what the bones' basis and other constraints make of them, the
   pose Blender's solver would start from),
2. the target's and pole's positions, in the frame of the chain root's posed parent,
3. :func:`..limits.ik.solve_two_bone` (two bones: analytic, then the swivel and reach searched
   under the limits) or :func:`..limits.ik.solve_chain` (longer: projected CCD), which keep
   every joint inside its limit and the pole / swivel the animator set wherever it is allowed,
4. the solution written through each chain bone's corrective (last in its stack, mixing after
   the starting pose), blended by the IK constraint's evaluated influence (an IK/FK switch).

Where a limited chain is inside its limits this is the pose Blender's IK gives (to 0.003
degrees at pole angle 0, 0.4 degrees at others: tests/test_blender_ik_live.py). Read: chain
length, use tail, pole target (object or bone) and pole angle, influence; stretch is not
modelled (a chain is never stretched) nor is the iTaSC solver's extra settings. A held IK is
released (unmuted) when enforcement is switched off, before a save (the saved file is the
plain rig) and while bake or report evaluate the unlimited pose; the owner bone's
``joint_limit.held_ik`` names it meanwhile, so a release after a crash or an autosave finds it.
"""

import numpy as np

from ..limits import ik
from ..limits.quaternion import quaternion_conjugate, quaternion_multiply, slerp
from . import corrective

#: A target that moved less than this share of the chain's reach since the last solve continues
#: from that solve (a drag, playback) instead of searching the whole reachable set again.
NEARBY = 0.1


class HeldChain:
    """One held IK constraint: its owner bone and name, the chain it poses (root first) with
    each bone's limit (None: free) and influence, and the chain's rest geometry."""

    def __init__(self, obj, owner, constraint, names, limits):
        self.owner, self.constraint = owner, constraint
        self.names = names
        self.limits = limits
        bones = obj.data.bones
        root = bones[names[0]]
        self.parent = root.parent.name if root.parent is not None else None
        # the chain in its root's parent's posed frame: constant, so the solver's per-chain
        # tables (ik._reach_table, cached by identity) are built once
        self.chain = ik.Chain.from_matrices(
            np.array([bones[n].matrix_local for n in names]),
            [bones[n].length for n in names],
            None if root.parent is None else np.array(root.parent.matrix_local),
            np.eye(4),
        )
        #: the last solution and the target it reached for (chain frame), while dragging or
        #: playing: a nearby target continues from it (:data:`NEARBY`)
        self.previous = None
        self.previous_target = None


def chain_names(pose_bone, constraint):
    """The bones Blender's IK ``constraint`` on ``pose_bone`` rotates, root first: the owner and
    ``chain_count - 1`` parents (0: up to the root); without ``use_tail`` the owner is left out
    and the count starts at its parent, whose tail is the effector."""
    chain = [pose_bone, *pose_bone.parent_recursive]
    if not constraint.use_tail:
        chain = chain[1:]
    if constraint.chain_count:
        chain = chain[: constraint.chain_count]
    return [b.name for b in reversed(chain)]


def find(obj, limit_of):
    """:class:`HeldChain` of every IK constraint of ``obj`` whose chain holds a bone that
    ``limit_of(name)`` gives a limit for (muted ones only when enforcement holds them)."""
    chains = []
    for pb in obj.pose.bones:
        for con in pb.constraints:
            if con.type != "IK" or con.target is None or (con.mute and pb.joint_limit.held_ik != con.name):
                continue
            names = chain_names(pb, con)
            limits = [limit_of(n) for n in names]
            if names and any(limit is not None for limit in limits):
                chains.append(HeldChain(obj, pb.name, con.name, names, limits))
    return chains


def hold(obj, chains):
    """Mute each chain's IK constraint (enforcement solves it) and give its bones correctives;
    returns whether anything changed (the rig needs evaluating again)."""
    changed = False
    for chain in chains:
        owner = obj.pose.bones[chain.owner]
        con = owner.constraints.get(chain.constraint)
        if con is None:
            continue
        if owner.joint_limit.held_ik != chain.constraint:
            owner.joint_limit.held_ik = chain.constraint
        if not con.mute:
            con.mute = changed = True
        for name in chain.names:
            pose_bone = obj.pose.bones[name]
            if pose_bone.constraints.get(corrective.CORRECTIVE) is None:
                changed = True
            corrective.ensure(obj, pose_bone)
    if chains:
        corrective.mark_added()
    return changed


def release(obj):
    """Unmute every IK constraint enforcement holds on ``obj``; returns how many."""
    if obj.type != "ARMATURE" or obj.pose is None:
        return 0
    count = 0
    for pb in obj.pose.bones:
        name = pb.joint_limit.held_ik
        if name:
            con = pb.constraints.get(name)
            if con is not None and con.type == "IK" and con.mute:
                con.mute = False
                count += 1
            pb.joint_limit.held_ik = ""
    return count


def _target_position(obj, depsgraph, target, subtarget):
    """World position an IK constraint aims at: the object's origin, or a bone's head."""
    evaluated = target.evaluated_get(depsgraph)
    world = np.array(evaluated.matrix_world)
    if subtarget and target.type == "ARMATURE" and evaluated.pose is not None and subtarget in evaluated.pose.bones:
        return world[:3, :3] @ np.array(evaluated.pose.bones[subtarget].head) + world[:3, 3]
    return world[:3, 3]


def _local(obj, evaluated, name):
    pb = obj.pose.bones[name]
    m = obj.convert_space(pose_bone=pb, matrix=evaluated[name].matrix, from_space="POSE", to_space="LOCAL")
    return np.array(m.to_quaternion(), dtype=float)


def solve(obj, depsgraph, chains):
    """Solve each held chain of ``obj`` on ``depsgraph``'s evaluated rig and write its bones'
    correctives; returns how many chain bones the limits moved off the free solution's pose
    (counted as limited). A chain whose root's parent another chain moved is solved after an
    update."""
    pose_bones = obj.pose.bones
    to_armature = np.linalg.inv(np.array(obj.matrix_world))
    written = set()
    limited = 0
    for chain in chains:
        owner = pose_bones[chain.owner]
        con = owner.constraints.get(chain.constraint)
        if con is None or not con.mute:
            continue  # released meanwhile (a save, a bake): the plain IK poses the chain
        if chain.parent is not None and written & {chain.parent, *(b.name for b in pose_bones[chain.parent].parent_recursive)}:
            depsgraph.update()
            written.clear()
        evaluated = obj.evaluated_get(depsgraph).pose.bones
        cons = [pose_bones[n].constraints.get(corrective.CORRECTIVE) for n in chain.names]
        if any(c is None for c in cons):
            continue
        start = np.array(
            [
                quaternion_multiply(_local(obj, evaluated, n), quaternion_conjugate(corrective.correction(c)))
                for n, c in zip(chain.names, cons)
            ]
        )
        parent = np.eye(4) if chain.parent is None else np.array(evaluated[chain.parent].matrix)
        to_chain = np.linalg.inv(parent) @ to_armature

        def point(world, to_chain=to_chain):
            return to_chain[:3, :3] @ world + to_chain[:3, 3]

        target = point(_target_position(obj, depsgraph, con.target, con.subtarget))
        pole = None
        if con.pole_target is not None:
            pole = point(_target_position(obj, depsgraph, con.pole_target, con.pole_subtarget))
        pole_angle = con.pole_angle if pole is not None else 0.0
        if len(chain.names) == 2:
            nearby = chain.previous is not None and np.linalg.norm(target - chain.previous_target) < NEARBY * chain.chain.reach
            previous = chain.previous if nearby else None
            solution = ik.solve_two_bone(chain.chain, target, pole, pole_angle, chain.limits, initial=start, previous=previous)
        else:
            solution = ik.solve_chain(chain.chain, target, pole, pole_angle, chain.limits, initial=start)
        q = solution.local_rotations
        chain.previous, chain.previous_target = q, target
        influence = float(obj.evaluated_get(depsgraph).pose.bones[chain.owner].constraints[chain.constraint].influence)
        if influence < 1.0:
            q = slerp(start, q, influence)
            q = np.array([q[i] if lim is None else lim.project(q[i]) for i, lim in enumerate(chain.limits)])
        for c, s, r in zip(cons, start, q):
            corrective.write(c, quaternion_multiply(quaternion_conjugate(s), r))
        written.update(chain.names)
        limited += len(chain.names)
    return limited


def targets(obj, chains):
    """Names of the objects the held chains of ``obj`` aim at (targets and poles)."""
    names = set()
    for chain in chains:
        con = obj.pose.bones[chain.owner].constraints.get(chain.constraint)
        if con is not None:
            names.update(o.name for o in (con.target, con.pole_target) if o is not None)
    return frozenset(names)


def held_bones(chains):
    """Names of the bones held chains pose."""
    return {n for chain in chains for n in chain.names}
