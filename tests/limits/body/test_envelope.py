# SPDX-License-Identifier: GPL-3.0-or-later
"""limits/body/envelope.py, limits/body/neutral.py and the reach cone on a rig's anatomical frames:
the human envelope accepts motion inside the references and refuses the impossible set, on
T-pose, A-pose, rolled, Y-up and rest-not-neutral rigs (numpy only)."""

import humanoid_variants as hv
import numpy as np
import pytest

import limits
from limits.body import envelope
from limits.body.bone_names import match_joints
from limits.body.neutral import neutral_posture, rest_problems
from limits.body.retarget import RigFrames
from limits.body.skeleton import (
    armature_rotations,
    humanoid_skeleton,
    local_from_armature_rotations,
)
from limits.body.vertebrae import bone_weights, segment_weights
from limits.geometry.quaternion import quaternion_from_exp_map
from limits.models.reach_cone import ReachConeLimit

JOINTS = sorted(envelope.RANGES)


def sided(joint):
    return [joint] if joint in ("spine", "neck") else [f"{joint}.L", f"{joint}.R"]


ALL_JOINTS = [j for base in JOINTS for j in sided(base)]


def inside_motion(joint, count, rng, share=0.9):
    return hv.envelope_motion(limits, joint, count, rng, share)


@pytest.mark.parametrize("joint", ALL_JOINTS)
def test_the_envelope_holds_its_samples_and_motion_within_the_references(joint):
    assert envelope.degrees_outside(joint, envelope.envelope_samples(joint)).max() < 1e-6
    assert envelope.degrees_outside(joint, inside_motion(joint, 300, np.random.default_rng(1))).max() < 1e-6


def test_every_impossible_pose_is_far_outside_the_envelope():
    poses = envelope.impossible_poses()
    assert {envelope.base_of(p.joint) for p in poses} == set(JOINTS)  # every joint has some
    for pose in poses:
        assert envelope.degrees_outside(pose.joint, pose.anatomical()) > envelope.SOLVER_ERROR_DEGREES, pose.words


def test_the_right_side_is_the_left_mirrored():
    rng = np.random.default_rng(2)
    v = rng.normal(scale=60.0, size=(500, 3))
    for base in JOINTS:
        if base in ("spine", "neck"):
            continue
        left = envelope.motion(f"{base}.L", v)
        right = envelope.motion(f"{base}.R", v)
        np.testing.assert_allclose(
            envelope.degrees_outside(f"{base}.L", left), envelope.degrees_outside(f"{base}.R", right), atol=1e-6
        )
        # a mirror image: X kept, Y and Z flipped
        mirrored = left * np.array([1.0, 1.0, -1.0, -1.0])
        np.testing.assert_allclose(np.abs(np.sum(mirrored * right, axis=-1)), 1.0, atol=1e-9)


def test_references_read_as_clinicians_write_them():
    def out(joint, vector):
        return float(envelope.degrees_outside(joint, envelope.motion(joint, vector)))

    assert out("knee.L", (-140.0, 0, 0)) == 0.0 and out("knee.L", (15.0, 0, 0)) > 4.0  # flexion, hyperextension
    assert out("elbow.R", (140.0, 0, 0)) == 0.0 and out("elbow.R", (-20.0, 0, 0)) > 9.0
    assert out("hip.L", (110.0, 0, 0)) == 0.0 and out("hip.L", (-50.0, 0, 0)) > 9.0  # flexion, extension
    assert out("hip.R", (0, 0, 50.0)) == 0.0 and out("hip.R", (0, 0, -50.0)) > 9.0  # abduction, adduction
    assert out("spine", (0, 50.0, 0)) == 0.0 and out("spine", (0, 70.0, 0)) > 14.0  # rotation
    assert out("ankle.L", (-55.0, 0, 0)) == 0.0 and out("ankle.L", (-75.0, 0, 0)) > 9.0  # plantarflexion


def _rig_variants():
    """Skeletons of one body: the embedded humanoid, a T-pose with Rigify names, an A-pose with
    Mixamo names and rolled bones, and the humanoid built Y-up."""
    return {
        "humanoid": humanoid_skeleton(),
        "t_pose_rigify": hv.humanoid_variant(limits, hv.rigify_name)[0],
        "a_pose_rolled_mixamo": hv.humanoid_variant(limits, hv.mixamo_name, arms_down_deg=45.0, roll_seed=3)[0],
        "y_up": hv.y_up(limits, humanoid_skeleton()),
    }


RIGS = _rig_variants()


def _weights(match, spread=bone_weights):
    return spread(match.base, match.share, match.place) if match.base in ("spine", "neck") else None


def _cones(skeleton, frames):
    """``{bone: (joint, reach cone)}`` fitted as the preset fits them: the envelope's samples
    turned into each matched bone's basis (a chain bone's share of its chain's), in its
    anatomical frames."""
    out = {}
    for name, match in frames.matches.items():
        basis = frames.basis(name, envelope.envelope_samples(match.joint), _weights(match))
        left, right = envelope.cone_frames(match.joint, *frames.frames_of(name))
        out[name] = (match.joint, ReachConeLimit.fit(basis, padding=0.0, frame_left=left, frame_right=right))
    return out


