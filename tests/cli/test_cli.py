# SPDX-License-Identifier: GPL-3.0-or-later
"""The ``joint_limits`` CLI command's callback, called directly (the PyPI module cannot dispatch -c)."""

import bpy
import numpy as np
import pytest
from rigs import chain_rig, cone_motion

pytestmark = pytest.mark.blender42


def _rig_file(addon, tmp_path):
    q = addon.limits.geometry.quaternion
    obj = chain_rig(("root", "a", "b"))
    frames = 90
    motion = np.tile(np.array([1.0, 0, 0, 0]), (frames, 3, 1))
    motion[:, 1] = cone_motion(q, frames, seed=3)
    motion[:, 2] = cone_motion(q, frames, seed=4)
    addon.rig.io.humanoid.key_rotations(obj, motion, "ROM")
    bad = motion.copy()
    bad[:, 2] = q.quaternion_from_exp_map(np.outer(np.linspace(0, 1.8, frames), [1.0, 0, 0]))
    addon.rig.io.humanoid.key_rotations(obj, bad, "Bad", assign=False)
    path = tmp_path / "rig.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(path))
    return path


def test_fit_bake_report_headless(clean_file, addon, tmp_path, capsys):
    path = _rig_file(addon, tmp_path)
    main = addon.cli.main
    assert main(["fit", "--object", "Rig", "--bones", "a", "b", "--model", "ellipsoid"]) == 0
    bpy.ops.wm.open_mainfile(filepath=str(path))
    pb = bpy.data.objects["Rig"].pose.bones["b"]
    assert pb.joint_limit.model == "ellipsoid" and pb.joint_limit.limit_data, "fit saved into the .blend"
    report_file = tmp_path / "report.txt"
    assert main(["report", "--object", "Rig", "--action", "Bad", "--output", str(report_file)]) == 0
    assert "leave their limits" in report_file.read_text()
    assert main(["bake", "--action", "Bad", "--save", str(tmp_path / "baked.blend")]) == 0
    bpy.ops.wm.open_mainfile(filepath=str(tmp_path / "baked.blend"))
    obj = bpy.data.objects["Rig"]
    limit = addon.rig.io.storage.read_limit(obj.pose.bones["b"])
    keyed, ok = addon.rig.io.actions.keyed_rotations(obj, bpy.data.actions["Bad_limited"], ["b"], np.arange(1, 91))
    assert ok.all() and limit.violation(keyed[:, 0]).max() < 1e-4
    out = capsys.readouterr().out
    assert "fitted 2 bones" in out and "baked 90 frames" in out


def test_bad_cli_input_exits_non_zero_with_a_message(clean_file, addon, tmp_path, capsys):
    _rig_file(addon, tmp_path)
    main = addon.cli.main
    assert main(["frobnicate"]) != 0
    assert main(["fit", "--object", "NoSuchRig"]) != 0
    assert main(["fit", "--bones", "nope"]) != 0
    assert main(["fit", "--model", "banana"]) != 0
    assert main(["bake", "--action", "Missing"]) != 0
    assert main(["report", "--action", "Bad"]) != 0, "no limits fitted yet"
    err = capsys.readouterr().err
    assert "NoSuchRig" in err and "nope" in err and "Missing" in err and "no fitted" in err
    assert "invalid choice: 'banana'" in err and "kdop" in err


def test_help_lists_commands_options_and_model_kinds_and_returns(clean_file, addon, capsys):
    main = addon.cli.main
    assert main(["--help"]) == 0  # printed, not SystemExit out of the command
    top = capsys.readouterr().out
    for kind, _, _ in addon.limits.registry.model_kinds():
        assert kind in top
    assert "[FILE.blend]" in top and "demo needs none" in top
    for command in ("fit", "bake", "report", "demo"):
        assert main([command, "--help"]) == 0
        text = capsys.readouterr().out
        options = [line for line in text.splitlines() if line.strip().startswith("--")]
        assert options and all(len(line.split(None, 1)) == 2 or "help" in line for line in options), text
    assert main(["fit", "--model", "banana"]) == 2
    assert "invalid choice" in capsys.readouterr().err


def test_an_option_that_takes_names_refuses_none(clean_file, addon, capsys):
    main = addon.cli.main

    for argv in (["fit", "--actions"], ["fit", "--bones"], ["report", "--bones"]):
        assert main(argv) == 2, argv
        assert "expected at least one argument" in capsys.readouterr().err
