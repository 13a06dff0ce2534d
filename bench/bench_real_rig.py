# SPDX-License-Identifier: GPL-3.0-or-later
"""A generated Rigify rig (Blender's own generator, the human meta-rig, default settings) with and
without live enforcement of the human preset, in one run: what an animator feels (a control
move, the first play of keyed controls, later plays, turning enforcement on) as ratios to the
plain rig, and how far the limited bones stand outside their limits in the evaluated pose.

    ./dev bench bench/bench_real_rig.py [--moves 100] [--frames 240] [--reach 0.6] [--rounds 3] [--blend RIG.blend]

IK moves put the IK controls (hand_ik, foot_ik) at random places up to ``--reach`` metres from
rest, one ``view_layer.update()`` each (what a drag step costs); FK moves switch the limbs to FK
(``IK_FK`` 1) and turn the FK controls at random (up to 1.5 rad). Playback keys the IK controls
along smooth random paths. "Out" counts the limited bones' evaluated poses more than 0.5 deg
outside their limits (after every constraint, driver and IK).

"Floor" is the plain rig with a handler that only writes one constraint value after each update
and frame change, as any correction made after Blender's evaluation must: Blender then evaluates
the whole rig again, where a frame change re-evaluates only what the keys move.
"""

import argparse
import time

import _setup
import numpy as np

addon = _setup.addon()
import addon_utils  # noqa: E402
import bpy  # noqa: E402

CONTROLS = ("hand_ik.L", "hand_ik.R", "foot_ik.L", "foot_ik.R")
FK_CONTROLS = tuple(f"{b}_fk.{s}" for s in "LR" for b in ("upper_arm", "forearm", "hand", "thigh", "shin", "foot"))
SWITCHES = tuple(f"{b}_parent.{s}" for s in "LR" for b in ("upper_arm", "thigh"))
TOLERANCE_DEG = 0.5
#: Joints where the deforming chain meets the ORG chain: elbow, wrist, knee, ankle.
JOINTS = tuple(f"{b}.{s}" for s in "LR" for b in ("forearm", "hand", "shin", "foot"))


def rigify_rig(blend=None):
    """The generated rig (``blend``: open that file's active armature instead) and its seconds."""
    t = time.perf_counter()
    if blend:
        bpy.ops.wm.open_mainfile(filepath=blend)
        rig = next(o for o in bpy.context.scene.objects if o.type == "ARMATURE" and "hand_ik.L" in o.pose.bones)
    else:
        addon_utils.enable("rigify", default_set=True)
        bpy.ops.wm.read_homefile(use_empty=True)
        bpy.ops.object.armature_human_metarig_add()
        bpy.ops.pose.rigify_generate()
        rig = bpy.context.active_object
    addon.rig.live.reset()
    bpy.context.view_layer.objects.active = rig
    bpy.ops.object.mode_set(mode="POSE")
    return rig, time.perf_counter() - t


def limited_rows(rig):
    """``[(row, pose bone name, limit)]`` of the bones the extension limits."""
    storage = addon.rig.io.storage
    return [
        (i, pb.name, storage.read_limit(pb))
        for i, pb in enumerate(rig.pose.bones)
        if pb.joint_limit.enabled and pb.joint_limit.has_limit
    ]


def degrees_out(rig, rows):
    """``{bone: degrees}`` the evaluated pose of each limited bone stands outside its limit."""
    ev = addon.rig.live.evaluate
    _, q, _ = ev.decompose(ev.local_from_pose(ev.pose_matrices(rig), ev.rest_matrices(rig), ev.bone_parents(rig)))
    return {name: float(np.degrees(limit.violation(q[row]))) for row, name, limit in rows}


def joint_gap(rig):
    """Metres the deforming bones' elbows, wrists, knees and ankles stand from the ORG chain's."""
    bones = rig.pose.bones
    return max((bones[f"DEF-{j}"].head - bones[f"ORG-{j}"].head).length for j in JOINTS)


def places(count, reach, seed):
    """``(count, 3)`` control locations: random offsets of up to ``reach`` metres from rest."""
    rng = np.random.default_rng(seed)
    offsets = rng.normal(size=(count, 3))
    return offsets * reach * rng.random((count, 1)) ** (1 / 3) / np.linalg.norm(offsets, axis=-1, keepdims=True)


def turns(count, seed):
    """``(count, 4)`` random rotations of up to 1.5 rad (quaternions)."""
    rng = np.random.default_rng(seed)
    axis = rng.normal(size=(count, 3))
    axis *= 1.5 * rng.random((count, 1)) / np.linalg.norm(axis, axis=-1, keepdims=True)
    return addon.limits.geometry.quaternion.quaternion_from_exp_map(axis)


