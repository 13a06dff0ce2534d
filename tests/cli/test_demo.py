# SPDX-License-Identifier: GPL-3.0-or-later
"""The README's main job (``./dev demo``) on the embedded default, through the CLI callback."""

import importlib.util
import re
import sys

import bpy
import numpy as np
import pytest

pytestmark = pytest.mark.blender42

#: The pictures the demo draws (with matplotlib) and the summary page shows.
PICTURES = ("violations_all_bones.png", "limit_upper_arm_L.png", "limit_thigh_L.png", "limit_forearm_L.png", "limit_head.png")

#: Colours the pictures draw with (demo/pictures.py), as 0..1 sRGB.
RED = np.array([0xD6, 0x27, 0x28]) / 255  # violation as keyed, impossible poses
BLUE = np.array([0x1F, 0x77, 0xB4]) / 255  # after bake
VIRIDIS_YELLOW = np.array([0xFD, 0xE7, 0x25]) / 255  # the most twist allowed (top of the colour bar)


def _pixels(path):
    image = bpy.data.images.load(str(path))
    try:
        w, h = image.size
        return np.array(image.pixels[:]).reshape(h, w, 4)
    finally:
        bpy.data.images.remove(image)


def _count(px, colour, tolerance=0.06):
    return int((np.abs(px[..., :3] - colour).max(axis=-1) < tolerance).sum())


def test_demo_fits_enforces_bakes_and_writes_its_outputs(clean_file, addon, tmp_path):
    out = tmp_path / "out"
    assert addon.cli.main(["demo", str(out)]) == 0  # the default 600 frames: what a user sees
    report = (out / "report.txt").read_text()
    assert "fitted 21 bones" in report
    assert "read summary.html first" in report
    assert "live enforcement while playing it: worst remaining violation 0.000 deg" in report
    summary = (out / "summary.html").read_text()
    assert "bones with a fitted limit</td><td class='n'>21<" in summary

    has_matplotlib = importlib.util.find_spec("matplotlib") is not None
    if bpy.app.version >= (5, 0, 0):  # requirements-dev.txt installs it; only the bpy 4.2 run goes without
        assert has_matplotlib, "the dev venv must have matplotlib (requirements-dev.txt) for the demo's pictures"
    if has_matplotlib:
        assert sorted(p.name for p in out.glob("*.png")) == sorted(PICTURES)
        # the summary shows every picture, and only pictures that exist
        shown = re.findall(r"<img src='([^']+)'", summary)
        assert sorted(shown) == sorted(PICTURES)
        assert f"pictures: {', '.join(PICTURES)}" in report
        for name in PICTURES:
            px = _pixels(out / name)
            assert px.shape[0] > 700 and px.shape[1] > 1200, (name, px.shape)
            assert (px[..., :3] < 0.2).all(axis=-1).sum() > 2000, f"{name}: no text or lines"
            assert _count(px, RED) > 300, f"{name}: the impossible action is not drawn"
            assert _count(px, BLUE) > 50, f"{name}: the result of the bake is not drawn"
        # a shoulder's sphere (the left third, left of its colour bar): its allowed directions
        # coloured with the colour bar's top colour (its twist range is the same everywhere)
        px = _pixels(out / "limit_upper_arm_L.png")
        assert _count(px[:, : px.shape[1] // 3], VIRIDIS_YELLOW) > 500
    else:
        assert not list(out.glob("*.png"))
        assert "pictures: none; pictures not drawn: matplotlib is not installed" in report
        assert "matplotlib is not installed" in summary

    bpy.ops.wm.open_mainfile(filepath=str(out / "joint_limits_demo.blend"))
    obj = bpy.data.objects["Humanoid"]
    assert all(pb.joint_limit.limit_data for pb in obj.pose.bones)
    # each bone was keyed its own motion (the generator's bone order is not pose.bones')
    skeleton = addon.limits.body.skeleton.humanoid_skeleton()
    take = addon.limits.body.motion.range_of_motion(skeleton, frames=600)
    q_lib = addon.limits.geometry.quaternion
    for name in ("upper_arm.L", "shoulder.R", "thigh.L", "head"):
        keyed = addon.rig.io.storage.read_cloud(obj.pose.bones[name])
        expected = take[:, skeleton.index(name)]
        assert (
            abs(np.max(q_lib.quaternion_angle(keyed, [1, 0, 0, 0])) - np.max(q_lib.quaternion_angle(expected, [1, 0, 0, 0])))
            < 1e-3
        ), name
    frames = np.arange(1, 121)
    before = addon.rig.tasks.report.violation_report(obj, bpy.context.scene, bpy.data.actions["Impossible"], frames)
    after = addon.rig.tasks.report.violation_report(obj, bpy.context.scene, bpy.data.actions["Impossible_limited"], frames)
    assert sum(r["frames_out"] for r in before) > 1000
    assert max(r["worst_deg"] for r in before) > 90
    assert all(r["frames_out"] == 0 for r in after), after
    # the saved file reproduces the numbers the report and the summary printed
    worst = max(r["worst_deg"] for r in before)
    assert f"worst {worst:.1f} deg" in report
    assert f"{worst:.1f}°" in summary


def test_demo_without_matplotlib_says_why_it_draws_no_pictures(addon, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # what an import of a missing package raises
    reason = addon.cli.demo.pictures.missing_reason()
    assert reason is not None and "matplotlib is not installed" in reason and "pip install matplotlib" in reason
    numbers = {
        "bones_fitted": 3,
        "rom_frames": 10,
        "impossible_frames": 5,
        "bones_out_before": 2,
        "worst_before_deg": 12.0,
        "worst_live_deg": 0.0,
        "bones_out_after_bake": 0,
        "worst_after_bake_deg": 0.0,
        "seconds": 1.0,
    }
    page = addon.cli.demo.summary.summary_html(numbers, [], reason, "A_limited", "demo.blend")
    assert "matplotlib is not installed" in page and "<img" not in page
