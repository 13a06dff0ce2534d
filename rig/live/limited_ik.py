# SPDX-License-Identifier: GPL-3.0-or-later
"""Limited IK, live: enforcement solves the IK chains that hold limited bones itself.

Blender's IK solver runs after every constraint of its chain's bones, so no constraint on a
chain bone can limit what it makes of the chain (see :mod:`.corrective`). While live
enforcement is on, an IK constraint whose chain holds a limited bone is therefore *held*: muted
(its settings, target and pole untouched), and each frame, from the evaluated rig,

1. the chain's starting pose (what the bones' basis and other constraints make of them, the
   pose Blender's solver would start from),
2. the target's and pole's positions, in the frame of the chain root's posed parent,
3. :func:`...limits.ik.chain.solve_two_bone` (two bones: analytic, then the swivel and reach searched
   under the limits) or :func:`...limits.ik.chain.solve_chain` (longer: projected CCD), which keep
   every joint inside its limit and the pole / swivel the animator set wherever it is allowed,
4. the solution written through each chain bone's corrective (last in its stack, mixing after
   the starting pose), blended by the IK constraint's evaluated influence (an IK/FK switch).

Solutions are remembered by their inputs. A chain that nothing but the basis poses (its bones,
its root's ancestors and bone targets have no live constraint, no other IK; :func:`_key_rows`)
is keyed by the exact bytes of those bones' channels, the target objects' world matrices and
the keys of held chains above it: played again, scrubbed or jumped to, such a frame is looked
up without evaluating the rig (so a remembered frame costs little), and a keyed action's frames are solved ahead in batches
(:mod:`.ik_lookahead`). Other chains are keyed by their evaluated inputs, rounded.

Where a limited chain is inside its limits this is the pose Blender's IK gives (to 0.003
degrees at pole angle 0, 0.4 degrees at others: tests/rig/live/test_limited_ik.py). Read: chain
length, use tail, pole target (object or bone) and pole angle, influence, and stretch (the
chain root's stretch corrective scales the chain as much as Blender's IK stretches it,
:func:`...limits.ik.chain.stretch_for`); not the iTaSC solver's extra settings. A held IK is
released (unmuted) when enforcement is switched off, before a save (the saved file is the
plain rig) and while bake or report evaluate the unlimited pose; the owner bone's
``joint_limit.held_ik`` names it meanwhile, so a release after a crash or an autosave finds it
(and ``held_ik_driver`` a driver on its mute, Rigify's pole switch, muted while it is held).
"""

import bpy
import numpy as np

from ...limits.geometry.quaternion import (
    quaternion_conjugate,
    quaternion_multiply,
    slerp,
)
from ...limits.ik import chain as ik
from ..io.actions import bone_path
from ..io.constraints import moved_bones
from ..io.pose_io import PoseArrays
from . import corrective, ik_lookahead
from .ik_solve import (
    CHAIN_SWEEPS,
    MEMO_SIZE,
    SETTLED,
    basis_bytes,
    corrective_eulers,
    exact_key,
    limb_prestep,
    matrix_bytes,
    read_location_scale,
    target_bytes,
)

#: A target that moved less than this share of the chain's reach since the last solve continues
#: from that solve (a drag, playback) instead of searching the whole reachable set again.
NEARBY = 0.1


class HeldChain:
    """One held IK constraint: its owner bone and name, the chain it poses (root first) with
    each bone's limit (None: free) and influence, and the chain's rest geometry."""

    def __init__(self, obj, owner, constraint, names, limits, limb=None):
        self.owner, self.constraint = owner, constraint
        self.names = names
        #: the chain's rows in ``obj.pose.bones``
        self.name_rows = np.array([obj.pose.bones.find(n) for n in names], dtype=np.intp)
        self.limits = limits
        #: the limb range of motion of a two-bone chain (stored with its middle bone), or None
        self.limb = limb
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
        #: solutions by their inputs (:func:`_solution`)
        self.memo = {}
        #: rows (in ``obj.pose.bones``) of the bones whose basis alone sets the chain's inputs
        #: (:func:`_key_rows`), or None: the inputs are read from the evaluated rig each frame
        self.rows = None
        #: the held chains above it whose solutions it is solved on (:func:`_key_rows`)
        self.depends = ()
        #: what :mod:`.ik_lookahead` predicted for the chain (its ``Plan``), or None
        self.plan = None


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


