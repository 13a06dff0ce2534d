# SPDX-License-Identifier: GPL-3.0-or-later
"""The scripting API (``api.py``): checking a pose against the bones' limits."""

import math

import bpy
import numpy as np
import pytest
from rigs import fitted_rig, set_local_rotation

pytestmark = pytest.mark.blender42

OUTSIDE = np.array([math.cos(0.8), math.sin(0.8), 0.0, 0.0])  # 92 degrees about X


def test_pose_violations_of_the_channels_and_of_the_evaluated_pose(clean_file, addon):
    api, q_lib = addon.api, addon.limits.geometry.quaternion
    obj, pb, _ = fitted_rig(addon)
    obj.animation_data.action = None  # the pose is what is set below, not the keys
    set_local_rotation(pb, np.array([1.0, 0, 0, 0]), q_lib)
    bpy.context.view_layer.update()
    assert api.pose_violations(obj) == {"lower": 0.0}
    assert api.bones_outside(obj) == []

    set_local_rotation(pb, OUTSIDE, q_lib)
    bpy.context.view_layer.update()
    expected = math.degrees(float(api.limit(pb).violation(OUTSIDE)))
    assert expected > 10.0
    assert api.pose_violations(obj, evaluated=False)["lower"] == pytest.approx(expected, abs=1e-6)
    assert api.pose_violations(obj)["lower"] == pytest.approx(expected, abs=0.05)  # float32 matrices
    assert api.bones_outside(obj) == ["lower"]

    # a constraint turns the bone back to rest: the evaluated pose is inside, its channels are not
    con = pb.constraints.new("COPY_ROTATION")
    con.target, con.subtarget = obj, "root"
    bpy.context.view_layer.update()
    assert api.pose_violations(obj)["lower"] == pytest.approx(0.0, abs=0.05)
    assert api.pose_violations(obj, evaluated=False)["lower"] == pytest.approx(expected, abs=1e-6)


def test_action_report_rows_and_bones_without_limits(clean_file, addon):
    obj, pb, action = fitted_rig(addon)
    rows = addon.api.action_report(obj, bpy.context.scene, action, list(range(1, 41)))
    assert [r["bone"] for r in rows] == ["lower"] and rows[0]["frames"] == 40
    assert rows[0]["frames_out"] == 0, "the fitted motion is inside its own limit"
    assert addon.api.limit(obj.pose.bones["upper"]) is None
    assert addon.api.pose_violations(obj, ["upper"]) == {}, "bones without a limit are left out"
