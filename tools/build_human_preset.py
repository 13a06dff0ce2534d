# SPDX-License-Identifier: GPL-3.0-or-later
"""Build ``rig/tasks/preset_data/human_rom.json``, the human preset, from CMU's range-of-motion take 143_21.

    .venv/bin/python tools/build_human_preset.py PATH/TO/143_21.bvh [--output rig/tasks/preset_data/human_rom.json]

Reads the clip with the project's BVH reader (:mod:`batch.bvh_file`: the rotations a rig
imported with Blender's importer would have), matches its bones to anatomical joints
(:mod:`limits.bone_names`), turns every frame into anatomical rotations
(:mod:`limits.retarget`) and keeps every ``--step``-th frame, rounded, with where they came from.
The clip itself is not stored. What it does about the take's quirks (its README):

- frame 1 is the all-zero T-pose before the motion starts: dropped;
- the solver hands rotation back and forth between ``Neck``, ``Neck1`` and ``Head`` on some
  frames (100-170 degrees): the neck joint is the whole chain's rotation (head against chest),
  which is smooth through them (at most 4 degrees a frame);
- the head's solved frame is turned about 178 degrees from the skeleton's rest on every frame
  (other CMU takes of the same skeleton: 17-22 degrees), a constant error of the head's own
  frame: ``--recentre neck`` (the default) takes the take's mean head orientation as neutral
  (right-multiplies by its inverse) and records what it removed;
- the hands only roll with the forearm (CMU's hand is solved from the forearm's markers: no
  flexion or deviation at the wrist, and the elbow is a hinge with no roll): the wrist's roll
  (its twist about the forearm) is added to the elbow's samples, frame by frame, since rigs put
  the forearm's roll on either bone, and the wrists are left out (a limit learnt from a wrist
  that never bends would forbid bending it);
- in the deep squat (frames 1720-1853) the solver turns the right thigh out, up and back
  (129 degrees from straight down, while the left one flexes 81 degrees forward and the knees
  bend alike): ``--drop hip.R:1720-1853`` (the default) leaves those frames out of the right
  hip, found as the frames where the thighs, mirrored, differ by more than 30 degrees during
  the squat;
- a joint that never turns (the clavicles, ``LeftShoulder``, are all zero) has no range to
  learn: left out and listed under ``not_in_preset``;
- single-frame spikes (more than ``SPIKE_DEGREES`` from both neighbours, at 120 fps) are
  dropped per joint and counted.
"""

import argparse
import datetime
import json
import sys
from pathlib import Path

import blender_session
import numpy as np

ROOT = Path(__file__).resolve().parent.parent
#: A frame further than this from both neighbours is a solver spike (120 fps: 2400 deg/s).
SPIKE_DEGREES = 20.0
#: A joint whose rotations all lie within this of their mean never turned (degrees).
STILL_DEGREES = 1.0
#: Rotation vectors are stored with this many decimals (radians: 0.06 degrees at most).
DECIMALS = 3
#: Contiguous time blocks of the samples, stored as separate clips: the auto model's
#: cross-validation holds one out at a time, with or without the user's own clips beside them.
BLOCKS = 5

SOURCE = {
    "clip": "CMU Graphics Lab Motion Capture Database, subject 143, trial 21 (range of motion)",
    "file": "una-dinosauria/cmu-mocap: 143/143_21.bvh (commit f50fdd3)",
    "licence": "free for all uses; acknowledge mocap.cs.cmu.edu (the database was created with funding from NSF EIA-0196217)",
    "url": "http://mocap.cs.cmu.edu",
}


def segment_directions(clip):
    """``(J, 3)`` the direction each joint's segment points at rest: to its End Site or the mean
    of its children's non-zero offsets; a joint whose children all sit on its head (CMU's
    ``LeftHand`` and its finger and thumb joints) continues its parent's direction, as a hand
    continues the forearm (Blender's importer points such bones along +Y, the file's up)."""
    n = len(clip.names)
    out = np.zeros((n, 3))
    for j in range(n):  # parents first
        ends = [clip.end_offsets[j]] if j in clip.end_offsets else []
        offsets = [clip.offsets[c] for c in np.flatnonzero(clip.parents == j)] + ends
        v = np.mean([o for o in offsets if np.linalg.norm(o) > 1e-6] or [np.zeros(3)], axis=0)
        if np.linalg.norm(v) > 1e-6:
            out[j] = v / np.linalg.norm(v)
        else:
            out[j] = out[clip.parents[j]] if clip.parents[j] >= 0 else (0.0, 1.0, 0.0)
    return out


def spikes(q, quaternion_angle, degrees=SPIKE_DEGREES):
    """``(F,)`` frames of rotations ``q (F, 4)`` further than ``degrees`` from both neighbours."""
    step = np.degrees(quaternion_angle(q[1:], q[:-1]))
    out = np.zeros(len(q), dtype=bool)
    out[1:-1] = (step[:-1] > degrees) & (step[1:] > degrees)
    return out


def drop_ranges(specs):
    """``{joint: [(first, last), ...]}`` (1-based file frames) from ``JOINT:FIRST-LAST`` texts."""
    out = {}
    for spec in specs:
        joint, _, frames = spec.partition(":")
        first, _, last = frames.partition("-")
        if not (joint and first.isdigit() and last.isdigit() and int(first) <= int(last)):
            raise SystemExit(f"--drop takes JOINT:FIRST-LAST (file frames), got {spec!r}")
        out.setdefault(joint, []).append((int(first), int(last)))
    return out


