# SPDX-License-Identifier: GPL-3.0-or-later
"""Which bones a constraint moves (its owner, or for IK and Spline IK the chain above it), and
which bones each bone's evaluated pose reads."""

import bpy

#: Constraints that also move the parents of their owner (a chain), not the owner alone.
CHAIN_CONSTRAINTS = {"IK", "SPLINE_IK"}


def moved_bones(pose_bone, constraint):
    """Names of the bones whose pose ``constraint`` (on ``pose_bone``) sets: its owner, and for IK
    and Spline IK the chain above it (``chain_count`` bones, 0: up to the root; an IK without
    ``use_tail`` counts its chain from the owner's parent)."""
    if constraint.type not in CHAIN_CONSTRAINTS:
        return {pose_bone.name}
    chain = [pose_bone, *pose_bone.parent_recursive]
    if constraint.chain_count:
        chain = chain[: constraint.chain_count + (constraint.type == "IK" and not constraint.use_tail)]
    return {b.name for b in chain}


def _bone_of(path):
    """The pose bone an RNA path of the armature object starts in (``pose.bones["NAME"]...``), or None."""
    if not path.startswith('pose.bones["'):
        return None
    return bpy.utils.unescape_identifier(path[len('pose.bones["') :].partition('"]')[0])


def bone_dependencies(obj, ignore=None):
    """``{bone: bones of obj whose evaluated pose it reads}``, as Blender orders them: the parent,
    the bones its constraints target (an IK's for its whole chain; an Armature constraint's at
    a weight above 0 now, so a parent switch is read as it stands; not the constraints for which
    ``ignore(constraint)`` is true), and the bones the drivers of its properties read (transform
    channels, distances, rotation differences, paths into a bone)."""
    depends = {pb.name: set() if pb.parent is None else {pb.parent.name} for pb in obj.pose.bones}
    for pb in obj.pose.bones:
        for con in pb.constraints:
            targets = getattr(con, "targets", None)  # (the Armature constraint's list)
            # (a parent switch's targets at weight 0 are read by nothing Blender computes)
            pairs = [(t.target, t.subtarget) for t in targets if t.weight > 0.0] if targets is not None else []
            pairs.append((getattr(con, "target", None), getattr(con, "subtarget", "")))
            pairs.append((getattr(con, "pole_target", None), getattr(con, "pole_subtarget", "")))
            found = {name for target, name in pairs if target == obj and name in depends}
            if found and not con.mute and not (ignore is not None and ignore(con)):
                for moved in moved_bones(pb, con):
                    depends[moved] |= found - {moved}
    drivers = obj.animation_data.drivers if obj.animation_data is not None else ()
    for fc in drivers:
        owner = _bone_of(fc.data_path)
        if owner not in depends:
            continue
        for var in fc.driver.variables:
            for t in var.targets:
                if t.id != obj:
                    continue
                name = t.bone_target if var.type != "SINGLE_PROP" else _bone_of(t.data_path or "")
                if name in depends and name != owner:
                    depends[owner].add(name)
    return depends
