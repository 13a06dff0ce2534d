# SPDX-License-Identifier: GPL-3.0-or-later
"""Limited IK, live (rig/live/limited_ik.py): IK chains holding limited bones are solved within the
limits on the evaluated pose, after frame changes and interactive moves of the target, on real
Blender."""

import math

import bpy
import numpy as np
import pytest
from rigs import chain_rig, cone_motion, evaluated_local_rotation, select_only

HALF_DEGREE = math.radians(0.5)
CHAIN = ("upper", "lower")


def _empty(name, location):
    empty = bpy.data.objects.new(name, None)
    bpy.context.scene.collection.objects.link(empty)
    empty.location = location
    return empty


def _limb(addon, pole_angle=0.0, fit=True):
    """root -> upper -> lower -> hand, 1 m bones along +Z; an IK on 'lower' (chain of 2) aiming
    at the Empty 'Target' with the pole 'Pole'; 'upper' and 'lower' fitted on cone motions of
    about 0.6 rad (the elbow bent about X on top)."""
    q_lib = addon.limits.geometry.quaternion
    obj = chain_rig(("root", "upper", "lower", "hand"))
    frames = 240
    motion = np.tile(np.array([1.0, 0.0, 0.0, 0.0]), (frames, 4, 1))
    motion[:, 1] = cone_motion(q_lib, frames, half_angle=0.6, seed=1)
    bend = q_lib.quaternion_from_exp_map(np.outer(0.4 + 0.3 * np.sin(np.linspace(0, 9, frames)), [1.0, 0.0, 0.0]))
    motion[:, 2] = q_lib.quaternion_multiply(bend, cone_motion(q_lib, frames, half_angle=0.3, twist=0.2, seed=2))
    addon.rig.io.humanoid.key_rotations(obj, motion, "ROM")
    if fit:
        select_only(obj, list(CHAIN))
        assert bpy.ops.pose.joint_limits_sample() == {"FINISHED"}
        for name in CHAIN:
            obj.pose.bones[name].joint_limit.model = "kdop"
        assert bpy.ops.pose.joint_limits_fit() == {"FINISHED"}
    obj.animation_data.action = None
    for pb in obj.pose.bones:
        pb.rotation_quaternion = (1.0, 0.0, 0.0, 0.0)
    obj.pose.bones["lower"].rotation_quaternion = (math.cos(0.2), math.sin(0.2), 0.0, 0.0)  # a slight bend
    target = _empty("Target", (0.5, 0.3, 2.2))
    pole = _empty("Pole", (0.0, -3.0, 2.0))
    con = obj.pose.bones["lower"].constraints.new("IK")
    con.target, con.chain_count = target, 2
    con.pole_target, con.pole_angle = pole, pole_angle
    bpy.context.view_layer.update()
    return obj, target, pole, con


def _limits(addon, obj):
    return [addon.rig.io.storage.read_limit(obj.pose.bones[n]) for n in CHAIN]


def _chain(addon, obj):
    bones = obj.data.bones
    return addon.limits.ik.chain.Chain.from_matrices(
        np.array([bones[n].matrix_local for n in CHAIN]), [bones[n].length for n in CHAIN], np.array(bones["root"].matrix_local)
    )


def _nearest_allowed_distance(addon, chain, limits, targets, counts=(2000, 200), seed=5):
    """Per target, the distance to the nearest tip among ``counts`` random rotations of each
    joint projected into its limit (all pairs): a brute-force search of the reachable set."""
    q_lib = addon.limits.geometry.quaternion
    rng = np.random.default_rng(seed)
    joints = [limit.project(q_lib.quaternion_random(count, rng)) for limit, count in zip(limits, counts)]
    pairs = np.stack(np.broadcast_arrays(joints[0][:, None], joints[1][None]), axis=-2).reshape(-1, 2, 4)
    tips = addon.limits.ik.chain.chain_positions(chain, pairs)[:, -1]
    return np.array([np.min(np.linalg.norm(tips - t, axis=-1)) for t in targets])


