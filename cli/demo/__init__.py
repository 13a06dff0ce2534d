# SPDX-License-Identifier: GPL-3.0-or-later
"""The embedded default: everything the add-on does, on a generated humanoid, with no outside files.

Builds a humanoid rig and a generated range-of-motion action (coupled shoulder/hip swing-twist),
samples and fits limits on every bone, then enforces them live and bakes them onto a second,
deliberately impossible action, and writes a .blend, a text report, PNG pictures (``pictures.py``,
with matplotlib when it is installed) and a one-page summary (``summary.py``). The .blend has the
range-of-motion action assigned (``fit`` on it refits from that), with the impossible action and
its bake kept beside it.
"""

import math
import time
from pathlib import Path

import bpy
import numpy as np

from ...limits.body.motion import impossible_motion, range_of_motion
from ...limits.body.skeleton import humanoid_skeleton
from ...rig import live
from ...rig.io.actions import action_frames, assign_action
from ...rig.io.humanoid import build_armature, key_rotations
from ...rig.io.pose_io import PoseArrays
from ...rig.io.storage import read_cloud, read_limit
from ...rig.live.evaluate import evaluated_local_transforms
from ...rig.tasks.bake import bake_action
from ...rig.tasks.fit import fit_bones
from ...rig.tasks.report import INSIDE_TOLERANCE, report_text, violation_report
from ...rig.tasks.sample import temporarily_assigned
from .summary import write_summary

#: Rotation modes of a few bones, so the demo exercises every kind of channel.
DEMO_MODES = {
    "forearm.L": "XYZ",
    "forearm.R": "ZXY",
    "shin.L": "YZX",
    "shin.R": "XZY",
    "head": "AXIS_ANGLE",
    "neck": "ZYX",
    "hand.L": "YXZ",
}

#: The model each bone gets (the rest use the default k-DOP over the whole rotation).
DEMO_MODELS = {
    "upper_arm": ("kdop", "SWING_TWIST"),
    "thigh": ("kdop", "SWING_TWIST"),
    "forearm": ("oriented_box", "FULL"),
    "shin": ("oriented_box", "FULL"),
    "spine": ("ellipsoid", "FULL"),
    "chest": ("ellipsoid", "FULL"),
    "neck": ("ellipsoid", "FULL"),
}


def _model_for(name):
    base = name.split(".")[0]
    return DEMO_MODELS.get(base, ("kdop", "FULL"))


#: The bones the demo draws one picture each of: a shoulder and a hip (k-DOP over swing and
#: twist), an elbow keyed as Euler XYZ (oriented box) and the head keyed as axis-angle (k-DOP).
PICTURE_BONES = ("upper_arm.L", "thigh.L", "forearm.L", "head")

#: What the reference setting means, for captions.
REFERENCES = {"MEAN": "the mean pose of the training motion", "REST": "the rest pose", "FRAME": "the pose at the reference frame"}

#: What the model's space setting means, for captions.
SPACES = {"SWING_TWIST": "swing and twist fitted separately", "FULL": "one shape over the whole rotation"}


def _evaluated(obj, scene, action, frames):
    """Local rotations ``(F, n, 4)`` of ``action`` on ``frames``, evaluated as the report does
    (constraints and IK, live enforcement paused)."""
    with temporarily_assigned(obj, action):
        _, rot, _ = evaluated_local_transforms(obj, scene, frames)
    return rot


def _live_rotations(obj, scene, frames):
    """Local rotations ``(F, n, 4)`` on each frame of the assigned action played with live
    enforcement on."""
    rows = list(range(len(obj.pose.bones)))
    out = np.zeros((len(frames), len(rows), 4))
    scene.joint_limits.enforce_live = True
    try:
        for i, f in enumerate(frames):
            scene.frame_set(int(f))
            out[i] = PoseArrays(obj.pose.bones).local_quaternions(rows)
    finally:
        scene.joint_limits.enforce_live = False
    return out


