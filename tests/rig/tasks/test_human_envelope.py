# SPDX-License-Identifier: GPL-3.0-or-later
"""The human preset in Blender, on humanoids built every way rigs come: T-pose, A-pose with
rolled bones, Y-up, and a rest pose that is not a standing one (found, and a neutral posture
taken from the rig's action). One click limits every joint; the stored limits accept motion
inside the clinical references and refuse every pose of the impossible set."""

import json

import bpy
import humanoid_variants as hv
import numpy as np
import pytest

pytestmark = pytest.mark.blender42

VARIANTS = ("t_pose", "a_pose_rolled", "y_up", "rest_not_standing")


def _skeleton(lib, variant):
    body = lib.body.skeleton.humanoid_skeleton()
    if variant == "t_pose":
        return hv.humanoid_variant(lib, hv.rigify_name)[0]
    if variant == "a_pose_rolled":
        return hv.humanoid_variant(lib, hv.mixamo_name, arms_down_deg=40.0, roll_seed=11)[0]
    if variant == "y_up":
        return hv.y_up(lib, body)
    return hv.rested_in_pose(lib, body)


def _on_rig(lib, body, skeleton, basis):
    """Basis rotations of ``skeleton`` that pose it as ``basis (F, n, 4)`` poses ``body`` (the
    same bones, another rest pose)."""
    sk = lib.body.skeleton
    return sk.local_from_armature_rotations(skeleton, sk.armature_rotations(body, basis))


@pytest.mark.parametrize("variant", VARIANTS)
def test_the_preset_accepts_motion_inside_the_references_and_refuses_the_impossible_set(clean_file, addon, variant):
    lib = addon.limits
    skeleton = _skeleton(lib, variant)
    # the same body standing upright (Z up), which the motion is written on
    body = skeleton if variant != "rest_not_standing" else lib.body.skeleton.humanoid_skeleton()
    if variant == "y_up":
        body = lib.body.skeleton.humanoid_skeleton()
    matches = lib.body.bone_names.match_joints(body.names, body.parents)[0]
    upright = lib.body.retarget.RigFrames(body, matches)
    rng = np.random.default_rng(3)
    count = 60
    motion = np.tile([1.0, 0.0, 0.0, 0.0], (count + 1, len(body), 1))  # frame 1 stands neutral
    for name, match in upright.matches.items():
        motion[1:, body.index(name)] = upright.basis(name, hv.envelope_motion(lib, match.joint, count, rng, share=0.8))
    if variant == "y_up":
        on_rig = motion  # (the same rest pose, turned as a whole: the same basis rotations)
    else:
        on_rig = _on_rig(lib, body, skeleton, motion) if variant == "rest_not_standing" else motion

    obj = addon.rig.io.humanoid.build_armature(skeleton, name=variant)
    order = [skeleton.index(pb.name) for pb in obj.pose.bones]  # (keyed in pose.bones order)
    addon.rig.io.humanoid.key_rotations(obj, on_rig[:, order], "Motion")
    assert bpy.ops.pose.joint_limits_apply_preset("EXEC_DEFAULT") == {"FINISHED"}
    limited = {pb.name: pb for pb in obj.pose.bones if pb.joint_limit.has_limit}
    assert len(limited) == len(upright.matches) == 20  # every joint of the body
    report = bpy.data.texts[addon.rig.tasks.preset.TEXT_NAME].as_string()
    assert ("the rest pose is not a standing one" in report) == (variant == "rest_not_standing")

    impossible = lib.body.envelope.impossible_poses()
    refused = {}  # each impossible pose: refused by some bone of its joint (a chain's spread evenly)
    for name, pb in limited.items():
        limit = addon.api.limit(pb)
        b = skeleton.index(name)
        inside = limit.contains(on_rig[:, b])
        assert inside.all(), (variant, name, np.flatnonzero(~inside))
        joint = upright.matches[name].joint
        for pose in (p for p in impossible if p.joint == joint):
            alone = np.tile([1.0, 0.0, 0.0, 0.0], (1, len(body), 1))
            alone[0, body.index(name)] = upright.basis(name, pose.anatomical()[None])[0]
            local = alone if variant == "y_up" else _on_rig(lib, body, skeleton, alone)
            refused[pose.words] = refused.get(pose.words, False) or not limit.contains(local[0, b])
    assert len(refused) == len(impossible) and all(refused.values()), (variant, [k for k, v in refused.items() if not v])