def moves(rig, controls, channel, values, rows):
    """``(ms per update, worst {bone: deg}, updates with a bone out, largest joint gap (m))``:
    ``controls`` in turn set to ``values`` (one per update) through ``channel``, each put back
    after its update."""
    times, worst, out, gap = [], {}, 0, 0.0
    for i, value in enumerate(values):
        pb = rig.pose.bones[controls[i % len(controls)]]
        if channel == "rotation_quaternion":
            pb.rotation_mode = "QUATERNION"
        rest = tuple(getattr(pb, channel))
        setattr(pb, channel, value)
        t = time.perf_counter()
        bpy.context.view_layer.update()
        times.append(1000 * (time.perf_counter() - t))
        if rows:
            deg = degrees_out(rig, rows)
            out += any(v > TOLERANCE_DEG for v in deg.values())
            for bone, v in deg.items():
                worst[bone] = max(worst.get(bone, 0.0), v)
            gap = max(gap, joint_gap(rig))
        setattr(pb, channel, rest)
    bpy.context.view_layer.update()
    return np.array(times), worst, out, gap


class Floor:
    """While entered, a handler that writes one value of a constraint (on a bone nothing reads)
    after each update and frame change: the least a correction after Blender's evaluation costs."""

    LISTS = (bpy.app.handlers.depsgraph_update_post, bpy.app.handlers.frame_change_post)

    def __init__(self, rig):
        self.rig, self.count, self.busy = rig, 0, False

    def write(self, *_args):
        if self.busy:
            return
        self.busy, self.count = True, self.count + 1
        self.con.to_min_x_rot = (self.count % 7) * 1e-3
        self.busy = False

    def __enter__(self):
        bone = self.rig.pose.bones["ORG-forearm.L"]
        self.con = bone.constraints.new("TRANSFORM")
        self.con.target, self.con.subtarget, self.con.map_to = self.rig, bone.parent.name, "ROTATION"
        for handlers in self.LISTS:
            handlers.append(self.write)
        return self

    def __exit__(self, *_exc):
        for handlers in self.LISTS:
            handlers.remove(self.write)
        self.con.id_data.pose.bones["ORG-forearm.L"].constraints.remove(self.con)
        bpy.context.view_layer.update()


def switch_to(rig, ik_fk):
    for name in SWITCHES:
        rig.pose.bones[name]["IK_FK"] = ik_fk
    rig.update_tag()
    bpy.context.view_layer.update()


def key_controls(rig, frames, reach, seed):
    """Key the controls along smooth random paths (up to ``reach`` metres from rest) over ``frames``."""
    rng = np.random.default_rng(seed)
    t = np.linspace(0.0, 1.0, frames)[:, None, None]
    path = sum(
        rng.normal(size=(1, len(CONTROLS), 3)) / k * np.sin(2 * np.pi * (k * 2 * t + rng.random((1, len(CONTROLS), 3))))
        for k in range(1, 4)
    )
    path *= reach / np.linalg.norm(path, axis=-1).max()
    for f in range(frames):
        for c, name in enumerate(CONTROLS):
            pb = rig.pose.bones[name]
            pb.location = path[f, c]
            pb.keyframe_insert("location", frame=f + 1)
    bpy.context.scene.frame_start, bpy.context.scene.frame_end = 1, frames