def _degrees_out(obj, limits, rotations):
    """``{bone: (F,) degrees}``: how far each bone of ``rotations (F, n, 4)`` leaves its limit."""
    return {name: np.degrees(limit.violation(rotations[:, obj.pose.bones.find(name)])) for name, limit in limits.items()}


def _pictures(out, obj, limits, keyed, baked, frames, before, after, live):
    """Draw the pictures into ``out``; returns ``(pictures, note)``: ``[(file name, title,
    caption)]`` and, when they could not be drawn, why (else ``None``)."""
    from . import pictures as pics

    note = pics.missing_reason()
    if note is not None:
        return [], note
    tolerance = math.degrees(INSIDE_TOLERANCE)
    drawn = []
    name = "violations_all_bones.png"
    pics.rig_sheet(out / name, frames, before, after, live, tolerance_deg=tolerance)
    drawn.append(
        (
            name,
            "Every bone, before and after limiting",
            "Top: how far the worst bones of the impossible action leave their limits, frame by frame (coloured lines), "
            "and the largest violation left on any bone after the bake (blue) and with live enforcement (green, dashed): "
            "both lie flat on zero. Bottom: every limited bone's worst violation and the number of frames it is out, "
            "as keyed (red) and after the bake (blue).",
        )
    )
    for bone in PICTURE_BONES:
        pb = obj.pose.bones[bone]
        settings = pb.joint_limit
        limit = limits[bone]
        row = obj.pose.bones.find(bone)
        keyed_as = {"QUATERNION": "quaternion", "AXIS_ANGLE": "axis-angle"}.get(pb.rotation_mode, f"{pb.rotation_mode} Euler")
        model = f"{limit.model.label} limit, {SPACES.get(settings.mode, settings.mode.lower())}; keyed as {keyed_as} rotations"
        name = f"limit_{bone.replace('.', '_')}.png"
        pics.bone_sheet(
            out / name,
            {
                "name": bone,
                "model": model,
                "limit": limit,
                "samples": read_cloud(pb),
                "impossible": keyed[:, row],
                "baked": baked[:, row],
                "frames": frames,
                "before": before[bone],
                "after": after[bone],
                "live": live[bone],
                "tolerance_deg": tolerance,
            },
        )
        drawn.append(
            (
                name,
                f"{bone}: {model}",
                f"Left: the sphere of directions {bone} may point in, flattened into a disc (equal areas stay equal). "
                f"The centre (+) is the limit's reference direction ({REFERENCES.get(settings.reference, settings.reference)}); "
                "the dotted rings are marked with how many degrees they are from it, and the disc's rim is the opposite "
                "direction. Coloured: directions the bone may point in, the colour saying how many degrees of twist the "
                "limit allows there (colour bar); grey: directions no twist makes allowed; black line: the edge between "
                "them. Dark dots: the training poses the limit was fitted to. Red: frames of the impossible action that "
                "leave the limit, drawn on top: crosses point outside the edge, circles point inside it but are twisted "
                "too far. Blue dots: where the bake put those frames (on the edge). Top right: this bone's violation on "
                "each frame of the impossible action, as keyed (red), after the bake (blue) and with live enforcement "
                "(green, dashed). Bottom right: its twist about its own axis on each frame, as keyed (red) and after the "
                "bake (blue), against the twists the limit allows at the direction it points after the bake (green band).",
            )
        )
    return drawn, None


