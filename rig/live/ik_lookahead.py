# SPDX-License-Identifier: GPL-3.0-or-later
"""Held IK chains solved ahead of playback, a batch of frames at a time (:mod:`.limited_ik`).

Live enforcement limits a keyed action's poses ahead of playback (:mod:`.lookahead`); this does
the same for the IK chains it holds. A chain whose inputs are set by keyed channels alone (see
:func:`...ik_solve._key_rows`: its bones, its root's ancestors and bone targets, posed by their
basis only; target objects that are Empties keyed on their location, without parent or
constraints) has them predicted for the frames of the action: the limited basis enforcement
will write on each (its own look-ahead, asked through ``limited``), the root's posed parent
and bone targets by forward kinematics, the target objects' positions from their curves. Each
chain is then solved for a batch of frames in one call and every frame's solution remembered
under the exact key (:func:`...ik_solve.exact_key`) that frame will present. Played, scrubbed or
jumped to, a frame then looks its solution up; a frame whose inputs were not foreseen (NLA,
drivers, an edited key, a target moved by hand) simply presents another key and is solved
when it comes. Solved together, frames do not start from the previous frame's solution (the
warm start a frame-by-frame solve uses), so the two can settle on different allowed poses
where several reach equally close.
"""

import numpy as np

from ...limits.geometry.quaternion import matrix_from_quaternion
from ...limits.ik import chain as ik
from ..io.actions import action_fcurves, action_frames, curve_values
from ..io.pose_io import CHANNEL_ARRAYS, PoseArrays
from . import ik_solve
from .lookahead import action_identity, action_poses

#: Most frames predicted (the action's frames nearest the current one).
MAX_FRAMES = 1500
#: Frames solved in one batch when the first of them is met: a batched solve costs a fixed
#: part (numpy calls, the limits' set-up) and a part per frame: larger batches cost less a
#: frame but pause playback longer when one is met; this size keeps that pause short.
BATCH = 240

#: Object channels that move an object's world matrix in ways not predicted here.
_OBJECT_TRANSFORMS = {
    "location",
    "rotation_euler",
    "rotation_quaternion",
    "rotation_axis_angle",
    "scale",
    "delta_location",
    "delta_rotation_euler",
    "delta_rotation_quaternion",
    "delta_scale",
}


def _curves(obj):
    """The F-curves of ``obj``'s action (none without one)."""
    animation = obj.animation_data
    action = animation.action if animation is not None else None
    return [] if action is None else action_fcurves(obj, action)


def _plain_animation(obj):
    """Whether ``obj``'s animation is its action alone (no drivers, no NLA tracks)."""
    animation = obj.animation_data
    return animation is None or (len(animation.drivers) == 0 and len(animation.nla_tracks) == 0)


def _target_objects(obj, chain):
    """The objects other than the rig that ``chain``'s IK aims at (target, pole)."""
    con = obj.pose.bones[chain.owner].constraints[chain.constraint]
    return [t for t in (con.target, con.pole_target) if t is not None and t != obj]


def _identity(obj, chains):
    """What a plan depends on: the rig's and the target objects' actions."""
    targets = {t.name: t for c in chains for t in _target_objects(obj, c)}
    return (action_identity(obj), tuple((name, action_identity(t)) for name, t in sorted(targets.items())))


class Plan:
    """The frames of an action and what the held chains in ``chains`` will be solved from on
    each; ``solve_batch`` solves and remembers them a batch at a time. An empty plan
    (``frames`` empty) stands for inputs that cannot be predicted."""

    def __init__(self, identity, frames=(), chains=()):
        self.identity = identity
        self.frames = np.asarray(frames, dtype=int)
        self.index = {int(f): i for i, f in enumerate(self.frames)}
        self.chains = list(chains)
        self.done = np.zeros(len(self.frames), dtype=bool)


def plan(obj, chains):
    """The :class:`Plan` for the held ``chains`` of ``obj`` (kept on the chains; rebuilt when an
    action changes)."""
    chains = [c for c in chains if c.rows is not None]
    if not chains:
        return None
    identity = _identity(obj, chains)
    current = chains[0].plan
    if current is not None and current.identity == identity:
        return current
    try:
        made = _make_plan(obj, chains, identity)
    except Exception:  # noqa: BLE001 - a plan is an optimization: solve frame by frame instead
        made = None
    made = made or Plan(identity)
    for c in chains:
        c.plan = made
    return made


