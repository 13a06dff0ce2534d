# SPDX-License-Identifier: GPL-3.0-or-later
"""Limit presets: anatomical rotations shipped with the add-on, put onto a rig's bones.

A preset (``preset_data/<file>.json``, built by ``tools/build_human_preset.py``) holds, per
anatomical joint, rotations measured on a real body (:mod:`...limits.body.retarget`). Applying it
matches the rig's bones to joints by name (:mod:`...limits.body.bone_names`), turns the rotations into
each bone's own basis rotations through the rig's rest geometry, stores them as the bone's
samples (alone, or beside the samples the bone already has: *preset + my data*) and fits each
bone with its own settings. The rig's rest pose is added to every bone's samples: whatever a
rig's rest pose is (T, A), it stays allowed.

Preset samples carry clip names ``preset:<name> k/K`` (``K`` contiguous time blocks of the
take), so the *auto* model's cross-validation holds blocks out as it would the clips of the
user's own data, which it finds beside them.
"""

import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ...limits.body.bone_names import match_joints
from ...limits.body.retarget import RigFrames
from ...limits.constants import IDENTITY_QUATERNION
from ...limits.geometry.quaternion import check_finite, quaternion_from_exp_map
from ..io.bone_errors import SkippedBones, guarded
from ..io.skeleton_io import skeleton_from_armature
from ..io.storage import read_cloud_clips, write_cloud
from .fit import fit_pose_bone
from .symmetry import body_mirror

PRESET_DIR = Path(__file__).resolve().parent / "preset_data"
#: Preset names -> files in :data:`PRESET_DIR`.
PRESETS = {"human": "human_rom.json"}
FORMAT = "joint_limits_preset"
VERSION = 1
#: Clip names of preset samples start so; the rest of a cloud is the user's own data.
CLIP_PREFIX = "preset:"
#: The text block that lists what an application matched and what it did not.
TEXT_NAME = "Joint Limits Preset Report"


@dataclass
class Preset:
    """A loaded preset: ``joints`` ``{joint: (N, 4) anatomical rotations}`` in time order,
    cut into ``blocks`` clips; ``not_in_preset`` ``{joint: why}``; ``info`` the file's header."""

    name: str
    title: str
    joints: dict
    blocks: int
    not_in_preset: dict = field(default_factory=dict)
    info: dict = field(default_factory=dict)

    def clip_runs(self, count):
        """Clip runs ``[(name, count), ...]`` of ``count`` samples in :attr:`blocks` time blocks."""
        k = max(1, min(self.blocks, count))
        stops = np.arange(k + 1) * count // k
        return [(f"{CLIP_PREFIX}{self.name} {i + 1}/{k}", int(b - a)) for i, (a, b) in enumerate(zip(stops[:-1], stops[1:]))]


_loaded = {}


def load_preset(name="human"):
    """The preset ``name`` (:data:`PRESETS`), read and checked once per session; ``ValueError``
    with what is wrong for an unknown name or a damaged file."""
    if name not in PRESETS:
        raise ValueError(f"no preset named {name!r} (presets: {', '.join(sorted(PRESETS))})")
    path = PRESET_DIR / PRESETS[name]
    if path not in _loaded:
        _loaded[path] = read_preset(path)
    return _loaded[path]


def read_preset(path):
    """Read and check a preset file (never executed or unpickled: JSON numbers only)."""
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as err:
        raise ValueError(f"cannot read the preset {path.name}: {err.strerror or err}") from None
    except ValueError as err:
        raise ValueError(f"the preset {path.name} is not valid JSON: {err}") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT or data.get("version") != VERSION:
        raise ValueError(f"{path.name} is not a Joint Limits preset (format {FORMAT!r}, version {VERSION})")
    joints_in = data.get("joints")
    if not isinstance(joints_in, dict) or not joints_in:
        raise ValueError(f"the preset {path.name} holds no joints")
    joints = {}
    for joint, rows in joints_in.items():
        try:
            v = np.asarray(rows, dtype=float)
        except (TypeError, ValueError):
            raise ValueError(f"the preset {path.name}: joint {joint!r} holds something other than numbers") from None
        if v.ndim != 2 or v.shape[1] != 3 or len(v) == 0:
            raise ValueError(f"the preset {path.name}: joint {joint!r} must hold rotation vectors (N, 3), got shape {v.shape}")
        joints[str(joint)] = quaternion_from_exp_map(check_finite(v, f"the preset {path.name}: joint {joint!r}"))
    blocks = data.get("blocks", 1)
    return Preset(
        name=str(data.get("name", path.stem)),
        title=str(data.get("title", path.stem)),
        joints=joints,
        blocks=int(blocks) if isinstance(blocks, int) and blocks >= 1 else 1,
        not_in_preset={str(k): str(v) for k, v in (data.get("not_in_preset") or {}).items()},
        info={k: v for k, v in data.items() if k != "joints"},
    )


