# SPDX-License-Identifier: GPL-3.0-or-later
"""Bake onto the controls: the limited pose of a rig whose limited bones copy controls (a
generated Rigify rig) keyed on those controls, so the animator goes on working with the rig's
own controls instead of keys on bones its constraints drive.

Rigify poses each ORG bone by copying a control's transforms: the FK control (``upper_arm_fk.L``)
while the limb is in FK, the IK mechanism otherwise (the ``IK_FK`` switch, a driven influence);
a spine bone copies its tweak control, the head bone the head control. Keys on ORG or DEF bones
would fight those constraints (and there are hundreds of them); keys on the controls play
through them. So the bake

1. evaluates every frame with live enforcement applied (held IK and correctives included) and
   keeps the limited matrices of the limited bones that copy a control and of every such bone
   below them (a hand below a limited forearm must follow it too);
2. copies the action, with every ``IK_FK`` switch keyed at 1 (FK) and those controls' own keys
   taken out;
3. poses each control onto its bone's limited matrix frame by frame, parents first
   (``PoseBone.matrix``: Blender's own inverse of the control's parenting), and keys its
   location, rotation and scale.

The IK controls keep their keys: switched back to IK, the limb plays the unlimited motion.
"""

import bpy
import numpy as np
from mathutils import Matrix

from ...limits.body.bone_names import is_machinery_name, is_mechanism_name
from ..io.actions import action_fcurves, bone_path, channels_of, write_bone_transform, write_curve
from ..live import corrective, limited_ik, played, state
from ..live.evaluate import pose_matrices
from ..live.handlers import enforce_object
from ..live.pause import suspended
from .sample import temporarily_assigned

#: The custom property of Rigify's IK/FK switches (0: IK, 1: FK).
SWITCH = "IK_FK"
#: The text the bake writes what it keyed to.
REPORT = "Joint Limits Bake Report"


def copied_control(pose_bone):
    """The control whose transforms ``pose_bone`` copies first (a Copy Transforms in the same
    armature aimed at a bone that is not a deforming, original or mechanism one), or None."""
    obj = pose_bone.id_data
    for con in pose_bone.constraints:
        if con.type == "COPY_TRANSFORMS" and con.target == obj and con.subtarget in obj.pose.bones:
            return None if is_mechanism_name(con.subtarget) else con.subtarget
    return None


def limited_names(obj):
    """Names of the bones of ``obj`` whose limit is on."""
    return {pb.name for pb in obj.pose.bones if pb.joint_limit.enabled and pb.joint_limit.has_limit}


def control_pairs(obj, limited):
    """``[(bone, control)]``, parents first, one bone per control: the bones named in ``limited``
    that copy a control (:func:`copied_control`), and below them the bones a switch hands from
    one source to another (more than one Copy Transforms: Rigify's IK/FK), which follow the
    limb's FK controls once it is switched (a hand below a limited forearm); not the mechanism
    and deforming bones, which follow those."""
    pairs, seen = [], set()
    for pb in obj.pose.bones:  # (parents come before their children)
        control = copied_control(pb)
        if control is None or control in seen:
            continue
        below = any(b.name in limited and copied_control(b) is not None for b in pb.parent_recursive)
        if pb.name in limited or (below and _switched(pb) and not is_machinery_name(pb.name)):
            pairs.append((pb.name, control))
            seen.add(control)
    return pairs


def _switched(pose_bone):
    return sum(c.type == "COPY_TRANSFORMS" and not c.mute for c in pose_bone.constraints) > 1


def switches(obj):
    """Names of the pose bones that hold an IK/FK switch (:data:`SWITCH`)."""
    return [pb.name for pb in obj.pose.bones if SWITCH in pb.keys()]


def limited_matrices(obj, scene, frames, names, progress=None):
    """Pose-space matrices ``(F, len(names), 4, 4)`` of the bones ``names`` on each frame, with
    live enforcement applied whether it is on or not (and left as it was)."""
    rows = [obj.pose.bones.find(n) for n in names]
    out = np.empty((len(frames), len(names), 4, 4))
    enforced = scene.joint_limits.enforce_live
    try:
        for i, f in enumerate(frames):
            scene.frame_set(int(f))
            enforce_object(obj)
            bpy.context.view_layer.update()
            out[i] = pose_matrices(obj)[rows]
            if progress is not None:
                progress(i)
    finally:
        if not enforced:  # (the plain rig again: nothing held, corrected or remembered)
            played.remove(obj)
            limited_ik.release(obj)
            corrective.remove_all(obj)
            state.invalidate()
    return out