def _targets(count, seed=0):
    """Target positions around, behind and beyond the limb (reach 2 m from (0, 0, 1))."""
    rng = np.random.default_rng(seed)
    directions = rng.normal(size=(count, 3))
    directions /= np.linalg.norm(directions, axis=1, keepdims=True)
    return np.array([0.0, 0.0, 1.0]) + directions * rng.uniform(0.3, 2.8, size=(count, 1))


@pytest.mark.blender42
@pytest.mark.parametrize("pole_angle", [0.0, 0.3, -1.2])
def test_the_solver_poses_a_limb_as_blenders_ik_does(clean_file, addon, pole_angle):
    """The chain conventions and the pole rule of limits/ik/chain.py against Blender's own IK."""
    obj, target, pole, con = _limb(addon, pole_angle, fit=False)
    start = np.array([[1.0, 0.0, 0.0, 0.0], [math.cos(0.2), math.sin(0.2), 0.0, 0.0]])
    for location in ((0.5, 0.3, 2.2), (-0.7, 0.4, 1.5), (0.2, -0.9, 2.4)):
        target.location = location
        bpy.context.view_layer.update()
        ours = addon.limits.ik.chain.solve_two_bone(
            _chain(addon, obj), np.array(location), np.array(pole.location), pole_angle, initial=start
        )
        theirs = np.array([evaluated_local_rotation(obj, n) for n in CHAIN])
        angle = addon.limits.geometry.quaternion.quaternion_angle(ours.local_rotations, theirs)
        # pole angle 0: 0.012 degrees; others up to 0.4 (Blender's Jacobian solve settles the
        # root's twist a little differently)
        assert np.degrees(angle).max() < (0.02 if pole_angle == 0.0 else 0.5), (location, np.degrees(angle))


def test_live_ik_keeps_the_limb_inside_its_limits(clean_file, addon):
    obj, target, _pole, _con = _limb(addon)
    limits = _limits(addon, obj)
    targets = _targets(500)
    plain, plain_worst = [], 0.0
    for location in targets[:40]:
        target.location = location
        bpy.context.view_layer.update()
        plain.append([np.array(obj.pose.bones[n].matrix) for n in CHAIN])
        for i, name in enumerate(CHAIN):
            plain_worst = max(plain_worst, float(limits[i].violation(evaluated_local_rotation(obj, name))))
    assert math.degrees(plain_worst) > 20.0, "Blender's IK alone leaves the limits"
    bpy.context.scene.joint_limits.enforce_live = True
    worst, gaps = 0.0, []
    for location in targets:
        target.location = location
        bpy.context.view_layer.update()  # an interactive move of the target
        for i, name in enumerate(CHAIN):
            worst = max(worst, float(limits[i].violation(evaluated_local_rotation(obj, name))))
        gaps.append(np.linalg.norm(np.array(obj.pose.bones["lower"].tail) - location))
    assert worst < HALF_DEGREE, math.degrees(worst)
    # the hand ends at the nearest position the limits allow: against a brute-force search
    brute = _nearest_allowed_distance(addon, _chain(addon, obj), limits, targets[::5])
    excess = np.array(gaps[::5]) - brute
    assert excess.max() < 0.02, excess.max()  # 2 cm on a 2 m limb
    assert np.mean(excess < 2e-3) > 0.9
    assert obj.pose.bones["lower"].constraints["IK"].mute, "held: enforcement solves it"
    # off: the plain rig, Blender's own IK again, exactly
    bpy.context.scene.joint_limits.enforce_live = False
    assert not obj.pose.bones["lower"].constraints["IK"].mute
    assert obj.pose.bones["lower"].joint_limit.held_ik == ""
    for location, matrices in zip(targets[:40], plain):
        target.location = location
        bpy.context.view_layer.update()
        for name, m in zip(CHAIN, matrices):
            assert np.array_equal(np.array(obj.pose.bones[name].matrix), m), name