def _make_plan(obj, chains, identity):
    if obj.parent is not None or len(obj.constraints) or not _plain_animation(obj):
        return None
    pose_bones, bones = obj.pose.bones, obj.data.bones
    curves = _curves(obj)
    moved = set()  # bones whose location or scale is keyed; IK owners whose influence is
    animated_influence = set()
    for fc in curves:
        path = fc.data_path
        if path in _OBJECT_TRANSFORMS:
            return None
        if path.startswith('pose.bones["'):
            name, _, prop = path[len('pose.bones["') :].partition('"].')
            if prop in ("location", "scale"):
                moved.add(name)
            elif prop.startswith("constraints["):
                animated_influence.add(name)
    names = pose_bones.keys()
    included = []
    for chain in chains:
        con = pose_bones[chain.owner].constraints[chain.constraint]
        rows = {names[r] for r in chain.rows}
        ok = not (rows & moved) and all(d in included for d in chain.depends)
        ok = ok and all(d.owner not in animated_influence and _influence(obj, d) == 1.0 for d in chain.depends)
        ok = ok and all(_default_inheritance(bones[n]) for n in rows)
        ok = ok and all(_predictable_target(obj, t) for t in (con.target, con.pole_target))
        if ok:
            included.append(chain)
    if not included:
        return None
    snapshot = PoseArrays(pose_bones)
    found = action_poses(obj, snapshot, MAX_FRAMES)
    if found is not None:
        frames, poses = found
    else:
        actions = [t.animation_data.action for c in included for t in _target_objects(obj, c) if t.animation_data]
        actions = [a for a in actions if a is not None]
        if not actions:
            return None  # nothing keyed: the memo alone serves a still rig
        frames = action_frames(actions[0])[:MAX_FRAMES]
        poses = snapshot.over_frames(len(frames))
    made = Plan(identity, frames, included)
    made.poses = poses
    made.limited = np.zeros(len(frames), dtype=bool)
    made.location, made.scale = ik_solve.read_location_scale(pose_bones)
    made.world = np.array(obj.matrix_world, dtype=float)
    made.world_bytes = np.array(obj.matrix_world, dtype=np.float32).tobytes()
    made.to_armature = np.linalg.inv(made.world)
    made.targets = {}
    for chain in included:
        for t in _target_objects(obj, chain):
            if t.name not in made.targets:
                made.targets[t.name] = _target_track(t, frames)
    rows = sorted({int(r) for c in included for r in c.rows})
    made.rows = np.array(rows, dtype=np.intp)
    made.row_of = {names[r]: i for i, r in enumerate(rows)}
    made.parents = np.array([made.row_of.get(bones[names[r]].parent.name, -1) if bones[names[r]].parent else -1 for r in rows])
    rest = []
    for r in rows:
        bone = bones[names[r]]
        m = np.array(bone.matrix_local, dtype=float)
        rest.append(m if bone.parent is None else np.linalg.inv(np.array(bone.parent.matrix_local, dtype=float)) @ m)
    made.rest = np.array(rest)
    made.solutions = {c: np.full((len(frames), len(c.names), 4), np.nan) for c in included}
    made.keys = {c: [None] * len(frames) for c in included}
    return made


def _influence(obj, chain):
    return obj.pose.bones[chain.owner].constraints[chain.constraint].influence


def _default_inheritance(bone):
    """Whether ``bone`` is posed as ``parent pose @ rest offset @ basis`` (the default)."""
    return (
        bone.use_inherit_rotation
        and bone.inherit_scale == "FULL"
        and bone.use_local_location
        and not getattr(bone, "use_relative_parent", False)
    )


def _predictable_target(obj, target):
    """Whether a target object's world position over frames follows from its own location curves."""
    if target is None or target == obj:
        return True
    if target.parent is not None or len(target.constraints) or not _plain_animation(target):
        return False
    return all(fc.data_path == "location" for fc in _curves(target))


def _target_track(target, frames):
    """``(positions (F, 3), matrix bytes per frame)`` of a target object keyed on its location:
    its world matrix is its current one with the translation ``location + delta_location``
    (float32, as Blender adds them) of each frame."""
    location = np.repeat(np.array(target.location, dtype=np.float32)[None], len(frames), axis=0)
    for fc in _curves(target):
        if fc.data_path == "location" and not fc.mute and fc.array_index < 3:
            location[:, fc.array_index] = curve_values(fc, frames.astype(float))
    translation = location + np.array(target.delta_location, dtype=np.float32)
    matrix = np.array(target.matrix_world, dtype=np.float32)
    out = []
    for t in translation:
        matrix[:3, 3] = t
        out.append(matrix.tobytes())
    return translation.astype(float), out


