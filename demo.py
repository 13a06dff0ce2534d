# SPDX-License-Identifier: GPL-3.0-or-later
"""The embedded default: everything the add-on does, on a generated humanoid, with no outside files.

Builds a humanoid rig and a generated range-of-motion action (coupled shoulder/hip swing-twist),
samples and fits limits on every bone, then enforces them live and bakes them onto a second,
deliberately impossible action, and writes a .blend, a text report and PNG pictures. The .blend
has the range-of-motion action assigned (``fit`` on it refits from that), with the impossible
action and its bake kept beside it.
"""

import math
import time
from pathlib import Path

import bpy

from . import enforcement
from .jobs import fit_bones
from .limits.boundary import fibonacci_directions, limit_boundary
from .limits.joint import relative_cloud
from .limits.motion import impossible_motion, range_of_motion
from .limits.picture import BOUNDARY, CLOUD, VIOLATION, cloud_picture
from .limits.quaternion import exp_map_from_quaternion
from .limits.skeleton import humanoid_skeleton
from .rig.actions import action_frames, assign_action
from .rig.bake import bake_action
from .rig.humanoid import build_armature, key_rotations
from .rig.picture import save_png
from .rig.pose_io import PoseArrays
from .rig.report import report_text, violation_report
from .rig.storage import read_cloud, read_limit

#: Rotation modes of a few bones, so the demo exercises every kind of channel.
DEMO_MODES = {"forearm.L": "XYZ", "forearm.R": "ZXY", "shin.L": "YZX", "shin.R": "XZY", "head": "AXIS_ANGLE", "neck": "ZYX", "hand.L": "YXZ"}

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


def _bone_picture(obj, name, impossible_local, path):
    pb = obj.pose.bones[name]
    limit = read_limit(pb)
    cloud = exp_map_from_quaternion(relative_cloud(read_cloud(pb), limit.reference))
    boundary = limit_boundary(limit, fibonacci_directions(1500))
    bad = exp_map_from_quaternion(limit.to_relative(impossible_local))
    image = cloud_picture([(boundary, BOUNDARY, 1), (cloud, CLOUD, 1), (bad, VIOLATION, 2)], size=256)
    save_png(path, image)


def _live_check(obj, scene, frames):
    """Frames of the impossible action played with live enforcement: worst remaining violation."""
    limits = {pb.name: read_limit(pb) for pb in obj.pose.bones if pb.joint_limit.has_limit}
    rows = [obj.pose.bones.find(n) for n in limits]
    worst = 0.0
    scene.joint_limits.enforce_live = True
    try:
        for f in frames:
            scene.frame_set(int(f))
            q = PoseArrays(obj.pose.bones).local_quaternions(rows)
            for i, limit in enumerate(limits.values()):
                worst = max(worst, float(limit.violation(q[i])))
    finally:
        scene.joint_limits.enforce_live = False
    return math.degrees(worst)


def run_demo(output="out", frames=600, seed=0):
    """Run the whole job; returns a dict of the numbers it reports."""
    out = Path(output).resolve()
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    bpy.ops.wm.read_homefile(use_empty=True)
    enforcement.reset()
    scene = bpy.context.scene
    skeleton = humanoid_skeleton()
    obj = build_armature(skeleton, "Humanoid", scene, modes=DEMO_MODES)
    rom = key_rotations(obj, range_of_motion(skeleton, frames=frames, seed=seed), "RangeOfMotion")
    for pb in obj.pose.bones:
        pb.joint_limit.model, pb.joint_limit.mode = _model_for(pb.name)
    fitted, failed = fit_bones(obj, [pb.name for pb in obj.pose.bones], [rom])
    if failed:
        raise RuntimeError("demo fit failed: " + "; ".join(failed))

    impossible_local = impossible_motion(skeleton, frames=120, seed=seed + 1)
    impossible = key_rotations(obj, impossible_local, "Impossible")
    frames_imp = action_frames(impossible)
    before = violation_report(obj, scene, impossible, frames_imp)
    live_worst = _live_check(obj, scene, frames_imp)
    baked = bake_action(obj, scene, impossible, frames_imp)
    after = violation_report(obj, scene, baked, frames_imp)
    # the file keeps the action the limits were fitted from assigned, so `fit` on it (which
    # samples the object's action) refits from the same motion; the others stay beside it
    impossible.use_fake_user = True
    assign_action(obj, rom)

    pictures = []
    for name in ("upper_arm.L", "thigh.R", "forearm.L"):
        path = out / f"limit_{name.replace('.', '_')}.png"
        _bone_picture(obj, name, impossible_local[:, obj.pose.bones.find(name)], path)
        pictures.append(path.name)

    blend = out / "joint_limits_demo.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(blend))
    summary = {
        "bones_fitted": len(fitted),
        "rom_frames": frames,
        "bones_out_before": sum(r["frames_out"] > 0 for r in before),
        "worst_before_deg": max(r["worst_deg"] for r in before),
        "worst_live_deg": live_worst,
        "bones_out_after_bake": sum(r["frames_out"] > 0 for r in after),
        "worst_after_bake_deg": max(r["worst_deg"] for r in after),
        "seconds": time.perf_counter() - t0,
    }
    text = "\n".join(
        [
            "Joint Limits demo (embedded default: generated humanoid and motion, no outside files)",
            f"fitted {len(fitted)} bones on {frames} frames of generated range of motion",
            f"impossible action: {summary['bones_out_before']} bones out of limit, worst {summary['worst_before_deg']:.1f} deg",
            f"live enforcement while playing it: worst remaining violation {live_worst:.3f} deg",
            f"baked action {baked.name!r}: {summary['bones_out_after_bake']} bones out of limit, worst {summary['worst_after_bake_deg']:.3f} deg",
            f"pictures: {', '.join(pictures)} (blue: samples, orange: limit boundary, red: impossible poses; views X-Y, Y-Z, X-Z of scaled angle-axis)",
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
    print(text)
    print(f"wrote {out}")
    return summary


