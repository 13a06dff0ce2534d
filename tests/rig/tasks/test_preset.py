# SPDX-License-Identifier: GPL-3.0-or-later
"""The human preset on new rigs: Apply Human Preset (operator) and ``fit --preset`` (CLI)."""

import bpy
import humanoid_variants as hv
import numpy as np
import pytest
from mathutils import Quaternion
from rigs import chain_rig, cone_motion, expect_error, select_only

pytestmark = pytest.mark.blender42

#: A model quick to fit whose shape does not depend on the bone's axes (the Euler box's does:
#: it is a box in the bone's own Euler angles).
MODEL = "kdop"


def _rig(addon, rename, arms_down=0.0, roll_seed=None, model=MODEL):
    """A humanoid built by :func:`humanoid_variants.humanoid_variant`, every bone set to
    ``model``; returns ``(object, skeleton, rolls)``."""
    skeleton, rolls, _ = hv.humanoid_variant(addon.limits, rename, arms_down, roll_seed)
    obj = addon.rig.io.humanoid.build_armature(skeleton, name=rename("hips").replace(":", "_"))
    for pb in obj.pose.bones:
        pb.joint_limit.model = model
    return obj, skeleton, rolls


def _apply(obj, **props):
    bpy.context.view_layer.objects.active = obj
    return bpy.ops.pose.joint_limits_apply_preset("EXEC_DEFAULT", True, **props)


def _preset_like_poses(addon, rig, skeleton, count, seed):
    """Basis rotations ``(count, n, 4)`` of ``rig``: every matched joint at a random rotation of
    the preset turned by up to 1 rad more, so that many leave the limits and many do not."""
    lib = addon.limits
    q = lib.geometry.quaternion
    rng = np.random.default_rng(seed)
    frames = lib.body.retarget.RigFrames(skeleton, lib.body.bone_names.match_joints(skeleton.names, skeleton.parents)[0])
    preset = addon.rig.tasks.preset.load_preset("human")
    basis = np.tile([1.0, 0.0, 0.0, 0.0], (count, len(skeleton), 1))
    for name, match in frames.matches.items():
        joint = addon.rig.tasks.preset.preset_rotations(preset, match.joint)
        if joint is not None:
            turn = q.quaternion_from_exp_map(rng.normal(size=(count, 3)) * rng.uniform(0, 1.0, (count, 1)))
            basis[:, skeleton.index(name)] = frames.basis(
                name, q.quaternion_multiply(joint[rng.integers(len(joint), size=count)], turn)
            )
    return basis


def _pose_through_world_matrices(obj, skeleton, t_obj, t_skeleton, rolls):
    """Pose ``obj`` the way a user matching a reference would: each bone's armature-space matrix
    set to the T-pose rig's bone (same index) times the bone's roll difference, parents first.
    Returns the basis rotations Blender made of it, in ``skeleton`` order."""
    for b, name in enumerate(skeleton.names):
        pb = obj.pose.bones[name]
        target = t_obj.pose.bones[t_skeleton.names[b]].matrix.to_quaternion() @ Quaternion(rolls[b].tolist())
        m = target.to_matrix().to_4x4()
        m.translation = pb.matrix.translation
        pb.matrix = m
        bpy.context.view_layer.update()
    return np.array([obj.pose.bones[name].rotation_quaternion for name in skeleton.names])


