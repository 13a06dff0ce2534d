# SPDX-License-Identifier: GPL-3.0-or-later
"""``joint_limits batch``: the numpy BVH reader against Blender's importer, and fit / check /
clean over generated clips (written by the project's own BVH writer) with a corrupt clip, a
crashing clip, an interrupted run and two workers, and the summary's picture."""

import json
import re
import sys

import bpy
import humanoid_variants as hv
import numpy as np
import pytest
from clip_library import NAMES, _files, _library, write_clip


@pytest.fixture
def limits(addon, tmp_path):
    """A limit set fitted from the three range-of-motion clips."""
    lib = _library(addon, tmp_path / "lib")
    code = addon.cli.main(["batch", "fit", str(lib / "rom*.bvh"), "--output", str(tmp_path / "fit"), "--model", "ellipsoid"])
    assert code == 0
    return lib, tmp_path / "fit" / "limits.json"


def test_numpy_reader_gives_the_rotations_of_blenders_importer(clean_file, addon, tmp_path):
    path = write_clip(addon, tmp_path / "clip.bvh", seed=5, amplitude=170.0)
    clip = addon.rig.io.bvh_file.read_bvh(path)
    mine = clip.local_rotations()
    obj = addon.rig.io.bvh.import_bvh_armature(bpy.context, path)
    action = obj.animation_data.action
    frames = addon.rig.io.actions.action_frames(action)
    theirs, keyed = addon.rig.io.actions.keyed_rotations(obj, action, clip.names, frames)
    assert keyed.all() and theirs.shape == mine.shape == (12, len(NAMES), 4)
    gap = np.minimum(np.abs(theirs - mine).max(-1), np.abs(theirs + mine).max(-1))  # q and -q: one rotation
    assert gap.max() < 1e-5, gap.max(axis=0)


def test_fit_check_clean_report_the_corrupt_clip_and_do_the_rest(clean_file, addon, limits, tmp_path, capsys):
    lib, limit_file = limits
    data = json.loads(limit_file.read_text())
    assert data["format"] == "joint_limits.limit_set" and data["clips"] == ["rom0.bvh", "rom1.bvh", "rom2.bvh"]
    assert "Hips" in data["skipped"] and "Head" in data["bones"], "the root carries the heading: not limited"
    main = addon.cli.main
    assert main(["batch", "check", str(lib), "--output", str(tmp_path / "check"), "--limits", str(limit_file)]) == 1
    summary = json.loads((tmp_path / "check" / "summary.json").read_text())
    assert summary["clips_done"] == 4 and summary["clips_failed"] == 1
    failed = [c for c in summary["clips"] if c["status"] == "failed"]
    assert failed[0]["clip"] == "corrupt.bvh" and "not a valid BVH file" in failed[0]["error"]
    wide = json.loads((tmp_path / "check" / "reports" / "wide.bvh.json").read_text())
    assert wide["frames_out"] > 0 and wide["worst"]["degrees"] > 10 and 1 <= wide["worst"]["frame"] <= 12
    assert summary["worst"]["clip"] == "wide.bvh"
    for k in range(3):
        assert json.loads((tmp_path / "check" / "reports" / f"rom{k}.bvh.json").read_text())["frames_out"] == 0
    assert "corrupt.bvh" in (tmp_path / "check" / "summary.md").read_text()
    err = capsys.readouterr().err
    assert "5/5 clips (1 failed)" in err and "s left" in err

    assert main(["batch", "clean", str(lib), "--output", str(tmp_path / "clean"), "--limits", str(limit_file)]) == 1
    cleaned = tmp_path / "clean" / "clips"
    assert sorted(p.name for p in cleaned.iterdir()) == ["rom0.bvh", "rom1.bvh", "rom2.bvh", "wide.bvh"]
    assert (cleaned / "rom1.bvh").read_bytes() == (lib / "rom1.bvh").read_bytes(), "nothing out: the same bytes"
    assert main(["batch", "check", str(cleaned), "--output", str(tmp_path / "again"), "--limits", str(limit_file)]) == 0
    assert json.loads((tmp_path / "again" / "summary.json").read_text())["frames_out"] == 0, "cleaned clips stay inside"