def test_auto_on_a_humanoid_joins_a_few_clips_with_the_envelope_and_says_so(clean_file, addon):
    """Auto on a humanoid's knee sampled from a shuffle (flexed 0-40 degrees) accepts a deep
    squat's flexion (another style) and refuses a hyperextended knee; the fit report names the
    human joint. With *Human Envelope* off, or on a rig that is no humanoid, Auto fits the
    samples alone and the squat is refused."""
    lib = addon.limits
    body = lib.body.skeleton.humanoid_skeleton()
    frames = lib.body.retarget.RigFrames(body, lib.body.bone_names.match_joints(body.names, body.parents)[0])
    flexion = np.linspace(0.0, 40.0, 40)
    shuffle = lib.body.envelope.motion("knee.L", np.stack([-flexion, np.zeros(40), np.zeros(40)], axis=-1))
    squat = frames.basis("shin.L", lib.body.envelope.motion("knee.L", [(-130.0, 0.0, 0.0)]))[0]
    hyperextended = frames.basis("shin.L", lib.body.envelope.motion("knee.L", [(30.0, 0.0, 0.0)]))[0]

    def fit(skeleton, name, envelope=True):
        obj = addon.rig.io.humanoid.build_armature(skeleton, name="fit")
        pb = obj.pose.bones[name]
        addon.rig.io.storage.write_cloud(pb, frames.basis("shin.L", shuffle), clip="shuffle")
        pb.joint_limit.human_envelope = envelope
        limit = addon.rig.tasks.fit.fit_pose_bone(obj, pb)
        return limit, addon.rig.tasks.fit_report.human_line(pb)

    limit, line = fit(body, "shin.L")
    assert limit.model.kind == "reach_cone" and "knee.L" in line
    assert limit.contains(squat) and not limit.contains(hyperextended)
    limit, line = fit(body, "shin.L", envelope=False)
    assert limit.model.kind != "reach_cone" and line == "" and not limit.contains(squat)
    leg = [body.index(n) for n in ("thigh.L", "shin.L")]  # two bones: no humanoid
    two = lib.body.skeleton.Skeleton(
        ["thigh.L", "shin.L"], np.array([-1, 0]), body.heads[leg], body.tails[leg], body.rest_rotations[leg]
    )
    limit, line = fit(two, "shin.L")
    assert limit.model.kind != "reach_cone" and line == "" and not limit.contains(squat)


def test_the_default_fit_of_a_humanoid_refuses_the_impossible_set(clean_file, addon):
    """Every joint of the humanoid fitted with Auto from a little generated motion inside the
    references (one style) and, as a capture solver's errors, the impossible set's poses of the
    joint (a chain's whole turn on one bone): each refuses every pose of the impossible set, spread
    over its chain or not, and the fit report counts the errors left out."""
    lib = addon.limits
    body = lib.body.skeleton.humanoid_skeleton()
    frames = lib.body.retarget.RigFrames(body, lib.body.bone_names.match_joints(body.names, body.parents)[0])
    obj = addon.rig.io.humanoid.build_armature(body, name="default")
    rng = np.random.default_rng(9)
    anatomy = addon.rig.io.anatomy.rig_anatomy(obj)
    impossible = lib.body.envelope.impossible_poses()
    refused = {}  # each impossible pose spread over its chain: refused by some bone of the chain
    for name, match in frames.matches.items():
        pb = obj.pose.bones[name]
        motion = frames.basis(name, hv.envelope_motion(lib, match.joint, 30, rng, share=0.4))
        poses = [p for p in impossible if p.joint == match.joint]
        # a solver's error on one bone: a spine's or neck's whole impossible turn on this bone
        alone = lib.body.retarget.basis_from_anatomical
        errors = [alone(pose.anatomical()[None], *frames.frames_of(name))[0] for pose in poses]
        addon.rig.io.storage.write_cloud(pb, np.concatenate([motion, *([errors] if errors else [])]), clip="one style")
        limit = addon.rig.tasks.fit.fit_pose_bone(obj, pb, None, anatomy)
        assert limit.model.kind == "reach_cone" and limit.contains(motion).all(), name
        for pose, q in zip(poses, errors, strict=True):
            assert not limit.contains(q), (name, pose.words)
            spread = not limit.contains(frames.basis(name, pose.anatomical()[None]))[0]
            refused[pose.words] = refused.get(pose.words, False) or spread
        human = json.loads(pb.joint_limit.fit_report)["human"]
        assert (human["own"], human["left_out"]) == (30, len(errors)), (name, human)
        if errors:
            assert f"{len(errors)} more than 15 degrees beyond a body left out" in addon.rig.tasks.fit_report.human_line(pb)
    assert len(refused) == len(impossible) and all(refused.values()), [k for k, v in refused.items() if not v]
