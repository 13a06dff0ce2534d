# SPDX-License-Identifier: GPL-3.0-or-later
"""Live enforcement limits a keyed action ahead of playback (one batched projection per limit
group for all its frames): the first play then only looks poses up, and what it writes is what
limiting frame by frame writes, in every rotation mode, with influence and softening."""

import bpy
import numpy as np
import pytest
from rigs import chain_rig, cone_motion, select_only

pytestmark = pytest.mark.blender42

MODES = ("QUATERNION", "XYZ", "ZXY", "AXIS_ANGLE")
FRAMES = 60


def _rig(addon, model="kdop", sparse=False):
    """Four bones in four rotation modes, limits fitted on a cone motion, then keyed with the
    motion swung 1.6x wider (so it leaves the limits on most frames)."""
    q = addon.limits.geometry.quaternion
    names = ("root", "a", "b", "c")
    obj = chain_rig(names)
    for pb, mode in zip(obj.pose.bones, MODES, strict=True):
        pb.rotation_mode = mode
    fit = np.stack([cone_motion(q, 240, seed=s) for s in range(4)], axis=1)
    addon.rig.tasks.sample.store_clouds(obj, {pb.name: fit[:, i] for i, pb in enumerate(obj.pose.bones)})
    for pb in obj.pose.bones:
        pb.joint_limit.model = model
        addon.rig.tasks.fit.fit_pose_bone(obj, pb)
    obj.pose.bones["root"].joint_limit.enabled = True  # (a root's limit is off by default: limited here on purpose)
    wide = q.quaternion_from_exp_map(1.6 * q.exp_map_from_quaternion(fit[::4][:FRAMES]))
    if sparse:  # a key every 5 frames, Bezier: the look-ahead evaluates the curves
        action = addon.rig.io.humanoid.key_rotations(obj, wide[::5], "Wide", assign=False)
        for fc in addon.rig.io.actions.action_fcurves(obj, action):
            co = np.empty(2 * len(fc.keyframe_points), dtype=np.float32)
            fc.keyframe_points.foreach_get("co", co)
            co[0::2] = 1 + 5 * (co[0::2] - 1)
            fc.keyframe_points.foreach_set("co", co)
            for k in fc.keyframe_points:
                k.interpolation = "BEZIER"
            fc.update()
        addon.rig.io.actions.assign_action(obj, action)
    else:
        addon.rig.io.humanoid.key_rotations(obj, wide, "Wide")
    select_only(obj, list(names))
    return obj


def _play(addon, obj, look_ahead=True):
    """Channel values after each frame of a play with live enforcement, and how many poses
    were limited one by one."""
    scene = bpy.context.scene
    scene.joint_limits.enforce_live = True
    addon.rig.live.invalidate()
    rig = addon.rig.live.compiled(obj)
    if not look_ahead:
        rig.looked_ahead = addon.rig.live.lookahead.action_identity(obj)
    out = []
    for f in range(1, FRAMES + 1):
        scene.frame_set(f)
        out.append(addon.rig.io.pose_io.PoseArrays(obj.pose.bones).key())
    assert addon.rig.live.compiled(obj) is rig
    scene.joint_limits.enforce_live = False
    return out, rig


@pytest.mark.parametrize("sparse", [False, True], ids=["key_every_frame", "bezier_every_5"])
def test_first_play_only_looks_up_and_writes_what_frame_by_frame_writes(clean_file, addon, sparse):
    obj = _rig(addon, sparse=sparse)
    ahead, rig = _play(addon, obj)
    assert rig.computed == 0  # every pose of the play was found
    assert all(rig.memo[k][:2] == (0, {}) for k in ahead)  # what it wrote is known as our own result
    by_frame, rig = _play(addon, obj, look_ahead=False)
    assert rig.computed > FRAMES // 2  # frame by frame: nearly every pose is new
    differ = [f for f in range(FRAMES) if ahead[f] != by_frame[f]]
    assert len(differ) <= 1, differ  # bit for bit (one float32 ulp may tip a frame)
    # and the play really limited: the keyed poses differ from what was written
    unlimited = addon.rig.live.lookahead.action_poses(obj, addon.rig.io.pose_io.PoseArrays(obj.pose.bones), FRAMES)[1]
    keyed = len(unlimited.quaternion)  # the action's frames (56 for keys every 5 frames)
    assert sum(unlimited.key(f) != ahead[f] for f in range(keyed)) > keyed // 2