@pytest.mark.parametrize("rig", list(RIGS))
def test_cones_on_any_rig_accept_motion_inside_and_refuse_the_impossible_set(rig):
    """Motion inside the references passes every bone; each impossible pose is refused by some
    bone of its joint, a spine's or neck's spread over its bones evenly or as a spine spreads it
    (by its motion segments)."""
    skeleton = RIGS[rig]
    frames = RigFrames(skeleton, match_joints(skeleton.names, skeleton.parents)[0])
    cones = _cones(skeleton, frames)
    assert {j for j, _ in cones.values()} >= set(ALL_JOINTS)  # every joint of the body is limited
    rng = np.random.default_rng(4)
    refused = {}
    for name, (joint, cone) in cones.items():
        basis = frames.basis(name, inside_motion(joint, 200, rng))
        assert cone.contains(basis).all(), (rig, name)
        match = frames.matches[name]
        for pose in envelope.impossible_poses():
            if pose.joint == joint:
                for spread in (None, segment_weights):
                    q = frames.basis(name, pose.anatomical()[None], spread and _weights(match, spread))
                    key = (pose.words, spread is None)
                    refused[key] = refused.get(key, False) or not cone.contains(q)[0]
    assert refused and all(refused.values()), (rig, [k for k, v in refused.items() if not v])


def test_a_rest_pose_that_is_not_neutral_is_found_and_a_neutral_one_taken_from_the_motion():
    body = humanoid_skeleton()
    matches = match_joints(body.names, body.parents)[0]
    assert rest_problems(body, matches) == []
    rng = np.random.default_rng(5)
    posed = hv.rested_in_pose(limits, body)  # as Bandai's clips rest
    problems = rest_problems(posed, matches)
    assert any("thigh.L" in p for p in problems) and any("upper_arm.L" in p for p in problems)
    # motion: neutral standing once, then joints turned inside their references
    motion = np.tile([1.0, 0.0, 0.0, 0.0], (40, len(body), 1))
    plain = RigFrames(body, matches)
    for name, match in plain.matches.items():
        motion[1:, body.index(name)] = plain.basis(name, inside_motion(match.joint, 39, rng, share=0.5))
    on_posed = local_from_armature_rotations(posed, armature_rotations(body, motion))
    frame, posture = neutral_posture(posed, matches, on_posed)
    assert frame == 0
    frames = RigFrames(posed, matches, posture=posture)
    for name in plain.matches:
        np.testing.assert_allclose(
            np.abs(
                np.sum(
                    frames.anatomical(name, on_posed[:, posed.index(name)]) * plain.anatomical(name, motion[:, body.index(name)]),
                    axis=-1,
                )
            ),
            1.0,
            atol=1e-9,
        )


def test_a_hinge_straight_at_rest_bends_the_way_the_motion_bends_it():
    body = hv.humanoid_variant(limits, hv.rigify_name)[0]  # T-pose: elbows straight
    matches = match_joints(body.names, body.parents)[0]
    plain = RigFrames(body, matches)
    name = next(n for n, m in matches.items() if m.joint == "elbow.L")
    tilt = np.radians(35.0)  # the rig's elbow flexes about an axis 35 degrees off the frame's X
    angles = np.radians(np.linspace(10.0, 130.0, 40))
    anatomical = quaternion_from_exp_map(angles[:, None] * np.array([np.cos(tilt), 0.0, np.sin(tilt)]))
    motion = np.tile([1.0, 0.0, 0.0, 0.0], (40, len(body), 1))
    motion[:, body.index(name)] = plain.basis(name, anatomical)
    frames = RigFrames(body, matches, motion=motion)
    v = limits.geometry.quaternion.exp_map_from_quaternion(frames.anatomical(name, motion[:, body.index(name)]))
    np.testing.assert_allclose(v[:, 2], 0.0, atol=1e-6)  # flexion about X alone
    np.testing.assert_allclose(v[:, 0], angles, atol=1e-6)
    assert any("elbow.L bends the way the motion bends it" in a for a in frames.assumed)


def test_a_hand_bent_in_the_posture_frame_keeps_its_rest_as_its_neutral():
    """On a rig rested in a pose, the neutral posture is a motion frame chosen for the legs,
    spine and arms: a hand bent and turned on that frame must not move the wrist's neutral when
    the motion's hand stays nearer its rest."""
    body = humanoid_skeleton()
    matches = match_joints(body.names, body.parents)[0]
    posed = hv.rested_in_pose(limits, body)
    plain = RigFrames(body, matches)
    hand = next(n for n, m in matches.items() if m.joint == "wrist.L")
    rng = np.random.default_rng(6)
    motion = np.tile([1.0, 0.0, 0.0, 0.0], (40, len(body), 1))
    motion[:, body.index(hand)] = plain.basis(hand, inside_motion("wrist.L", 40, rng, share=0.3))
    motion[0, body.index(hand)] = plain.basis(hand, envelope.motion("wrist.L", [(0.0, 70.0, 60.0)]))[0]
    on_posed = local_from_armature_rotations(posed, armature_rotations(body, motion))
    frame, posture = neutral_posture(posed, matches, on_posed)
    assert frame == 0  # (the one standing frame)
    frames = RigFrames(posed, matches, posture=posture, motion=on_posed)
    assert "wrist.L's neutral is its rest (its motion stays nearer it than the posture's)" in frames.assumed
    expected = plain.anatomical(hand, motion[:, body.index(hand)])
    got = frames.anatomical(hand, on_posed[:, posed.index(hand)])
    np.testing.assert_allclose(np.abs(np.sum(got * expected, axis=-1)), 1.0, atol=1e-9)
    # without the motion there is nothing to tell by: the posture frame's hand is the neutral
    assert np.abs(RigFrames(posed, matches, posture=posture).anatomical(hand, on_posed[:1, posed.index(hand)])[0, 0]) > 1 - 1e-9
