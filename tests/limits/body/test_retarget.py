# SPDX-License-Identifier: GPL-3.0-or-later
"""limits/body/retarget.py and limits/body/bone_names.py: anatomical rotations that mean the same on any
humanoid rig, and bone names read across conventions (numpy only)."""

import json
from pathlib import Path

import humanoid_variants as hv
import numpy as np
import pytest

import limits
from limits.body import envelope
from limits.body.bone_names import BoneMatch, match_joints
from limits.body.retarget import (
    RigFrames,
    anatomical_from_basis,
    basis_from_anatomical,
    body_frame,
    body_frame_from_rest,
    chain_share,
    segment_frames,
)
from limits.body.skeleton import Skeleton, humanoid_skeleton
from limits.geometry.quaternion import (
    matrix_from_quaternion,
    quaternion_angle,
    quaternion_from_exp_map,
    quaternion_multiply,
    quaternion_random,
)

PRESET = Path(__file__).resolve().parents[3] / "limits" / "body" / "preset_data" / "human_rom.json"


def frames_of(skeleton):
    return RigFrames(skeleton, match_joints(skeleton.names, skeleton.parents)[0])


def random_basis(n_bones, frames, rng, scale=0.6):
    return quaternion_from_exp_map(rng.normal(scale=scale, size=(frames, n_bones, 3)))


def test_round_trip_anatomical_basis_anatomical():
    rng = np.random.default_rng(0)
    rest = quaternion_random(50, rng)
    child = segment_frames(
        rng.normal(size=(50, 3)), ["FORWARD", "UP", "BODY", "FORWARD", "UP"] * 10, body_frame([0, 0, 1], [1, 0, 0])
    )
    parent = matrix_from_quaternion(quaternion_random(50, rng))
    a = quaternion_random(50, rng)
    basis = basis_from_anatomical(a, rest, child, parent)
    back = anatomical_from_basis(basis, rest, child, parent)
    assert np.degrees(quaternion_angle(back, a)).max() < 1e-9
    again = basis_from_anatomical(back, rest, child, parent)
    assert np.degrees(quaternion_angle(again, basis)).max() < 1e-9


def test_body_frame_is_blender_for_a_blender_rig():
    body = frames_of(humanoid_skeleton()).body
    # columns: left (+X), up (+Z), forward (-Y: Blender characters face -Y)
    assert np.allclose(body, [[1, 0, 0], [0, 0, -1], [0, 1, 0]], atol=0.05)
    assert np.isclose(np.linalg.det(body), 1.0)
    nothing_matched = body_frame_from_rest(np.zeros((2, 3)), [None, None])
    assert np.allclose(nothing_matched, [[1, 0, 0], [0, 0, -1], [0, 1, 0]])  # Blender's axes
    with pytest.raises(ValueError, match="perpendicular"):
        body_frame([0, 0, 1], [0, 0, 2])


def test_segment_frames_follow_the_bone_and_the_body():
    body = body_frame([0, 0, 1], [1, 0, 0])
    down_left = np.array([1.0, 0.0, -1.0]) / np.sqrt(2)
    forward_frame, up_frame, body_kind = segment_frames([down_left, [0, -1, 0], [5, 5, 5]], ["FORWARD", "UP", "BODY"], body)
    assert np.allclose(forward_frame[:, 1], down_left) and np.allclose(forward_frame[:, 2], [0, -1, 0])
    assert np.allclose(up_frame[:, 1], [0, -1, 0]) and np.allclose(up_frame[:, 2], [0, 0, 1])  # a foot: Z up
    assert np.allclose(body_kind, body)
    for f in (forward_frame, up_frame):
        assert np.allclose(f.T @ f, np.eye(3)) and np.isclose(np.linalg.det(f), 1.0)
    with pytest.raises(ValueError, match="frame kind"):
        segment_frames([[0, 1, 0]], ["SIDEWAYS"], body)


@pytest.mark.parametrize("arms_down", [0.0, 45.0, 60.0])
def test_same_pose_same_anatomical_rotations_on_other_rolls_rest_poses_and_names(arms_down):
    """The same physical pose of two rigs built differently (names, every bone's roll, T- or
    A-pose) gives the same anatomical rotation at every joint, so a preset's limits mean the
    same on both."""
    rng = np.random.default_rng(1)
    t_rig, _, _ = hv.humanoid_variant(limits, hv.rigify_name)
    other, rolls, _ = hv.humanoid_variant(limits, hv.mixamo_name, arms_down_deg=arms_down, roll_seed=2)
    t_basis = random_basis(len(t_rig), 40, rng)
    other_basis = hv.same_pose(limits, t_rig, t_basis, other, rolls)
    assert np.degrees(quaternion_angle(other_basis, t_basis)).max() > 30  # the rigs' bases differ
    t_joints = frames_of(t_rig).joint_rotations(t_basis)
    other_joints = frames_of(other).joint_rotations(other_basis)
    assert sorted(t_joints) == sorted(other_joints)
    assert len(t_joints) == 18  # 8 sided joints a side, the spine and the neck
    for joint in t_joints:
        assert np.degrees(quaternion_angle(t_joints[joint], other_joints[joint])).max() < 1e-6, joint


