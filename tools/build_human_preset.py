# SPDX-License-Identifier: GPL-3.0-or-later
"""Build ``limits/body/preset_data/human_rom.json``: the shapes real motion shows beyond the human envelope.

    .venv/bin/python tools/build_human_preset.py CLIP.bvh [CLIP.bvh ...] [--output limits/body/preset_data/human_rom.json]

The human preset is the human envelope (``limits/body/envelope.py``: published ranges of
motion) joined with what this file holds: for every anatomical joint, the rotations real motion
capture reached *beyond* the envelope, by at most ``--beyond`` degrees (how joints couple where
the references measure one plane at a time: an arm across the chest, a squat's ankle). Further
than that is taken for a solver's error (CMU 143_21's head turned 110 degrees on every frame),
not a body. Each clip is read with the project's BVH reader (:mod:`rig.io.bvh_file`: the
rotations a rig imported with Blender's importer would have), matched to joints by name
(:mod:`limits.body.bone_names`) and turned into anatomical rotations on its own neutral posture
(:func:`limits.body.neutral.motion_frames`: the rest pose, or the motion's most neutral frame
when the rest is not a standing one, as Bandai's is). Single-frame spikes (more than
``SPIKE_DEGREES`` from both neighbours) are dropped. The clips themselves are not stored; the
file lists them with their licences.
"""

import argparse
import datetime
import json
import sys
from pathlib import Path

import blender_session
import numpy as np

ROOT = Path(__file__).resolve().parent.parent
#: A frame further than this from both neighbours is a solver spike (degrees).
SPIKE_DEGREES = 20.0
#: Rotation vectors are stored with this many decimals (radians: 0.06 degrees at most).
DECIMALS = 3
#: At most this many rotations per joint and clip are kept (spread over the clip).
PER_CLIP = 300

#: Licences of the sources the shared clips come from, by file name prefix (../shared/mocap/README.md).
LICENCES = {
    "bandai": "Bandai Namco Research Motion Dataset, CC BY-NC 4.0 (Bandai Namco Research Inc.)",
    "cmu": "CMU Graphics Lab Motion Capture Database: free for all uses; acknowledge mocap.cs.cmu.edu "
    "(the database was created with funding from NSF EIA-0196217)",
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


def clip_rotations(addon, path):
    """``({joint: anatomical rotations (F, 4)}, what was assumed)`` of one BVH clip."""
    lib = addon.limits
    clip = addon.rig.io.bvh_file.read_bvh(path)
    heads = np.zeros((len(clip.names), 3))
    for j, p in enumerate(clip.parents):
        heads[j] = clip.offsets[j] + (heads[p] if p >= 0 else 0.0)
    directions = segment_directions(clip)
    skeleton = lib.body.skeleton.Skeleton(clip.names, clip.parents, heads, heads + directions, clip.rest_rotations())
    matches, _ = lib.body.bone_names.match_joints(clip.names, clip.parents)
    motion = clip.local_rotations()
    frames, _, assumed = lib.body.neutral.motion_frames(skeleton, matches, motion, directions, source=Path(path).name)
    return frames.joint_rotations(motion), assumed


def build(paths, beyond=None):
    """``(joints {joint: rotation vectors (N, 3)}, per clip {file: {joint: kept}}, notes, beyond)``:
    rotations at most ``beyond`` degrees outside the envelope are kept (default: where a solver's
    errors start, :data:`limits.body.envelope.SOLVER_ERROR_DEGREES`)."""
    addon = blender_session.load_extension()  # the add-on's package: its BVH reader and maths
    if beyond is None:
        beyond = addon.limits.body.envelope.SOLVER_ERROR_DEGREES
    qm, envelope = addon.limits.geometry.quaternion, addon.limits.body.envelope
    kept, per_clip, notes = {}, {}, {}
    for path in paths:
        rotations, assumed = clip_rotations(addon, path)
        name = Path(path).name
        notes[name] = assumed
        per_clip[name] = {}
        for joint, q in sorted(rotations.items()):
            if envelope.base_of(joint) not in envelope.RANGES:
                continue
            outside = envelope.degrees_outside(joint, q)
            keep = ~spikes(q, qm.quaternion_angle) & (outside > 0.0) & (outside <= beyond)
            index = np.flatnonzero(keep)
            index = index[:: max(1, -(-len(index) // PER_CLIP))]
            per_clip[name][joint] = {"frames": len(q), "beyond": int(keep.sum()), "too_far": int((outside > beyond).sum())}
            if len(index):
                kept.setdefault(joint, []).append(qm.exp_map_from_quaternion(qm.quaternion_short_way(q[index])))
    joints = {j: np.round(np.concatenate(v), DECIMALS) + 0.0 for j, v in sorted(kept.items())}  # (+ 0.0: no -0.0)
    return joints, per_clip, notes, beyond


def preset_text(paths, joints, per_clip, notes, beyond):
    """The preset file's text: JSON, one joint's samples a line."""
    head = {
        "format": "joint_limits_preset",
        "version": 1,
        "name": "human",
        "title": "Human envelope with the shapes real motion shows",
        "sources": [
            {"file": Path(p).name, "licence": LICENCES.get(Path(p).name.split("_")[0], "see ../shared/mocap/README.md")}
            for p in paths
        ],
        "built": {
            "date": datetime.date.today().isoformat(),
            "tool": "tools/build_human_preset.py",
            "tool_version": _version(),
            "beyond_degrees": beyond,
        },
        "rotations": "per anatomical joint, rotation vectors (axis times angle, radians) of its bone's segment frame "
        "against its parent's (limits/body/retarget.py) that real motion reached beyond the human envelope "
        f"(limits/body/envelope.py) by at most {beyond:g} degrees; the preset joins them with the envelope",
        "blocks": max(1, len(paths)),
        "clips": per_clip,
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
    p.add_argument("bvh", nargs="+", help="BVH clips of real human motion (e.g. every clip of ../shared/mocap)")
    p.add_argument(
        "--output", default=str(ROOT / "limits" / "body" / "preset_data" / "human_rom.json"), help="preset file to write"
    )
    p.add_argument("--beyond", type=float, default=None, help="degrees beyond the envelope still learnt (default 15)")
    args = p.parse_args(argv)
    joints, per_clip, notes, beyond = build(args.bvh, args.beyond)
    text = preset_text(args.bvh, joints, per_clip, notes, beyond)
    json.loads(text)  # it reads back
    Path(args.output).parent.mkdir(parents=True, exist_ok=True)
    Path(args.output).write_text(text, encoding="utf-8")
    for joint, v in joints.items():
        print(f"{joint:<12} {len(v):5d} rotations beyond the envelope")
    print(f"wrote {args.output}: {len(text.encode()) / 1024:.0f} kB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