def test_preset_means_the_same_on_t_and_a_pose_rigs_with_other_rolls_and_names(clean_file, addon):
    """One click on a Rigify-named T-pose rig and on a Mixamo-named A-pose rig with every bone
    rolled: both get limits at the same joints, and the same physical pose is accepted by both
    or rejected by both."""
    t_obj, t_skeleton, _ = _rig(addon, hv.rigify_name)
    a_obj, a_skeleton, rolls = _rig(addon, hv.mixamo_name, arms_down=45.0, roll_seed=7)
    assert _apply(t_obj) == {"FINISHED"} and _apply(a_obj) == {"FINISHED"}
    t_limited = [pb.name for pb in t_obj.pose.bones if pb.joint_limit.has_limit]
    a_limited = [pb.name for pb in a_obj.pose.bones if pb.joint_limit.has_limit]
    # every joint: 2 spine and 2 neck bones, clavicles, shoulders, elbows, wrists, hips, knees, ankles, toes
    assert len(t_limited) == 20 and [a_skeleton.names[t_skeleton.index(n)] for n in t_limited] == a_limited

    # the physical correspondence, checked through Blender's own pose matrices
    poses = _preset_like_poses(addon, t_obj, t_skeleton, 300, seed=1)
    same = hv.same_pose(addon.limits, t_skeleton, poses, a_skeleton, rolls)
    q = addon.limits.geometry.quaternion
    for k in range(2):
        for b, name in enumerate(t_skeleton.names):
            t_obj.pose.bones[name].rotation_quaternion = poses[k, b].tolist()
        bpy.context.view_layer.update()
        set_by_matrix = _pose_through_world_matrices(a_obj, a_skeleton, t_obj, t_skeleton, rolls)
        assert np.degrees(q.quaternion_angle(set_by_matrix, same[k])).max() < 1e-3

    api = addon.api
    agree, inside = [], []
    for b, name in enumerate(t_limited):
        i, j = t_skeleton.index(name), a_skeleton.index(a_limited[b])
        t_in = api.limit(t_obj.pose.bones[name]).contains(poses[:, i])
        a_in = api.limit(a_obj.pose.bones[a_limited[b]]).contains(same[:, j])
        agree.append(t_in == a_in)
        inside.append(t_in)
    agree, inside = np.array(agree), np.array(inside)
    assert 0.2 < inside.mean() < 0.8, "the poses test the limits' edges, not only their inside or outside"
    assert agree.mean() >= 0.99, f"joints agree on {agree.mean():.1%} of the poses"
    assert agree.mean(axis=1).min() >= 0.97


def test_add_my_data_keeps_both_sample_sets_and_undo_and_save(clean_file, addon, tmp_path):
    obj, skeleton, _ = _rig(addon, hv.rigify_name)
    name = obj.name
    q = addon.limits.geometry.quaternion
    frames = 60
    motion = np.tile([1.0, 0, 0, 0], (frames, len(skeleton), 1))
    elbow = [pb.name for pb in obj.pose.bones].index("DEF-forearm.L")  # key_rotations keys pose.bones order
    motion[:, elbow] = cone_motion(q, frames, half_angle=0.5, seed=5)  # bends the elbow sideways and back: beyond the preset
    addon.rig.io.humanoid.key_rotations(obj, motion, "Mine")
    pb = obj.pose.bones["DEF-forearm.L"]
    select_only(obj, ["DEF-forearm.L"])
    assert bpy.ops.pose.joint_limits_sample() == {"FINISHED"}
    own = pb.joint_limit.cloud_count
    bpy.ops.ed.undo_push(message="sampled")

    assert _apply(obj, data="ADD", selected_only=True) == {"FINISHED"}
    pb = obj.pose.bones["DEF-forearm.L"]
    cloud, runs = addon.rig.io.storage.read_cloud_clips(pb)
    preset = addon.rig.tasks.preset.load_preset("human")
    n_preset = len(addon.rig.tasks.preset.preset_rotations(preset, "elbow.L")) + 1  # and the rest pose
    assert len(cloud) == own + n_preset and runs[0] == ("Mine", own)
    assert sum(n for clip, n in runs if clip.startswith("preset:")) == n_preset
    assert api_contains(addon, pb, motion[:, elbow]).mean() > 0.95, "the user's own motion is inside"
    assert [pb.name for pb in obj.pose.bones if pb.joint_limit.has_limit] == ["DEF-forearm.L"], "selected only"
    assert _apply(obj, data="ADD", selected_only=True) == {"FINISHED"}
    assert obj.pose.bones["DEF-forearm.L"].joint_limit.cloud_count == own + n_preset, "the preset is not added twice"

    assert _apply(obj, data="REPLACE") == {"FINISHED"}
    pb = obj.pose.bones["DEF-forearm.L"]
    assert pb.joint_limit.cloud_count == n_preset
    assert api_contains(addon, pb, motion[:, elbow]).mean() < 0.7, "the preset alone does not hold that motion"

    assert bpy.ops.ed.undo() == {"FINISHED"}  # Ctrl+Z: back to preset + own data
    pb = bpy.data.objects[name].pose.bones["DEF-forearm.L"]
    assert pb.joint_limit.cloud_count == own + n_preset
    assert not bpy.data.objects[name].pose.bones["DEF-shin.L"].joint_limit.has_limit

    path = tmp_path / "preset.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(path))
    bpy.ops.wm.open_mainfile(filepath=str(path))
    pb = bpy.data.objects[name].pose.bones["DEF-forearm.L"]
    assert pb.joint_limit.cloud_count == own + n_preset and addon.api.limit(pb) is not None
    report = bpy.data.texts["Joint Limits Preset Report"].as_string()
    assert "DEF-forearm.L" in report and "elbow.L" in report