def run_demo(output="out", frames=600, seed=0):
    """Run the whole job; returns a dict of the numbers it reports."""
    out = Path(output).resolve()
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    bpy.ops.wm.read_homefile(use_empty=True)
    live.reset()
    scene = bpy.context.scene
    skeleton = humanoid_skeleton()
    obj = build_armature(skeleton, "Humanoid", scene, modes=DEMO_MODES)
    # the motions are in the skeleton's bone order, the keys in pose.bones' (which follows the hierarchy)
    order = [skeleton.index(pb.name) for pb in obj.pose.bones]
    rom = key_rotations(obj, range_of_motion(skeleton, frames=frames, seed=seed)[:, order], "RangeOfMotion")
    for pb in obj.pose.bones:
        pb.joint_limit.model, pb.joint_limit.mode = _model_for(pb.name)
    fitted, failed = fit_bones(obj, [pb.name for pb in obj.pose.bones], [rom])
    if failed:
        raise RuntimeError("demo fit failed: " + "; ".join(failed))
    # the limited bones: the hips carry the heading, so their limit is fitted but off (issue 13)
    limits = {pb.name: read_limit(pb) for pb in obj.pose.bones if pb.joint_limit.has_limit and pb.joint_limit.enabled}

    impossible_local = impossible_motion(skeleton, frames=120, seed=seed + 1)[:, order]
    impossible = key_rotations(obj, impossible_local, "Impossible")
    frames_imp = action_frames(impossible)
    before = violation_report(obj, scene, impossible, frames_imp)
    held = _degrees_out(obj, limits, _live_rotations(obj, scene, frames_imp))
    live_worst = max(float(v.max()) for v in held.values())
    baked = bake_action(obj, scene, impossible, frames_imp)
    after = violation_report(obj, scene, baked, frames_imp)
    keyed_rot = _evaluated(obj, scene, impossible, frames_imp)
    baked_rot = _evaluated(obj, scene, baked, frames_imp)
    # the file keeps the action the limits were fitted from assigned, so `fit` on it (which
    # samples the object's action) refits from the same motion; the others stay beside it
    impossible.use_fake_user = True
    assign_action(obj, rom)

    before_deg, after_deg = _degrees_out(obj, limits, keyed_rot), _degrees_out(obj, limits, baked_rot)
    pictures, note = _pictures(out, obj, limits, keyed_rot, baked_rot, frames_imp, before_deg, after_deg, held)

    blend = out / "joint_limits_demo.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(blend))
    summary = {
        "bones_fitted": len(fitted),
        "rom_frames": frames,
        "impossible_frames": len(frames_imp),
        "bones_out_before": sum(r["frames_out"] > 0 for r in before),
        "worst_before_deg": max(r["worst_deg"] for r in before),
        "worst_live_deg": live_worst,
        "bones_out_after_bake": sum(r["frames_out"] > 0 for r in after),
        "worst_after_bake_deg": max(r["worst_deg"] for r in after),
        "pictures": [name for name, _, _ in pictures],
        "seconds": time.perf_counter() - t0,
    }
    picture_line = (
        f"pictures: {', '.join(summary['pictures'])} (what each shows: summary.html)" if pictures else f"pictures: none; {note}"
    )
    text = "\n".join(
        [
            "Joint Limits demo (embedded default: generated humanoid and motion, no outside files)",
            "read summary.html first: what the demo did, its numbers and its pictures with captions",
            f"fitted {len(fitted)} bones on {frames} frames of generated range of motion",
            f"impossible action: {summary['bones_out_before']} bones out of limit, worst {summary['worst_before_deg']:.1f} deg",
            f"live enforcement while playing it: worst remaining violation {live_worst:.3f} deg",
            f"baked action {baked.name!r}: {summary['bones_out_after_bake']} bones out of limit, worst {summary['worst_after_bake_deg']:.3f} deg",
            picture_line,
            f"file: {blend.name}; took {summary['seconds']:.1f} s",
            "",
            "== before (impossible action) ==",
            report_text(obj, impossible, before),
            "",
            "== after bake ==",
            report_text(obj, baked, after),
        ]
    )
    (out / "report.txt").write_text(text + "\n", encoding="utf-8")
    write_summary(out / "summary.html", summary, pictures, note, baked.name, blend.name)
    print(text)
    if note:
        print(note)
    print(f"wrote {out}")
    return summary
