# SPDX-License-Identifier: GPL-3.0-or-later
"""Fitting a pose bone's stored cloud with the bone's own settings."""

import json

import bpy
import numpy as np

from ...limits.body.preset import body_samples, within_body
from ...limits.body.skeleton import carries_heading as skeleton_carries_heading
from ...limits.constants import BONE_AXIS
from ...limits.geometry.swing_twist import twist_axis_from_children
from ...limits.joint import JointLimit
from ...limits.models.reach_cone import ReachConeLimit
from ...limits.registry import model_class
from ..io.actions import action_fcurves, keyed_rotations
from ..io.anatomy import rig_anatomy
from ..io.bone_errors import SkippedBones, guarded
from ..io.storage import clip_labels, kept_runs, read_cloud_clips, write_limit
from .fit_report import rig_report_text, write_report_text
from .sample import dropped_message, sample_rotations, store_clouds
from .symmetry import body_mirror

#: The clip name of the human envelope's samples an Auto fit on a human joint adds.
HUMAN_CLIP = "preset:human envelope"


def twist_axis(pose_bone):
    """The bone's twist axis in its own frame: +Y, or the mean direction to its children."""
    if pose_bone.joint_limit.twist_axis != "CHILDREN":
        return BONE_AXIS.copy()
    bone = pose_bone.bone
    inv = np.array(bone.matrix_local.to_3x3().inverted_safe())
    heads = np.array([child.head_local - bone.head_local for child in bone.children]).reshape(-1, 3)
    return twist_axis_from_children(heads @ inv.T)


def reference_frame_rotation(obj, pose_bone):
    """Local rotation of ``pose_bone`` at its ``reference_frame`` in the object's action."""
    anim = obj.animation_data
    if anim is None or anim.action is None:
        raise ValueError(f"{pose_bone.name}: reference 'Frame' needs an action on {obj.name}")
    q, keyed = keyed_rotations(obj, anim.action, [pose_bone.name], [pose_bone.joint_limit.reference_frame])
    if not keyed[0]:
        raise ValueError(f"{pose_bone.name}: no rotation keys in action {anim.action.name!r}")
    return q[0, 0]


def samples_for_fit(obj, pose_bone, mirror=False):
    """``(cloud (N, 4), runs, mirrored)``: what the bone is fitted from: its stored samples and,
    with *Learn From Both Sides*, its mirror bone's seen in the mirror (:mod:`.symmetry`; they
    keep their clips, so a clip left out of a cross-validation fold leaves with both its sides).
    ``mirrored`` is ``(partner name, sample count)`` or ``None``. ``mirror`` is
    :func:`.symmetry.body_mirror` of ``obj`` when the caller fits many bones (computed here
    when left out)."""
    cloud, runs = read_cloud_clips(pose_bone)
    if not pose_bone.joint_limit.use_symmetry or len(cloud) == 0:
        return cloud, runs, None
    mirror = body_mirror(obj) if mirror is False else mirror
    partner = mirror.partners.get(pose_bone.name) if mirror is not None else None
    if partner is None or partner not in obj.pose.bones:
        return cloud, runs, None
    try:
        q, partner_runs = read_cloud_clips(obj.pose.bones[partner])
    except ValueError:  # the partner's own fit says so; this bone keeps its own samples
        return cloud, runs, None
    if len(q) == 0:
        return cloud, runs, None
    seen = mirror.mirrored(q, pose_bone.name, partner)
    return np.concatenate((cloud, seen)), runs + partner_runs, (partner, len(seen))