#: Constraints through which a limited bone copies a mechanism bone's rotation.
COPYING = {"COPY_TRANSFORMS", "COPY_ROTATION"}


def copied_limits(obj, limits):
    """``{mechanism bone: limit}``: the limits of ``limits`` (``{bone: limit}``; or limb
    ranges of motion by middle bone) that bones copying another bone of ``obj`` put on it. A Rigify-style limb poses a mechanism chain by IK
    and its deform (or ORG) bones copy that chain's transforms; the limits are fitted on the
    bones the animation is sampled from, the copiers. A copier's local rotation is its source's
    when the copy is whole (influence 1, the same space on both sides, no axis mixing) and the
    two bones rest alike (same rest orientation: measured on ``bone.matrix_local``), so the
    source takes the copier's limit and the IK solves the chain within it."""
    found = {}
    for name, limit in limits.items():
        pose_bone = obj.pose.bones[name]
        for con in pose_bone.constraints:
            if con.type not in COPYING or con.mute or con.influence < 1.0 or con.target != obj:
                continue
            if not con.subtarget or con.subtarget == name or con.owner_space != con.target_space:
                continue
            if con.type == "COPY_ROTATION" and (con.mix_mode != "REPLACE" or not (con.use_x and con.use_y and con.use_z)):
                continue
            if con.type == "COPY_TRANSFORMS" and con.mix_mode != "REPLACE":
                continue
            source = obj.data.bones.get(con.subtarget)
            if source is None:
                continue
            rest = np.array(pose_bone.bone.matrix_local)[:3, :3]
            if np.abs(np.array(source.matrix_local)[:3, :3] - rest).max() < 1e-4:
                found.setdefault(con.subtarget, limit)
    return found


def find(obj, limit_of, limb_of=None):
    """:class:`HeldChain` of every IK constraint of ``obj`` whose chain holds a bone that
    ``limit_of(name)`` gives a limit for, or is a two-bone limb whose middle bone
    ``limb_of(name)`` gives a limb range of motion for (muted ones only when enforcement
    holds them)."""
    chains = []
    for pb in obj.pose.bones:
        for con in pb.constraints:
            if con.type != "IK" or con.target is None or (con.mute and pb.joint_limit.held_ik != con.name):
                continue
            names = chain_names(pb, con)
            limits = [limit_of(n) for n in names]
            limb = limb_of(names[1]) if limb_of is not None and len(names) == 2 else None
            if names and (limb is not None or any(limit is not None for limit in limits)):
                chains.append(HeldChain(obj, pb.name, con.name, names, limits, limb))
    held = {(chain.owner, chain.constraint) for chain in chains}
    for i, chain in enumerate(chains):
        chain.rows, chain.depends = _key_rows(obj, chain, chains[:i], chains[i + 1 :], held)
    return chains


def _key_rows(obj, chain, before, after, held):
    """``(rows, depends)``: the rows of the bones whose basis channels, with the targets' world
    matrices and the solutions of the held chains ``depends`` (of ``before``, which are solved
    first) above it, set everything ``chain`` is solved from: its starting pose, its root's
    posed parent, a bone target's position. Those are the chain, its root's ancestors and bone
    targets with theirs, when nothing else poses them (a live constraint, Blender's IK, a held
    chain of ``after``). Else ``(None, ())``: the chain's inputs are read from the evaluated
    rig. A target object must not hang from the rig (its world matrix is read before the rig's
    limited pose is evaluated)."""
    pose_bones = obj.pose.bones
    con = pose_bones[chain.owner].constraints[chain.constraint]
    names = set(chain.names) | {b.name for b in pose_bones[chain.names[0]].parent_recursive}
    for target, subtarget in ((con.target, con.subtarget), (con.pole_target, con.pole_subtarget)):
        if target is None:
            continue
        if target == obj:
            if subtarget not in pose_bones:
                return None, ()
            names |= {subtarget} | {b.name for b in pose_bones[subtarget].parent_recursive}
        elif _hangs_from(target, obj):
            return None, ()
    depends = [other for other in before if names & set(other.names)]
    if any(other.rows is None for other in depends) or any(names & set(other.names) for other in after):
        return None, ()
    solved = {(other.owner, other.constraint) for other in depends} | {(chain.owner, chain.constraint)}
    corrected = set().union(chain.names, *(other.names for other in depends))
    for pb in pose_bones:
        for c in pb.constraints:
            if (pb.name, c.name) in solved or (corrective.is_corrective(c) and pb.name in corrected):
                continue
            if (pb.name, c.name) in held or not c.mute:
                if names & moved_bones(pb, c):
                    return None, ()
    return np.array([pose_bones.find(n) for n in sorted(names)], dtype=np.intp), depends