def test_preset_rotations_pose_both_rigs_alike():
    """Basis rotations made from one set of anatomical rotations pose a T-pose rig and an A-pose
    rig with other rolls in the same physical pose."""
    rng = np.random.default_rng(3)
    t_rig, _, _ = hv.humanoid_variant(limits, hv.rigify_name)
    other, rolls, _ = hv.humanoid_variant(limits, hv.mixamo_name, arms_down_deg=45.0, roll_seed=4)
    t_frames, other_frames = frames_of(t_rig), frames_of(other)
    anatomical = {m.joint: quaternion_random(30, rng) for m in t_frames.matches.values()}
    t_basis = np.tile([1.0, 0, 0, 0], (30, len(t_rig), 1))
    other_basis = t_basis.copy()
    for frames, basis in ((t_frames, t_basis), (other_frames, other_basis)):
        for name, match in frames.matches.items():
            basis[:, frames.skeleton.index(name)] = frames.basis(name, anatomical[match.joint])
    expected = hv.same_pose(limits, t_rig, t_basis, other, rolls)
    assert np.degrees(quaternion_angle(other_basis, expected)).max() < 1e-6


def test_armature_axes_do_not_matter():
    """A rig lying in a Y-up armature space (a BVH import) gives the same anatomical rotations."""
    rng = np.random.default_rng(5)
    rig = humanoid_skeleton()
    turn = np.array([np.cos(np.pi / 4), np.sin(np.pi / 4), 0.0, 0.0])  # 90 degrees about X: Z up -> Y up
    m = matrix_from_quaternion(turn)
    lying = Skeleton(rig.names, rig.parents, rig.heads @ m.T, rig.tails @ m.T, quaternion_multiply(turn, rig.rest_rotations))
    basis = random_basis(len(rig), 10, rng)
    a, b = frames_of(rig).joint_rotations(basis), frames_of(lying).joint_rotations(basis)
    for joint in a:
        assert np.degrees(quaternion_angle(a[joint], b[joint])).max() < 1e-6


def test_chains_share_their_rotation_evenly():
    rng = np.random.default_rng(6)
    total = quaternion_from_exp_map(rng.normal(scale=0.7, size=(20, 3)))
    for share in (1, 2, 3, 5):
        part = chain_share(total, share)
        composed = part
        for _ in range(share - 1):
            composed = quaternion_multiply(composed, part)
        assert np.degrees(quaternion_angle(composed, total)).max() < 1e-9
    with pytest.raises(ValueError, match="whole number"):
        chain_share(total, 0)


def test_a_chain_bone_takes_its_weighted_part_per_axis():
    total = quaternion_from_exp_map(np.array([[0.4, 0.8, -0.2]]))
    part = chain_share(total, 2, weights=[0.5, 0.25, 1.0])
    expected = quaternion_from_exp_map(np.array([[0.2, 0.2, -0.2]]))
    assert np.degrees(quaternion_angle(part, expected)).max() < 1e-9
    assert np.degrees(quaternion_angle(chain_share(total, 2, weights=[0.5] * 3), chain_share(total, 2))).max() < 1e-9


def test_a_spine_of_two_bones_and_of_three_compose_alike():
    """A rig with more spine bones gives each a smaller share; the chain as a whole turns the
    chest the same."""
    rig = humanoid_skeleton()
    frames = frames_of(rig)
    assert frames.matches["spine"] == BoneMatch("spine", 2) and frames.matches["head"] == BoneMatch("neck", 2, 1)
    a = quaternion_from_exp_map(np.array([[0.3, 0.2, -0.4]]))
    parts = [frames.basis(name, a) for name in ("spine", "chest")]
    basis = np.tile([1.0, 0, 0, 0], (1, len(rig), 1))
    basis[:, rig.index("spine")], basis[:, rig.index("chest")] = parts
    assert np.degrees(quaternion_angle(frames.joint_rotations(basis)["spine"], a)).max() < 1e-9


# -- bone names ----------------------------------------------------------------------------------


def joints_of(names, parents=None):
    parents = list(range(-1, len(names) - 1)) if parents is None else parents
    matches, unmatched = match_joints(names, parents)
    return {n: m.joint for n, m in matches.items()}, unmatched


