# SPDX-License-Identifier: GPL-3.0-or-later
"""``batch fit`` learns from both sides of the body (issue 13): a right arm that barely moved in
the clips accepts the left arm's motion seen in the mirror; ``--sides-apart`` fits each side
alone."""

import json

import numpy as np

NAMES = ("Hips", "Spine", "Head", "LeftArm", "LeftForeArm", "RightArm", "RightForeArm")
PARENTS = (-1, 0, 1, 1, 3, 1, 5)
OFFSETS = ((0, 90, 0), (0, 10, 0), (0, 50, 0), (15, 45, 0), (28, 0, 0), (-15, 45, 0), (-28, 0, 0))
ENDS = {2: (0, 10, 0), 4: (20, 0, 0), 6: (-20, 0, 0)}
CHANNELS = [["Xposition", "Yposition", "Zposition", "Zrotation", "Xrotation", "Yrotation"]] + [
    ["Zrotation", "Xrotation", "Yrotation"]
] * 6


def write_clip(addon, path, seed, frames=40):
    """The left arm swings widely (up to 70 degrees per axis), the right arm stays within 3."""
    rng = np.random.default_rng(seed)
    t = np.linspace(0, 1, frames)[:, None]
    values = np.zeros((frames, 6 + 3 * 6))
    values[:, 3:] = 3.0 * np.sin(2 * np.pi * t + rng.uniform(0, 6, size=(1, 3 + 3 * 6)))
    left = 6 + 3 * 2  # LeftArm's three rotation columns
    values[:, left : left + 3] = 70.0 * np.sin(
        2 * np.pi * t * rng.uniform(0.5, 1.5, size=(1, 3)) + rng.uniform(0, 6, size=(1, 3))
    )
    ends = {j: np.array(v, dtype=float) for j, v in ENDS.items()}
    text = addon.rig.io.bvh_file.bvh_text(NAMES, PARENTS, np.array(OFFSETS, dtype=float), CHANNELS, ends, 1 / 30, values)
    path.write_text(text)
    return path


def test_a_bone_learns_from_its_mirror_bone_unless_the_sides_are_fitted_apart(clean_file, addon, tmp_path):
    lib = tmp_path / "lib"
    lib.mkdir()
    for k in range(3):
        write_clip(addon, lib / f"take{k}.bvh", seed=k)
    clip = addon.rig.io.bvh_file.read_bvh(lib / "take0.bvh")
    skeleton = clip.skeleton()
    left, right = NAMES.index("LeftArm"), NAMES.index("RightArm")
    rest = skeleton.rest_rotations
    q_left = clip.local_rotations()[:, left]
    # the left arm's samples seen in the mirror x = 0 (the file's axes), as the right arm's
    seen = addon.limits.body.symmetry.mirrored_samples(q_left, rest[left], rest[right], np.array([1.0, 0.0, 0.0]))

    main = addon.cli.main
    fit = ["batch", "fit", str(lib), "--model", "ellipsoid"]
    assert main([*fit, "--output", str(tmp_path / "both")]) == 0
    assert main([*fit, "--output", str(tmp_path / "apart"), "--sides-apart"]) == 0
    both = addon.batch.limit_set.read_limit_set(tmp_path / "both" / "limits.json")
    apart = addon.batch.limit_set.read_limit_set(tmp_path / "apart" / "limits.json")
    assert both["RightArm"].contains(seen).mean() > 0.99
    assert apart["RightArm"].contains(seen).mean() < 0.3, "alone, the right arm knows only its 3 degrees"
    assert both["LeftArm"].contains(q_left).all() and apart["LeftArm"].contains(q_left).all()

    summary = json.loads((tmp_path / "both" / "summary.json").read_text())
    bones = {b["bone"]: b for b in summary["bones"]}
    assert bones["RightArm"]["mirrored_from"] == {"bone": "LeftArm", "samples": 3 * 40}
    assert bones["LeftArm"]["mirrored_from"] == {"bone": "RightArm", "samples": 3 * 40}
    assert "mirrored_from" not in bones["LeftForeArm"] or bones["LeftForeArm"]["mirrored_from"]["bone"] == "RightForeArm"
    assert "| RightArm | 120 | LeftArm (120 samples) |" in (tmp_path / "both" / "summary.md").read_text()
    assert json.loads((tmp_path / "both" / "limits.json").read_text())["mirrored"]["RightArm"] == {
        "bone": "LeftArm",
        "samples": 120,
    }
    apart_summary = json.loads((tmp_path / "apart" / "summary.json").read_text())
    assert not any("mirrored_from" in b for b in apart_summary["bones"])
