# SPDX-License-Identifier: GPL-3.0-or-later
"""Played corrections: one whole play of the range is kept. On a generated Rigify rig it becomes
an NLA track Blender evaluates itself, so later plays need no correction from the frame handler;
an edit, a save, a pause and switching enforcement off each take it out of play. Bones limited
through their basis get the values written on the first play back without a pose lookup."""

import bpy
import numpy as np
import pytest
from rigs import chain_rig, cone_motion, keyed_rigify, worst_degrees_out

pytestmark = pytest.mark.blender42

FRAMES = range(1, 25)
CONTROLS = ("hand_ik.L", "foot_ik.L")


def _play(addon, frames):
    poses = {}
    for f in frames:
        bpy.context.scene.frame_set(int(f))
        poses[int(f)] = addon.rig.live.evaluate.pose_matrices(bpy.data.objects["rig"])
    return poses


def _track(rig):
    return rig.animation_data.nla_tracks.get("Joint Limits")


def _count_calls(monkeypatch, module, name):
    calls = []
    original = getattr(module, name)

    def counted(*args, **kwargs):
        calls.append(name)
        return original(*args, **kwargs)

    monkeypatch.setattr(module, name, counted)
    return calls


def test_a_whole_play_is_kept_as_a_track_that_later_plays_and_scrubs_give_without_correcting(addon, rig, monkeypatch):
    limited = keyed_rigify(rig, FRAMES, CONTROLS)
    user_action = rig.animation_data.action
    user_curves = len(addon.rig.io.actions.action_fcurves(rig, user_action))
    bpy.context.scene.joint_limits.enforce_live = True
    first = _play(addon, FRAMES)
    track = _track(rig)
    assert track is not None and not track.mute
    (strip,) = track.strips
    paths = {fc.data_path for fc in addon.rig.io.actions.action_fcurves(rig, strip.action)}
    assert paths and all('.constraints["Joint Limit"].' in p or '.constraints["Joint Limit Stretch"].' in p for p in paths)
    assert any("Stretch" in p for p in paths)  # (the held arm and leg stretch toward far controls)
    assert rig.animation_data.action == user_action
    assert len(addon.rig.io.actions.action_fcurves(rig, user_action)) == user_curves

    handlers = addon.rig.live.handlers
    corrected = _count_calls(monkeypatch, handlers, "_correct")
    solved = _count_calls(monkeypatch, handlers.limited_ik, "solve")
    order = list(FRAMES) + np.random.default_rng(3).permutation(np.array(FRAMES)).tolist()
    worst = 0.0
    for f in order:
        bpy.context.scene.frame_set(int(f))
        np.testing.assert_allclose(addon.rig.live.evaluate.pose_matrices(rig), first[int(f)], atol=1e-5)
        worst = max(worst, worst_degrees_out(addon, rig, limited))
    assert worst < 0.5
    assert not corrected and not solved


def test_an_edit_takes_the_track_out_of_play_and_the_next_whole_play_records_again(addon, rig):
    limited = keyed_rigify(rig, FRAMES, CONTROLS)
    scene = bpy.context.scene
    scene.joint_limits.enforce_live = True
    _play(addon, FRAMES)
    scene.frame_set(10)
    rig.pose.bones["hand_ik.L"].location = (0.5, -0.6, 0.4)  # moved, not keyed
    bpy.context.view_layer.update()
    assert _track(rig).mute
    assert worst_degrees_out(addon, rig, limited) < 0.5
    for f in (12, 3, 20):
        scene.frame_set(f)  # (the key puts the control back; the handler limits the frame)
        assert worst_degrees_out(addon, rig, limited) < 0.5
    _play(addon, FRAMES)
    assert not _track(rig).mute
    assert [a.name for a in bpy.data.actions if a.name.startswith("Joint Limits")] == [_track(rig).strips[0].action.name]


def test_a_pause_a_save_and_enforcement_off_each_take_the_track_out_of_play(addon, rig, tmp_path):
    keyed_rigify(rig, FRAMES, CONTROLS)
    scene = bpy.context.scene
    plain = _play(addon, FRAMES)
    scene.joint_limits.enforce_live = True
    _play(addon, FRAMES)
    assert not _track(rig).mute
    with addon.rig.live.pause.suspended():  # what bake and report evaluate: the plain rig
        for f in (5, 17):
            scene.frame_set(f)
            np.testing.assert_array_equal(addon.rig.live.evaluate.pose_matrices(rig), plain[f])
    assert _track(rig).mute
    _play(addon, FRAMES)
    assert not _track(rig).mute
    path = str(tmp_path / "saved.blend")
    bpy.ops.wm.save_as_mainfile(filepath=path)
    bpy.ops.wm.open_mainfile(filepath=path)
    rig = bpy.data.objects["rig"]
    assert _track(rig).mute  # opened without the extension, the file plays the plain rig
    assert all(c.influence == 0.0 for pb in rig.pose.bones for c in pb.constraints if c.name == "Joint Limit")
    _play(addon, FRAMES)
    assert not _track(rig).mute
    scene = bpy.context.scene
    scene.joint_limits.enforce_live = False
    assert _track(rig) is None and not [a for a in bpy.data.actions if a.name.startswith("Joint Limits")]
    np.testing.assert_array_equal(_play(addon, [9])[9], plain[9])


def _basis_rig(addon, frames=30):
    """Three chained bones limited through their basis (fitted on cone motions), keyed with the
    motions swung 1.6x wider over the scene's range."""
    q = addon.limits.geometry.quaternion
    obj = chain_rig(("root", "a", "b"))
    fit = np.stack([cone_motion(q, 240, seed=s) for s in range(3)], axis=1)
    addon.rig.tasks.sample.store_clouds(obj, {pb.name: fit[:, i] for i, pb in enumerate(obj.pose.bones)})
    for pb in obj.pose.bones[1:]:
        addon.rig.tasks.fit.fit_pose_bone(obj, pb)
    addon.rig.io.humanoid.key_rotations(
        obj, q.quaternion_from_exp_map(1.6 * q.exp_map_from_quaternion(fit[::8][:frames])), "Wide"
    )
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = 1, frames
    return obj


def _basis(obj):
    q = np.empty(4 * len(obj.pose.bones), dtype=np.float32)
    obj.pose.bones.foreach_get("rotation_quaternion", q)
    return q


def test_basis_frames_of_a_whole_play_are_written_back_without_a_pose_lookup(addon, clean_file, monkeypatch):
    obj = _basis_rig(addon)
    scene = bpy.context.scene
    scene.joint_limits.enforce_live = True
    first = {}
    for f in range(1, 31):
        scene.frame_set(f)
        first[f] = _basis(obj)
    assert addon.rig.live.state.played[obj.as_pointer()].trusted
    assert sum(bool(w) for w in addon.rig.live.state.played[obj.as_pointer()].written.values()) > 10
    assert obj.animation_data.nla_tracks.get("Joint Limits") is None  # (no correctives: no track)
    looked_up = _count_calls(monkeypatch, addon.rig.live.handlers, "enforce_basis")
    for f in list(range(1, 31)) + [17, 4, 29, 4]:
        scene.frame_set(f)
        np.testing.assert_array_equal(_basis(obj), first[f])
    assert not looked_up
    obj.pose.bones["a"].rotation_quaternion = (0.5, 0.5, 0.5, 0.5)  # an edit
    bpy.context.view_layer.update()
    assert not addon.rig.live.state.played
    scene.frame_set(12)
    assert looked_up
    np.testing.assert_array_equal(_basis(obj), first[12])  # (the same limited pose, looked up again)
