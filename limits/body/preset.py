# SPDX-License-Identifier: GPL-3.0-or-later
"""The human preset as data: the file of shapes real motion showed beyond the human envelope
(``preset_data/human_rom.json``, built by ``tools/build_human_preset.py``), joined with the
envelope's references (:mod:`.envelope`), and the limits it gives a skeleton's bones (pure numpy:
batch workers check clips against it without Blender; :mod:`rig.tasks.preset` puts it on a rig).
"""

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

import numpy as np

from ..constants import IDENTITY_QUATERNION
from ..geometry.quaternion import check_finite, quaternion_from_exp_map
from ..joint import JointLimit
from ..models.reach_cone import ReachConeLimit
from .bone_names import CHAIN_JOINTS
from .envelope import RANGES, SOLVER_ERROR_DEGREES, base_of, cone_frames, envelope_samples
from .neutral import motion_frames
from .retarget import basis_from_anatomical
from .vertebrae import bone_weights

#: Where the presets are (JSON files shipped with the extension).
PRESET_DIR = Path(__file__).resolve().parent / "preset_data"
#: Preset names -> files in :data:`PRESET_DIR`.
PRESETS = {"human": "human_rom.json"}
FORMAT = "joint_limits_preset"
VERSION = 1
#: Clip names of preset samples start so; the rest of a cloud is the user's own data.
CLIP_PREFIX = "preset:"
#: The model the preset fits by default: a reach cone in the joint's anatomical frames.
PRESET_MODEL = "reach_cone"
#: An anatomical rotation's mirror image across the body's middle plane (:mod:`.envelope`: every
#: segment frame has the same axes on both sides, so X is kept and Y, Z flip).
MIRROR = np.array([1.0, 1.0, -1.0, -1.0])
#: A skeleton is a humanoid when its bones name at least this many different joints.
HUMANOID_JOINTS = 8
#: The reach cones' padding (radians) beyond the envelope's own margin.
PADDING = 0.05


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


def _preset_parts(preset, joint):
    """``(the envelope's rotations or None, [learnt rotations])`` of ``joint``."""
    envelope = envelope_samples(joint) if base_of(joint) in RANGES else None
    learnt = [preset.joints[joint]] if joint in preset.joints else []
    other = {"L": "R", "R": "L"}.get(joint.rpartition(".")[2])
    if other is not None and f"{base_of(joint)}.{other}" in preset.joints:
        learnt.append(preset.joints[f"{base_of(joint)}.{other}"] * MIRROR)
    return envelope, learnt


def preset_rotations(preset, joint):
    """Anatomical rotations ``(N, 4)`` of ``joint``: the human envelope's (the references,
    :mod:`...limits.body.envelope`) joined with the shapes real motion showed (the preset's, on
    both sides: the other side's seen in the mirror), or None when neither has the joint."""
    envelope, learnt = _preset_parts(preset, joint)
    parts = ([] if envelope is None else [envelope]) + learnt
    return np.concatenate(parts) if parts else None


def is_humanoid(matches):
    """Whether bones matched to joints (``{bone: BoneMatch}``) name a humanoid's:
    :data:`HUMANOID_JOINTS` different joints at least."""
    return len({m.joint for m in matches.values()}) >= HUMANOID_JOINTS


def bone_samples(frames, name, preset, rest_is_neutral):
    """The preset's rotations of bone ``name``'s joint in the bone's own axes ``(N, 4)``
    (``frames``: the rig's :class:`.retarget.RigFrames`), the rest pose last when it is a
    standing one; None when the preset has nothing for the joint. A spine or neck bone takes its
    share of its chain's (:func:`.vertebrae.bone_weights`)."""
    match = frames.matches[name]
    weights = bone_weights(match.base, match.share, match.place) if match.base in CHAIN_JOINTS else None
    envelope, learnt = _preset_parts(preset, match.joint)
    parts = [frames.basis(name, q, weights) for q in ([] if envelope is None else [envelope]) + learnt]
    if not parts:
        return None
    q = np.concatenate(parts)
    return np.concatenate((q, IDENTITY_QUATERNION[None])) if rest_is_neutral else q


class JointCone(NamedTuple):
    """What a reach cone of the preset needs on one bone (:func:`joint_cones`): its joint's
    ``match``, the cone's frames, the preset's ``samples (N, 4)`` and the envelope's ``body``
    samples (:func:`body_samples`), all in the bone's own axes."""

    match: object
    frame_left: np.ndarray
    frame_right: np.ndarray
    samples: np.ndarray
    body: object


def joint_cones(skeleton, matches, preset, motion=None, directions=None):
    """``({bone: JointCone}, assumed)``: a reach cone's inputs on each of a skeleton's matched
    bones: the preset's rotations in the bone's own axes (:func:`bone_samples`) and the cone's
    frames (:func:`.envelope.cone_frames`), the frames read as :func:`.neutral.motion_frames`
    reads them (from ``motion (F, n, 4)`` when the rest pose is not a standing one); ``assumed``
    in words."""
    frames, rest_is_neutral, assumed = motion_frames(skeleton, matches, motion, directions)
    out = {}
    for name, match in frames.matches.items():
        q = bone_samples(frames, name, preset, rest_is_neutral)
        if q is not None:
            left, right = cone_frames(match.joint, *frames.frames_of(name))
            out[name] = JointCone(match, left, right, q, body_samples(frames, name))
    return out, assumed


def preset_limits(skeleton, matches, preset, motion=None, directions=None, padding=PADDING):
    """``(limits {bone: JointLimit}, assumed)``: the preset on a skeleton's matched bones, a reach
    cone each (:func:`joint_cones`); ``assumed`` in words."""
    cones, assumed = joint_cones(skeleton, matches, preset, motion, directions)
    limits = {
        name: JointLimit.fit(q, kind="reach_cone", reference="REST", padding=padding, frame_left=left, frame_right=right)
        for name, (_, left, right, q, _) in cones.items()
    }
    return limits, assumed


def body_samples(frames, name):
    """The human envelope's rotations of bone ``name``'s joint in the bone's own axes ``(N, 4)``,
    a spine or neck bone taking its whole chain's (solvers spread a bend unevenly, but no bone
    turns further than its chain), for :func:`within_body`; None for a joint the envelope does
    not know."""
    joint = frames.matches[name].joint
    if base_of(joint) not in RANGES:
        return None
    return basis_from_anatomical(envelope_samples(joint), *frames.frames_of(name))


def within_body(cloud, body, frame_left, frame_right):
    """Which of a bone's samples ``cloud (N, 4)`` a body could make, ``(N,)`` bool: at most
    :data:`.envelope.SOLVER_ERROR_DEGREES` outside the reach cone of ``body`` (the envelope on the
    bone, :func:`body_samples`) in the cone's frames. Further out is a capture solver's error,
    which the default fit of a humanoid leaves out (the preset learns nothing from it either)."""
    if body is None:
        return np.ones(len(cloud), dtype=bool)
    reach = ReachConeLimit.fit(body, padding=np.radians(SOLVER_ERROR_DEGREES), frame_left=frame_left, frame_right=frame_right)
    return reach.contains(cloud)