def test_rigify_generated_rig():
    names = [
        "root",
        "DEF-spine",
        "DEF-spine.001",
        "DEF-spine.002",
        "DEF-spine.003",
        "DEF-spine.004",
        "DEF-spine.005",
        "DEF-spine.006",
    ]
    parents = [-1, 0, 1, 2, 3, 4, 5, 6]
    arm = ["DEF-shoulder.L", "DEF-upper_arm.L", "DEF-upper_arm.L.001", "DEF-forearm.L", "DEF-forearm.L.001", "DEF-hand.L"]
    org = ["ORG-shoulder.R", "ORG-upper_arm.R", "ORG-forearm.R", "ORG-hand.R"]
    extra = [
        "MCH-upper_arm_ik.L",
        "upper_arm_fk.L",
        "chest",
        "torso",
        "DEF-thigh.L",
        "DEF-thigh.L.001",
        "DEF-shin.L",
        "DEF-foot.L",
        "DEF-toe.L",
    ]
    all_names = names + arm + org + extra
    parents += [4, 8, 9, 10, 11, 12] + [4, 14, 15, 16] + [0, 0, 0, 0, 1, 22, 23, 24, 25]
    joints, unmatched = joints_of(all_names, parents)
    assert joints == {
        "DEF-spine.001": "spine",
        "DEF-spine.002": "spine",
        "DEF-spine.003": "spine",
        "DEF-spine.004": "neck",
        "DEF-spine.005": "neck",
        "DEF-spine.006": "neck",
        "DEF-shoulder.L": "clavicle.L",
        "DEF-upper_arm.L": "shoulder.L",
        "DEF-forearm.L": "elbow.L",
        "DEF-hand.L": "wrist.L",
        "ORG-shoulder.R": "clavicle.R",
        "ORG-upper_arm.R": "shoulder.R",
        "ORG-forearm.R": "elbow.R",
        "ORG-hand.R": "wrist.R",
        "DEF-thigh.L": "hip.L",
        "DEF-shin.L": "knee.L",
        "DEF-foot.L": "ankle.L",
        "DEF-toe.L": "toe.L",
    }
    assert "twist or copy" in unmatched["DEF-upper_arm.L.001"]
    assert "control or mechanism" in unmatched["chest"] and "control or mechanism" in unmatched["MCH-upper_arm_ik.L"]
    assert "hips" in unmatched["DEF-spine"]
    assert match_joints(all_names, parents)[0]["DEF-spine.002"].share == 3


def test_mixamo_unreal_cmu_and_generic_bvh_names():
    mixamo = [
        "mixamorig:Hips",
        "mixamorig:Spine",
        "mixamorig:Spine1",
        "mixamorig:Spine2",
        "mixamorig:LeftShoulder",
        "mixamorig:LeftArm",
        "mixamorig:LeftForeArm",
        "mixamorig:LeftHand",
        "mixamorig:LeftHandIndex1",
    ]
    assert joints_of(mixamo)[0] == {
        "mixamorig:Spine": "spine",
        "mixamorig:Spine1": "spine",
        "mixamorig:Spine2": "spine",
        "mixamorig:LeftShoulder": "clavicle.L",
        "mixamorig:LeftArm": "shoulder.L",
        "mixamorig:LeftForeArm": "elbow.L",
        "mixamorig:LeftHand": "wrist.L",
    }
    unreal = ["root", "pelvis", "spine_01", "spine_02", "spine_03", "spine_04", "spine_05", "neck_01", "neck_02", "head"]
    joints, unmatched = joints_of(unreal)
    assert [joints[n] for n in unreal[2:]] == ["spine"] * 5 + ["neck"] * 3
    assert set(unmatched) == {"root", "pelvis"}
    limb = ["pelvis", "thigh_l", "thigh_twist_01_l", "calf_l", "foot_l", "ball_l"]
    joints, unmatched = joints_of(limb, [-1, 0, 1, 1, 3, 4])
    assert joints == {"thigh_l": "hip.L", "calf_l": "knee.L", "foot_l": "ankle.L", "ball_l": "toe.L"}
    assert "thigh_twist_01_l" in unmatched
    arm = ["spine_03", "clavicle_r", "upperarm_r", "upperarm_twist_01_r", "lowerarm_r", "hand_r"]
    assert joints_of(arm, [-1, 0, 1, 2, 2, 4])[0] == {
        "clavicle_r": "clavicle.R",
        "upperarm_r": "shoulder.R",
        "lowerarm_r": "elbow.R",
        "hand_r": "wrist.R",
    }
    cmu = ["Hips", "LHipJoint", "LeftUpLeg", "LeftLeg", "LeftFoot", "LeftToeBase"]
    assert joints_of(cmu)[0] == {"LeftUpLeg": "hip.L", "LeftLeg": "knee.L", "LeftFoot": "ankle.L", "LeftToeBase": "toe.L"}
    asf = ["root", "lowerback", "upperback", "thorax", "lowerneck", "upperneck", "head"]
    assert joints_of(asf)[0] == dict(zip(asf[1:], ["spine"] * 3 + ["neck"] * 3, strict=True))
    asf_arm = ["thorax", "rclavicle", "rhumerus", "rradius", "rwrist", "rhand", "rfingers"]
    joints, unmatched = joints_of(asf_arm)
    assert joints == {"rclavicle": "clavicle.R", "rhumerus": "shoulder.R", "rradius": "elbow.R", "rwrist": "wrist.R"}
    assert "already matched as wrist.R" in unmatched["rhand"]
    generic = ["Hips", "Chest", "LeftCollar", "LeftShoulder", "LeftElbow", "LeftWrist", "RightHip", "RightKnee", "RightAnkle"]
    joints, _ = joints_of(generic, [-1, 0, 1, 2, 3, 4, 0, 6, 7])
    assert joints == {
        "Chest": "spine",
        "LeftCollar": "clavicle.L",
        "LeftShoulder": "shoulder.L",
        "LeftElbow": "elbow.L",
        "LeftWrist": "wrist.L",
        "RightHip": "hip.R",
        "RightKnee": "knee.R",
        "RightAnkle": "ankle.R",
    }
    bandai = [
        "joint_Root",
        "Hips",
        "Spine",
        "Chest",
        "Shoulder_L",
        "UpperArm_L",
        "LowerArm_L",
        "Hand_L",
        "UpperLeg_R",
        "LowerLeg_R",
        "Foot_R",
        "Toes_R",
    ]
    joints, _ = joints_of(bandai, [-1, 0, 1, 2, 3, 4, 5, 6, 1, 8, 9, 10])
    assert [joints.get(n) for n in bandai] == [
        None,
        None,
        "spine",
        "spine",
        "clavicle.L",
        "shoulder.L",
        "elbow.L",
        "wrist.L",
        "hip.R",
        "knee.R",
        "ankle.R",
        "toe.R",
    ]