def _hangs_from(target, obj):
    """Whether object ``target`` is parented to or constrained by ``obj``, or by something that is."""
    seen = set()
    while target is not None and target.name not in seen:
        seen.add(target.name)
        if target == obj or any(getattr(c, "target", None) == obj for c in target.constraints):
            return True
        target = target.parent
    return False


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
        mute_driver = _mute_driver(obj, owner, con)
        if mute_driver is not None and not mute_driver.mute:
            # a driver on the mute (Rigify's pole switch) would un-mute the held IK at every
            # evaluation and Blender's solver would run under the correction
            mute_driver.mute = owner.joint_limit.held_ik_driver = changed = True
        if not con.mute:
            con.mute = changed = True
        for name in chain.names:
            pose_bone = obj.pose.bones[name]
            if pose_bone.constraints.get(corrective.CORRECTIVE) is None:
                changed = True
            corrective.ensure(obj, pose_bone)
        if con.use_stretch:
            root = obj.pose.bones[chain.names[0]]
            changed |= root.constraints.get(corrective.STRETCH) is None
            corrective.ensure(obj, root, corrective.STRETCH)
    if chains:
        corrective.mark_added()
    return changed


def release(obj, keep=()):
    """Unmute every IK constraint enforcement holds on ``obj``, except those of the chains in
    ``keep`` (still held); returns how many."""
    if obj.type != "ARMATURE" or obj.pose is None:
        return 0
    kept = {(chain.owner, chain.constraint) for chain in keep}
    count = 0
    for pb in obj.pose.bones:
        name = pb.joint_limit.held_ik
        if name and (pb.name, name) not in kept:
            con = pb.constraints.get(name)
            if con is not None and pb.joint_limit.held_ik_driver:
                mute_driver = _mute_driver(obj, pb, con)
                if mute_driver is not None:
                    mute_driver.mute = False
            if con is not None and con.type == "IK" and con.mute:
                con.mute = False
                count += 1
            pb.joint_limit.held_ik = ""
            pb.joint_limit.held_ik_driver = False
    return count


def _mute_driver(obj, pose_bone, con):
    """The driver F-curve that writes ``con``'s ``mute``, or None."""
    drivers = obj.animation_data.drivers if obj.animation_data is not None else None
    if not drivers:
        return None
    return drivers.find(f'{bone_path(pose_bone.name)}.constraints["{bpy.utils.escape_identifier(con.name)}"].mute')


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


class _Basis:
    """Every pose bone's basis channels (rotation in its mode, location, scale) as Blender holds
    them: the bytes of a chain's rows key its solution exactly (:func:`_key_rows`)."""

    def __init__(self, pose_bones):
        self.rotations = PoseArrays(pose_bones)
        self.location, self.scale = read_location_scale(pose_bones)

    def key(self, rows):
        return basis_bytes(self.rotations, self.location, self.scale, rows)


def _exact_key(obj, chain, basis, con, keys):
    """``chain``'s :func:`exact_key` this frame (``keys``: those of the chains solved before it),
    or None when a chain it depends on has none."""
    depends = [keys.get(other) for other in chain.depends]
    if any(k is None for k in depends):
        return None
    targets = (target_bytes(obj, con.target), target_bytes(obj, con.pole_target))
    return exact_key(basis.key(chain.rows), matrix_bytes(obj.matrix_world), con.pole_angle, depends, targets)


