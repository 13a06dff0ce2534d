# SPDX-License-Identifier: GPL-3.0-or-later
"""Limits on the *evaluated* pose of bones that constraints drive, through a corrective constraint.

Writing a bone's basis cannot limit what a Copy Rotation, Damped Track or Child Of makes of it,
so a limited bone that a live constraint drives gets one more constraint, the last of its stack,
named ``Joint Limit``: a Transformation constraint in the bone's local space whose output is a
constant rotation ``d`` mixed *after* the rotation the stack above it made (its input range is
empty, so its target, the bone's parent, is never read; it only has to be valid). The evaluated
local rotation is then ``q = q_pre * d``, so from the evaluated pose and the ``d`` it was
evaluated with the handler recovers ``q_pre`` exactly (float32), limits it (influence and
softening as for any bone) and writes the ``d`` that lands on the limit. Blender skips a
constraint at influence 0: a bone inside its limit, and every bone once enforcement is off, is
bitwise the plain rig. The basis and the constraints' targets are never written.

A corrected bone whose evaluated pose reads another corrected bone (below it, or through a
constraint target or a driver, as Rigify's deforming chains read their ORG bones through tweak
bones) sees its ``q_pre`` change when that bone's correction changes, so the bones are corrected
level by level in the order of those dependencies (:class:`Corrected`), with one re-evaluation
of the depsgraph between levels that wrote something; the last level's writes are evaluated by
Blender's own second pass after the handler.

IK chains are solved by enforcement itself and written through these correctives
(:mod:`.limited_ik`): Blender's solver runs after every chain bone's constraints, so a corrective
on a chain bone would only change where its solve starts. Spline IK chains are left alone.

Bake, report and sampling with constraints evaluate the unlimited pose: :func:`suspended`
pauses live enforcement and sets the correctives to influence 0 meanwhile.
"""

import math

import bpy
import numpy as np
from mathutils import Quaternion

from ...limits.geometry.quaternion import quaternion_conjugate, quaternion_from_euler, quaternion_multiply
from ..io.constraints import CHAIN_CONSTRAINTS, bone_dependencies, moved_bones
from . import state

#: Name of the corrective constraint (one per corrected bone, last in its stack).
CORRECTIVE = "Joint Limit"
#: Name of the stretch corrective: a held IK chain's root scaled as Blender's IK stretch scales
#: it (uniformly; the chain's other bones inherit it), after the rotation corrective.
STRETCH = "Joint Limit Stretch"
#: Euler order of the corrective's constant rotation.
ORDER = "XYZ"
#: Corrections (radians) below which a bone is left uncorrected (influence 0).
TOLERANCE = 1e-6

_AXES = ("x", "y", "z")


def armatures():
    return [o for o in bpy.data.objects if o.type == "ARMATURE" and o.pose is not None]


def mark_added():
    state.corrections["added"] = True


def is_corrective(constraint):
    return constraint.type == "TRANSFORM" and constraint.name in (CORRECTIVE, STRETCH)


def ik_chain_bones(obj):
    """Names of the bones an IK or Spline IK constraint of ``obj`` poses."""
    names = set()
    for pb in obj.pose.bones:
        for con in pb.constraints:
            if con.type in CHAIN_CONSTRAINTS and not con.mute:
                names |= moved_bones(pb, con)
    return names


def driven(pose_bone):
    """Whether a live constraint (other than the corrective) poses ``pose_bone``."""
    return any(not con.mute and not is_corrective(con) for con in pose_bone.constraints)


def _subtarget(pose_bone, bones):
    """A bone the corrective may name as its (unread) target without a dependency cycle: the
    parent, else a bone outside ``pose_bone``'s subtree; None when every other bone is below it."""
    if pose_bone.parent is not None:
        return pose_bone.parent.name
    below = {b.name for b in pose_bone.children_recursive} | {pose_bone.name}
    return next((b.name for b in bones if b.name not in below), None)


