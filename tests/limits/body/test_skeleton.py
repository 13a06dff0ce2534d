# SPDX-License-Identifier: GPL-3.0-or-later
"""limits/body/skeleton.py: bone frames, forward kinematics, retargeting, bone names (numpy only)."""

import numpy as np
import pytest

from limits.body.skeleton import (
    Skeleton,
    armature_positions,
    armature_rotations,
    bone_category,
    bone_frame_from_head_tail_roll,
    humanoid_skeleton,
    local_from_armature_rotations,
    match_bone_names,
    mirror_local_rotation,
    mirror_name,
    retarget_local_rotations,
)
from limits.geometry.quaternion import (
    matrix_from_quaternion,
    quaternion_angle,
    quaternion_from_exp_map,
    quaternion_multiply,
    quaternion_random,
    quaternion_rotate,
)

MIRROR = np.diag([-1.0, 1.0, 1.0])


def rotation_about(axis, angle):
    axis = np.asarray(axis, float) / np.linalg.norm(axis)
    k = np.array([[0, -axis[2], axis[1]], [axis[2], 0, -axis[0]], [-axis[1], axis[0], 0]])
    return np.eye(3) + np.sin(angle) * k + (1 - np.cos(angle)) * k @ k


def reference_frame(head, tail, roll):
    """Blender's bone matrix the textbook way (minimal rotation +Y -> bone, then roll)."""
    y = np.array([0.0, 1.0, 0.0])
    nor = np.subtract(tail, head) / np.linalg.norm(np.subtract(tail, head))
    axis = np.cross(y, nor)
    if np.linalg.norm(axis) < 1e-12:
        base = np.eye(3) if nor[1] > 0 else np.diag([-1.0, -1.0, 1.0])
    else:
        base = rotation_about(axis, np.arccos(np.clip(nor @ y, -1, 1)))
    return rotation_about(nor, roll) @ base


# -- bone frames -------------------------------------------------------------------------------------


def test_bone_frame_matches_textbook_construction():
    rng = np.random.default_rng(0)
    heads, tails = rng.normal(size=(300, 3)), rng.normal(size=(300, 3))
    rolls = rng.uniform(-np.pi, np.pi, 300)
    frames = bone_frame_from_head_tail_roll(heads, tails, rolls)
    expect = np.stack([reference_frame(h, t, r) for h, t, r in zip(heads, tails, rolls, strict=True)])
    # Within ~6 degrees of -Y Blender switches to a series expansion (not exactly orthogonal).
    y = (tails - heads)[:, 1] / np.linalg.norm(tails - heads, axis=-1)
    regular = 1 + y > 6.1e-3
    np.testing.assert_allclose(frames[regular], expect[regular], atol=1e-9)
    np.testing.assert_allclose(frames[~regular], expect[~regular], atol=1e-4)
    np.testing.assert_allclose(
        frames[:, :, 1], (tails - heads) / np.linalg.norm(tails - heads, axis=-1, keepdims=True), atol=1e-12
    )
    np.testing.assert_allclose(np.linalg.det(frames[regular]), 1.0, atol=1e-12)
    np.testing.assert_allclose(np.linalg.det(frames), 1.0, atol=1e-4)


@pytest.mark.parametrize(
    ("direction", "roll", "x_axis"),
    [
        ((0, 1, 0), 0.0, (1, 0, 0)),
        ((0, -1, 0), 0.0, (-1, 0, 0)),  # Blender's special case: diag(-1, -1, 1)
        ((0, 0, 1), 0.0, (1, 0, 0)),
        ((0, 0, -1), 0.0, (1, 0, 0)),
        ((1, 0, 0), 0.0, (0, -1, 0)),
        ((-1, 0, 0), 0.0, (0, 1, 0)),
        ((1, 0, 0), np.pi / 2, (0, 0, -1)),
        ((0, 0, 1), np.pi / 2, (0, 1, 0)),
    ],
)
def test_bone_frame_axis_aligned(direction, roll, x_axis):
    m = bone_frame_from_head_tail_roll(np.zeros(3), np.array(direction, float) * 0.7, roll)
    np.testing.assert_allclose(m[:, 1], direction, atol=1e-12)
    np.testing.assert_allclose(m[:, 0], x_axis, atol=1e-12)