def _rigify_style_limb(addon):
    """A Rigify-style arm: ORG bones (the ones the animation is sampled from, fitted) copy the
    transforms of a mechanism chain (MCH) that an IK poses, aimed at a control bone 'hand_ik'
    with the pole 'elbow_pole' (both children of 'root')."""
    q_lib = addon.limits.geometry.quaternion
    data = bpy.data.armatures.new("Arm")
    obj = bpy.data.objects.new("Arm", data)
    bpy.context.scene.collection.objects.link(obj)
    bpy.context.view_layer.objects.active = obj
    bpy.ops.object.mode_set(mode="EDIT")
    root = data.edit_bones.new("root")
    root.head, root.tail = (0.0, 0.0, 0.0), (0.0, 0.0, 1.0)
    for prefix in ("ORG", "MCH"):
        upper = data.edit_bones.new(f"{prefix}-upper")
        upper.head, upper.tail, upper.parent = (0.0, 0.0, 1.0), (0.0, 0.0, 2.0), root
        lower = data.edit_bones.new(f"{prefix}-lower")
        lower.head, lower.tail, lower.parent, lower.use_connect = (0.0, 0.0, 2.0), (0.0, 0.0, 3.0), upper, True
    for name, head in (("hand_ik", (0.5, 0.3, 2.6)), ("elbow_pole", (0.0, -2.0, 2.0))):
        bone = data.edit_bones.new(name)
        bone.head, bone.tail, bone.parent = head, (head[0], head[1], head[2] + 0.3), root
    bpy.ops.object.mode_set(mode="POSE")
    frames = 240
    names = [pb.name for pb in obj.pose.bones]
    motion = np.tile(np.array([1.0, 0.0, 0.0, 0.0]), (frames, len(names), 1))
    motion[:, names.index("ORG-upper")] = cone_motion(q_lib, frames, half_angle=0.6, seed=1)
    bend = q_lib.quaternion_from_exp_map(np.outer(0.4 + 0.3 * np.sin(np.linspace(0, 9, frames)), [1.0, 0.0, 0.0]))
    motion[:, names.index("ORG-lower")] = q_lib.quaternion_multiply(bend, cone_motion(q_lib, frames, 0.3, 0.2, seed=2))
    addon.rig.io.humanoid.key_rotations(obj, motion, "ROM")
    select_only(obj, ["ORG-upper", "ORG-lower"])
    assert bpy.ops.pose.joint_limits_sample() == {"FINISHED"}
    for name in ("ORG-upper", "ORG-lower"):
        obj.pose.bones[name].joint_limit.model = "kdop"
    assert bpy.ops.pose.joint_limits_fit() == {"FINISHED"}
    obj.animation_data.action = None
    for pb in obj.pose.bones:
        pb.rotation_quaternion = (1.0, 0.0, 0.0, 0.0)
    obj.pose.bones["MCH-lower"].rotation_quaternion = (math.cos(0.2), math.sin(0.2), 0.0, 0.0)
    for name in ("upper", "lower"):
        copy = obj.pose.bones[f"ORG-{name}"].constraints.new("COPY_TRANSFORMS")
        copy.target, copy.subtarget = obj, f"MCH-{name}"
    ik = obj.pose.bones["MCH-lower"].constraints.new("IK")
    ik.target, ik.subtarget, ik.chain_count = obj, "hand_ik", 2
    ik.pole_target, ik.pole_subtarget = obj, "elbow_pole"
    bpy.context.view_layer.update()
    return obj


@pytest.mark.blender42
def test_a_rigify_style_limb_is_solved_within_the_limits_fitted_on_its_org_bones(clean_file, addon):
    obj = _rigify_style_limb(addon)
    limits = [addon.rig.io.storage.read_limit(obj.pose.bones[n]) for n in ("ORG-upper", "ORG-lower")]
    control = obj.pose.bones["hand_ik"]
    moves = _targets(150, seed=3) - np.array([0.5, 0.3, 2.6])  # the control's head rests at (0.5, 0.3, 2.6)

    def worst():
        out = 0.0
        for location in moves:
            control.location = (location[0], location[2], -location[1])  # the bone's local axes: Y up
            bpy.context.view_layer.update()
            for limit, name in zip(limits, ("ORG-upper", "ORG-lower")):
                out = max(out, float(limit.violation(evaluated_local_rotation(obj, name))))
        return math.degrees(out)

    assert worst() > 20.0, "the plain rig leaves the limits"
    bpy.context.scene.joint_limits.enforce_live = True
    assert worst() < 0.5
    assert obj.pose.bones["MCH-lower"].constraints["IK"].mute
    before = np.array(control.location)
    bpy.context.view_layer.update()
    assert np.array_equal(np.array(control.location), before), "the animator's control is never moved"


