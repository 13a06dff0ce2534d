# SPDX-License-Identifier: GPL-3.0-or-later
"""The README's main job (``./dev demo``) on the embedded default, through the CLI callback."""

import bpy
import numpy as np


def test_demo_fits_enforces_bakes_and_writes_its_outputs(clean_file, addon, tmp_path):
    out = tmp_path / "out"
    assert addon.cli.main(["demo", str(out), "--frames", "300"]) == 0
    report = (out / "report.txt").read_text()
    assert "fitted 21 bones" in report
    for name in ("limit_upper_arm_L.png", "limit_thigh_R.png", "limit_forearm_L.png"):
        assert (out / name).stat().st_size > 2000
    image = bpy.data.images.load(str(out / "limit_upper_arm_L.png"))
    px = np.array(image.pixels[:]).reshape(image.size[1], image.size[0], 4)
    assert (np.abs(px[..., :3] - [0.95, 0.45, 0.1]).max(axis=-1) < 0.05).sum() > 50, "limit boundary drawn"
    assert (np.abs(px[..., :3] - [0.15, 0.45, 0.95]).max(axis=-1) < 0.05).sum() > 50, "samples drawn"

    bpy.ops.wm.open_mainfile(filepath=str(out / "joint_limits_demo.blend"))
    obj = bpy.data.objects["Humanoid"]
    assert all(pb.joint_limit.limit_data for pb in obj.pose.bones)
    frames = np.arange(1, 121)
    before = addon.rig.report.violation_report(obj, bpy.context.scene, bpy.data.actions["Impossible"], frames)
    after = addon.rig.report.violation_report(obj, bpy.context.scene, bpy.data.actions["Impossible_limited"], frames)
    assert sum(r["frames_out"] for r in before) > 1000
    assert max(r["worst_deg"] for r in before) > 90
    assert all(r["frames_out"] == 0 for r in after), after
    # the saved file reproduces the numbers the report printed
    assert f"worst {max(r['worst_deg'] for r in before):.1f} deg" in report