def test_bone_frame_near_minus_y():
    # Blender's series expansion keeps the frame (nearly) orthonormal approaching -Y; within
    # 2.5e-4 of -Y the bone gets the fixed frame diag(-1, -1, 1) rolled about its direction.
    for eps in (1e-1, 1e-2, 1e-3, 3e-4, 1e-4, 1e-6, 0.0):
        for angle in np.linspace(0, 2 * np.pi, 7):
            d = np.array([eps * np.cos(angle), -1.0, eps * np.sin(angle)])
            m = bone_frame_from_head_tail_roll(np.zeros(3), d, 0.3)
            np.testing.assert_allclose(m @ m.T, np.eye(3), atol=1e-4)
            np.testing.assert_allclose(m[:, 1], d / np.linalg.norm(d), atol=1e-9 if eps > 2.5e-4 else 3e-4)
    fixed = bone_frame_from_head_tail_roll(np.zeros(3), np.array([0.0, -2.0, 0.0]), 0.0)
    np.testing.assert_array_equal(fixed, np.diag([-1.0, -1.0, 1.0]))


def test_bone_frame_mirror_symmetry():
    rng = np.random.default_rng(1)
    heads, tails = rng.normal(size=(100, 3)), rng.normal(size=(100, 3))
    rolls = rng.uniform(-3, 3, 100)
    left = bone_frame_from_head_tail_roll(heads, tails, rolls)
    right = bone_frame_from_head_tail_roll(heads @ MIRROR, tails @ MIRROR, -rolls)
    np.testing.assert_allclose(right, MIRROR @ left @ MIRROR, atol=1e-9)


def test_bone_frame_zero_length_raises():
    with pytest.raises(ValueError, match="non-zero length"):
        bone_frame_from_head_tail_roll(np.zeros(3), np.zeros(3), 0.0)


# -- humanoid ----------------------------------------------------------------------------------------


def test_humanoid_layout():
    sk = humanoid_skeleton()
    assert 19 <= len(sk) <= 23
    assert sk.names[0] == "hips" and sk.parents[0] == -1
    assert np.all(sk.parents[1:] < np.arange(1, len(sk)))
    assert np.all(sk.lengths > 0.03)
    height = max(sk.tails[:, 2].max(), sk.heads[:, 2].max()) - min(sk.tails[:, 2].min(), sk.heads[:, 2].min())
    assert 1.7 < height < 1.9
    for name in (
        "spine",
        "chest",
        "neck",
        "head",
        "shoulder.L",
        "upper_arm.R",
        "forearm.L",
        "hand.R",
        "thigh.L",
        "shin.R",
        "foot.L",
        "toe.R",
    ):
        sk.index(name)
    # T-pose: arms along +-X, left is +X, feet forward (-Y), head up.
    for side, sign in (("L", 1), ("R", -1)):
        for bone in ("upper_arm", "forearm", "hand"):
            b = sk.index(f"{bone}.{side}")
            np.testing.assert_allclose((sk.tails[b] - sk.heads[b]) / sk.lengths[b], [sign, 0, 0], atol=1e-12)
        assert sk.tails[sk.index(f"toe.{side}"), 1] < sk.heads[sk.index(f"foot.{side}"), 1]
    assert sk.tails[sk.index("head"), 2] > sk.heads[sk.index("head"), 2]
    # Children start where their parent ends, except clavicles and thighs (on the torso).
    for b, p in enumerate(sk.parents):
        if p >= 0 and not sk.names[b].startswith(("shoulder", "thigh", "upper_arm")):
            np.testing.assert_allclose(sk.heads[b], sk.tails[p], atol=1e-12)


