# SPDX-License-Identifier: GPL-3.0-or-later
"""The same body built as different rigs (numpy only): other bone names, rolls and rest pose.

Used by the retargeting tests, maths and Blender alike; ``lib`` is the ``limits`` package they
use (the top-level one, or the add-on's ``addon.limits``).
"""

import numpy as np

#: The embedded humanoid's names (Blender metarig) in Rigify's generated-rig (DEF-) and Mixamo's
#: conventions.
RIGIFY_NAMES = {
    "hips": "DEF-spine",
    "spine": "DEF-spine.001",
    "chest": "DEF-spine.002",
    "neck": "DEF-spine.004",
    "head": "DEF-spine.005",
}
MIXAMO_NAMES = {
    "hips": "mixamorig:Hips",
    "spine": "mixamorig:Spine",
    "chest": "mixamorig:Spine1",
    "neck": "mixamorig:Neck",
    "head": "mixamorig:Head",
}
_MIXAMO_SIDED = {
    "shoulder": "Shoulder",
    "upper_arm": "Arm",
    "forearm": "ForeArm",
    "hand": "Hand",
    "thigh": "UpLeg",
    "shin": "Leg",
    "foot": "Foot",
    "toe": "ToeBase",
}
#: The Unreal mannequin's names (UE4/UE5 skeleton).
UNREAL_NAMES = {"hips": "pelvis", "spine": "spine_01", "chest": "spine_03", "neck": "neck_01", "head": "head"}
_UNREAL_SIDED = {
    "shoulder": "clavicle",
    "upper_arm": "upperarm",
    "forearm": "lowerarm",
    "hand": "hand",
    "thigh": "thigh",
    "shin": "calf",
    "foot": "foot",
    "toe": "ball",
}
ARM_BONES = ("upper_arm", "forearm", "hand")


def rigify_name(name):
    return RIGIFY_NAMES.get(name, "DEF-" + name)


def mixamo_name(name):
    if name in MIXAMO_NAMES:
        return MIXAMO_NAMES[name]
    base, side = name.split(".")
    return f"mixamorig:{'Left' if side == 'L' else 'Right'}{_MIXAMO_SIDED[base]}"


def unreal_name(name):
    if name in UNREAL_NAMES:
        return UNREAL_NAMES[name]
    base, side = name.split(".")
    return f"{_UNREAL_SIDED[base]}_{side.lower()}"


def _about_y(angle):
    """Quaternion of a rotation by ``angle`` about armature +Y (the forward/back axis)."""
    return np.array([np.cos(angle / 2), 0.0, np.sin(angle / 2), 0.0])


def humanoid_variant(lib, rename=None, arms_down_deg=0.0, roll_seed=None):
    """The embedded humanoid (T-pose) rebuilt with bones renamed by ``rename(name)``, the arms
    lowered by ``arms_down_deg`` about the forward axis at the shoulder (an A-pose) and, with
    ``roll_seed``, every bone rolled by a random angle.

    Returns ``(skeleton, rolls (n, 4), lowering (n, 4))``: each bone's roll quaternion ``rho``
    and the rotation ``G`` that lowered it, so that ``rest = G * rest_T * rho``. The same
    physical pose has armature-space orientations ``pose_T * rho`` on this rig
    (:func:`same_pose`)."""
    q = lib.geometry.quaternion
    base = lib.body.skeleton.humanoid_skeleton()
    n = len(base)
    rng = np.random.default_rng(roll_seed)
    angles = rng.uniform(-np.pi, np.pi, n) if roll_seed is not None else np.zeros(n)
    rolls = np.stack([np.cos(angles / 2), np.zeros(n), np.sin(angles / 2), np.zeros(n)], axis=-1)
    lowering = np.tile([1.0, 0.0, 0.0, 0.0], (n, 1))
    heads, tails = base.heads.copy(), base.tails.copy()
    for b, name in enumerate(base.names):
        if name.split(".")[0] not in ARM_BONES:
            continue
        side = 1.0 if name.endswith(".L") else -1.0
        g = _about_y(side * np.radians(arms_down_deg))
        pivot = base.heads[base.index(f"upper_arm.{name[-1]}")]
        lowering[b] = g
        heads[b] = pivot + q.quaternion_rotate(g, base.heads[b] - pivot)
        tails[b] = pivot + q.quaternion_rotate(g, base.tails[b] - pivot)
    rest = q.quaternion_multiply(lowering, q.quaternion_multiply(base.rest_rotations, rolls))
    names = [rename(n) if rename else n for n in base.names]
    return lib.body.skeleton.Skeleton(names, base.parents, heads, tails, rest), rolls, lowering


