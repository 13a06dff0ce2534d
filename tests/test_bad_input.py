# SPDX-License-Identifier: GPL-3.0-or-later
"""Bad input gives a clear error, loses nothing, and never breaks the rest of the rig."""

import math

import bpy
import numpy as np
import pytest
from rigs import chain_rig, cone_motion, evaluated_local_rotation, expect_error, select_only

pytestmark = pytest.mark.blender42

OUTSIDE = np.array([math.cos(0.87), math.sin(0.87), 0.0, 0.0])


def _two_limited_bones(addon):
    q = addon.limits.geometry.quaternion
    obj = chain_rig(("root", "a", "b"))
    frames = 120
    motion = np.tile(np.array([1.0, 0, 0, 0]), (frames, 3, 1))
    motion[:, 1] = cone_motion(q, frames, seed=1)
    motion[:, 2] = cone_motion(q, frames, seed=2)
    addon.rig.io.humanoid.key_rotations(obj, motion, "ROM")
    select_only(obj, ["a", "b"])
    assert bpy.ops.pose.joint_limits_sample() == {"FINISHED"}
    assert bpy.ops.pose.joint_limits_fit() == {"FINISHED"}
    obj.animation_data.action = None
    return obj


def test_nan_rotation_is_reported_once_and_other_bones_stay_limited(clean_file, addon):
    obj = _two_limited_bones(addon)
    limit_b = addon.rig.io.storage.read_limit(obj.pose.bones["b"])
    obj.pose.bones["a"].rotation_quaternion = (float("nan"), 0.0, 0.0, 0.0)
    obj.pose.bones["b"].rotation_quaternion = OUTSIDE
    bpy.context.scene.joint_limits.enforce_live = True
    bpy.context.scene.frame_set(1)
    bpy.context.scene.frame_set(2)
    assert limit_b.violation(evaluated_local_rotation(obj, "b")) < 1e-3
    msgs = [m for m in addon.rig.live.messages() if "'a'" in m]
    assert len(msgs) == 1 and "NaN" in msgs[0]
    assert math.isnan(obj.pose.bones["a"].rotation_quaternion[0]), "the bad value is left for the user to see"


def test_corrupt_stored_limit_skips_only_that_bone(clean_file, addon):
    obj = _two_limited_bones(addon)
    limit_b = addon.rig.io.storage.read_limit(obj.pose.bones["b"])
    obj.pose.bones["a"].joint_limit.limit_data = '{"format": "joint_limits", "version": 1, "model": {"kind": "box"}}'
    obj.pose.bones["b"].rotation_quaternion = OUTSIDE
    bpy.context.scene.joint_limits.enforce_live = True
    bpy.context.scene.frame_set(1)
    assert limit_b.violation(evaluated_local_rotation(obj, "b")) < 1e-3
    assert any("'a'" in m and "unreadable" in m for m in addon.rig.live.messages())


def test_sampling_a_bone_without_animation_and_an_empty_action_fails_clearly(clean_file, addon):
    obj = chain_rig(("root", "a"))
    select_only(obj, ["a"])
    expect_error(bpy.ops.pose.joint_limits_sample, "has no action")
    empty = bpy.data.actions.new("Empty")
    addon.rig.io.actions.assign_action(obj, empty)
    expect_error(bpy.ops.pose.joint_limits_sample, "no rotation keys")
    assert obj.pose.bones["a"].joint_limit.cloud_count == 0
    expect_error(bpy.ops.pose.joint_limits_fit, "No selected bone has samples")


def test_corrupt_or_foreign_limit_files_are_refused_and_keep_the_old_limit(clean_file, addon, tmp_path):
    obj = _two_limited_bones(addon)
    obj.data.bones.active = obj.data.bones["b"]
    pb = obj.pose.bones["b"]
    before = pb.joint_limit.limit_data
    bad_files = {
        "garbage.json": b"{not json",
        "foreign.json": b'{"kind": "box", "params": {}}',
        "binary.json": bytes(range(256)),
        "garbage.npz": b"PK\x03\x04 this is not a zip",
    }
    pickled = tmp_path / "pickled.npz"
    np.savez(pickled, header=np.array([{"evil": 1}], dtype=object))
    paths = [pickled]
    for name, data in bad_files.items():
        (tmp_path / name).write_bytes(data)
        paths.append(tmp_path / name)
    for path in paths:
        expect_error(bpy.ops.pose.joint_limits_load_file, "Could not load", filepath=str(path))
        assert pb.joint_limit.limit_data == before