def test_humanoid_sides_mirror():
    sk = humanoid_skeleton()
    mirror = sk.mirror_indices()
    assert sorted(mirror) == list(range(len(sk)))
    for b, m in enumerate(mirror):
        assert mirror_name(sk.names[b]) in (sk.names[m], None)
        np.testing.assert_allclose(sk.heads[m], sk.heads[b] @ MIRROR, atol=1e-12)
        np.testing.assert_allclose(sk.tails[m], sk.tails[b] @ MIRROR, atol=1e-12)
    # Rest orientations of mirrored bones relate by the same (w, x, -y, -z) map as poses.
    assert quaternion_angle(sk.rest_rotations[mirror], mirror_local_rotation(sk.rest_rotations)).max() < 1e-7
    # Mirroring local rotations mirrors the whole pose.
    rng = np.random.default_rng(2)
    local = quaternion_from_exp_map(rng.normal(size=(5, len(sk), 3)) * 0.5)
    heads, tails = armature_positions(sk, local)
    mheads, mtails = armature_positions(sk, mirror_local_rotation(local)[:, mirror])
    np.testing.assert_allclose(mheads, heads[:, mirror] @ MIRROR, atol=1e-12)
    np.testing.assert_allclose(mtails, tails[:, mirror] @ MIRROR, atol=1e-12)


def test_humanoid_flexion_conventions():
    sk = humanoid_skeleton()

    def tail_after(bone, exp_map):
        local = np.tile([1.0, 0, 0, 0], (len(sk), 1))
        local[sk.index(bone)] = quaternion_from_exp_map(np.array(exp_map, float))
        return armature_positions(sk, local)[1][sk.index(bone)]

    b = sk.index("forearm.L")
    assert tail_after("forearm.L", (1.0, 0, 0))[1] < sk.tails[b, 1] - 0.1  # elbow flexes forward
    b = sk.index("forearm.R")
    assert tail_after("forearm.R", (1.0, 0, 0))[1] < sk.tails[b, 1] - 0.1
    b = sk.index("shin.L")
    assert tail_after("shin.L", (1.0, 0, 0))[1] > sk.tails[b, 1] + 0.1  # knee flexes backward
    b = sk.index("upper_arm.L")
    assert tail_after("upper_arm.L", (0, 0, 1.0))[2] > sk.tails[b, 2] + 0.1  # +Z raises the arm
    b = sk.index("spine")
    assert tail_after("spine", (0.5, 0, 0))[1] < sk.tails[b, 1] - 0.05  # spine bends forward


# -- forward kinematics ------------------------------------------------------------------------------


def naive_pose_matrices(sk, local):
    """Blender's pose matrices bone by bone with 4x4 matrices (one frame)."""
    rest = []
    for b in range(len(sk)):
        m = np.eye(4)
        m[:3, :3] = matrix_from_quaternion(sk.rest_rotations[b])
        m[:3, 3] = sk.heads[b]
        rest.append(m)
    pose = []
    for b, p in enumerate(sk.parents):
        basis = np.eye(4)
        basis[:3, :3] = matrix_from_quaternion(local[b])
        parent = np.eye(4) if p < 0 else pose[p] @ np.linalg.inv(rest[p])
        pose.append(parent @ rest[b] @ basis)
    return np.array(pose)


def random_skeleton(rng, n=12):
    parents = np.array([-1] + [int(rng.integers(0, b)) for b in range(1, n)])
    heads = rng.normal(size=(n, 3))
    tails = heads + rng.normal(size=(n, 3))
    return Skeleton.from_head_tail_roll([f"b{i}" for i in range(n)], parents, heads, tails, rng.uniform(-3, 3, n))


@pytest.mark.parametrize("make", [humanoid_skeleton, lambda: random_skeleton(np.random.default_rng(3))])
def test_fk_matches_naive_matrix_loop(make):
    sk = make()
    rng = np.random.default_rng(4)
    local = quaternion_random(4 * len(sk), rng).reshape(4, len(sk), 4)
    rot = armature_rotations(sk, local)
    heads, tails = armature_positions(sk, local)
    for f in range(4):
        mats = naive_pose_matrices(sk, local[f])
        np.testing.assert_allclose(matrix_from_quaternion(rot[f]), mats[:, :3, :3], atol=1e-10)
        np.testing.assert_allclose(heads[f], mats[:, :3, 3], atol=1e-10)
        np.testing.assert_allclose(tails[f], mats[:, :3, 3] + mats[:, :3, 1] * sk.lengths[:, None], atol=1e-10)