def solve(obj, depsgraph, chains, stale=False, limited=None):
    """Solve each held chain of ``obj`` and write its bones' correctives; returns how many chain
    bones it posed. A chain solved before from the same inputs gets that solution again without
    evaluating anything. With ``limited`` (live enforcement's limited pose for an input pose,
    see :func:`.ik_lookahead.solve_batch`), chains set by keyed motion alone are solved for a
    batch of frames from this one (:mod:`.ik_lookahead`). The others are solved on
    ``depsgraph``'s evaluated rig, evaluated again first when ``stale`` (the basis was written
    since). A chain whose root's parent another chain moved is solved after an update.
    Returns ``(bones posed, whether a corrective changed)``: when none did, the evaluated rig is
    still current."""
    pose_bones = obj.pose.bones
    basis = _Basis(pose_bones) if any(chain.rows is not None for chain in chains) else None
    evaluated = obj.evaluated_get(depsgraph).pose.bones
    posed, changed = 0, False
    pending = []
    keys = {}
    for chain in chains:
        con = pose_bones[chain.owner].constraints.get(chain.constraint)
        if con is None or not con.mute:
            continue  # released meanwhile (a save, a bake): the plain IK poses the chain
        cons = [pose_bones[n].constraints.get(corrective.CORRECTIVE) for n in chain.names]
        if any(c is None for c in cons):
            continue
        cons.append(_stretch(pose_bones, evaluated, chain, con))
        key = keys[chain] = None if chain.rows is None else _exact_key(obj, chain, basis, con, keys)
        wrote = _remembered(chain, key, cons, basis, evaluated)
        if wrote is None:
            pending.append((chain, con, cons, key))
            continue
        posed += len(chain.names)
        changed |= wrote
    if pending and limited is not None and any(key is not None for *_, key in pending):
        # keyed motion: solve this frame and the next ones in one batch, then look them up
        try:
            made = ik_lookahead.plan(obj, chains)
            ahead = made is not None and ik_lookahead.solve_batch(obj, made, depsgraph.scene.frame_current, limited)
        except Exception:  # noqa: BLE001 - an optimization: those frames are solved as they come instead
            ahead = False
        if ahead:
            left = []
            for item in pending:
                wrote = _remembered(item[0], item[3], item[2], basis, evaluated)
                if wrote is None:
                    left.append(item)
                    continue
                posed += len(item[0].names)
                changed |= wrote
            pending = left
    if pending:
        if stale or changed:
            depsgraph.update()  # the chains' starting pose: IK muted, the limited basis
        solved, wrote = _solve_evaluated(obj, depsgraph, pending, basis)
        posed, changed = posed + solved, changed or wrote
    return posed, changed


def _stretch(pose_bones, evaluated, chain, con):
    """The chain root's stretch corrective when the IK stretches (``use_stretch`` and a chain bone
    with ``ik_stretch``, which Rigify's IK_Stretch drives), or False: write none (None: the root
    has no stretch corrective)."""
    if not con.use_stretch or not any(evaluated[n].ik_stretch > 0.0 for n in chain.names):
        stretch = pose_bones[chain.names[0]].constraints.get(corrective.STRETCH)
        if stretch is not None:
            corrective.write_stretch(stretch, 1.0)
        return False
    return pose_bones[chain.names[0]].constraints.get(corrective.STRETCH)


def _remembered(chain, key, cons, basis, evaluated):
    """Write ``chain``'s remembered solution for the exact ``key`` (None: none); returns None when
    there was none, else whether a corrective changed. ``cons``: the chain's correctives, then
    its stretch corrective (see :func:`_stretch`)."""
    hit = None if key is None else chain.memo.get(key)
    if hit is None:
        return None
    chain.previous, chain.previous_target, eulers = hit
    return _write(
        chain,
        cons,
        _influence(evaluated, chain),
        hit[0],
        lambda: basis.rotations.local_quaternions(chain.name_rows),
        eulers,
        hit[1],
    )


def _solve_evaluated(obj, depsgraph, pending, basis):
    """Solve the ``(chain, IK constraint, correctives, exact key or None)`` of ``pending`` from
    the evaluated rig (see :func:`solve`)."""
    pose_bones = obj.pose.bones
    to_armature = np.linalg.inv(np.array(obj.matrix_world))
    written = set()
    posed, changed = 0, False
    for chain, con, cons, key in pending:
        if chain.parent is not None and written & {chain.parent, *(b.name for b in pose_bones[chain.parent].parent_recursive)}:
            depsgraph.update()
            written.clear()
        evaluated = obj.evaluated_get(depsgraph).pose.bones
        if key is None:
            start = np.array(
                [
                    quaternion_multiply(_local(obj, evaluated, n), quaternion_conjugate(corrective.correction(c)))
                    for n, c in zip(chain.names, cons[:-1])
                ]
            )
        else:  # nothing but the basis poses the chain: its exact starting pose
            start = basis.rotations.local_quaternions(chain.name_rows)
        parent = np.eye(4) if chain.parent is None else np.array(evaluated[chain.parent].matrix)
        to_chain = np.linalg.inv(parent) @ to_armature

        def point(world, to_chain=to_chain):
            return to_chain[:3, :3] @ world + to_chain[:3, 3]

        target = point(_target_position(obj, depsgraph, con.target, con.subtarget))
        pole = None
        if con.pole_target is not None:
            pole = point(_target_position(obj, depsgraph, con.pole_target, con.pole_subtarget))
        pole_angle = con.pole_angle if pole is not None else 0.0
        q = _solution(chain, start, target, pole, pole_angle, key)
        changed |= _write(chain, cons, _influence(evaluated, chain), q, start, target=target)
        written.update(chain.names)
        posed += len(chain.names)
    return posed, changed