def api_contains(addon, pb, local):
    return addon.api.limit(pb).contains(local)


def test_unknown_bones_are_listed_and_an_unknown_rig_is_refused(clean_file, addon):
    obj = chain_rig(("root", "upper", "lower"))
    expect_error(bpy.ops.pose.joint_limits_apply_preset, "No bone matched")
    assert "upper" in bpy.data.texts["Joint Limits Preset Report"].as_string()
    assert not any(pb.joint_limit.cloud_count for pb in obj.pose.bones), "nothing written"

    rig, _, _ = _rig(addon, hv.mixamo_name)
    bpy.ops.object.mode_set(mode="EDIT")
    for name in ("Tail_01", "mixamorig:LeftHandIndex1"):
        bone = rig.data.edit_bones.new(name)
        bone.head, bone.tail = (0.0, 0.3, 1.0), (0.0, 0.5, 1.0)
        bone.parent = rig.data.edit_bones["mixamorig:Hips"]
    bpy.ops.object.mode_set(mode="POSE")
    for pb in rig.pose.bones:
        pb.joint_limit.model = MODEL
    assert _apply(rig) == {"FINISHED"}
    report = bpy.data.texts["Joint Limits Preset Report"].as_string()
    for name, why in (
        ("Tail_01", "no naming convention"),
        ("mixamorig:LeftHandIndex1", "no naming convention"),
        ("mixamorig:Hips", "heading"),
        ("mixamorig:LeftHand", "wrist.L"),
    ):
        line = next(line for line in report.splitlines() if line.strip().startswith(name + " "))
        assert why in line, line
    assert not rig.pose.bones["Tail_01"].joint_limit.cloud_count


def test_cli_fit_preset(clean_file, addon, tmp_path, capsys):
    obj, skeleton, _ = _rig(addon, hv.mixamo_name, arms_down=30.0, roll_seed=3)
    q = addon.limits.geometry.quaternion
    motion = np.tile([1.0, 0, 0, 0], (40, len(skeleton), 1))
    knee = [pb.name for pb in obj.pose.bones].index("mixamorig:LeftLeg")  # key_rotations keys pose.bones order
    motion[:, knee] = cone_motion(q, 40, half_angle=0.5, seed=2)
    addon.rig.io.humanoid.key_rotations(obj, motion, "Mine")
    path = tmp_path / "rig.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(path))
    main, name = addon.cli.main, obj.name
    assert main(["fit", "--preset", "human", "--model", MODEL]) == 0
    bpy.ops.wm.open_mainfile(filepath=str(path))
    rig = bpy.data.objects[name]
    limited = [pb.name for pb in rig.pose.bones if pb.joint_limit.has_limit]
    assert len(limited) == 20 and "mixamorig:Hips" not in limited
    assert (
        rig.pose.bones["mixamorig:LeftLeg"].joint_limit.cloud_count
        == len(addon.rig.tasks.preset.preset_rotations(addon.rig.tasks.preset.load_preset("human"), "knee.L")) + 1
    )
    out = capsys.readouterr().out
    assert "20 bones fitted" in out and "Not matched" in out and "mixamorig:Hips" in out

    assert main(["fit", "--preset", "human", "--add-data", "--bones", "mixamorig:LeftLeg", "--model", MODEL]) == 0
    bpy.ops.wm.open_mainfile(filepath=str(path))
    pb = bpy.data.objects[name].pose.bones["mixamorig:LeftLeg"]
    preset = addon.rig.tasks.preset.load_preset("human")
    assert pb.joint_limit.cloud_count == 40 + len(addon.rig.tasks.preset.preset_rotations(preset, "knee.L")) + 1
    assert addon.api.limit(pb).contains(motion[:, knee]).mean() > 0.95

    assert main(["fit", "--add-data"]) != 0
    assert main(["fit", "--preset", "robot"]) != 0
    err = capsys.readouterr().err
    assert "needs --preset" in err and "invalid choice: 'robot'" in err