def test_clean_rewrites_only_the_limited_rotation_values(clean_file, addon, limits, tmp_path):
    lib, limit_file = limits
    assert (
        addon.cli.main(["batch", "clean", str(lib / "wide.bvh"), "--output", str(tmp_path / "c"), "--limits", str(limit_file)])
        == 0
    )
    before, after = (lib / "wide.bvh").read_bytes(), (tmp_path / "c" / "clips" / "wide.bvh").read_bytes()
    report = json.loads((tmp_path / "c" / "reports" / "wide.bvh.json").read_text())
    clip = addon.rig.io.bvh_file.read_bvh(lib / "wide.bvh")
    lines_before, lines_after = before.split(b"\n"), after.split(b"\n")
    assert len(lines_before) == len(lines_after) and after.count(b"\r\n") == before.count(b"\r\n"), "CRLF kept"
    first_motion = int(clip.motion_lines[0])
    assert lines_before[:first_motion] == lines_after[:first_motion], "hierarchy, frame count and frame time untouched"
    out_bones = {r["bone"] for r in report["bones"] if r["frames_out"]}
    allowed = set()
    for j, name in enumerate(clip.names):
        if name in out_bones:
            allowed |= set(clip.rotation_columns(j))
    changed_lines = 0
    for a, b in zip(lines_before[first_motion:], lines_after[first_motion:], strict=True):
        if a == b:
            continue
        changed_lines += 1
        ta, tb = re.findall(rb"\S+", a), re.findall(rb"\S+", b)
        assert re.sub(rb"\S+", b"x", a) == re.sub(rb"\S+", b"x", b), "spacing kept"
        changed = {k for k, (x, y) in enumerate(zip(ta, tb, strict=True)) if x != y}
        assert changed <= allowed, "only rotation channels of bones out of their limits"
    assert changed_lines == report["frames_out"] > 0
    for j in range(len(clip.names)):  # positions and untouched joints: the same text
        if clip.names[j] not in out_bones:
            cols = range(clip.columns[j], clip.columns[j] + len(clip.channels[j]))
            for a, b in zip(lines_before[first_motion:], lines_after[first_motion:], strict=True):
                ta, tb = a.split(), b.split()
                if ta:
                    assert [ta[c] for c in cols] == [tb[c] for c in cols]


def test_an_interrupted_batch_resumes_without_redoing_done_clips(clean_file, addon, limits, tmp_path, capsys):
    lib, limit_file = limits
    out = tmp_path / "out"
    main = addon.cli.main
    # the first run is cut short: it got through two clips, and left a half-written file behind
    assert (
        main(["batch", "clean", str(lib / "rom0.bvh"), str(lib / "wide.bvh"), "--output", str(out), "--limits", str(limit_file)])
        == 0
    )
    (out / "reports" / ".rom1.bvh.json.partial").write_text('{"clip": "rom1')
    done = {name: (out / "reports" / f"{name}.json").stat().st_mtime_ns for name in ("rom0.bvh", "wide.bvh")}
    (out / "clips" / "wide.bvh").unlink()  # an output missing: that clip is not done
    capsys.readouterr()
    assert main(["batch", "clean", str(lib), "--output", str(out), "--limits", str(limit_file)]) == 1
    err = capsys.readouterr().err
    assert "1 of 5 clips already done, skipped" in err
    assert (out / "reports" / "rom0.bvh.json").stat().st_mtime_ns == done["rom0.bvh"]
    assert (out / "clips" / "wide.bvh").exists()
    fresh = tmp_path / "fresh"
    assert main(["batch", "clean", str(lib), "--output", str(fresh), "--limits", str(limit_file)]) == 1
    ours = {k: v for k, v in _files(out).items() if not k.endswith(".partial")}
    assert ours == _files(fresh), "a resumed batch ends with the bytes of one uninterrupted run"


def _blend_take(addon, bvh, path):
    """``bvh`` imported by Blender's importer into an empty file saved at ``path``: a .blend
    clip (its action) with the bones of the generated clips."""
    bpy.ops.wm.read_homefile(use_empty=True)
    addon.rig.io.bvh.import_bvh_armature(bpy.context, bvh)
    bpy.ops.wm.save_as_mainfile(filepath=str(path))
    bpy.ops.wm.read_homefile(use_empty=True)
    return path