def test_a_three_bone_chain_is_solved_within_its_limits(clean_file, addon):
    q_lib = addon.limits.geometry.quaternion
    names = ("root", "a", "b", "c")
    obj = chain_rig(names)
    frames = 240
    motion = np.tile(np.array([1.0, 0.0, 0.0, 0.0]), (frames, 4, 1))
    for i in (1, 2, 3):
        motion[:, i] = cone_motion(q_lib, frames, half_angle=0.5, seed=i)
    addon.rig.io.humanoid.key_rotations(obj, motion, "ROM")
    select_only(obj, ["a", "b", "c"])
    assert bpy.ops.pose.joint_limits_sample() == {"FINISHED"}
    for name in ("a", "b", "c"):
        obj.pose.bones[name].joint_limit.model = "kdop"
    assert bpy.ops.pose.joint_limits_fit() == {"FINISHED"}
    obj.animation_data.action = None
    for pb in obj.pose.bones:
        pb.rotation_quaternion = (1.0, 0.0, 0.0, 0.0)
    target = _empty("Target", (0.5, 0.3, 3.2))
    con = obj.pose.bones["c"].constraints.new("IK")
    con.target, con.chain_count = target, 3
    limits = [addon.rig.io.storage.read_limit(obj.pose.bones[n]) for n in ("a", "b", "c")]
    bpy.context.scene.joint_limits.enforce_live = True
    worst = 0.0
    rng = np.random.default_rng(4)
    points = np.array([0.0, 0.0, 1.0]) + rng.normal(size=(500, 3)) * 1.5
    for location in points:
        target.location = location
        bpy.context.view_layer.update()
        for limit, name in zip(limits, ("a", "b", "c")):
            worst = max(worst, float(limit.violation(evaluated_local_rotation(obj, name))))
    assert math.degrees(worst) < 0.5


@pytest.mark.blender42
def test_a_keyed_target_is_followed_within_the_limits_on_frame_change(clean_file, addon, tmp_path):
    obj, target, _pole, con = _limb(addon)
    limits = _limits(addon, obj)
    for frame, location in zip((1, 10, 20, 30), _targets(4, seed=7)):
        target.location = location
        target.keyframe_insert("location", frame=frame)
    scene = bpy.context.scene
    scene.joint_limits.enforce_live = True
    played = {}
    for frame in range(1, 31):
        scene.frame_set(frame)
        played[frame] = [evaluated_local_rotation(obj, n) for n in CHAIN]
        for limit, q in zip(limits, played[frame]):
            assert limit.violation(q) < HALF_DEGREE, frame
    for frame in (17, 3, 30, 1, 22):  # scrubbing gives what playing gave
        scene.frame_set(frame)
        for q, expected in zip([evaluated_local_rotation(obj, n) for n in CHAIN], played[frame]):
            assert addon.limits.geometry.quaternion.quaternion_angle(q, expected) < math.radians(0.05), frame
    # a save writes the plain rig (the IK unmuted, no correction), and enforcement goes on after it
    path = str(tmp_path / "held.blend")
    bpy.ops.wm.save_as_mainfile(filepath=path, copy=True)
    assert con.mute and obj.pose.bones["lower"].joint_limit.held_ik == "IK"
    with bpy.data.libraries.load(path) as (data_from, data_to):
        data_to.objects = [obj.name]
    saved = data_to.objects[0]
    assert not saved.pose.bones["lower"].constraints["IK"].mute
    assert saved.pose.bones["lower"].joint_limit.held_ik == ""
    assert all(c.influence == 0.0 for pb in saved.pose.bones for c in pb.constraints if c.name == "Joint Limit")