# CMU's BVH skeleton (subject 143's offsets, arms in a T-pose, Y up): zero-length LHipJoint,
# LowerBack, Spine1's children, LeftShoulder and the hand's finger joints, as in the real files.
CMU = (
    ("Hips", -1, (0, 0, 0)),
    ("LHipJoint", 0, (0, 0, 0)),
    ("LeftUpLeg", 1, (1.65, -1.42, 0.94)),
    ("LeftLeg", 2, (2.12, -5.81, 0)),
    ("LeftFoot", 3, (2.37, -6.5, 0)),
    ("LeftToeBase", 4, (0.18, -0.49, 1.74)),
    ("RHipJoint", 0, (0, 0, 0)),
    ("RightUpLeg", 6, (-1.44, -1.42, 0.94)),
    ("RightLeg", 7, (-2.1, -5.78, 0)),
    ("RightFoot", 8, (-2.35, -6.45, 0)),
    ("RightToeBase", 9, (-0.23, -0.63, 1.8)),
    ("LowerBack", 0, (0, 0, 0)),
    ("Spine", 11, (0.06, 1.94, -0.49)),
    ("Spine1", 12, (-0.03, 2.04, -0.06)),
    ("Neck", 13, (0, 0, 0)),
    ("Neck1", 14, (0.04, 1.41, 0.27)),
    ("Head", 15, (-0.13, 1.44, 0.06)),
    ("LeftShoulder", 13, (0, 0, 0)),
    ("LeftArm", 17, (2.18, 1.48, -0.36)),
    ("LeftForeArm", 18, (5.05, 0, 0)),
    ("LeftHand", 19, (3.39, 0, 0)),
    ("LeftFingerBase", 20, (0, 0, 0)),
    ("RightShoulder", 13, (0, 0, 0)),
    ("RightArm", 22, (-2.06, 1.73, -0.47)),
    ("RightForeArm", 23, (-5.07, 0, 0)),
    ("RightHand", 24, (-3.15, 0, 0)),
    ("RightFingerBase", 25, (0, 0, 0)),
)
CMU_ENDS = {5: (0, 0, 0.91), 10: (0, 0, 0.96), 16: (-0.05, 1.46, 0), 21: (0.57, 0, 0), 26: (-0.72, 0, 0)}


