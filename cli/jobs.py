# SPDX-License-Identifier: GPL-3.0-or-later
"""What the ``joint_limits`` CLI commands do, as plain functions of parsed arguments."""

import sys
from pathlib import Path

import bpy

from ..rig.io import datastore
from ..rig.io.actions import action_frames
from ..rig.io.bone_errors import SkippedBones
from ..rig.tasks.bake import bake_action
from ..rig.tasks.fit import fit_bones
from ..rig.tasks.limb import fit_limb, limb_rest
from ..rig.tasks.report import report_text, violation_report
from ..rig.tasks.sample import dropped_message, sample_rotations, store_clouds


def resolve_armature(name=None):
    """The armature called ``name``, else the active one, else the only one in the file; its
    limit data checked (:func:`check_limit_data`)."""
    if name:
        obj = bpy.data.objects.get(name)
        if obj is None or obj.type != "ARMATURE":
            raise ValueError(f"no armature object named {name!r}")
        return check_limit_data(obj)
    active = bpy.context.view_layer.objects.active if bpy.context.view_layer else None
    if active is not None and active.type == "ARMATURE":
        return check_limit_data(active)
    arms = [o for o in bpy.data.objects if o.type == "ARMATURE"]
    if len(arms) != 1:
        raise ValueError(f"found {len(arms)} armatures; name one with --object")
    return check_limit_data(arms[0])


def check_limit_data(obj):
    """Re-link the rig's detached data store, and warn on stderr when limit data is missing
    (:func:`..rig.io.datastore.health`). Returns ``obj``."""
    if datastore.relink(obj.data) is not None:
        print(f"note: re-linked the limit data of {obj.data.name}: its text block had been detached")
    health = datastore.health(obj.data)
    if not health.ok:
        print(f"joint_limits: warning: {health.message}", file=sys.stderr)
    return obj


def resolve_bones(obj, names):
    if not names:
        return [pb.name for pb in obj.pose.bones]
    missing = [n for n in names if n not in obj.pose.bones]
    if missing:
        raise ValueError(f"{obj.name} has no bone {', '.join(missing)}")
    return list(names)


def resolve_action(obj, name=None):
    if name:
        action = bpy.data.actions.get(name)
        if action is None:
            raise ValueError(f"no action named {name!r}")
        return action
    if obj.animation_data is None or obj.animation_data.action is None:
        raise ValueError(f"{obj.name} has no action; pass --action")
    return obj.animation_data.action


def _save(path):
    target = path or bpy.data.filepath
    if not target:
        raise ValueError("nothing to save to: pass --save FILE.blend")
    bpy.ops.wm.save_as_mainfile(filepath=str(Path(target).resolve()))
    print(f"saved {target}")


def cli_fit(args):
    obj = resolve_armature(args.object)
    bones = resolve_bones(obj, args.bones)
    if args.preset:
        return _fit_preset(obj, args)
    if args.add_data:
        raise ValueError("--add-data adds your samples to a preset's: it needs --preset")
    limbs = [limb_rest(obj, name) for name in args.limb or ()]  # (bad names fail before any work)
    bones += [name for limb in limbs for name in (limb.root, limb.middle) if name not in bones]
    actions = [resolve_action(obj, n) for n in args.actions] if args.actions else [resolve_action(obj)]
    fitted, failed = fit_bones(obj, bones, actions, args.model, args.mode)
    for f in failed:
        print(f"failed: {f}")
    print(f"fitted {len(fitted)} bones of {obj.name} from {', '.join(repr(a.name) for a in actions)}")
    limbs_fitted = 0
    for limb in limbs:
        try:
            model = fit_limb(obj, limb.middle)
        except ValueError as err:
            print(f"failed: limb {limb.middle}: {err}")
            continue
        limbs_fitted += 1
        print(
            f"fitted the limb range {limb.root} -> {limb.middle}: {len(model.params['samples'])} directions, {model.nbytes()} bytes"
            f" (picture: image 'JL {obj.name} {limb.middle} limb range')"
        )
    if not fitted or limbs_fitted < len(limbs):
        return 1
    _save(args.save)
    return 0