def _controlled_curve(path, controls, switch_bones):
    """Whether the F-curve at ``path`` keys a control's transform or a switch (the bake's)."""
    for name in controls:
        prefix = bone_path(name) + "."
        if path.startswith(prefix) and path[len(prefix) :] in (
            "location",
            "rotation_quaternion",
            "rotation_euler",
            "rotation_axis_angle",
            "scale",
        ):
            return True
    return any(path == f'{bone_path(name)}["{SWITCH}"]' for name in switch_bones)


def bake_to_controls(obj, scene, action, frames, name=None, progress=None):
    """A copy of ``action`` whose limbs play in FK, the controls keyed so that the limited bones
    take their limited pose (see the module). Returns ``(baked action, keyed controls, switches)``;
    the source action is untouched and the new one is not assigned. Raises ``ValueError`` when
    no limited bone copies a control (bake the bones instead)."""
    pairs = control_pairs(obj, limited_names(obj))
    if not pairs:
        raise ValueError(f"no limited bone of {obj.name!r} copies a control: bake its bones instead")
    bones, controls = [b for b, _ in pairs], [c for _, c in pairs]
    switch_bones = switches(obj)
    current = scene.frame_current, scene.frame_subframe
    frames = np.asarray(frames)
    try:
        with temporarily_assigned(obj, action):
            targets = limited_matrices(obj, scene, frames, bones, progress)
        baked = action.copy()
        baked.name = name or f"{action.name}_limited"
        container = channels_of(obj, baked)
        for fc in [fc for fc in action_fcurves(obj, baked) if _controlled_curve(fc.data_path, controls, switch_bones)]:
            container.fcurves.remove(fc)
        for bone in switch_bones:
            write_curve(container, f'{bone_path(bone)}["{SWITCH}"]', 0, frames, np.ones(len(frames)), bone)
        loc, rot, scale = _posed_controls(obj, scene, baked, frames, controls, targets)
    finally:
        scene.frame_set(current[0], subframe=current[1])
    for k, control in enumerate(controls):
        write_bone_transform(container, obj.pose.bones[control], frames, loc[:, k], rot[:, k], scale[:, k])
    baked.use_fake_user = True
    return baked, controls, switch_bones


def _posed_controls(obj, scene, baked, frames, controls, targets):
    """``(loc (F, C, 3), rot (F, C, 4), scale (F, C, 3))``: each control's channels that put it
    on its target matrix on each frame, with ``baked`` (the switches at FK, the controls unkeyed)
    playing on the plain rig."""
    pose_bones = [obj.pose.bones[c] for c in controls]
    depth = [len(pb.parent_recursive) for pb in pose_bones]
    levels = [[k for k in range(len(controls)) if depth[k] == d] for d in sorted(set(depth))]
    loc = np.empty((len(frames), len(controls), 3))
    rot = np.empty((len(frames), len(controls), 4))
    scale = np.empty((len(frames), len(controls), 3))
    with suspended(), temporarily_assigned(obj, baked):
        for i, f in enumerate(frames):
            scene.frame_set(int(f))
            for level in levels:  # parents first: a child is posed on its parent's new pose
                for k in level:
                    pose_bones[k].matrix = Matrix(targets[i, k].tolist())
                bpy.context.view_layer.update()
            for k, pb in enumerate(pose_bones):
                t, q, s = pb.matrix_basis.decompose()
                loc[i, k], rot[i, k], scale[i, k] = t, q, s
    return loc, rot, scale


def report_text(obj, action, baked, controls, switch_bones):
    """What a bake onto the controls keyed, for the text :data:`REPORT`."""
    lines = [
        f"Bake of {action.name!r} on {obj.name!r} into {baked.name!r}: keys on the rig's controls.",
        "",
        f"Controls keyed on every frame (location, rotation, scale): {len(controls)}",
        *(f"  {c}" for c in controls),
        "",
        f"IK/FK switches keyed at 1 (FK): {len(switch_bones)}",
        *(f'  {b}["{SWITCH}"]' for b in switch_bones),
        "",
        "Every other curve of the action is kept as it was; the IK controls keep their keys",
        "(switched back to IK, a limb plays the unlimited motion). No bone that a constraint",
        "drives (ORG-, DEF-, MCH-) is keyed.",
    ]
    return "\n".join(lines) + "\n"
