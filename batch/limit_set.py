# SPDX-License-Identifier: GPL-3.0-or-later
"""One file holding the limits of a whole skeleton (what ``batch fit`` writes, what ``batch
check`` and ``batch clean`` read).

A JSON object, keys sorted, no whitespace::

    {"format": "joint_limits.limit_set", "version": 1,
     "bones": {"<bone>": <a limit as limits/serialize.py writes it>, ...},
     "clips": ["<clip>", ...], "model": "<kind>", "samples": {"<bone>": N, ...},
     "skipped": {"<bone>": "<why it has no limit>", ...},
     "mirrored": {"<bone>": {"bone": "<its mirror bone>", "samples": N}, ...}}

``samples`` counts a bone's own samples; ``mirrored`` the mirror bone's samples it also learned
from (seen in the mirror), absent from files fitted with the sides apart.

Bones are matched to a clip's joints by name. Each limit is in the bone space Blender's BVH
importer gives (:mod:`..rig.io.bvh_file`), so it can also be loaded onto a rig imported from such a clip.
"""

import json
from pathlib import Path

from ..limits.serialize import limit_from_json, limit_to_json

FORMAT = "joint_limits.limit_set"
VERSION = 1


def limit_set_text(limits, **info):
    """The file's text for ``limits`` ``{bone: JointLimit}`` and extra top-level ``info``."""
    data = {"format": FORMAT, "version": VERSION, **info}
    data["bones"] = {name: json.loads(limit_to_json(limits[name])) for name in sorted(limits)}
    return json.dumps(data, sort_keys=True, separators=(",", ":")) + "\n"


def read_limit_set(path):
    """``{bone: JointLimit}`` from a limit set file; ``ValueError`` naming the file and the problem."""
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as err:
        raise ValueError(f"cannot read the limit set {path}: {getattr(err, 'strerror', None) or err}") from None
    except (ValueError, RecursionError):
        raise ValueError(f"{path} is not a Joint Limits limit set (invalid JSON)") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise ValueError(f'{path} is not a Joint Limits limit set (no "format": "{FORMAT}")')
    if data.get("version") != VERSION:
        raise ValueError(f"{path}: limit set version {data.get('version')!r}; this version reads {VERSION}")
    bones = data.get("bones")
    if not isinstance(bones, dict) or not bones:
        raise ValueError(f"{path}: the limit set holds no bones")
    limits = {}
    for name, entry in bones.items():
        try:
            limits[name] = limit_from_json(json.dumps(entry))
        except ValueError as err:
            raise ValueError(f"{path}: bone {name!r}: {err}") from None
    return limits