def fit_pose_bone(obj, pose_bone, mirror=False, anatomy=None):
    """Fit the bone's limit from its samples (:func:`samples_for_fit`) and settings, store and
    return it.

    A reach cone is fitted in the bone's anatomical frames when the bone is a human joint
    (``anatomy``: the rig's :class:`..io.anatomy.RigAnatomy`, read here when left out), with the
    rest pose as its reference: the frames say where neutral is. *Auto* on a humanoid rig's joint
    (with *Human Envelope*, the default) fits the bone's samples joined with the human preset's
    (the human envelope) that way, so that a few clips of one style do not reject the next; the
    fit report says so.

    Model ``auto`` (and any model with *Calibrate Padding*) is fitted by cross-validation over
    the clips the samples came from (:mod:`...limits.fitting.cross_validation`); what it found is kept,
    as JSON, in the bone's ``fit_report``, with the mirror bone it also learned from (empty
    for a fixed padding and no mirror)."""
    settings = pose_bone.joint_limit
    cloud, runs, mirrored = samples_for_fit(obj, pose_bone, mirror)
    if len(cloud) == 0:
        raise ValueError(f"{pose_bone.name}: no samples; sample an action first")
    mode = pose_bone.rotation_mode
    kind = settings.model
    human = None
    if kind == "auto" and settings.human_envelope:
        anatomy = anatomy or rig_anatomy(obj)
        human = anatomy.human_samples(pose_bone.name)
        if human is not None:
            body = body_samples(anatomy.frames, pose_bone.name)
            keep = within_body(cloud, body, *anatomy.cone_frames(pose_bone.name))
            own, left_out = int(keep.sum()), int((~keep).sum())
            cloud, runs = np.concatenate((cloud[keep], human[1])), [*kept_runs(runs, keep), (HUMAN_CLIP, len(human[1]))]
            kind = ReachConeLimit.kind
    available = {
        "padding": settings.padding,
        "mode": settings.mode,
        "twist_axis": twist_axis(pose_bone),
        "order": mode if mode not in {"QUATERNION", "AXIS_ANGLE"} else "XYZ",
        "clips": clip_labels(runs),
        "target": settings.target_recall,
    }
    reference = settings.reference
    if kind == ReachConeLimit.kind:
        frames = (anatomy or rig_anatomy(obj)).cone_frames(pose_bone.name)
        if frames is not None:
            available["frame_left"], available["frame_right"] = frames
            reference = "REST"
    if kind != "auto" and settings.calibrate_padding:
        modes = "mode" in model_class(kind).FIT_OPTIONS
        available["candidates"] = ((kind, settings.mode if modes else None),)
        kind = "auto"
    allowed = model_class(kind).FIT_OPTIONS + (("candidates",) if "candidates" in available else ())
    options = {name: available[name] for name in allowed if name in available}
    frame_rotation = reference_frame_rotation(obj, pose_bone) if reference == "FRAME" else None
    limit = JointLimit.fit(cloud, kind=kind, reference=reference, frame_rotation=frame_rotation, **options)
    first = not settings.has_limit
    write_limit(pose_bone, limit)
    limit.heading_off = first and carries_heading(obj, pose_bone)
    if limit.heading_off:  # fitted, but not limited until the user turns it on
        settings.enabled = False
    report = limit.calibration.summary() if limit.calibration is not None else None
    if human is not None:
        report = dict(report or {}, human={"joint": human[0], "own": own, "envelope": len(human[1]), "left_out": left_out})
    if mirrored is not None:
        report = dict(report or {}, mirrored={"partner": mirrored[0], "samples": mirrored[1]})
    settings.fit_report = json.dumps(report, separators=(",", ":")) if report else ""
    return limit


def carries_heading(obj, pose_bone):
    """:func:`...limits.body.skeleton.carries_heading` for a pose bone: a root with children, or a
    bone whose keyed location moves in the object's action."""
    locations = []
    anim = obj.animation_data
    if anim is not None and anim.action is not None:
        path = f'pose.bones["{pose_bone.name}"].location'
        for fc in action_fcurves(obj, anim.action):
            if fc.data_path == path and len(fc.keyframe_points) > 1:
                values = np.empty(2 * len(fc.keyframe_points))
                fc.keyframe_points.foreach_get("co", values)
                locations.append(values[1::2])
    return skeleton_carries_heading(pose_bone.parent is None and bool(pose_bone.children), locations)


def fit_bones(obj, bone_names, actions, model=None, mode=None):
    """Sample ``actions`` and fit every bone that got samples; returns (fitted, failures)."""
    clips = {}
    clouds, notes, dropped = sample_rotations(obj, bone_names, actions, scene=bpy.context.scene, clips=clips)
    for note in notes:
        print(f"note: {note}")
    if dropped:
        print(dropped_message(dropped))
    store_clouds(obj, clouds, clips=clips)
    fitted, skipped = [], SkippedBones()
    mirror, anatomy = body_mirror(obj), None
    for name in clouds:
        pb = obj.pose.bones[name]
        with guarded(skipped, name):
            if model:
                pb.joint_limit.model = model
            if mode:
                pb.joint_limit.mode = mode
            if pb.joint_limit.model == ReachConeLimit.kind and anatomy is None:
                anatomy = rig_anatomy(obj)  # (once for the rig)
            if fit_pose_bone(obj, pb, mirror, anatomy).heading_off:
                print(f"note: {name}: limit fitted but off: it carries the heading or travel")
            fitted.append(name)
    report = rig_report_text([obj.pose.bones[name] for name in fitted])
    if report:
        write_report_text([obj.pose.bones[name] for name in fitted])  # (and its picture, saved with the file)
        print(report, end="")
    return fitted, [f"{name}: {why}" for name, why in skipped.items()]