def test_influence_and_softening_match_frame_by_frame(clean_file, addon):
    obj = _rig(addon, model="box")
    for pb, influence in zip(obj.pose.bones, (1.0, 0.5, 0.8, 0.3), strict=True):
        pb.joint_limit.influence = influence
    obj.pose.bones["b"].joint_limit.use_softening = True
    ahead, rig = _play(addon, obj)
    assert rig.computed == 0
    by_frame, _ = _play(addon, obj, look_ahead=False)
    assert sum(a != b for a, b in zip(ahead, by_frame, strict=True)) <= 1


def test_an_edited_key_is_limited_as_it_comes(clean_file, addon):
    q = addon.limits.geometry.quaternion
    obj = _rig(addon)
    bpy.context.scene.joint_limits.enforce_live = True
    rig = addon.rig.live.compiled(obj)
    bpy.context.scene.frame_set(1)
    assert rig.computed == 0
    # change one key after the look-ahead: that frame's pose is new and limited on the spot
    action = obj.animation_data.action
    fc = next(
        fc
        for fc in addon.rig.io.actions.action_fcurves(obj, action)
        if fc.data_path.endswith('["root"].rotation_quaternion') and fc.array_index == 1
    )
    fc.keyframe_points[9].co[1] = 0.99
    fc.update()
    bpy.context.scene.frame_set(10)
    assert addon.rig.live.compiled(obj) is rig and rig.computed == 1
    limit = addon.rig.io.storage.read_limit(obj.pose.bones["root"])
    assert limit.violation(np.array(obj.pose.bones["root"].rotation_quaternion)) < 1e-4
    assert (
        q.quaternion_angle(np.array(obj.pose.bones["root"].rotation_quaternion), q.quaternion_normalize([0.14, 0.99, 0.0, 0.0]))
        > 0.1
    )


def test_toggling_enforcement_keeps_compiled_limits_and_a_refit_still_counts(clean_file, addon):
    obj = _rig(addon, model="box")
    scene = bpy.context.scene
    scene.joint_limits.enforce_live = True
    scene.frame_set(2)
    rig = addon.rig.live.compiled(obj)
    scene.joint_limits.enforce_live = False
    scene.joint_limits.enforce_live = True
    assert addon.rig.live.compiled(obj) is rig  # a big rig's compile is not paid again
    scene.joint_limits.enforce_live = False
    obj.pose.bones["a"].joint_limit.model = "ellipsoid"  # refits while enforcement is off
    scene.joint_limits.enforce_live = True
    scene.frame_set(3)
    rig = addon.rig.live.compiled(obj)
    assert any(g.limit.model.kind == "ellipsoid" for g in rig.groups)


def test_a_slider_change_reuses_parsed_and_stacked_limits_and_a_refit_does_not(clean_file, addon):
    obj = _rig(addon, model="box")
    scene = bpy.context.scene
    scene.joint_limits.enforce_live = True
    scene.frame_set(2)
    stacked = [g.limit for g in addon.rig.live.compiled(obj).groups]
    obj.pose.bones["a"].joint_limit.influence = 0.4  # recompiles (like every step of a slider drag)
    scene.frame_set(3)
    rig = addon.rig.live.compiled(obj)
    assert [g.limit for g in rig.groups] == stacked  # the same objects: nothing parsed or stacked again
    np.testing.assert_allclose(rig.groups[0].influence, [1.0, 0.4, 1.0, 1.0], atol=1e-6)
    obj.pose.bones["a"].joint_limit.padding = 0.2  # refits: a new limit for that bone
    scene.frame_set(4)
    rig = addon.rig.live.compiled(obj)
    assert all(g.limit is not s for g, s in zip(rig.groups, stacked, strict=False))
    limit = addon.rig.io.storage.read_limit(obj.pose.bones["b"])
    assert limit.violation(addon.rig.io.pose_io.local_quaternion(obj.pose.bones["b"])) < 1e-4