def test_fk_rest_pose_and_inverse():
    sk = humanoid_skeleton()
    ident = np.tile([1.0, 0, 0, 0], (len(sk), 1))
    np.testing.assert_allclose(armature_rotations(sk, ident), sk.rest_rotations, atol=1e-12)
    heads, tails = armature_positions(sk, ident)
    np.testing.assert_allclose(heads, sk.heads, atol=1e-12)
    np.testing.assert_allclose(tails, sk.tails, atol=1e-12)
    local = quaternion_random(3 * len(sk), np.random.default_rng(5)).reshape(3, len(sk), 4)
    back = local_from_armature_rotations(sk, armature_rotations(sk, local))
    assert quaternion_angle(back, local).max() < 1e-6
    np.testing.assert_allclose(np.abs(np.sum(back * local, -1)), 1.0, atol=1e-12)


def test_fk_shape_errors():
    sk = humanoid_skeleton()
    with pytest.raises(ValueError, match=r"\(\.\.\., 21, 4\)"):
        armature_rotations(sk, np.zeros((3, 5, 4)))
    with pytest.raises(ValueError, match=r"shape \(\.\.\., 4\)"):
        armature_rotations(sk, np.zeros((21, 3)))


def test_skeleton_validation():
    with pytest.raises(ValueError, match="before its child"):
        Skeleton(["a", "b"], [1, -1], np.zeros((2, 3)), np.ones((2, 3)), np.tile([1.0, 0, 0, 0], (2, 1)))
    with pytest.raises(ValueError, match="unique"):
        Skeleton(["a", "a"], [-1, 0], np.zeros((2, 3)), np.ones((2, 3)), np.tile([1.0, 0, 0, 0], (2, 1)))
    with pytest.raises(ValueError, match="entries for 2 bones"):
        Skeleton(["a", "b"], [-1, 0], np.zeros((3, 3)), np.ones((2, 3)), np.tile([1.0, 0, 0, 0], (2, 1)))
    with pytest.raises(ValueError, match="no bone named"):
        humanoid_skeleton().index("tail")


# -- retargeting -------------------------------------------------------------------------------------


def test_retarget_onto_itself_is_identity():
    sk = humanoid_skeleton()
    local = quaternion_random(10 * len(sk), np.random.default_rng(6)).reshape(10, len(sk), 4)
    out = retarget_local_rotations(sk, local, sk, {n: n for n in sk.names})
    np.testing.assert_allclose(np.abs(np.sum(out * local, -1)), 1.0, atol=1e-12)


def test_retarget_preserves_armature_space_deltas_across_rolls():
    # Same bones under other names and with other rolls: the posed skeleton is the same.
    src = humanoid_skeleton()
    rng = np.random.default_rng(7)
    rolls = rng.uniform(-np.pi, np.pi, len(src))
    names = [n.upper().replace(".L", "_L").replace(".R", "_R") for n in src.names]
    dst = Skeleton.from_head_tail_roll(names, src.parents, src.heads, src.tails, rolls)
    mapping = match_bone_names(dst.names, src.names)
    assert len(mapping) == len(src)
    local = quaternion_from_exp_map(rng.normal(size=(6, len(src), 3)) * 0.6)
    out = retarget_local_rotations(src, local, dst, mapping)
    src_h, src_t = armature_positions(src, local)
    dst_h, dst_t = armature_positions(dst, out)
    np.testing.assert_allclose(dst_h, src_h, atol=1e-10)
    np.testing.assert_allclose(dst_t, src_t, atol=1e-10)


def test_retarget_unmapped_bones_keep_identity():
    sk = humanoid_skeleton()
    local = quaternion_from_exp_map(np.random.default_rng(8).normal(size=(4, len(sk), 3)) * 0.4)
    mapping = {n: n for n in sk.names if not n.startswith("forearm")}
    out = retarget_local_rotations(sk, local, sk, mapping)
    for b, name in enumerate(sk.names):
        if name.startswith("forearm"):
            np.testing.assert_allclose(out[:, b], np.tile([1.0, 0, 0, 0], (4, 1)))
        elif not name.startswith("hand"):
            np.testing.assert_allclose(np.abs(np.sum(out[:, b] * local[:, b], -1)), 1.0, atol=1e-12)
    # The hand keeps its armature-space orientation although its parent changed.
    hand = sk.index("hand.L")
    src_pose = armature_rotations(sk, local)[:, hand]
    dst_pose = armature_rotations(sk, out)[:, hand]
    assert quaternion_angle(src_pose, dst_pose).max() < 1e-6


