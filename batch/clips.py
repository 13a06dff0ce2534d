# SPDX-License-Identifier: GPL-3.0-or-later
"""Which clips a batch runs over: BVH files, the actions of .blend files, FBX files.

:func:`collect_clips` turns the command line's inputs (files, folders searched recursively,
glob patterns, ``file.blend:Action``) into :class:`ClipRef` rows sorted by name. A clip's
``name`` is what reports and summaries call it (``walk.bvh``, ``takes.blend:Run``,
``jump.fbx``); ``out_name`` names its files in the output folder (no ``:`` or ``/``).
"""

import glob
import re
from pathlib import Path
from typing import NamedTuple

CLIP_SUFFIXES = (".bvh", ".blend", ".fbx")
#: Characters an action name may hold that a file name may not.
UNSAFE = r'[\\/:*?"<>|]'


class ClipRef(NamedTuple):
    """One clip: ``kind`` ``"bvh"``, ``"blend"`` or ``"fbx"``; ``action`` the action's name
    for a .blend clip (``None`` when the file holds no action: that clip fails with why)."""

    name: str
    path: str
    kind: str
    action: str | None = None

    @property
    def out_name(self):
        """File name of the clip's outputs: the clip's own name for BVH and FBX (a cleaned FBX
        clip is written as ``<name>.blend``), ``<file>.<action>.blend`` for a .blend action."""
        if self.kind != "blend":
            return self.name
        stem = Path(self.path).name
        if self.action is None:
            return stem
        action = re.sub(UNSAFE, "_", self.action)
        return f"{Path(stem).stem}.{action}.blend"

    @property
    def cleaned_name(self):
        """File name of the cleaned clip: FBX clips are cleaned into a .blend (writing the FBX
        again would resample every channel, not only the limited ones)."""
        return self.out_name + ".blend" if self.kind == "fbx" else self.out_name

    @property
    def needs_blender(self):
        return self.kind != "bvh"


def blend_actions(path):
    """Names of the actions stored in the .blend file at ``path`` (read without loading them;
    Blender will not read the open file that way, so that one is read through a copy)."""
    import shutil
    import tempfile

    import bpy

    path = Path(path)
    try:
        if bpy.data.filepath and path.samefile(bpy.data.filepath):
            with tempfile.TemporaryDirectory() as tmp:
                copy = Path(tmp) / path.name
                shutil.copyfile(path, copy)
                return blend_actions(copy)
        with bpy.data.libraries.load(str(path)) as (source, _):
            return sorted(source.actions)
    except OSError as err:
        raise ValueError(f"cannot read {path.name}: {err}") from None


def _expand(item):
    """``[(path, action or None)]`` for one input."""
    text = str(item)
    head, sep, action = text.rpartition(":")
    if sep and head.lower().endswith(".blend") and Path(head).is_file():
        if not action:
            raise ValueError(f"{text}: name the action after the colon (file.blend:Action)")
        return [(Path(head), action)]
    path = Path(item)
    if any(c in text for c in "*?["):
        matches = [Path(p) for p in glob.glob(text, recursive=True)]
        if not matches:
            raise ValueError(f"no file matches {item}")
    elif path.is_dir():
        matches = [p for p in path.rglob("*") if p.suffix.lower() in CLIP_SUFFIXES]
        if not matches:
            raise ValueError(f"no clip ({', '.join(CLIP_SUFFIXES)}) in the folder {item}")
    elif path.exists():
        matches = [path]
    else:
        raise ValueError(f"no such clip or folder: {item}")
    out = []
    for p in matches:
        if p.is_dir():
            continue
        if p.suffix.lower() not in CLIP_SUFFIXES:
            raise ValueError(f"{p}: batch reads {', '.join(CLIP_SUFFIXES)} clips")
        out.append((p, None))
    return out


def collect_clips(inputs):
    """:class:`ClipRef` rows for ``inputs`` (files, folders, globs, ``file.blend:Action``),
    sorted by name; every action of a .blend given without one. ``ValueError`` for a missing
    input, an unsupported file, an action a file does not hold, or two clips of one name."""
    found = {}
    for item in inputs:
        for path, action in _expand(item):
            kind = path.suffix.lower()[1:]
            if kind != "blend":
                found.setdefault((path.resolve(), None), ClipRef(path.name, str(path), kind))
                continue
            actions = blend_actions(path)
            if action is not None and action not in actions:
                raise ValueError(f"{path.name} holds no action {action!r} ({', '.join(actions) or 'no actions'})")
            for a in [action] if action is not None else actions or [None]:
                name = f"{path.name}:{a}" if a is not None else path.name
                found.setdefault((path.resolve(), a), ClipRef(name, str(path), "blend", a))
    by_name, by_out = {}, {}
    for ref in found.values():
        if ref.name in by_name:
            raise ValueError(
                f"two clips are named {ref.name} ({by_name[ref.name].path} and {ref.path}); outputs are named after clips"
            )
        if ref.out_name in by_out:
            raise ValueError(f"clips {by_out[ref.out_name].name} and {ref.name} would write the same output {ref.out_name}")
        by_name[ref.name] = by_out[ref.out_name] = ref
    return [by_name[name] for name in sorted(by_name)]
