# SPDX-License-Identifier: GPL-3.0-or-later
"""Limit presets: anatomical ranges shipped with the add-on, put onto a rig's bones.

The human preset is the human envelope (:mod:`...limits.body.envelope`: published normal ranges
of motion per joint) joined with the shapes real motion showed beyond it
(``limits/body/preset_data/<file>.json``, built by ``tools/build_human_preset.py`` from motion capture of
several sources), both as anatomical rotations (:mod:`...limits.body.retarget`). Applying it
reads the rig's anatomy (:mod:`..io.anatomy`: bones matched to joints by name, the neutral posture,
the hinges' bend), turns the rotations into each bone's own basis rotations, stores them as the
bone's samples (alone, or beside the samples the bone already has: *preset + my data*) and fits
each bone with a reach cone in its joint's anatomical frames (or the model asked for). A rest
pose that is a standing one (T, A) is added to every bone's samples, so it stays allowed.

Preset samples carry clip names ``preset:<name> k/K`` (``K`` blocks), so the *auto* model's
cross-validation holds blocks out as it would the clips of the user's own data, which it finds
beside them.
"""

from dataclasses import dataclass, field

import numpy as np

from ...limits.body.preset import (  # noqa: F401 - the preset's data, for callers of this module
    CLIP_PREFIX,
    PRESET_DIR,
    PRESET_MODEL,
    PRESETS,
    Preset,
    bone_samples,
    load_preset,
    preset_rotations,
    read_preset,
)
from ..io.anatomy import RigAnatomy, rig_anatomy
from ..io.bone_errors import SkippedBones, guarded
from ..io.storage import read_cloud_clips, write_cloud
from .fit import fit_pose_bone

#: The text block that lists what an application matched and what it did not.
TEXT_NAME = "Joint Limits Preset Report"


@dataclass
class PresetMatch:
    """What a preset finds on a rig: ``samples`` ``{bone: (N, 4) basis rotations}`` (the rest
    pose last when it is a standing one), ``joints`` ``{bone: joint}``, ``unmatched``
    ``{bone: why}``, ``no_data`` ``{bone: why}`` (matched to a joint the preset has no rotations
    for), ``anatomy`` (:class:`..io.anatomy.RigAnatomy`: the frames and what they assumed)."""

    samples: dict
    joints: dict
    unmatched: dict
    no_data: dict
    anatomy: RigAnatomy = None


def match_preset(obj, preset, bone_names=None, anatomy=None):
    """Match ``preset`` to the armature object ``obj``'s bones (all of them, or ``bone_names``;
    the names of the whole rig are read either way, as conventions need the context).
    ``anatomy``: the rig's :func:`..io.anatomy.rig_anatomy` (read here when left out)."""
    anatomy = anatomy or rig_anatomy(obj)
    frames = anatomy.frames
    skeleton = frames.skeleton
    wanted = set(skeleton.names if bone_names is None else bone_names)
    samples, joints, no_data = {}, {}, {}
    for name in skeleton.names:
        if name not in wanted or name not in frames.matches:
            continue
        joint = frames.matches[name].joint
        q = bone_samples(frames, name, preset, anatomy.rest_is_neutral)
        if q is None:
            no_data[name] = f"{joint}: {preset.not_in_preset.get(joint, 'not in the preset')}"
            continue
        samples[name], joints[name] = q, joint
    unmatched = {name: why for name, why in anatomy.unmatched.items() if name in wanted}
    return PresetMatch(samples, joints, unmatched, no_data, anatomy)


@dataclass
class PresetResult:
    """What :func:`apply_preset` did: ``fitted`` ``{bone: (joint, preset samples, own samples)}``
    and the :class:`PresetMatch`'s ``unmatched``, ``no_data``; ``skipped`` the bones that
    failed to fit (:class:`~..io.bone_errors.SkippedBones`); ``assumed``: what the rig's frames
    rest on, in words (:class:`..io.anatomy.RigAnatomy`)."""

    fitted: dict
    unmatched: dict
    no_data: dict
    skipped: SkippedBones
    assumed: list = field(default_factory=list)