def solve_batch(obj, made, frame, limited):
    """Solve the plan's chains for the batch of frames from ``frame`` on (those not solved yet)
    and remember them; returns whether it solved anything. ``limited(pose key)`` gives the
    channel values live enforcement writes for an input pose (``{channel: (n, k)}``), or None
    when it does not know that pose."""
    start = made.index.get(int(frame))
    if start is None or made.done[start]:
        return False
    batch = np.arange(start, min(start + BATCH, len(made.frames)))
    batch = batch[~made.done[batch]]
    made.done[batch] = True
    poses = made.poses
    for f in batch:
        values = limited(poses.key(f))
        if values is None:
            continue
        for channel, array in values.items():
            getattr(poses, CHANNEL_ARRAYS[channel])[f] = array
        made.limited[f] = True
    known = batch[made.limited[batch]]
    if not len(known):
        return False
    location, scale = made.location[made.rows].astype(float), made.scale[made.rows].astype(float)
    for chain in made.chains:
        frames = known[np.array([all(made.keys[d][f] is not None for d in chain.depends) for f in known], dtype=bool)]
        if not len(frames):
            continue
        q = poses.local_quaternions(made.rows)[frames]
        for d in chain.depends:  # the chains above it stand where they were solved
            q[:, [made.row_of[n] for n in d.names]] = made.solutions[d][frames]
        pose = _pose_matrices(made.rest, made.parents, q, location, scale)
        parent = np.eye(4) if chain.parent is None else pose[:, made.row_of[chain.parent]]
        to_chain = np.linalg.inv(parent)  # armature space -> the chain's
        con = obj.pose.bones[chain.owner].constraints[chain.constraint]
        points, parts = [], []
        for target, subtarget in ((con.target, con.subtarget), (con.pole_target, con.pole_subtarget)):
            if target is None:
                points.append(None)
                parts.append([b"-"] * len(frames))
            elif target == obj:
                points.append(pose[:, made.row_of[subtarget], :3, 3])
                parts.append([b"="] * len(frames))
            else:
                positions, matrices = made.targets[target.name]
                world = positions[frames]
                points.append(world @ made.to_armature[:3, :3].T + made.to_armature[:3, 3])
                parts.append([matrices[f] for f in frames])
        target, pole = (
            None if p is None else np.einsum("fij,fj->fi", to_chain[:, :3, :3], p) + to_chain[:, :3, 3] for p in points
        )
        initial = poses.local_quaternions(chain.name_rows)[frames]
        solution = _solve(chain, target, pole, con.pole_angle if pole is not None else 0.0, initial)
        if len(chain.memo) + len(frames) > ik_solve.MEMO_SIZE:
            chain.memo.clear()
        for i, f in enumerate(frames):
            basis = ik_solve.basis_bytes(poses, made.location, made.scale, chain.rows, f)
            depends = [made.keys[d][f] for d in chain.depends]
            key = ik_solve.exact_key(basis, made.world_bytes, con.pole_angle, depends, (parts[0][i], parts[1][i]))
            made.keys[chain][f] = key
            made.solutions[chain][f] = solution[i]
            if key not in chain.memo:
                chain.memo[key] = (solution[i], target[i], ik_solve.corrective_eulers(initial[i], solution[i]))
    return True


def _solve(chain, target, pole, pole_angle, initial):
    """The chain's limited local rotations ``(F, n, 4)`` for targets ``(F, 3)`` (chain frame);
    a limb range of motion's pre-step first (:func:`...ik_solve.limb_prestep`), where it
    turned the limb solved without the pole."""
    if chain.limb is not None:
        target, initial, turned = ik_solve.limb_prestep(chain, initial, target, pole, pole_angle)
        out = np.empty(initial.shape)
        for rows, poles in ((~turned, pole), (turned, None)):
            if rows.any():
                out[rows] = ik.solve_two_bone(
                    chain.chain,
                    target[rows],
                    None if poles is None else poles[rows],
                    pole_angle,
                    chain.limits,
                    initial=initial[rows],
                ).local_rotations
        return out
    if len(chain.names) == 2:
        return ik.solve_two_bone(chain.chain, target, pole, pole_angle, chain.limits, initial=initial).local_rotations
    return ik.solve_chain(
        chain.chain,
        target,
        pole,
        pole_angle,
        chain.limits,
        initial=initial,
        iterations=ik_solve.CHAIN_SWEEPS,
        settled=ik_solve.SETTLED,
    ).local_rotations


def _pose_matrices(rest, parents, q, location, scale):
    """Armature-space pose matrices ``(F, R, 4, 4)`` of bones posed ``parent pose @ rest @
    basis``: ``rest (R, 4, 4)`` each bone's rest matrix relative to its parent's (its own for a
    root), ``parents (R,)`` the parent's index (-1: none; parents come first), ``q (F, R, 4)``
    the basis rotations, ``location``, ``scale`` ``(R, 3)``."""
    basis = np.zeros(q.shape[:-1] + (4, 4))
    basis[..., :3, :3] = matrix_from_quaternion(q) * scale[:, None, :]
    basis[..., :3, 3] = location
    basis[..., 3, 3] = 1.0
    out = np.empty_like(basis)
    for r, parent in enumerate(parents):
        local = rest[r] @ basis[:, r]
        out[:, r] = local if parent < 0 else out[:, parent] @ local
    return out