def build(path, step, recentre, drop=None):
    addon = blender_session.load_extension()  # the add-on's package: its BVH reader and maths
    qm = addon.limits.geometry.quaternion

    clip = addon.rig.io.bvh_file.read_bvh(path)
    heads = np.zeros((len(clip.names), 3))
    for j, p in enumerate(clip.parents):
        heads[j] = clip.offsets[j] + (heads[p] if p >= 0 else 0.0)
    directions = segment_directions(clip)
    skeleton = addon.limits.body.skeleton.Skeleton(clip.names, clip.parents, heads, heads + directions, clip.rest_rotations())
    matches, unmatched = addon.limits.body.bone_names.match_joints(clip.names, clip.parents)
    frames = addon.limits.body.retarget.RigFrames(skeleton, matches, directions)
    rotations = frames.joint_rotations(clip.local_rotations()[1:])  # frame 1: the T-pose before the take
    joints, not_in_preset, notes = {}, {}, {}
    for side in ("L", "R"):
        wrist = rotations.pop(f"wrist.{side}", None)
        if wrist is not None and f"elbow.{side}" in rotations:
            _, roll = addon.limits.geometry.swing_twist.swing_twist_from_quaternion(wrist)
            rotations[f"elbow.{side}"] = qm.quaternion_multiply(rotations[f"elbow.{side}"], roll)
            notes[f"elbow.{side}"] = "with the wrist's roll (the take's forearm roll is solved at the wrist)"
            not_in_preset[f"wrist.{side}"] = "the take's hands only roll with the forearm (no flexion or deviation)"
    for joint in sorted(rotations):
        q = rotations[joint]
        mean = qm.quaternion_mean(q)
        if np.degrees(qm.quaternion_angle(q, mean)).max() < STILL_DEGREES:
            not_in_preset[joint] = "never turns in the take"
            continue
        if joint in recentre:
            q = qm.quaternion_short_way(qm.quaternion_multiply(q, qm.quaternion_conjugate(mean)))
            notes[joint] = (
                f"re-centred: the take's mean orientation ({np.degrees(qm.quaternion_angle(mean, [1.0, 0, 0, 0])):.0f} degrees "
                "from the rest pose, a constant error of the solved segment) is taken as neutral"
            )
        bad = spikes(q, qm.quaternion_angle)
        if bad.any():
            notes[joint] = (notes.get(joint, "") + f"; {int(bad.sum())} spike frames dropped").lstrip("; ")
        file_frames = np.arange(2, len(q) + 2)  # rotations start at the file's frame 2
        for first, last in (drop or {}).get(joint, ()):
            bad |= (file_frames >= first) & (file_frames <= last)
            notes[joint] = (notes.get(joint, "") + f"; frames {first}-{last} dropped (a solver flip)").lstrip("; ")
        kept = q[~bad][::step]
        joints[joint] = np.round(qm.exp_map_from_quaternion(qm.quaternion_short_way(kept)), DECIMALS) + 0.0  # no -0.0
    bones = {name: match.joint for name, match in matches.items()}
    return clip, joints, bones, unmatched, not_in_preset, notes


def preset_text(clip, joints, bones, unmatched, not_in_preset, notes, step):
    """The preset file's text: JSON, one joint's samples a line."""
    head = {
        "format": "joint_limits_preset",
        "version": 1,
        "name": "human",
        "title": "Human range of motion (CMU 143_21)",
        "source": {**SOURCE, "frames": clip.frame_count, "frame_time": clip.frame_time},
        "built": {
            "date": datetime.date.today().isoformat(),
            "tool": "tools/build_human_preset.py",
            "tool_version": _version(),
            "step": step,
            "frames_used": f"2..{clip.frame_count} (frame 1 is the T-pose before the take)",
        },
        "rotations": "per anatomical joint, rotation vectors (axis times angle, radians) of its bone's segment frame "
        "against its parent's (limits/body/retarget.py), in time order",
        "blocks": BLOCKS,
        "source_bones": bones,
        "source_bones_unmatched": unmatched,
        "not_in_preset": not_in_preset,
        "notes": notes,
    }
    text = json.dumps(head, indent=1, sort_keys=False)[:-2] + ',\n "joints": {\n'
    rows = [f'  "{joint}": {json.dumps(v.tolist(), separators=(",", ":"))}' for joint, v in joints.items()]
    return text + ",\n".join(rows) + "\n }\n}\n"


def _version():
    import tomllib

    return tomllib.loads((ROOT / "blender_manifest.toml").read_text(encoding="utf-8"))["version"]


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("bvh", help="CMU 143_21.bvh (the range-of-motion take)")
    p.add_argument(
        "--output", default=str(ROOT / "rig" / "tasks" / "preset_data" / "human_rom.json"), help="preset file to write"
    )
    p.add_argument("--step", type=int, default=2, help="keep every STEP-th frame (default 2: 60 of 120 fps)")
    p.add_argument("--recentre", nargs="*", default=["neck"], metavar="JOINT", help="joints to re-centre (default: neck)")
    p.add_argument(
        "--drop",
        nargs="*",
        default=["hip.R:1720-1853"],
        metavar="JOINT:FIRST-LAST",
        help="file frames to leave out of a joint (default: the right thigh's flip in the squat)",
    )
    args = p.parse_args(argv)
    clip, joints, bones, unmatched, not_in_preset, notes = build(args.bvh, args.step, set(args.recentre), drop_ranges(args.drop))
    text = preset_text(clip, joints, bones, unmatched, not_in_preset, notes, args.step)
    json.loads(text)  # it reads back
    Path(args.output).parent.mkdir(parents=True, exist_ok=True)
    Path(args.output).write_text(text, encoding="utf-8")
    for joint, v in joints.items():
        print(f"{joint:<12} {len(v):5d} samples  {notes.get(joint, '')}")
    for joint, why in not_in_preset.items():
        print(f"{joint:<12} left out: {why}")
    print(f"wrote {args.output}: {len(text.encode()) / 1024:.0f} kB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