def test_a_cmu_bvh_rig_imported_by_blender_agrees_with_the_preset_builder(clean_file, addon, tmp_path):
    """The preset builder reads its take with the numpy BVH reader, in the file's Y-up space
    (zero-length bones pointed along their parent); Blender's importer turns the skeleton Z-up
    and points zero-length bones along +Y. Both give the same anatomical rotations at every joint the preset keeps
    (the wrist's bone differs: the builder leaves the wrist out), and the preset fits that rig."""
    import build_human_preset

    bf = addon.rig.io.bvh_file
    names, parents, offsets = zip(*CMU, strict=True)
    channels = [["Xposition", "Yposition", "Zposition", "Zrotation", "Yrotation", "Xrotation"]] + [
        ["Zrotation", "Yrotation", "Xrotation"]
    ] * (len(names) - 1)
    rng = np.random.default_rng(4)
    frames = 20
    values = 40 * np.sin(np.linspace(0, 3, frames)[:, None] + rng.uniform(0, 6, (1, 3 + 3 * len(names))))
    text = bf.bvh_text(
        list(names),
        list(parents),
        np.array(offsets, float),
        channels,
        {j: np.array(v, float) for j, v in CMU_ENDS.items()},
        1 / 120,
        values,
    )
    path = tmp_path / "cmu.bvh"
    path.write_text(text)

    lib = addon.limits
    clip = bf.read_bvh(path)
    heads = np.zeros((len(names), 3))
    for j, p in enumerate(parents):
        heads[j] = np.array(offsets[j], float) + (heads[p] if p >= 0 else 0.0)
    directions = build_human_preset.segment_directions(clip)
    source = lib.body.skeleton.Skeleton(clip.names, clip.parents, heads, heads + directions, clip.rest_rotations())
    matches, _ = lib.body.bone_names.match_joints(clip.names, clip.parents)
    built = lib.body.retarget.RigFrames(source, matches, directions).joint_rotations(clip.local_rotations())

    obj = addon.rig.io.bvh.import_bvh_armature(bpy.context, str(path))
    skeleton = addon.rig.io.skeleton_io.skeleton_from_armature(obj)
    basis, keyed = addon.rig.io.actions.keyed_rotations(obj, obj.animation_data.action, skeleton.names, np.arange(1, frames + 1))
    assert keyed.all()
    on_rig = lib.body.retarget.RigFrames(skeleton, lib.body.bone_names.match_joints(skeleton.names, skeleton.parents)[0])
    imported = on_rig.joint_rotations(basis)
    assert sorted(imported) == sorted(built)
    for joint in built:
        if not joint.startswith("wrist"):
            assert np.degrees(lib.geometry.quaternion.quaternion_angle(imported[joint], built[joint])).max() < 1e-3, joint

    bpy.context.view_layer.objects.active = obj
    bpy.ops.object.mode_set(mode="POSE")
    for pb in obj.pose.bones:
        pb.joint_limit.model = MODEL
    assert _apply(obj) == {"FINISHED"}
    assert sum(pb.joint_limit.has_limit for pb in obj.pose.bones) == 22  # 16 limb joints, 3 spine and 3 neck bones


def test_a_damaged_preset_file_is_refused_with_what_is_wrong(addon, tmp_path):
    read = addon.rig.tasks.preset.read_preset
    cases = {
        "not json": ("{", "not valid JSON"),
        "other format": ('{"format": "something", "version": 1}', "not a Joint Limits preset"),
        "no joints": ('{"format": "joint_limits_preset", "version": 1, "joints": {}}', "holds no joints"),
        "words": ('{"format": "joint_limits_preset", "version": 1, "joints": {"knee.L": [["a", 1, 2]]}}', "other than numbers"),
        "shape": ('{"format": "joint_limits_preset", "version": 1, "joints": {"knee.L": [[1, 2]]}}', r"\(N, 3\)"),
        "nan": ('{"format": "joint_limits_preset", "version": 1, "joints": {"knee.L": [[NaN, 0, 0]]}}', "NaN"),
    }
    for name, (text, match) in cases.items():
        path = tmp_path / f"{name}.json"
        path.write_text(text)
        with pytest.raises(ValueError, match=match):
            read(path)
    with pytest.raises(ValueError, match="cannot read"):
        read(tmp_path / "missing.json")
    with pytest.raises(ValueError, match="no preset named 'robot'"):
        addon.rig.tasks.preset.load_preset("robot")


def test_the_preset_fits_reach_cones_or_each_bones_own_model(clean_file, addon):
    obj, _, _ = _rig(addon, hv.rigify_name)
    for pb in obj.pose.bones:
        pb.joint_limit.model = MODEL
    assert _apply(obj) == {"FINISHED"}
    kinds = {addon.api.limit(pb).model.kind for pb in obj.pose.bones if pb.joint_limit.has_limit}
    assert kinds == {"reach_cone"} and all(
        pb.joint_limit.model == "reach_cone" for pb in obj.pose.bones if pb.joint_limit.has_limit
    )
    for pb in obj.pose.bones:
        pb.joint_limit.model = MODEL
    assert _apply(obj, fit_with="BONE") == {"FINISHED"}
    assert {addon.api.limit(pb).model.kind for pb in obj.pose.bones if pb.joint_limit.has_limit} == {MODEL}
