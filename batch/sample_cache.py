# SPDX-License-Identifier: GPL-3.0-or-later
"""What ``batch fit`` read from each clip, kept beside its output so that a fit cut short (or
run again on a grown library) reads only the clips it has not read yet.

One ``samples/<clip>.npz`` per clip: numpy arrays only (read back with
``allow_pickle=False``), written atomically, with fixed zip dates so the same clip gives the
same bytes. It holds the key of what it was read from (:func:`clip_key`: the file's SHA-256,
the action, this format's version); a file whose key differs is read again.
"""

import hashlib
import io
import os
import zipfile
from pathlib import Path

import numpy as np

#: 2: with the clip's rest skeleton (for the body's symmetry).
VERSION = 2


def clip_key(ref):
    """What a clip's samples depend on: the file's bytes, the action, the cache format."""
    digest = hashlib.sha256()
    with open(ref.path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return f"v{VERSION}:{ref.kind}:{ref.action or ''}:{digest.hexdigest()}"


def write_samples(path, key, result):
    """Write a clip's fit samples (:func:`.clip_jobs.fit_samples`' result) under ``key``."""
    names = sorted(result["bones"])
    arrays = {
        "key": np.array(key),
        "frames": np.array(result["frames"], dtype=np.int64),
        "names": np.array(names, dtype=str),
        "counts": np.array([len(result["bones"][n]) for n in names], dtype=np.int64),
        "rotations": np.concatenate([result["bones"][n] for n in names]).reshape(-1, 4).astype(float),
        "rest": np.array([result["rest"][n] for n in names], dtype=float).reshape(-1, 4),
        "heading": np.array(sorted(result["heading"]), dtype=str),
        **{f"skeleton_{k}": np.asarray(v, dtype=str if k == "names" else None) for k, v in result["skeleton"].items()},
    }
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_STORED) as archive:
        for name, array in arrays.items():
            info = zipfile.ZipInfo(f"{name}.npy", date_time=(1980, 1, 1, 0, 0, 0))
            with archive.open(info, "w") as f:
                np.lib.format.write_array(f, array, allow_pickle=False)
    path = Path(path)
    tmp = path.with_name(f".{path.name}.partial")
    tmp.write_bytes(buffer.getvalue())
    os.replace(tmp, path)


def read_samples(path, key):
    """The samples stored at ``path`` if they were read under ``key``, else ``None`` (missing,
    stale or damaged: the clip is read again)."""
    try:
        with np.load(path, allow_pickle=False) as data:
            if str(data["key"]) != key:
                return None
            names = [str(n) for n in data["names"]]
            counts, rotations, rest = data["counts"], data["rotations"], data["rest"]
            heading = [str(n) for n in data["heading"]]
            frames = int(data["frames"])
            skeleton = {k: data[f"skeleton_{k}"] for k in ("names", "parents", "heads", "tails", "rest")}
    except (OSError, ValueError, KeyError, zipfile.BadZipFile, EOFError):
        return None
    if len(counts) != len(names) or counts.sum() != len(rotations) or len(rest) != len(names):
        return None
    if any(len(skeleton[k]) != len(skeleton["names"]) for k in ("parents", "heads", "tails", "rest")):
        return None
    parts = np.split(rotations, np.cumsum(counts)[:-1]) if len(names) else []
    return {
        "frames": frames,
        "bones": dict(zip(names, parts, strict=True)),
        "heading": heading,
        "rest": dict(zip(names, rest, strict=True)),
        "skeleton": {**skeleton, "names": [str(n) for n in skeleton["names"]]},
    }