def play(frames, rig=None, rows=None):
    """``(ms per frame, worst deg out, largest joint gap (m))`` playing frames 1..frames
    (checking every 10th frame)."""
    scene = bpy.context.scene
    total, worst, gap = 0.0, 0.0, 0.0
    for f in range(1, frames + 1):
        t = time.perf_counter()
        scene.frame_set(f)
        total += time.perf_counter() - t
        if rows and f % 10 == 0:
            worst = max(worst, max(degrees_out(rig, rows).values()))
            gap = max(gap, joint_gap(rig))
    return 1000 * total / frames, worst, gap


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--moves", type=int, default=100)
    p.add_argument("--frames", type=int, default=240)
    p.add_argument("--reach", type=float, default=0.6, help="metres the IK controls go from rest")
    p.add_argument("--rounds", type=int, default=3, help="plain, first and later plays, interleaved")
    p.add_argument("--blend", help="a .blend holding a generated Rigify rig (default: generate one)")
    args = p.parse_args()

    rig, made = rigify_rig(args.blend)
    scene = bpy.context.scene
    print(
        f"Rigify rig: {len(rig.pose.bones)} bones, {len(rig.animation_data.drivers) if rig.animation_data else 0} drivers ({made:.1f} s)"
    )
    offsets = places(args.moves, args.reach, seed=1)
    rotations = turns(args.moves, seed=3)
    moves(rig, CONTROLS, "location", offsets[:10], [])  # (warm-up)
    t = time.perf_counter()
    result = bpy.ops.pose.joint_limits_apply_preset()
    preset_s = time.perf_counter() - t
    rows = limited_rows(rig)
    print(f"human preset: {result}, {len(rows)} bones limited ({preset_s:.1f} s)")
    plain_ms, plain_worst, plain_out, plain_gap = moves(rig, CONTROLS, "location", offsets, rows)
    with Floor(rig):
        floor_ms = moves(rig, CONTROLS, "location", offsets, [])[0]
    switch_to(rig, 1.0)
    plain_fk_ms, plain_fk_worst, plain_fk_out, plain_fk_gap = moves(rig, FK_CONTROLS, "rotation_quaternion", rotations, rows)
    switch_to(rig, 0.0)

    t = time.perf_counter()
    scene.joint_limits.enforce_live = True
    scene.frame_set(scene.frame_current)
    turn_on = time.perf_counter() - t
    on_ms, on_worst, on_out, on_gap = moves(rig, CONTROLS, "location", offsets, rows)
    switch_to(rig, 1.0)
    on_fk_ms, on_fk_worst, on_fk_out, on_fk_gap = moves(rig, FK_CONTROLS, "rotation_quaternion", rotations, rows)
    switch_to(rig, 0.0)

    def line(label, plain, on, unit="ms"):
        print(f"  {label:<34} plain {plain:8.2f} {unit}   enforced {on:8.2f} {unit}   ratio {on / plain:5.2f}x")

    def worst_of(worst):
        bone = max(worst, key=worst.get)
        return f"{worst[bone]:.1f} deg ({bone})"

    print(f"turning enforcement on: {turn_on:.3f} s")
    for label, plain, on in (
        ("IK control moves", (plain_ms, plain_worst, plain_out, plain_gap), (on_ms, on_worst, on_out, on_gap)),
        (
            "FK control moves",
            (plain_fk_ms, plain_fk_worst, plain_fk_out, plain_fk_gap),
            (on_fk_ms, on_fk_worst, on_fk_out, on_fk_gap),
        ),
    ):
        print(f"{label} ({args.moves}, one update each):")
        line("median", np.median(plain[0]), np.median(on[0]))
        if label.startswith("IK"):
            line("median, floor", np.median(plain[0]), np.median(floor_ms))
        line("95th percentile", np.percentile(plain[0], 95), np.percentile(on[0], 95))
        print(f"  moves with a limited bone over {TOLERANCE_DEG} deg out: plain {plain[2]}, enforced {on[2]}")
        print(f"  worst: plain {worst_of(plain[1])}, enforced {worst_of(on[1])}")
        print(f"  deforming joints off the ORG chain: plain {1000 * plain[3]:.1f} mm, enforced {1000 * on[3]:.1f} mm")

    scene.joint_limits.enforce_live = False
    key_controls(rig, args.frames, args.reach, seed=2)
    play(args.frames)
    plain_plays, floors, firsts, laters = [], [], [], []
    for _ in range(args.rounds):  # (interleaved: the machine drifts)
        scene.joint_limits.enforce_live = False
        plain_plays.append(play(args.frames)[0])
        with Floor(rig):
            floors.append(play(args.frames)[0])
        scene.joint_limits.enforce_live = True
        addon.rig.live.invalidate()
        firsts.append(play(args.frames)[0])
        while addon.rig.live.work_ahead() is not None:  # (the PyPI module runs no timers)
            pass
        laters.append(play(args.frames)[0])
    plain_play, floor, first, later = (float(np.median(t)) for t in (plain_plays, floors, firsts, laters))
    _, later_worst, later_gap = play(args.frames, rig, rows)
    scene.joint_limits.enforce_live = False
    _, plain_play_worst, plain_play_gap = play(args.frames, rig, rows)
    print(
        f"keyed playback of the {len(CONTROLS)} IK controls ({args.frames} frames, median of {args.rounds} interleaved rounds):"
    )
    line("floor (one write a frame)", plain_play, floor, "ms/frame")
    line("first play", plain_play, first, "ms/frame")
    line("later plays", plain_play, later, "ms/frame")
    print(f"  worst limited bone on every 10th frame: plain {plain_play_worst:.1f} deg, enforced {later_worst:.1f} deg")
    print(f"  deforming joints off the ORG chain: plain {1000 * plain_play_gap:.1f} mm, enforced {1000 * later_gap:.1f} mm")


if __name__ == "__main__":
    main()
