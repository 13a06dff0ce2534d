# SPDX-License-Identifier: GPL-3.0-or-later
"""Export to Blender's own IK limits, checked against Blender's Standard IK solver itself."""

import math

import bpy
import numpy as np
import pytest
from rigs import evaluated_local_rotation, fitted_rig, select_only

pytestmark = pytest.mark.blender42

#: Slack of the IK results against the exported limits, radians per angle. The solver clamps
#: each iteration's update onto the boundary in single precision: the results measured here
#: (bpy 5.0.1) were all within 1e-7 rad of it, half of them on it.
IK_TOLERANCE = 1e-5


def _targets():
    """Target positions around the tip of 'lower' (head at z = 2, 1 m long, pointing +Z): tilts
    of 0.3 to 2.6 rad in eight directions, so most of them ask for more than the limits allow."""
    out = []
    for tilt in (0.3, 0.9, 1.6, 2.6):
        for k in range(8):
            heading = k * math.pi / 4 + 0.2
            out.append((math.sin(tilt) * math.cos(heading), math.sin(tilt) * math.sin(heading), 2.0 + math.cos(tilt)))
    return out


def _ik_chain(obj, count=2):
    """An IK constraint on 'lower' (chain of ``count`` bones) aiming at a new empty; the action
    is unassigned so the pose basis is the rest pose."""
    obj.animation_data.action = None
    target = bpy.data.objects.new("Target", None)
    bpy.context.scene.collection.objects.link(target)
    con = obj.pose.bones["lower"].constraints.new("IK")
    con.target = target
    con.chain_count = count
    return target


def _solve(obj, target, position):
    target.location = position
    bpy.context.view_layer.update()
    return evaluated_local_rotation(obj, "lower"), evaluated_local_rotation(obj, "upper")


def _sample_upper_too(obj):
    """Sample 'upper' as well (the action keeps it at rest) and select both bones."""
    select_only(obj, ["upper"])
    assert bpy.ops.pose.joint_limits_sample() == {"FINISHED"}
    select_only(obj, ["upper", "lower"])


def _exported(addon, pb):
    ik = addon.limits.export.ik_limits
    mins = np.array([getattr(pb, f"ik_min_{a}") for a in "xyz"])
    maxs = np.array([getattr(pb, f"ik_max_{a}") for a in "xyz"])
    return ik.IkLimits(mins, maxs, [getattr(pb, f"lock_ik_{a}") for a in "xyz"])


def test_export_writes_the_fitted_ik_limits_and_reports_their_fidelity(clean_file, addon, capfd):
    obj, pb, _ = fitted_rig(addon, "XYZ")
    capfd.readouterr()
    assert bpy.ops.pose.joint_limits_export_ik_limits() == {"FINISHED"}
    cloud = addon.rig.io.storage.read_cloud(pb)
    expected = addon.limits.export.ik_limits.IkLimits.fit(cloud, padding=pb.joint_limit.padding)
    for i, axis in enumerate("xyz"):
        assert getattr(pb, f"use_ik_limit_{axis}") and not getattr(pb, f"lock_ik_{axis}")
        assert getattr(pb, f"ik_min_{axis}") == pytest.approx(expected.mins[i], abs=1e-6)
        assert getattr(pb, f"ik_max_{axis}") == pytest.approx(expected.maxs[i], abs=1e-6)
        assert getattr(pb, f"ik_min_{axis}") <= 0.0 <= getattr(pb, f"ik_max_{axis}")  # holds the rest pose
    # the cone motion swings ~34 degrees each way: the limits are that wide, not wider than a half turn
    assert 0.4 < pb.ik_max_x < 1.2 and -1.2 < pb.ik_min_z < -0.4
    assert _exported(addon, pb).contains(cloud, addon.limits.export.ik_limits.SAMPLE_TOLERANCE).all()
    out = capfd.readouterr().out
    assert "Joint Limits IK export: lower: X -" in out and "accepts 100.0% of 240 samples" in out
    text = bpy.data.texts["Joint Limits IK Export"].as_string()
    assert text.startswith("lower: X ") and "the learned limit's" in text