def same_pose(lib, t_skeleton, t_basis, variant, rolls):
    """Basis rotations ``(F, n, 4)`` that put ``variant`` (a :func:`humanoid_variant`) in the
    physical pose the T-pose humanoid ``t_skeleton`` has at ``t_basis (F, n, 4)``: each bone's
    armature orientation is the T-pose rig's times the bone's roll."""
    pose = lib.body.skeleton.armature_rotations(t_skeleton, t_basis)
    return lib.body.skeleton.local_from_armature_rotations(variant, lib.geometry.quaternion.quaternion_multiply(pose, rolls))


def y_up(lib, skeleton):
    """``skeleton`` built Y-up (as a BVH file is) instead of Blender's Z-up."""
    q = lib.geometry.quaternion
    turn = q.quaternion_from_exp_map(np.array([-np.pi / 2, 0.0, 0.0]))
    return lib.body.skeleton.Skeleton(
        skeleton.names,
        skeleton.parents,
        q.quaternion_rotate(turn, skeleton.heads),
        q.quaternion_rotate(turn, skeleton.tails),
        q.quaternion_multiply(turn, skeleton.rest_rotations),
    )


#: A rest pose that is not a standing one (as Bandai's BVH clips rest): thighs raised past the
#: horizontal, an arm up beside the head, the spine bent (rotation vectors of the basis).
NOT_STANDING = {"thigh.L": (2.6, 0, 0), "thigh.R": (2.6, 0, 0), "upper_arm.L": (0, 0, 1.4), "spine": (0.9, 0, 0)}


def rested_in_pose(lib, skeleton, pose=NOT_STANDING):
    """``skeleton`` rebuilt with a posed rest (``pose``: bone name -> basis rotation vector)."""
    sk = lib.body.skeleton
    local = np.tile([1.0, 0.0, 0.0, 0.0], (len(skeleton), 1))
    for name, vector in pose.items():
        local[skeleton.index(name)] = lib.geometry.quaternion.quaternion_from_exp_map(np.array(vector, dtype=float))
    heads, tails = sk.armature_positions(skeleton, local)
    return sk.Skeleton(skeleton.names, skeleton.parents, heads, tails, sk.armature_rotations(skeleton, local))


def envelope_motion(lib, joint, count, rng, share=0.9):
    """Anatomical rotations ``(count, 4)`` of ``joint`` spread over its references (up to
    ``share`` of each extent, the twist too), as :mod:`limits.body.envelope` writes them."""
    env, q = lib.body.envelope, lib.geometry.quaternion
    ranges = env.range_of(joint)
    a, b = (env._AXIS_INDEX[k] for k in ranges.cross)
    phi = rng.uniform(0, 2 * np.pi, count)
    extent = np.degrees(env._swing_extent(ranges, phi)) - env.MARGIN_DEGREES
    reach = rng.uniform(0, share, count) * np.maximum(extent, 0.0)
    swing = np.zeros((count, 3))
    swing[:, a], swing[:, b] = reach * np.cos(phi), reach * np.sin(phi)
    low, high = ranges.twist_range
    turn = np.zeros((count, 3))
    turn[:, env._AXIS_INDEX[ranges.twist]] = rng.uniform(-low, high, count) * share
    m = q.quaternion_multiply(q.quaternion_from_exp_map(np.radians(swing)), q.quaternion_from_exp_map(np.radians(turn)))
    return env.motion(joint, np.degrees(q.exp_map_from_quaternion(m)))