def test_retarget_errors():
    sk = humanoid_skeleton()
    local = np.tile([1.0, 0, 0, 0], (2, len(sk), 1))
    with pytest.raises(ValueError, match="no bone named"):
        retarget_local_rotations(sk, local, sk, {"tail": "hips"})
    with pytest.raises(ValueError, match="source skeleton lacks"):
        retarget_local_rotations(sk, local, sk, {"hips": "pelvis"})


# -- names -------------------------------------------------------------------------------------------

HUMANOID_NAMES = humanoid_skeleton().names

# Real naming conventions (written out here; tests never read mocap files).
CONVENTIONS = {
    "bandai": [
        "joint_Root",
        "Hips",
        "Spine",
        "Chest",
        "Neck",
        "Head",
        "Shoulder_L",
        "UpperArm_L",
        "LowerArm_L",
        "Hand_L",
        "Shoulder_R",
        "UpperArm_R",
        "LowerArm_R",
        "Hand_R",
        "UpperLeg_L",
        "LowerLeg_L",
        "Foot_L",
        "Toes_L",
        "UpperLeg_R",
        "LowerLeg_R",
        "Foot_R",
        "Toes_R",
    ],
    "cmu_bvh": [
        "Hips",
        "LHipJoint",
        "LeftUpLeg",
        "LeftLeg",
        "LeftFoot",
        "LeftToeBase",
        "RHipJoint",
        "RightUpLeg",
        "RightLeg",
        "RightFoot",
        "RightToeBase",
        "LowerBack",
        "Spine",
        "Spine1",
        "Neck",
        "Neck1",
        "Head",
        "LeftShoulder",
        "LeftArm",
        "LeftForeArm",
        "LeftHand",
        "LeftFingerBase",
        "LeftHandIndex1",
        "LThumb",
        "RightShoulder",
        "RightArm",
        "RightForeArm",
        "RightHand",
        "RightFingerBase",
        "RightHandIndex1",
        "RThumb",
    ],
    "cmu_collar": [
        "Hips",
        "LHipJoint",
        "LeftHip",
        "LeftKnee",
        "LeftAnkle",
        "LeftToe",
        "RHipJoint",
        "RightHip",
        "RightKnee",
        "RightAnkle",
        "RightToe",
        "lowerback",
        "Chest",
        "Chest2",
        "lowerneck",
        "Neck",
        "Head",
        "LeftCollar",
        "LeftShoulder",
        "LeftElbow",
        "LeftWrist",
        "lhand",
        "LFingers",
        "LThumb",
        "RightCollar",
        "RightShoulder",
        "RightElbow",
        "RightWrist",
        "rhand",
        "RFingers",
        "RThumb",
    ],
    "cmu_asf": [
        "root",
        "lhipjoint",
        "lfemur",
        "ltibia",
        "lfoot",
        "ltoes",
        "rhipjoint",
        "rfemur",
        "rtibia",
        "rfoot",
        "rtoes",
        "lowerback",
        "upperback",
        "thorax",
        "lowerneck",
        "upperneck",
        "head",
        "lclavicle",
        "lhumerus",
        "lradius",
        "lwrist",
        "lhand",
        "lfingers",
        "lthumb",
        "rclavicle",
        "rhumerus",
        "rradius",
        "rwrist",
        "rhand",
        "rfingers",
        "rthumb",
    ],
    "daz": [
        "hip",
        "abdomen",
        "chest",
        "neck",
        "head",
        "leftEye",
        "rightEye",
        "rCollar",
        "rShldr",
        "rForeArm",
        "rHand",
        "lCollar",
        "lShldr",
        "lForeArm",
        "lHand",
        "rButtock",
        "rThigh",
        "rShin",
        "rFoot",
        "lButtock",
        "lThigh",
        "lShin",
        "lFoot",
    ],
    "mixamo": [
        "mixamorig:Hips",
        "mixamorig:Spine",
        "mixamorig:Spine1",
        "mixamorig:Spine2",
        "mixamorig:Neck",
        "mixamorig:Head",
        "mixamorig:LeftShoulder",
        "mixamorig:LeftArm",
        "mixamorig:LeftForeArm",
        "mixamorig:LeftHand",
        "mixamorig:RightShoulder",
        "mixamorig:RightArm",
        "mixamorig:RightForeArm",
        "mixamorig:RightHand",
        "mixamorig:LeftUpLeg",
        "mixamorig:LeftLeg",
        "mixamorig:LeftFoot",
        "mixamorig:LeftToeBase",
        "mixamorig:RightUpLeg",
        "mixamorig:RightLeg",
        "mixamorig:RightFoot",
        "mixamorig:RightToeBase",
    ],
    "character_creator": [
        "CC_Base_Hip",
        "CC_Base_Pelvis",
        "CC_Base_L_Thigh",
        "CC_Base_L_Calf",
        "CC_Base_L_Foot",
        "CC_Base_L_ToeBase",
        "CC_Base_L_ThighTwist01",
        "CC_Base_R_Thigh",
        "CC_Base_R_Calf",
        "CC_Base_R_Foot",
        "CC_Base_R_ToeBase",
        "CC_Base_Waist",
        "CC_Base_Spine01",
        "CC_Base_Spine02",
        "CC_Base_NeckTwist01",
        "CC_Base_Head",
        "CC_Base_L_Clavicle",
        "CC_Base_L_Upperarm",
        "CC_Base_L_Forearm",
        "CC_Base_L_Hand",
        "CC_Base_R_Clavicle",
        "CC_Base_R_Upperarm",
        "CC_Base_R_Forearm",
        "CC_Base_R_Hand",
    ],
    "unreal": [
        "root",
        "pelvis",
        "spine_01",
        "spine_02",
        "spine_03",
        "neck_01",
        "head",
        "clavicle_l",
        "upperarm_l",
        "lowerarm_l",
        "hand_l",
        "clavicle_r",
        "upperarm_r",
        "lowerarm_r",
        "hand_r",
        "thigh_l",
        "calf_l",
        "foot_l",
        "ball_l",
        "thigh_r",
        "calf_r",
        "foot_r",
        "ball_r",
    ],
    "biped": [
        "Bip01",
        "Bip01 Pelvis",
        "Bip01 Spine",
        "Bip01 Spine1",
        "Bip01 Neck",
        "Bip01 Head",
        "Bip01 L Clavicle",
        "Bip01 L UpperArm",
        "Bip01 L Forearm",
        "Bip01 L Hand",
        "Bip01 R Clavicle",
        "Bip01 R UpperArm",
        "Bip01 R Forearm",
        "Bip01 R Hand",
        "Bip01 L Thigh",
        "Bip01 L Calf",
        "Bip01 L Foot",
        "Bip01 L Toe0",
        "Bip01 R Thigh",
        "Bip01 R Calf",
        "Bip01 R Foot",
        "Bip01 R Toe0",
    ],
    "rigify_def": [
        "DEF-spine",
        "DEF-spine.001",
        "DEF-upper_arm.L",
        "DEF-forearm.L",
        "DEF-hand.L",
        "DEF-thigh.L",
        "DEF-shin.L",
        "DEF-foot.L",
        "DEF-toe.L",
        "DEF-upper_arm.R",
        "DEF-forearm.R",
        "DEF-hand.R",
    ],
}