@dataclass
class PresetMatch:
    """What a preset finds on a rig: ``samples`` ``{bone: (N, 4) basis rotations}`` (the rest
    pose last), ``joints`` ``{bone: joint}``, ``unmatched`` ``{bone: why}`` and ``no_data``
    ``{bone: why}`` (matched to a joint the preset has no rotations for)."""

    samples: dict
    joints: dict
    unmatched: dict
    no_data: dict


def match_preset(obj, preset, bone_names=None):
    """Match ``preset`` to the armature object ``obj``'s bones (all of them, or ``bone_names``;
    the names of the whole rig are read either way, as conventions need the context)."""
    skeleton = skeleton_from_armature(obj)
    matches, unmatched = match_joints(skeleton.names, skeleton.parents)
    wanted = set(skeleton.names if bone_names is None else bone_names)
    frames = RigFrames(skeleton, matches)
    samples, joints, no_data = {}, {}, {}
    for name in skeleton.names:
        if name not in wanted or name not in matches:
            continue
        joint = matches[name].joint
        if joint not in preset.joints:
            no_data[name] = f"{joint}: {preset.not_in_preset.get(joint, 'not in the preset')}"
            continue
        q = frames.basis(name, preset.joints[joint])
        samples[name] = np.concatenate((q, IDENTITY_QUATERNION[None]))
        joints[name] = joint
    unmatched = {name: why for name, why in unmatched.items() if name in wanted}
    return PresetMatch(samples, joints, unmatched, no_data)


@dataclass
class PresetResult:
    """What :func:`apply_preset` did: ``fitted`` ``{bone: (joint, preset samples, own samples)}``
    and the :class:`PresetMatch`'s ``unmatched``, ``no_data``; ``skipped`` the bones that
    failed to fit (:class:`~..io.bone_errors.SkippedBones`)."""

    fitted: dict
    unmatched: dict
    no_data: dict
    skipped: SkippedBones


def apply_preset(obj, preset, bone_names=None, add_data=False, model=None, mode=None):
    """Store ``preset``'s rotations as the samples of ``obj``'s matched bones (all, or
    ``bone_names``) and fit each bone with its own settings.

    ``add_data``: keep the samples the bone has from the user's own clips and add the preset's
    (any earlier preset samples are replaced, not doubled); otherwise the preset's replace
    them. ``model`` and ``mode``, when given, become the fitted bones' settings first. A bone
    that fails to fit is named in the result's ``skipped`` (its samples are still stored, as
    with *Fit*)."""
    match = match_preset(obj, preset, bone_names)
    fitted, written, skipped = {}, {}, SkippedBones()
    for name, q in match.samples.items():
        pb = obj.pose.bones[name]
        with guarded(skipped, name):
            runs = preset.clip_runs(len(q) - 1)
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
    # fitted once every bone holds its samples: a bone learns from its mirror bone's new ones
    mirror = body_mirror(obj)
    for name, (count, own) in written.items():
        pb = obj.pose.bones[name]
        with guarded(skipped, name):
            for setting, value in (("model", model), ("mode", mode)):
                if value and getattr(pb.joint_limit, setting) != value:
                    setattr(pb.joint_limit, setting, value)
            fit_pose_bone(obj, pb, mirror)
            pb.joint_limit.last_error = ""
            fitted[name] = (match.joints[name], count - own, own)
    for name, why in skipped.items():
        obj.pose.bones[name].joint_limit.last_error = why
    return PresetResult(fitted, match.unmatched, match.no_data, skipped)


def report_text(obj, preset, result):
    """The application's report: what was fitted from which joint, and every bone left alone
    with why (unmatched names are listed, never guessed)."""
    lines = [f"{preset.title} on {obj.name}: {len(result.fitted)} bones fitted"]
    source = preset.info.get("source", {})
    if source:
        lines.append(f"source: {source.get('clip', '?')}; licence: {source.get('licence', '?')}")
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