def _influence(evaluated, chain):
    """The IK constraint's evaluated influence (a driver's: an IK/FK switch)."""
    return float(evaluated[chain.owner].constraints[chain.constraint].influence)


def _write(chain, cons, influence, q, start, eulers=None, target=None):
    """Write the correctives that take the chain from ``start`` (``(n, 4)``, or a function
    giving it, called only when needed) to its solution ``q``, blended by ``influence``;
    ``eulers`` are the corrective angles at influence 1 when known (:func:`corrective_eulers`).
    ``cons`` ends with the stretch corrective (:func:`_stretch`), which scales the chain as much
    as Blender's IK stretches it for ``target`` (chain frame). Returns whether a corrective
    changed."""
    *rotations, stretch = cons
    scale = 1.0
    if stretch and target is not None:
        scale = 1.0 + influence * (float(ik.stretch_for(chain.chain, target)) - 1.0)
    if influence < 1.0 or eulers is None:
        start = start() if callable(start) else start
        if influence < 1.0:
            q = slerp(start, q, influence)
            q = np.array([q[i] if lim is None else lim.project(q[i]) for i, lim in enumerate(chain.limits)])
        eulers = corrective_eulers(start, q)
    changed = [corrective.write_euler(c, euler) for c, euler in zip(rotations, eulers)]
    if stretch:
        changed.append(corrective.write_stretch(stretch, scale))
    return any(changed)


def _solution(chain, start, target, pole, pole_angle, key=None):
    """The chain's limited local rotations ``(n, 4)`` reaching for ``target`` from ``start``,
    remembered by those inputs (``key``: their exact bytes, :func:`_exact_key`; by default the
    inputs rounded): played again, scrubbed or jumped to, a frame gets the pose it got the
    first time, for a lookup (the solve is history-dependent only through the warm start,
    which the memo then fixes)."""
    exact = key is not None
    if key is None:
        # rounded: the starting pose is read back through the last frame's correction (float32)
        key = np.round(np.concatenate([np.ravel(a) for a in (start, target, () if pole is None else pole, (pole_angle,))]), 5)
        key = (key + 0.0).tobytes()  # (+ 0.0: one zero, not two)
    hit = chain.memo.get(key)
    if hit is not None:
        chain.previous, chain.previous_target = hit[0], target
        return hit[0]
    reached_for, started = target, start
    if chain.limb is not None:
        relocated, turned_start, turned = limb_prestep(
            chain, start[None], target[None], None if pole is None else pole[None], pole_angle
        )
        target, start = relocated[0], turned_start[0]
        pole = None if turned[0] else pole
    nearby = chain.previous is not None and np.linalg.norm(reached_for - chain.previous_target) < NEARBY * chain.chain.reach
    previous = chain.previous if nearby else None
    if len(chain.names) == 2:
        solution = ik.solve_two_bone(chain.chain, target, pole, pole_angle, chain.limits, initial=start, previous=previous)
    else:
        solution = ik.solve_chain(
            chain.chain,
            target,
            pole,
            pole_angle,
            chain.limits,
            initial=start if previous is None else previous,
            iterations=CHAIN_SWEEPS,
            settled=SETTLED,
        )
    q = solution.local_rotations
    if len(chain.memo) >= MEMO_SIZE:
        chain.memo.clear()
    # (with the corrective angles when the key holds the exact start)
    chain.memo[key] = (q, reached_for, corrective_eulers(started, q) if exact else None)
    chain.previous, chain.previous_target = q, reached_for
    return q


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