def test_blender_ik_keeps_the_chain_inside_the_exported_limits(clean_file, addon):
    """A real IK solve: 'upper' never moved in the samples (every axis locked), 'lower' swings in
    a cone. Wherever the target goes, the solver's result for 'lower' is inside the limits as
    :class:`IkLimits` models them, and touches their boundary when the target is out of reach;
    without the limits the same targets take it far outside."""
    q = addon.limits.geometry.quaternion
    obj, pb, _ = fitted_rig(addon)
    _sample_upper_too(obj)
    assert bpy.ops.pose.joint_limits_export_ik_limits() == {"FINISHED"}
    upper = obj.pose.bones["upper"]
    assert [upper.lock_ik_x, upper.lock_ik_y, upper.lock_ik_z] == [True, True, True]
    limits = _exported(addon, pb)
    target = _ik_chain(obj)

    results = []
    for position in _targets():
        lower, upper_rot = _solve(obj, target, position)
        assert q.quaternion_angle(upper_rot, [1.0, 0, 0, 0]) < 1e-5  # locked: it stays at rest
        results.append(lower)
    results = np.array(results)
    assert limits.contains(results, IK_TOLERANCE).all()
    # the far targets press 'lower' onto the boundary: it is the solver's boundary, not ours alone
    assert not limits.contains(results, -0.01).all()

    for axis in "xyz":
        setattr(pb, f"use_ik_limit_{axis}", False)
    free = np.array([_solve(obj, target, p)[0] for p in _targets()])
    assert not limits.contains(free, 0.1).all()


def test_blender_ik_clamps_the_swing_to_an_ellipse_like_the_model(clean_file, addon):
    """Hand-set limits, a target straight between +X and +Z swing: Blender's result sits on the
    quarter ellipse (both angles about 0.7 of their bounds), where a per-axis box would have let
    both reach their bounds."""
    ik = addon.limits.export.ik_limits
    obj, pb, _ = fitted_rig(addon)
    pb.ik_min_x, pb.ik_max_x = -0.5, 0.5
    pb.ik_min_z, pb.ik_max_z = -0.5, 0.5
    pb.ik_min_y, pb.ik_max_y = -0.2, 0.2
    for axis in "xyz":
        setattr(pb, f"use_ik_limit_{axis}", True)
    target = _ik_chain(obj, count=1)
    # rest points +Z; aim far off along a diagonal of the bone's X and Z swings
    lower, _ = _solve(obj, target, (-1.0, 1.0, 2.2))
    angles = ik.ik_angles_from_quaternion(lower)
    limits = _exported(addon, pb)
    assert limits.contains(lower, IK_TOLERANCE)
    sx, sz = abs(math.sin(angles[0] / 2)) / math.sin(0.25), abs(math.sin(angles[2] / 2)) / math.sin(0.25)
    assert sx > 0.5 and sz > 0.5  # both swings used, neither at its bound
    assert sx * sx + sz * sz == pytest.approx(1.0, abs=1e-3)


def test_export_ik_limits_skips_a_bone_with_a_broken_cloud(clean_file, addon, capfd):
    obj, pb, _ = fitted_rig(addon)
    _sample_upper_too(obj)
    key = obj.pose.bones["upper"].joint_limit.data_key
    obj.data.joint_limits_data[f"{key}/cloud"] = "q4f32:not base64!"
    capfd.readouterr()
    assert bpy.ops.pose.joint_limits_export_ik_limits() == {"FINISHED"}
    out = capfd.readouterr().out
    assert "Set IK limits on 1 bone" in out and "skipped 1 bone: 'upper'" in out
    assert pb.use_ik_limit_x and not obj.pose.bones["upper"].use_ik_limit_x