def _fit_preset(obj, args):
    """``fit --preset``: the preset's rotations (with the actions' samples, ``--add-data``) on
    every matched bone (of ``--bones``), fitted; unmatched bones listed."""
    from ..rig.tasks.preset import apply_preset, load_preset, report_text

    if args.limb:
        raise ValueError("--limb fits from sampled actions: run it without --preset")
    preset = load_preset(args.preset)
    bones = resolve_bones(obj, args.bones) if args.bones else None
    if args.add_data:
        actions = [resolve_action(obj, n) for n in args.actions] if args.actions else [resolve_action(obj)]
        clips = {}
        clouds, notes, dropped = sample_rotations(
            obj, bones or [pb.name for pb in obj.pose.bones], actions, scene=bpy.context.scene, clips=clips
        )
        for note in notes:
            print(f"note: {note}")
        if dropped:
            print(dropped_message(dropped))
        store_clouds(obj, clouds, clips=clips)
    elif args.actions:
        raise ValueError("--actions with --preset needs --add-data (the preset alone samples no action)")
    result = apply_preset(obj, preset, bones, add_data=args.add_data, model=args.model, mode=args.mode)
    print(report_text(obj, preset, result), end="")
    for name, why in result.skipped.items():
        print(f"failed: {name}: {why}")
    if not result.fitted:
        print(f"joint_limits: error: no bone of {obj.name} matched a joint of the preset", file=sys.stderr)
        return 1
    _save(args.save)
    return 0


def _frames(obj, args):
    action = resolve_action(obj, args.action)
    return action, action_frames(action, args.start, args.end)


def cli_bake(args):
    obj = resolve_armature(args.object)
    action, frames = _frames(obj, args)
    bones = resolve_bones(obj, args.bones) if args.bones else None
    skipped = SkippedBones()
    baked = bake_action(obj, bpy.context.scene, action, frames, bones, skipped=skipped)
    for name, why in skipped.items():
        print(f"skipped: {name}: {why} (baked unlimited)")
    print(f"baked {len(frames)} frames of {obj.name} into action {baked.name!r}")
    _save(args.save)
    return 0


def cli_report(args):
    obj = resolve_armature(args.object)
    action, frames = _frames(obj, args)
    bones = resolve_bones(obj, args.bones) if args.bones else None
    skipped = SkippedBones()
    text = report_text(obj, action, violation_report(obj, bpy.context.scene, action, frames, bones, skipped=skipped), skipped)
    print(text)
    if args.output:
        Path(args.output).write_text(text + "\n", encoding="utf-8")
    return 0


def cli_batch(args):
    from ..batch.runner import run_batch

    summary, _ = run_batch(
        args.job,
        args.clips,
        args.output,
        limits=args.limits,
        model=args.model,
        jobs=args.jobs,
        rig=args.rig,
        bone_map=args.bone_map,
        scheduler=args.scheduler,
        pictures=args.pictures,
        symmetry=not args.sides_apart,
        preset=args.preset,
    )
    print(
        f"batch {args.job}: {summary['clips_done']} of {summary['clips_total']} clips done, {summary['clips_failed']} failed; see {Path(args.output) / 'summary.md'}"
    )
    return 1 if summary["clips_failed"] else 0


def cli_export(args):
    from ..rig.tasks.export import report_lines, rig_export, write_export

    obj = resolve_armature(args.object)
    bones = resolve_bones(obj, args.bones)
    skipped = SkippedBones()
    data = rig_export(obj, bones, args.format, args.target, args.break_margin, skipped)
    path = write_export(args.output, data)
    for line in report_lines(data):
        print(line)
    for name, why in skipped.items():
        print(f"skipped: {name}: {why}")
    print(f"exported {len(data['bones'])} bones of {obj.name} for {args.format} to {path}")
    return 0


def cli_demo(args):
    from .demo import run_demo

    run_demo(args.output, frames=args.frames)
    return 0