def test_a_chain_whose_limits_are_switched_off_gets_blenders_ik_back(clean_file, addon):
    obj, target, _pole, con = _limb(addon)
    target.location = (1.5, 0.9, 1.0)
    bpy.context.view_layer.update()
    plain = [np.array(obj.pose.bones[n].matrix) for n in CHAIN]
    bpy.context.scene.joint_limits.enforce_live = True
    bpy.context.scene.frame_set(1)
    assert con.mute
    for name in CHAIN:
        obj.pose.bones[name].joint_limit.enabled = False
    bpy.context.scene.frame_set(1)
    assert not con.mute and obj.pose.bones["lower"].joint_limit.held_ik == ""
    for name, m in zip(CHAIN, plain):
        assert np.allclose(np.array(obj.pose.bones[name].matrix), m, atol=1e-6), name


def test_a_limb_range_fitted_on_org_bones_reaches_the_mechanism_chain(clean_file, addon):
    """A Rigify-style arm whose ORG forearm has a limb range of motion: the IK on the mechanism
    chain is held with that range (the ORG bones copy the chain, which rests alike)."""
    obj = _rigify_style_limb(addon)
    select_only(obj, ["ORG-lower", "ORG-upper"])
    obj.data.bones.active = obj.data.bones["ORG-lower"]
    assert bpy.ops.pose.joint_limits_fit_limb() == {"FINISHED"}
    bpy.context.scene.joint_limits.enforce_live = True
    bpy.context.scene.frame_set(1)
    (chain,) = addon.rig.live.compiled(obj).chains
    assert chain.names == ["MCH-upper", "MCH-lower"]
    assert chain.limb is not None


@pytest.mark.blender42
def test_a_keyed_action_is_solved_ahead_as_each_frame_would_be(clean_file, addon, monkeypatch):
    """Keyed motion (the rig's limited root and the IK target) is solved a batch of frames at a
    time (rig/live/ik_lookahead.py): playing it solves no frame on its own, and every frame's pose is
    the solver's for that frame's evaluated inputs (where the limits let the target be reached;
    elsewhere as near), within the limits."""
    q_lib = addon.limits.geometry.quaternion
    obj, target, pole, con = _limb(addon)
    root = obj.pose.bones["root"]
    addon.rig.tasks.sample.store_clouds(obj, {"root": cone_motion(q_lib, 240, half_angle=0.3, seed=4)})
    root.joint_limit.model = "kdop"
    addon.rig.tasks.fit.fit_pose_bone(obj, root)
    root.joint_limit.enabled = True  # (a hierarchy's root is fitted off: it may carry the heading)
    frames = 30
    motion = np.tile(np.array([1.0, 0.0, 0.0, 0.0]), (frames, 4, 1))
    motion[:, 0] = cone_motion(q_lib, frames, half_angle=0.6, seed=5)  # often outside the root's limit
    motion[:, 2] = (math.cos(0.2), math.sin(0.2), 0.0, 0.0)
    addon.rig.io.humanoid.key_rotations(obj, motion, "Keyed")
    # within the limited reach, then far out of it, then back
    for frame, location in zip((1, 10, 20, 30), ((0.0, -0.9, 2.7), (0.3, -0.6, 2.75), (1.5, 1.5, 0.5), (-0.2, -0.7, 2.8))):
        target.location = location
        target.keyframe_insert("location", frame=frame)
    solved = []
    solution = addon.rig.live.limited_ik._solution
    monkeypatch.setattr(addon.rig.live.limited_ik, "_solution", lambda *a, **k: solved.append(1) or solution(*a, **k))
    scene = bpy.context.scene
    scene.joint_limits.enforce_live = True
    limits = _limits(addon, obj)
    root_limit = addon.rig.io.storage.read_limit(root)
    (chain,) = addon.rig.live.compiled(obj).chains
    played, moved_root, reached = {}, 0, 0
    for frame in range(1, frames + 1):
        scene.frame_set(frame)
        played[frame] = [evaluated_local_rotation(obj, n) for n in CHAIN]
        for limit, q in zip(limits, played[frame]):
            assert limit.violation(q) < HALF_DEGREE, frame
        assert root_limit.violation(evaluated_local_rotation(obj, "root")) < 1e-4, frame
        moved_root += root_limit.violation(motion[frame - 1, 0]) > 0.05
        # the solver, on this frame's evaluated inputs (the limited root's pose, the target)
        to_chain = np.linalg.inv(np.array(root.matrix)) @ np.linalg.inv(np.array(obj.matrix_world))
        aim, swivel = (to_chain[:3, :3] @ np.array(o.matrix_world.translation) + to_chain[:3, 3] for o in (target, pole))
        expected = addon.limits.ik.chain.solve_two_bone(
            chain.chain, aim, swivel, con.pole_angle, limits, initial=motion[frame - 1, 1:3]
        )
        if expected.distance < 1e-6:  # reachable within the limits: that very pose
            angle = q_lib.quaternion_angle(np.array(played[frame]), expected.local_rotations)
            assert np.degrees(angle).max() < 0.05, (frame, np.degrees(angle))
            reached += 1
        else:  # out of that reach: as near (frames between continue from a neighbour's solution)
            tip = addon.limits.ik.chain.chain_positions(chain.chain, np.array(played[frame]))[-1]
            assert np.linalg.norm(tip - aim) < expected.distance + 2e-3, frame
    assert moved_root > 5, "the root's keys leave its limit: the chain hangs from a limited pose"
    assert 5 < reached < frames - 5, reached
    assert not solved, f"{len(solved)} frames solved one at a time"
    for frame in (17, 3, 30, 1, 22):  # scrubbing gives what playing gave
        scene.frame_set(frame)
        for q, expected in zip([evaluated_local_rotation(obj, n) for n in CHAIN], played[frame]):
            assert q_lib.quaternion_angle(q, expected) < math.radians(0.01), frame