def ensure(obj, pose_bone, name=CORRECTIVE):
    """The bone's corrective (or with ``name`` :data:`STRETCH`, its stretch corrective), created
    at influence 0, or moved back after the bone's other constraints (the rotation corrective
    before the stretch one). Returns None when the bone cannot have one (see :func:`_subtarget`)."""
    cons = pose_bone.constraints
    con = cons.get(name)
    if con is not None and con.type != "TRANSFORM":
        return None  # the user's own constraint of that name: leave it
    if con is None:
        subtarget = _subtarget(pose_bone, obj.pose.bones)
        if subtarget is None:
            return None
        con = cons.new("TRANSFORM")
        con.name = name
        con.show_expanded = False
        con.target, con.subtarget = obj, subtarget
        con.owner_space = con.target_space = "LOCAL"
        if name == STRETCH:
            con.map_from, con.map_to = "LOCATION", "SCALE"
            con.mix_mode_scale = "MULTIPLY"
        else:
            con.map_from, con.map_to = "LOCATION", "ROTATION"
            con.to_euler_order = ORDER
            con.mix_mode_rot = "AFTER"
        con.influence = 0.0
    # its place: after every constraint but the correctives, the stretch one last
    order = [c.name for c in cons if not is_corrective(c)]
    order += [n for n in (CORRECTIVE, STRETCH) if n in cons and is_corrective(cons[n])]
    at = order.index(name)
    if cons.find(name) != at:
        cons.move(cons.find(name), at)
    return con


def remove(pose_bone):
    removed = False
    for name in (CORRECTIVE, STRETCH):
        con = pose_bone.constraints.get(name)
        if con is not None and is_corrective(con):
            pose_bone.constraints.remove(con)
            removed = True
    return removed


def remove_all(obj, keep=()):
    """Remove the correctives of ``obj`` except on bones named in ``keep``; returns how many."""
    if obj.type != "ARMATURE" or obj.pose is None:
        return 0
    return sum(remove(pb) for pb in obj.pose.bones if pb.name not in keep)


def neutralize(obj):
    """Set every corrective of ``obj`` to influence 0 (with :func:`...pause.neutralize`, the plain rig)."""
    if obj.type != "ARMATURE" or obj.pose is None:
        return
    for pb in obj.pose.bones:
        for name in (CORRECTIVE, STRETCH):
            con = pb.constraints.get(name)
            if con is not None and is_corrective(con) and con.influence != 0.0:
                con.influence = 0.0


def correction(con):
    """The rotation ``d (4,)`` a corrective applied (identity at influence 0 or muted)."""
    if con.mute or con.influence == 0.0:
        return np.array([1.0, 0.0, 0.0, 0.0])
    return quaternion_from_euler(np.array([getattr(con, f"to_min_{a}_rot") for a in _AXES]), ORDER)


def write(con, d):
    """Make ``con`` apply ``d (4,)``; returns whether anything changed (see :func:`write_euler`)."""
    return write_euler(con, euler_of(d))


def euler_of(d):
    """The corrective's angles for the rotation ``d (4,)``: a tuple of Blender's float32 values
    (from ``mathutils``: for one quaternion far cheaper than numpy's conversion), or None
    for a rotation below :data:`TOLERANCE` (the corrective is switched off)."""
    if 2.0 * math.acos(min(1.0, abs(float(d[0])))) < TOLERANCE:
        return None
    return tuple(Quaternion(d).to_euler(ORDER))


def write_euler(con, euler):
    """Make ``con`` apply the angles ``euler`` (:func:`euler_of`; None: off); returns whether
    anything changed. The constraint's input range is empty, so Blender applies its ``to_min``
    rotation (``to_max`` is not read). Only what differs is set: each property set costs time
    and tags the rig."""
    if euler is None:
        if con.influence != 0.0:
            con.influence = 0.0
            return True
        return False
    changed = (con.to_min_x_rot, con.to_min_y_rot, con.to_min_z_rot) != euler
    if changed:
        con.to_min_x_rot, con.to_min_y_rot, con.to_min_z_rot = euler
    if con.influence != 1.0:
        con.influence, changed = 1.0, True
    if con.mute:
        con.mute, changed = False, True
    return changed