def test_two_workers_write_the_bytes_of_one_and_survive_a_crashing_clip(clean_file, addon, limits, tmp_path, monkeypatch):
    lib, limit_file = limits
    _blend_take(addon, lib / "wide.bvh", lib / "take.blend")
    main = addon.cli.main
    args = ["batch", "clean", str(lib), "--limits", str(limit_file)]
    assert main([*args, "--output", str(tmp_path / "one")]) == 1
    assert main([*args, "--output", str(tmp_path / "two"), "--jobs", "2"]) == 1
    one = _files(tmp_path / "one")
    assert one == _files(tmp_path / "two"), "a worker process and this one write the same bytes"
    assert {"clips/take.wide.blend", "clips/wide.bvh"} <= one.keys(), "a cleaned .blend is compared too"

    monkeypatch.setenv(addon.batch.clip_jobs.CRASH_ENV, "rom1.bvh")  # that clip ends its worker process
    assert main([*args, "--output", str(tmp_path / "crash"), "--jobs", "2"]) == 1
    summary = json.loads((tmp_path / "crash" / "summary.json").read_text())
    status = {c["clip"]: c["status"] for c in summary["clips"]}
    assert status == {
        "corrupt.bvh": "failed",
        "rom0.bvh": "ok",
        "rom1.bvh": "failed",
        "rom2.bvh": "ok",
        "take.blend:wide": "ok",
        "wide.bvh": "ok",
    }
    crashed = next(c for c in summary["clips"] if c["clip"] == "rom1.bvh")
    assert "worker process ended" in crashed["error"]
    for name in ("rom0.bvh", "rom2.bvh", "take.wide.blend", "wide.bvh"):
        assert (tmp_path / "crash" / "clips" / name).read_bytes() == one[f"clips/{name}"]


def test_bad_batch_input_is_one_message(clean_file, addon, tmp_path, capsys):
    main = addon.cli.main
    write_clip(addon, tmp_path / "a.bvh", seed=0)
    assert main(["batch", "check", str(tmp_path / "a.bvh"), "--output", str(tmp_path / "o")]) == 2
    assert main(["batch", "check", str(tmp_path / "missing"), "--output", str(tmp_path / "o"), "--limits", "x.json"]) == 2
    (tmp_path / "x.json").write_text("{}")
    assert (
        main(["batch", "check", str(tmp_path / "a.bvh"), "--output", str(tmp_path / "o"), "--limits", str(tmp_path / "x.json")])
        == 2
    )
    assert main(["batch", "fit", str(tmp_path / "a.bvh"), "--output", str(tmp_path / "o"), "--jobs", "0"]) == 2
    err = capsys.readouterr().err
    assert "needs --limits" in err and "no such clip" in err and "not a Joint Limits limit set" in err and "--jobs" in err
    assert "Traceback" not in err


def test_pictures_beside_the_summary_or_why_not(clean_file, addon, limits, tmp_path, monkeypatch):
    pytest.importorskip("matplotlib")
    lib, limit_file = limits
    main = addon.cli.main
    args = ["batch", "check", str(lib), "--limits", str(limit_file), "--pictures"]
    assert main([*args, "--output", str(tmp_path / "a")]) == 1
    png = (tmp_path / "a" / "summary.png").read_bytes()
    assert png.startswith(b"\x89PNG") and "![" in (tmp_path / "a" / "summary.md").read_text()
    assert main([*args, "--output", str(tmp_path / "b")]) == 1
    assert (tmp_path / "b" / "summary.png").read_bytes() == png, "no date or version in the picture"
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # as if not installed
    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)
    assert main([*args, "--output", str(tmp_path / "c")]) == 1
    assert not (tmp_path / "c" / "summary.png").exists()
    assert "No picture: matplotlib is not installed" in (tmp_path / "c" / "summary.md").read_text()


def _humanoid_clip(addon, path, motion):
    """A BVH clip of the embedded humanoid (Z up, a T-pose at rest) whose bones take the local
    rotations ``motion (F, n, 4)`` (Blender's bone space, as the importer builds it)."""
    lib, bf = addon.limits, addon.rig.io.bvh_file
    body = lib.body.skeleton.humanoid_skeleton()
    offsets = np.array([body.heads[j] - (body.heads[p] if p >= 0 else 0.0) for j, p in enumerate(body.parents)])
    leaves = [j for j in range(len(body)) if j not in body.parents]
    ends = {j: body.tails[j] - body.heads[j] for j in leaves}
    channels = [["Xposition", "Yposition", "Zposition", "Zrotation", "Xrotation", "Yrotation"]]
    channels += [["Zrotation", "Xrotation", "Yrotation"]] * (len(body) - 1)
    values = np.zeros((len(motion), 3 + 3 * len(body)))
    path.write_text(bf.bvh_text(body.names, body.parents, offsets, channels, ends, 1 / 30, values))
    clip = bf.read_bvh(path)
    frames = np.arange(len(motion))
    path.write_text(clip.limited_text({j: (frames, motion[:, j]) for j in range(len(body))}))
    return clip