def test_limit_file_round_trip_through_operators(clean_file, addon, tmp_path):
    obj = _two_limited_bones(addon)
    obj.data.bones.active = obj.data.bones["b"]
    pb = obj.pose.bones["b"]
    limit = addon.rig.io.storage.read_limit(pb)
    for ext in ("json", "npz"):
        path = tmp_path / f"limit.{ext}"
        assert bpy.ops.pose.joint_limits_save_file(filepath=str(path)) == {"FINISHED"}
        pb.joint_limit.limit_data = ""
        assert bpy.ops.pose.joint_limits_load_file(filepath=str(path)) == {"FINISHED"}
        probe = addon.limits.geometry.quaternion.quaternion_random(200, 1)
        np.testing.assert_allclose(addon.rig.io.storage.read_limit(pb).project(probe), limit.project(probe), atol=1e-12)


def test_polls_explain_why(clean_file, addon):
    assert not bpy.ops.pose.joint_limits_fit.poll()
    chain_rig(("root", "a"))
    bpy.ops.object.mode_set(mode="OBJECT")
    assert not bpy.ops.pose.joint_limits_fit.poll()
    bpy.ops.object.mode_set(mode="POSE")
    assert bpy.ops.pose.joint_limits_fit.poll()
    assert not bpy.ops.pose.joint_limits_bake.poll(), "no action: bake cannot run"


def test_renamed_and_deleted_armatures_keep_enforcement_working(clean_file, addon):
    obj = _two_limited_bones(addon)
    limit_b = addon.rig.io.storage.read_limit(obj.pose.bones["b"])
    bpy.context.scene.joint_limits.enforce_live = True
    bpy.context.scene.frame_set(1)
    obj.name = "Renamed"
    obj.pose.bones["b"].rotation_quaternion = OUTSIDE
    bpy.context.scene.frame_set(2)
    assert limit_b.violation(evaluated_local_rotation(obj, "b")) < 1e-3
    other = chain_rig(("x",), name="Other")
    bpy.data.objects.remove(other)
    bpy.context.scene.frame_set(3)
    assert not [m for m in addon.rig.live.messages() if "failed" in m]


def test_a_bone_whose_model_fails_at_run_time_is_split_off_and_reported_once(clean_file, addon, monkeypatch):
    """Two bones share one stacked model; one of them makes projection raise. The handler
    splits the group, keeps limiting the healthy bone and reports the broken one once."""
    model = addon.limits.model
    joint = addon.limits.joint
    q = addon.limits.geometry.quaternion

    class Fragile(model.LimitModel):
        kind = "test_fragile"
        PARAM_SHAPES = {"radius": (), "broken": ()}

        @classmethod
        def fit(cls, rotations, **options):
            return cls({"radius": 0.3, "broken": 0.0})

        def contains(self, rot):
            return np.linalg.norm(q.exp_map_from_quaternion(rot), axis=-1) <= self.params["radius"] + 1e-9

        def project(self, rot):
            if np.any(self.params["broken"]):
                raise RuntimeError("this bone's model is broken")
            v = q.exp_map_from_quaternion(rot)
            n = np.linalg.norm(v, axis=-1, keepdims=True)
            return q.quaternion_from_exp_map(v * np.minimum(1.0, self.params["radius"][..., None] / np.maximum(n, 1e-12)))

    monkeypatch.setitem(addon.limits.registry.BY_KIND, "test_fragile", Fragile)
    obj = chain_rig(("root", "a", "b"))
    cls = addon.limits.registry.model_class("test_fragile")
    for name, broken in (("a", 1.0), ("b", 0.0)):
        limit = joint.JointLimit(cls({"radius": 0.3, "broken": broken}))
        addon.rig.io.storage.write_limit(obj.pose.bones[name], limit)
        obj.pose.bones[name].rotation_quaternion = OUTSIDE
    bpy.context.scene.joint_limits.enforce_live = True
    for frame in (1, 2, 3):
        bpy.context.scene.frame_set(frame)
    b = evaluated_local_rotation(obj, "b")
    assert np.linalg.norm(q.exp_map_from_quaternion(b)) == pytest.approx(0.3, abs=1e-4)
    msgs = [m for m in addon.rig.live.messages() if "broken" in m]
    assert len(msgs) == 1 and "'a'" in msgs[0]


def test_bone_names_with_quotes_sample_and_bake(clean_file, addon):
    q = addon.limits.geometry.quaternion
    obj = chain_rig(("root", 'arm "left"'))
    motion = np.tile(np.array([1.0, 0, 0, 0]), (30, 2, 1))
    motion[:, 1] = cone_motion(q, 30)
    addon.rig.io.humanoid.key_rotations(obj, motion, "ROM")
    select_only(obj, ['arm "left"'])
    assert bpy.ops.pose.joint_limits_sample() == {"FINISHED"}
    assert bpy.ops.pose.joint_limits_fit() == {"FINISHED"}
    assert bpy.ops.pose.joint_limits_bake() == {"FINISHED"}
    keyed, ok = addon.rig.io.actions.keyed_rotations(obj, bpy.data.actions["ROM_limited"], ['arm "left"'], np.arange(1, 31))
    assert ok.all() and q.quaternion_angle(keyed[:, 0], motion[:, 1]).max() < 1e-4