def write_stretch(con, scale):
    """Make the stretch corrective ``con`` scale its bone by ``scale`` (1: off); returns whether
    anything changed."""
    if abs(scale - 1.0) < TOLERANCE:
        if con.influence != 0.0:
            con.influence = 0.0
            return True
        return False
    scale = float(np.float32(scale))
    changed = (con.to_min_x_scale, con.to_min_y_scale, con.to_min_z_scale) != (scale, scale, scale)
    if changed:
        con.to_min_x_scale = con.to_min_y_scale = con.to_min_z_scale = scale
    if con.influence != 1.0:
        con.influence, changed = 1.0, True
    if con.mute:
        con.mute, changed = False, True
    return changed


class Rotations:
    """Pre-corrective local rotations ``(n, 4)`` indexed by pose-bone row, in the shape
    :func:`...basis.project_group` reads (``local_quaternions(rows)``)."""

    def __init__(self, n):
        self.q = np.tile([1.0, 0.0, 0.0, 0.0], (n, 1))

    def local_quaternions(self, rows):
        return self.q[np.asarray(rows, dtype=np.intp)]


class Corrected:
    """The corrected bones of one rig: ``groups`` (limit groups, as the basis path has) and
    each corrected row's level: 0 for a bone whose evaluated pose reads no other corrected bone,
    else one more than the highest level of those it reads, through parents, constraint targets
    and drivers (:func:`..io.constraints.bone_dependencies`), so a correction is computed after
    every correction it depends on was evaluated."""

    def __init__(self, obj, groups):
        self.groups = groups
        rows = np.concatenate([g.rows for g in groups]) if groups else np.zeros(0, dtype=np.intp)
        names = obj.pose.bones.keys()
        self.names = {int(r): names[r] for r in rows}
        reads = _corrected_reads(bone_dependencies(obj, ignore=is_corrective), set(self.names.values()))
        level = {}

        def level_of(name, seen=()):
            if name not in level:
                above = [level_of(n, (*seen, name)) for n in reads[name] if n not in seen]
                level[name] = 1 + max(above) if above else 0
            return level[name]

        self.level = {r: level_of(name) for r, name in self.names.items()}
        self.levels = sorted(set(self.level.values()))


def _corrected_reads(depends, corrected):
    """``{corrected bone: the other corrected bones its evaluated pose reads}``, directly or
    through bones that are not corrected."""
    reads = {}
    for name in corrected:
        found, stack, seen = set(), list(depends.get(name, ())), {name}
        while stack:
            other = stack.pop()
            if other in seen:
                continue
            seen.add(other)
            if other in corrected:
                found.add(other)
            else:
                stack.extend(depends.get(other, ()))
        reads[name] = found
    return reads


def correct(obj, depsgraph, corrected, project_group):
    """Set the correctives of ``obj`` so that its evaluated pose (in ``depsgraph``) keeps every
    corrected bone inside its limit. ``project_group(group, rotations)`` returns
    ``(moved (R,), limited (R, 4))`` like :func:`...basis.project_group`. Returns how many
    bones are corrected."""
    pose_bones = obj.pose.bones
    cons = {}
    for r, name in corrected.names.items():
        con = ensure(obj, pose_bones[name])
        if con is not None:
            cons[r] = con
    rotations = Rotations(len(pose_bones))
    wrote = False
    moved_count = 0
    for level in corrected.levels:
        if wrote:
            depsgraph.update()
        wrote = False
        evaluated = obj.evaluated_get(depsgraph).pose.bones
        for r, con in cons.items():
            pb = pose_bones[corrected.names[r]]
            m = obj.convert_space(pose_bone=pb, matrix=evaluated[pb.name].matrix, from_space="POSE", to_space="LOCAL")
            q_post = np.array(m.to_quaternion(), dtype=float)
            rotations.q[r] = quaternion_multiply(q_post, quaternion_conjugate(correction(con)))
        for group in corrected.groups:
            at_level = [i for i, r in enumerate(group.rows.tolist()) if corrected.level[r] == level and r in cons]
            if not at_level:
                continue
            moved, limited = project_group(group, rotations)
            for i in at_level:
                r = int(group.rows[i])
                pre = rotations.q[r]
                d = quaternion_multiply(quaternion_conjugate(pre), limited[i]) if moved[i] else np.array([1.0, 0.0, 0.0, 0.0])
                moved_count += bool(moved[i])
                wrote |= write(cons[r], d)
    return moved_count