EXPECTED = {
    "bandai": {
        "hips": "Hips",
        "spine": "Spine",
        "chest": "Chest",
        "shoulder.L": "Shoulder_L",
        "upper_arm.L": "UpperArm_L",
        "forearm.R": "LowerArm_R",
        "hand.L": "Hand_L",
        "thigh.R": "UpperLeg_R",
        "shin.L": "LowerLeg_L",
        "foot.R": "Foot_R",
        "toe.L": "Toes_L",
    },
    "cmu_bvh": {
        "hips": "Hips",
        "spine": "Spine",
        "chest": "Spine1",
        "neck": "Neck",
        "head": "Head",
        "shoulder.L": "LeftShoulder",
        "upper_arm.L": "LeftArm",
        "forearm.R": "RightForeArm",
        "hand.L": "LeftHand",
        "thigh.L": "LeftUpLeg",
        "shin.R": "RightLeg",
        "foot.L": "LeftFoot",
        "toe.R": "RightToeBase",
    },
    "cmu_collar": {
        "spine": "lowerback",
        "chest": "Chest",
        "shoulder.L": "LeftCollar",
        "upper_arm.L": "LeftShoulder",
        "upper_arm.R": "RightShoulder",
        "forearm.L": "LeftElbow",
        "hand.L": "LeftWrist",
        "hand.R": "RightWrist",
        "thigh.L": "LeftHip",
        "shin.L": "LeftKnee",
        "foot.R": "RightAnkle",
        "toe.L": "LeftToe",
    },
    "cmu_asf": {
        "hips": "root",
        "spine": "lowerback",
        "chest": "thorax",
        "neck": "lowerneck",
        "head": "head",
        "shoulder.L": "lclavicle",
        "upper_arm.R": "rhumerus",
        "forearm.L": "lradius",
        "hand.L": "lwrist",
        "thigh.L": "lfemur",
        "shin.R": "rtibia",
        "foot.L": "lfoot",
        "toe.R": "rtoes",
    },
    "daz": {
        "hips": "hip",
        "spine": "abdomen",
        "chest": "chest",
        "shoulder.R": "rCollar",
        "upper_arm.R": "rShldr",
        "forearm.L": "lForeArm",
        "hand.L": "lHand",
        "thigh.L": "lThigh",
        "shin.R": "rShin",
        "foot.L": "lFoot",
    },
    "mixamo": {
        "hips": "mixamorig:Hips",
        "spine": "mixamorig:Spine",
        "chest": "mixamorig:Spine2",
        "shoulder.L": "mixamorig:LeftShoulder",
        "upper_arm.L": "mixamorig:LeftArm",
        "shin.R": "mixamorig:RightLeg",
        "toe.L": "mixamorig:LeftToeBase",
    },
    "character_creator": {
        "hips": "CC_Base_Hip",
        "spine": "CC_Base_Spine01",
        "chest": "CC_Base_Spine02",
        "neck": "CC_Base_NeckTwist01",
        "shoulder.L": "CC_Base_L_Clavicle",
        "upper_arm.R": "CC_Base_R_Upperarm",
        "thigh.L": "CC_Base_L_Thigh",
        "shin.L": "CC_Base_L_Calf",
    },
    "unreal": {
        "hips": "pelvis",
        "spine": "spine_01",
        "chest": "spine_02",
        "neck": "neck_01",
        "shoulder.L": "clavicle_l",
        "upper_arm.L": "upperarm_l",
        "forearm.R": "lowerarm_r",
        "thigh.R": "thigh_r",
        "shin.L": "calf_l",
        "toe.R": "ball_r",
    },
    "biped": {
        "hips": "Bip01 Pelvis",
        "spine": "Bip01 Spine",
        "chest": "Bip01 Spine1",
        "shoulder.R": "Bip01 R Clavicle",
        "upper_arm.L": "Bip01 L UpperArm",
        "shin.R": "Bip01 R Calf",
        "toe.L": "Bip01 L Toe0",
    },
    "rigify_def": {"spine": "DEF-spine", "upper_arm.L": "DEF-upper_arm.L", "toe.L": "DEF-toe.L", "hand.R": "DEF-hand.R"},
}


