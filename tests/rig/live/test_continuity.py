# SPDX-License-Identifier: GPL-3.0-or-later
"""A keyed action that runs along and across non-convex limits (issue 16): the bake and live
enforcement limit it as one motion, so neither pops; a frame gets the same limited pose
whether it is played, scrubbed or jumped to; a drag continues from the last limited pose."""

import bpy
import numpy as np
import pytest
from motions import ring_motion, ring_paths
from rigs import chain_rig

KINDS = ("sinus_texture", "sdf_grid", "quaternion_surface", "euler_box")
#: each bone's path: one its model's frame-by-frame projection pops on
PATHS = ("outer", "outer", "far", "euler")
FRAMES = 120


def _rig(addon):
    """One bone per non-convex model, its limit fitted (rest reference) on a C-shaped ring,
    keyed with a path that runs around and through it."""
    lib = addon.limits
    obj = chain_rig(KINDS)
    cloud = ring_motion(lib.geometry.quaternion.quaternion_from_exp_map)
    paths = ring_paths(lib.geometry.quaternion.quaternion_from_exp_map, FRAMES)
    # X and Z at 2 rad, Y rising: Blender's Euler decomposition switches triples on the way
    t = np.linspace(0.0, 1.0, FRAMES)
    euler = np.stack([np.full_like(t, 2.0), 0.2 + t, np.full_like(t, 2.0)], axis=-1)
    paths["euler"] = lib.geometry.quaternion.quaternion_from_euler(euler, "XYZ")
    for pb in obj.pose.bones:
        addon.rig.io.storage.store_limit(pb, lib.joint.JointLimit.fit(cloud, kind=pb.name, reference="REST"))
        assert pb.joint_limit.has_limit and pb.joint_limit.enabled
    motion = np.stack([paths[name] for name in PATHS], axis=1)
    action = addon.rig.io.humanoid.key_rotations(obj, motion, "Around")
    return obj, action, motion


def _pops(addon, q, limited):
    return addon.limits.continuity.pops(q, limited)


def _pose(obj):
    return np.array([pb.rotation_quaternion for pb in obj.pose.bones])


def _limits(addon, obj):
    return [addon.rig.io.storage.read_limit(pb) for pb in obj.pose.bones]


def test_frame_by_frame_projection_pops_on_this_action(clean_file, addon):
    """What the tests below guard against."""
    obj, _, motion = _rig(addon)
    for b, limit in enumerate(_limits(addon, obj)):
        assert _pops(addon, motion[:, b], limit.project(motion[:, b])).any(), KINDS[b]


def test_bake_is_continuous_and_inside(clean_file, addon):
    obj, action, motion = _rig(addon)
    scene = bpy.context.scene
    baked = addon.rig.tasks.bake.bake_action(obj, scene, action, np.arange(1, FRAMES + 1))
    addon.rig.io.actions.assign_action(obj, baked)
    poses = []
    for f in range(1, FRAMES + 1):
        scene.frame_set(f)
        poses.append(_pose(obj))
    poses = np.array(poses)
    for b, limit in enumerate(_limits(addon, obj)):
        assert not _pops(addon, motion[:, b], poses[:, b]).any(), KINDS[b]
        assert np.all(limit.violation(poses[:, b]) < 1e-4), KINDS[b]


@pytest.mark.parametrize("seed", [0, 1])
def test_scrubbing_gives_the_poses_playing_gives(clean_file, addon, seed):
    obj, _, motion = _rig(addon)
    scene = bpy.context.scene
    keyed = []
    for f in range(1, FRAMES + 1):
        scene.frame_set(f)
        keyed.append(_pose(obj))
    keyed = np.array(keyed)
    scene.joint_limits.enforce_live = True
    order = np.random.default_rng(seed).permutation(np.arange(1, FRAMES + 1))
    scrubbed = {}
    for f in order.tolist():  # first: jumping around from the start
        scene.frame_set(f)
        scrubbed[f] = _pose(obj)
    played = []
    for f in range(1, FRAMES + 1):
        scene.frame_set(f)
        played.append(_pose(obj))
    played = np.array(played)
    scene.joint_limits.enforce_live = False
    for f in range(1, FRAMES + 1):
        np.testing.assert_allclose(scrubbed[f], played[f - 1], atol=1e-6, err_msg=f"frame {f}")
    for b, limit in enumerate(_limits(addon, obj)):
        assert not _pops(addon, motion[:, b], played[:, b]).any(), KINDS[b]
        assert np.all(limit.violation(played[:, b]) < 1e-4), KINDS[b]
        # what the bake's sequence API gives for the keyed poses
        np.testing.assert_allclose(played[:, b], limit.project_sequence(keyed[:, b]), atol=1e-5)


def test_dragging_continues_from_the_last_limited_pose(clean_file, addon):
    """Interactive posing (no keyed frame): each step of a drag along a path is limited as the
    frame after the one before, so the drag does not pop either."""
    obj, _, motion = _rig(addon)
    obj.animation_data.action = None
    scene = bpy.context.scene
    scene.joint_limits.enforce_live = True
    dragged = []
    for f in range(FRAMES):
        for b, pb in enumerate(obj.pose.bones):
            pb.rotation_quaternion = motion[f, b]
        bpy.context.view_layer.update()  # the depsgraph handler limits the posed bones
        dragged.append(_pose(obj))
    scene.joint_limits.enforce_live = False
    dragged = np.array(dragged)
    for b, limit in enumerate(_limits(addon, obj)):
        assert not _pops(addon, motion[:, b], dragged[:, b]).any(), KINDS[b]
        assert np.all(limit.violation(dragged[:, b]) < 1e-4), KINDS[b]


def test_pending_frames_are_limited_while_blender_is_idle(clean_file, addon):
    """Switching enforcement on limits the frame shown; a timer limits the rest of the action
    in frame order while Blender waits (live.work_ahead), so that a jump or a first play
    finds every frame remembered: the same poses as playing, no frame limited when shown."""
    obj, _, _ = _rig(addon)
    scene = bpy.context.scene
    live = addon.rig.live
    scene.joint_limits.enforce_live = True
    scene.frame_set(1)
    rig = live.compiled(obj)
    assert rig.ahead is not None and rig.ahead.done < FRAMES  # frames still to limit
    assert bpy.app.timers.is_registered(live.work_ahead)
    steps = 0
    while live.work_ahead() is not None:  # (the PyPI module runs no timers: step it here)
        steps += 1
        assert steps < 10_000
    assert rig.ahead.done == FRAMES
    assert not any(v is live.ahead.PENDING for v in rig.memo.values())
    jumped = {}
    for f in (FRAMES, 1, FRAMES // 2):
        scene.frame_set(f)
        jumped[f] = _pose(obj)
    assert rig.ahead.done == FRAMES
    live.invalidate()  # as limited when played, frame after frame
    for f in range(1, FRAMES + 1):
        scene.frame_set(f)
        if f in jumped:
            np.testing.assert_allclose(jumped[f], _pose(obj), atol=1e-6, err_msg=f"frame {f}")
    scene.joint_limits.enforce_live = False