@pytest.mark.blender42
def test_a_chain_hanging_from_another_held_chain_is_solved_ahead_on_its_solution(clean_file, addon, monkeypatch):
    """Two held limbs, one below the other (upper-lower, then hand-finger), both aiming at keyed
    Empties: the lower limb's key holds the upper's (its root's parent is the upper limb's
    solved end), so both are solved ahead and each frame's lower limb is the solver's answer
    from where the upper limb's solution left its parent."""
    q_lib = addon.limits.geometry.quaternion
    names = ("root", "upper", "lower", "hand", "finger")
    obj = chain_rig(names)
    for i, name in enumerate(names[1:]):
        pb = obj.pose.bones[name]
        addon.rig.tasks.sample.store_clouds(obj, {name: cone_motion(q_lib, 240, half_angle=0.5, seed=10 + i)})
        pb.joint_limit.model = "kdop"
        addon.rig.tasks.fit.fit_pose_bone(obj, pb)
        pb.joint_limit.enabled = True
    targets = []
    for owner in ("lower", "finger"):
        con = obj.pose.bones[owner].constraints.new("IK")
        con.target, con.chain_count = _empty(f"Target-{owner}", (0.0, 0.0, 0.0)), 2
        targets.append(con.target)
    for frame, location in zip((1, 5, 12, 20), ((0.4, -0.3, 2.8), (0.4, -0.3, 2.8), (1.5, 1.0, 1.0), (-0.3, 0.2, 2.9))):
        targets[0].location = location
        targets[0].keyframe_insert("location", frame=frame)
    scene = bpy.context.scene
    scene.joint_limits.enforce_live = True
    scene.frame_set(1)
    # the hand's target: within its reach from where the upper limb holds the lower on frames 1-5
    lower = np.array(obj.pose.bones["lower"].matrix)
    reachable = lower[:3, 3] + lower[:3, :3] @ (0.0, 2.96, 0.0)  # (1.96 m from the hand: a slight bend)
    for frame, location in zip((1, 5, 12, 20), (reachable, reachable, (0.2, 0.3, 4.9), (2.0, -2.0, 2.0))):
        targets[1].location = location
        targets[1].keyframe_insert("location", frame=frame)
    solved = []
    solution = addon.rig.live.limited_ik._solution
    monkeypatch.setattr(addon.rig.live.limited_ik, "_solution", lambda *a, **k: solved.append(1) or solution(*a, **k))
    scene.frame_set(1)
    upper_chain, lower_chain = addon.rig.live.compiled(obj).chains
    assert lower_chain.depends == [upper_chain]
    limits = {n: addon.rig.io.storage.read_limit(obj.pose.bones[n]) for n in names[1:]}
    checked = 0
    for frame in range(1, 21):
        scene.frame_set(frame)
        for name, limit in limits.items():
            assert limit.violation(evaluated_local_rotation(obj, name)) < HALF_DEGREE, (frame, name)
        to_chain = np.linalg.inv(np.array(obj.pose.bones["lower"].matrix))  # the hand's parent, as solved
        aim = to_chain[:3, :3] @ np.array(targets[1].matrix_world.translation) + to_chain[:3, 3]
        expected = addon.limits.ik.chain.solve_two_bone(lower_chain.chain, aim, None, 0.0, [limits["hand"], limits["finger"]])
        played = np.array([evaluated_local_rotation(obj, n) for n in ("hand", "finger")])
        tip = addon.limits.ik.chain.chain_positions(lower_chain.chain, played)[-1]
        assert np.linalg.norm(tip - aim) < expected.distance + 2e-3, frame
        if expected.distance < 1e-6:
            assert np.degrees(q_lib.quaternion_angle(played, expected.local_rotations)).max() < 0.05, frame
            checked += 1
    assert checked > 0
    assert not solved, f"{len(solved)} frames solved one at a time"