def apply_preset(obj, preset, bone_names=None, add_data=False, model=None, mode=None, own_model=False):
    """Store ``preset``'s rotations as the samples of ``obj``'s matched bones (all, or
    ``bone_names``) and fit each bone: by default with a reach cone in its joint's anatomical
    frames (:data:`PRESET_MODEL`), which holds the references exactly.

    ``add_data``: keep the samples the bone has from the user's own clips and add the preset's
    (any earlier preset samples are replaced, not doubled); otherwise the preset's replace
    them. ``model`` (default :data:`PRESET_MODEL`; with ``own_model`` each bone keeps its own)
    and ``mode``, when given, become the fitted bones' settings first. A bone that fails to fit is named in the result's ``skipped`` (its
    samples are still stored, as with *Fit*)."""
    anatomy = rig_anatomy(obj)
    match = match_preset(obj, preset, bone_names, anatomy)
    model = model or (None if own_model else PRESET_MODEL)
    fitted, written, skipped = {}, {}, SkippedBones()
    for name, q in match.samples.items():
        pb = obj.pose.bones[name]
        with guarded(skipped, name):
            rest = 1 if anatomy.rest_is_neutral else 0
            runs = preset.clip_runs(len(q) - rest)
            if rest:
                runs.append((f"{CLIP_PREFIX}{preset.name} rest pose", 1))
            own = 0
            if add_data:
                old, old_runs = read_cloud_clips(pb)
                stops = np.cumsum([0] + [n for _, n in old_runs])
                keep = [
                    (clip, n, a) for (clip, n), a in zip(old_runs, stops[:-1], strict=True) if not clip.startswith(CLIP_PREFIX)
                ]
                parts = [old[a : a + n] for _, n, a in keep]
                own = sum(n for _, n, _ in keep)
                q = np.concatenate([*parts, q])
                runs = [(clip, n) for clip, n, _ in keep] + runs
            write_cloud(pb, q, clip=runs)
            written[name] = (len(q), own)
    # the envelope is the same on both sides already, and a rest pose that is not a standing one
    # is not symmetric: no bone learns from its mirror bone here
    for name, (count, own) in written.items():
        pb = obj.pose.bones[name]
        with guarded(skipped, name):
            for setting, value in (("model", model), ("mode", mode)):
                if value and getattr(pb.joint_limit, setting) != value:
                    setattr(pb.joint_limit, setting, value)
            fit_pose_bone(obj, pb, None, anatomy)
            pb.joint_limit.last_error = ""
            fitted[name] = (match.joints[name], count - own, own)
    for name, why in skipped.items():
        obj.pose.bones[name].joint_limit.last_error = why
    return PresetResult(fitted, match.unmatched, match.no_data, skipped, list(anatomy.assumed))


def report_text(obj, preset, result):
    """The application's report: what was fitted from which joint, and every bone left alone
    with why (unmatched names are listed, never guessed)."""
    lines = [f"{preset.title} on {obj.name}: {len(result.fitted)} bones fitted"]
    sources = preset.info.get("sources") or []
    if sources:
        lines.append("shapes beyond the references learnt from: " + ", ".join(str(source.get("file", "?")) for source in sources))
    lines.append(
        "the limits: the human envelope (clinical ranges of motion, limits/body/envelope.py) with the shapes real motion showed"
    )
    if result.assumed:
        lines += ["", "Assumed about the rig:"] + [f"  {text}" for text in result.assumed]
    lines.append("")
    for name, (joint, count, own) in result.fitted.items():
        extra = f" + {own} of its own" if own else ""
        lines.append(f"  {name:<32} {joint:<12} {count} preset samples{extra}")
    for title, entries in (
        ("Fit failed", result.skipped),
        ("No preset data for the joint", result.no_data),
        ("Not matched to a joint (left as they were)", result.unmatched),
    ):
        if entries:
            lines += ["", f"{title}: {len(entries)}"]
            lines += [f"  {name:<32} {why}" for name, why in entries.items()]
    return "\n".join(lines) + "\n"