@pytest.mark.parametrize("convention", sorted(CONVENTIONS))
def test_match_bone_names_across_conventions(convention):
    names = CONVENTIONS[convention]
    mapping = match_bone_names(HUMANOID_NAMES, names)
    for dst, src in EXPECTED[convention].items():
        assert mapping.get(dst) == src, f"{convention}: {dst} -> {mapping.get(dst)}, expected {src}"
    assert len(set(mapping.values())) == len(mapping), "one-to-one"
    # Sides never cross.
    for dst, src in mapping.items():
        assert bone_category(dst)[0] == bone_category(src, names)[0]


@pytest.mark.parametrize("convention", ["bandai", "cmu_bvh", "cmu_collar", "mixamo", "character_creator", "unreal", "biped"])
def test_full_humanoid_coverage(convention):
    mapping = match_bone_names(HUMANOID_NAMES, CONVENTIONS[convention])
    assert set(mapping) == set(HUMANOID_NAMES)


def test_match_between_two_foreign_conventions():
    mapping = match_bone_names(CONVENTIONS["mixamo"], CONVENTIONS["cmu_collar"])
    assert mapping["mixamorig:LeftShoulder"] == "LeftCollar"
    assert mapping["mixamorig:LeftArm"] == "LeftShoulder"
    assert mapping["mixamorig:RightUpLeg"] == "RightHip"
    assert mapping["mixamorig:LeftToeBase"] == "LeftToe"