@pytest.mark.blender42
def test_a_keyed_target_of_a_limb_range_is_solved_ahead_relocated(clean_file, addon, monkeypatch):
    """A limb with a limb range of motion (no per-joint limits) aiming at a keyed target, in and
    out of its workspace: solved ahead in one batch (the pre-step vectorized over frames), each
    frame's hand at the relocated target and its swivel inside the range there."""
    from limb_rigs import _apply, _ik_limb, _limb_frame, _limb_state

    obj, target, _pole = _ik_limb(addon)
    model = addon.rig.io.storage.read_limb(obj.pose.bones["lower"])
    to_limb = _limb_frame(obj)
    _, _, ends = addon.rig.tasks.limb.limb_poses(obj, "lower")
    inside = ends[::10][model.contains(ends[::10] * 0.98) & model.contains(ends[::10] * 1.02)][0]
    inside = _apply(np.linalg.inv(to_limb), inside)  # a sampled end, well inside the range
    for frame, location in zip((1, 6, 10, 15), ((3.0, 2.0, 4.0), inside, inside, (-2.5, 1.0, 0.5))):
        target.location = location
        target.keyframe_insert("location", frame=frame)
    solved = []
    solution = addon.rig.live.limited_ik._solution
    monkeypatch.setattr(addon.rig.live.limited_ik, "_solution", lambda *a, **k: solved.append(1) or solution(*a, **k))
    scene = bpy.context.scene
    scene.joint_limits.enforce_live = True
    relocated = 0
    for frame in range(1, 16):
        scene.frame_set(frame)
        aim = _apply(to_limb, np.array(target.matrix_world.translation))
        end, swivel = _limb_state(addon, obj, model)
        expected = model.relocate(aim[None])[0]
        assert np.linalg.norm(end - expected) <= 1e-5, (frame, np.linalg.norm(end - expected))
        assert abs(float(model.clamp_swivel(end, swivel)) - swivel) <= 1e-5, frame
        relocated += np.linalg.norm(expected - aim) > 0.05
    assert 0 < relocated < 15, relocated
    assert not solved, f"{len(solved)} frames solved one at a time"
