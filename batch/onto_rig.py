# SPDX-License-Identifier: GPL-3.0-or-later
"""``batch fit --rig rig.blend``: the limits learnt from a library, written onto the matching
bones of a rig's armature, and the rig saved.

Clip bones are matched to the rig's bones by :func:`match_bones`: a ``--bone-map`` JSON file
first (``{"clip bone": "rig bone"}``), then :func:`..limits.body.skeleton.match_bone_names` for the
rest (case, separators, prefixes such as ``mixamorig:``, Left/Right, ``.L/.R``, ``_l/_r``, and
common synonyms). A rig bone whose rest orientation differs from the clip bone's gets its limit
fitted from the samples turned into its own bone space: with ``C`` the rig bone's rest in the
clip bone's frame (world rest orientations, both skeletons in the same rest posture), a clip
rotation ``q`` is ``C^-1 q C`` on the rig, as a retarget by armature-space deltas gives it.
"""

import json
from pathlib import Path

import numpy as np

from ..limits.body.skeleton import match_bone_names
from ..limits.geometry.quaternion import quaternion_angle, quaternion_conjugate, quaternion_multiply

#: Rest orientations closer than this (radians) count as the same: the clip's limit is used.
SAME_REST = 1e-6


def read_bone_map(path):
    """``{clip bone: rig bone}`` from a JSON object file; ``ValueError`` naming the problem."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as err:
        raise ValueError(f"cannot read the bone map {path}: {err.strerror or err}") from None
    except ValueError:
        raise ValueError(f"the bone map {path} is not valid JSON") from None
    if not isinstance(data, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in data.items()):
        raise ValueError(f'the bone map {path} must be a JSON object of names, {{"clip bone": "rig bone", ...}}')
    rigs = list(data.values())
    twice = sorted({r for r in rigs if rigs.count(r) > 1})
    if twice:
        raise ValueError(f"the bone map {path} maps several clip bones to {', '.join(twice)}")
    return data


def match_bones(clip_names, rig_names, bone_map=None):
    """``{rig bone: clip bone}``: the bone map's pairs, then automatic matching of the rest.
    ``ValueError`` when the map names a bone neither side has."""
    bone_map = bone_map or {}
    unknown = [c for c in bone_map if c not in clip_names] + [r for r in bone_map.values() if r not in rig_names]
    if unknown:
        raise ValueError(f"the bone map names bones the clips or the rig do not have: {', '.join(sorted(unknown))}")
    mapping = {rig: clip for clip, rig in bone_map.items()}
    rest_rig = [n for n in rig_names if n not in mapping]
    rest_clip = [n for n in clip_names if n not in bone_map]
    mapping.update(match_bone_names(rest_rig, rest_clip))
    return mapping


def rig_space_rotations(q, clip_rest, rig_rest):
    """Clip bone rotations ``q (N, 4)`` in the rig bone's space: ``C^-1 q C``,
    ``C = clip_rest^-1 rig_rest`` (world rest orientations ``(4,)``)."""
    c = quaternion_multiply(quaternion_conjugate(clip_rest), rig_rest)
    return quaternion_multiply(quaternion_conjugate(c)[None], quaternion_multiply(q, c[None]))


def fit_onto_rig(rig_path, pooled, rests, heading, clip_limits, fit, bone_map=None):
    """Open ``rig_path``, store a limit on each rig bone matched to a clip bone, save it.

    ``pooled`` ``{clip bone: (N, 4) samples}``, ``rests`` ``{clip bone: (4,) world rest}``,
    ``heading`` clip bones left unlimited, ``clip_limits`` ``{clip bone: JointLimit}`` (used as
    is where the rests agree), ``fit(samples, clip bone, change)`` fits one limit (``change``: the clip bone's space to the rig bone's, as :func:`rig_space_rotations`). Returns what it did
    (armature, ``{rig bone: clip bone}`` limited, refitted bones, rig bones left out)."""
    import bpy

    from ..rig.io.storage import store_limit

    rig_path = Path(rig_path)
    if not rig_path.is_file():
        raise ValueError(f"no such rig file: {rig_path}")
    try:
        bpy.ops.wm.open_mainfile(filepath=str(rig_path), load_ui=False)
    except RuntimeError as err:
        raise ValueError(f"cannot open the rig {rig_path.name}: {str(err).strip().splitlines()[-1]}") from None
    armatures = sorted((o for o in bpy.data.objects if o.type == "ARMATURE"), key=lambda o: o.name)
    if not armatures:
        raise ValueError(f"{rig_path.name} holds no armature")
    clip_names = sorted(pooled)
    best = max(armatures, key=lambda o: len(match_bones(clip_names, [b.name for b in o.data.bones], bone_map)))
    mapping = match_bones(clip_names, [b.name for b in best.data.bones], bone_map)
    if not mapping:
        raise ValueError(f"no bone of {best.name} in {rig_path.name} matches a clip bone ({', '.join(clip_names[:5])}, ...)")
    world = np.array(best.matrix_world.to_3x3().normalized(), dtype=float)
    from ..limits.geometry.quaternion import quaternion_from_matrix

    limited, refitted, skipped = {}, [], {}
    for rig_bone in sorted(mapping):
        clip_bone = mapping[rig_bone]
        if clip_bone in heading or clip_bone not in clip_limits:
            skipped[rig_bone] = f"{clip_bone}: not limited in the limit set"
            continue
        rig_rest = quaternion_from_matrix(world @ np.array(best.data.bones[rig_bone].matrix_local.to_3x3(), dtype=float))
        limit = clip_limits[clip_bone]
        if float(quaternion_angle(rests[clip_bone], rig_rest)) > SAME_REST:
            change = quaternion_multiply(quaternion_conjugate(rests[clip_bone]), rig_rest)
            limit = fit(rig_space_rotations(pooled[clip_bone], rests[clip_bone], rig_rest), clip_bone, change)
            refitted.append(rig_bone)
        store_limit(best.pose.bones[rig_bone], limit)
        limited[rig_bone] = clip_bone
    bpy.ops.wm.save_as_mainfile(filepath=str(rig_path), check_existing=False)
    return {
        "file": rig_path.name,
        "armature": best.name,
        "bones": limited,
        "refitted_in_rig_space": refitted,
        "not_limited": skipped,
        "rig_bones_unmatched": sorted(b.name for b in best.data.bones if b.name not in mapping),
    }