def test_match_prefers_exact_names_and_handles_empty():
    assert match_bone_names(["Spine", "spine"], ["spine", "Spine"]) == {"Spine": "Spine", "spine": "spine"}
    assert match_bone_names([], ["a"]) == {}
    assert match_bone_names(["a"], []) == {}
    assert match_bone_names(["LHipJoint"], ["lhipjoint"]) == {"LHipJoint": "lhipjoint"}


@pytest.mark.parametrize(
    ("name", "mirrored"),
    [
        ("upper_arm.L", "upper_arm.R"),
        ("thigh.r", "thigh.l"),
        ("Toes_L", "Toes_R"),
        ("foot-l", "foot-r"),
        ("L_Thigh", "R_Thigh"),
        ("CC_Base_L_Thigh", "CC_Base_R_Thigh"),
        ("Bip01 L UpperArm", "Bip01 R UpperArm"),
        ("LeftArm", "RightArm"),
        ("mixamorig:RightHand", "mixamorig:LeftHand"),
        ("hand_left", "hand_right"),
        ("LEFT_FOOT", "RIGHT_FOOT"),
        ("lhumerus", "rhumerus"),
        ("rShldr", "lShldr"),
        ("LHipJoint", "RHipJoint"),
        ("thigh.L.001", "thigh.R.001"),
        ("spine", None),
        ("Hips", None),
        ("lowerback", None),
        ("Leg", None),
        ("root", None),
    ],
)
def test_mirror_name(name, mirrored):
    assert mirror_name(name) == mirrored
    if mirrored is not None:
        assert mirror_name(mirrored) == name


def test_bone_category_context_rules():
    assert bone_category("LeftShoulder")[1] == "shoulder"
    assert bone_category("LeftShoulder", ["LeftCollar", "LeftShoulder"])[1] == "upper_arm"
    assert bone_category("LeftHip", ["LeftHip", "LeftKnee"])[1] == "thigh"
    assert bone_category("Hips")[:2] == (None, "hips")
    assert bone_category("upper_arm.R") == ("R", "upper_arm", 0)
    assert bone_category("tail.001")[1] == "tail"


def test_mirror_local_rotation_is_an_involution_and_mirrors_matrices():
    q = quaternion_random(100, np.random.default_rng(9))
    np.testing.assert_array_equal(mirror_local_rotation(mirror_local_rotation(q)), q)
    np.testing.assert_allclose(
        matrix_from_quaternion(mirror_local_rotation(q)), MIRROR @ matrix_from_quaternion(q) @ MIRROR, atol=1e-12
    )
    # It is a homomorphism: mirror(a * b) = mirror(a) * mirror(b).
    a, b = q[:50], q[50:]
    np.testing.assert_allclose(
        mirror_local_rotation(quaternion_multiply(a, b)),
        quaternion_multiply(mirror_local_rotation(a), mirror_local_rotation(b)),
        atol=1e-12,
    )
    v = np.random.default_rng(10).normal(size=(100, 3))
    np.testing.assert_allclose(
        quaternion_rotate(mirror_local_rotation(q), v @ MIRROR), quaternion_rotate(q, v) @ MIRROR, atol=1e-12
    )