def test_unknown_names_are_listed_not_guessed():
    names = ["Bone", "Bone.001", "Armature_Thing", "tail_01", "LeftEye", "jaw"]
    joints, unmatched = joints_of(names)
    assert joints == {}
    assert set(unmatched) == set(names)
    with pytest.raises(ValueError, match="parents"):
        match_joints(["a", "b"], [-1])


# -- the stored preset ---------------------------------------------------------------------------


def test_stored_preset_is_small_and_holds_only_what_real_motion_showed_beyond_the_envelope():
    """The file holds, per joint, rotations real clips reached beyond the human envelope, no
    further than it says, from sources it names with their licences."""
    assert PRESET.stat().st_size < 1 << 20
    data = json.loads(PRESET.read_text(encoding="utf-8"))
    assert data["format"] == "joint_limits_preset" and len(data["sources"]) >= 2
    assert all(source["licence"] for source in data["sources"])
    beyond = data["built"]["beyond_degrees"]
    for joint, rows in data["joints"].items():
        v = np.asarray(rows, dtype=float)
        assert v.ndim == 2 and v.shape[1] == 3 and np.isfinite(v).all(), joint
        outside = envelope.degrees_outside(joint, quaternion_from_exp_map(v))
        assert outside.min() > -1e-9 and outside.max() <= beyond + 0.1, joint  # (+ the rounding to 3 decimals)


def test_a_generated_rigify_rig_is_limited_on_its_org_chain():
    """Rigify's mechanism drives the ORG- bones and the DEF- bones follow them: where both name a
    joint, the ORG- bone carries the limit and its DEF- twin is left alone, saying why."""
    names = ["root", "ORG-spine", "ORG-spine.001", "DEF-spine", "DEF-spine.001"]
    parents = [-1, 0, 1, 0, 3]
    names += ["ORG-upper_arm.L", "ORG-forearm.L", "DEF-upper_arm.L", "DEF-upper_arm.L.001", "DEF-forearm.L", "DEF-hand.L"]
    parents += [2, 5, 4, 7, 8, 9]
    joints, unmatched = joints_of(names, parents)
    assert joints == {
        "ORG-spine.001": "spine",
        "ORG-upper_arm.L": "shoulder.L",
        "ORG-forearm.L": "elbow.L",
        "DEF-hand.L": "wrist.L",
    }
    for name in ("DEF-spine.001", "DEF-upper_arm.L", "DEF-forearm.L"):
        assert "follows its ORG- bone" in unmatched[name]