def _human_clips(addon, tmp_path):
    """A folder of two clips of the humanoid: ``inside.bvh`` (motion inside the references) and
    ``impossible.bvh`` (the same with a knee hyperextended on frames 10-13 and a head twisted
    120 degrees on frames 20-21)."""
    lib = addon.limits
    folder = tmp_path / "clips"
    folder.mkdir()
    body = lib.body.skeleton.humanoid_skeleton()
    zero = _humanoid_clip(addon, folder / "probe.bvh", np.tile([1.0, 0, 0, 0], (1, len(body), 1)))
    skeleton = zero.skeleton()
    frames = lib.body.retarget.RigFrames(skeleton, lib.body.bone_names.match_joints(skeleton.names, skeleton.parents)[0])
    rng = np.random.default_rng(8)
    motion = np.tile([1.0, 0.0, 0.0, 0.0], (30, len(body), 1))
    for name, match in frames.matches.items():
        motion[:, skeleton.index(name)] = frames.basis(name, hv.envelope_motion(lib, match.joint, 30, rng, share=0.6))
    (folder / "probe.bvh").unlink()
    _humanoid_clip(addon, folder / "inside.bvh", motion)
    bad = motion.copy()
    knee, head = skeleton.index("shin.L"), skeleton.index("head")
    impossible = {p.words: p for p in lib.body.envelope.impossible_poses()}
    bad[10:14, knee] = frames.basis("shin.L", impossible["knee hyperextended 30 degrees (left)"].anatomical()[None])
    bad[20:22, head] = frames.basis("head", impossible["head twisted 120 degrees on the neck"].anatomical()[None])
    _humanoid_clip(addon, folder / "impossible.bvh", bad)
    return folder


def test_check_and_clean_against_the_human_preset_need_no_fit(clean_file, addon, tmp_path):
    """``batch check|clean --preset human``: each clip against the human preset on its own
    skeleton. Motion inside the references passes; a knee hyperextended and a head twisted 120
    degrees on a few frames are found on those frames alone, and cleaning puts them back."""
    folder = _human_clips(addon, tmp_path)
    main = addon.cli.main
    assert main(["batch", "check", str(folder), "--output", str(tmp_path / "check"), "--preset", "human"]) == 0
    reports = tmp_path / "check" / "reports"
    inside = json.loads((reports / "inside.bvh.json").read_text())
    assert inside["frames_out"] == 0 and inside["bones_checked"] == 20
    found = json.loads((reports / "impossible.bvh.json").read_text())
    assert found["frames_out"] == 6
    out = {row["bone"]: row["frames_out"] for row in found["bones"] if row["frames_out"]}
    assert out == {"shin.L": 4, "head": 2}
    assert main(["batch", "clean", str(folder), "--output", str(tmp_path / "clean"), "--preset", "human"]) == 0
    cleaned = tmp_path / "clean" / "clips"
    again = tmp_path / "again"
    assert main(["batch", "check", str(cleaned), "--output", str(again), "--preset", "human"]) == 0
    assert json.loads((again / "summary.json").read_text())["frames_out"] == 0
    assert main(["batch", "check", str(folder), "--output", str(tmp_path / "x"), "--preset", "human", "--limits", "l.json"]) != 0


def test_batch_fit_of_a_humanoid_leaves_a_solver_error_out(clean_file, addon, tmp_path):
    """``batch fit --model auto`` of the humanoid's clips joins them with the human envelope and
    leaves out what no body makes: the knee hyperextended 30 degrees on four frames of one clip
    (20 degrees beyond the envelope) is refused by the fitted limits, found on exactly those frames."""
    folder = _human_clips(addon, tmp_path)
    main = addon.cli.main
    assert main(["batch", "fit", str(folder), "--output", str(tmp_path / "fit"), "--model", "auto"]) == 0
    limits = tmp_path / "fit" / "limits.json"
    assert main(["batch", "check", str(folder), "--output", str(tmp_path / "check"), "--limits", str(limits)]) == 0
    reports = tmp_path / "check" / "reports"
    assert json.loads((reports / "inside.bvh.json").read_text())["frames_out"] == 0
    out = {row["bone"]: row["frames_out"] for row in json.loads((reports / "impossible.bvh.json").read_text())["bones"]}
    assert out["shin.L"] == 4
