# SPDX-License-Identifier: GPL-3.0-or-later
"""Limits as files and strings: JSON text and ``.npz`` archives, never pickle.

A limit is the plain mapping of :meth:`JointLimit.to_dict`: JSON scalars plus numpy arrays.
In JSON a small array is written as ``{"__array__": [...], "shape": [...]}`` and a large one
(grids, textures) as ``{"__zlib__": "<base64>", "shape": [...], "dtype": "<f2", "<f4" or "<f8"}``:
its little-endian values at the narrowest of float16, float32 and float64 that holds them
exactly (a model's rounded tables, see ``LimitModel.SINGLE_PRECISION``), their bytes shuffled
(all first bytes, then all second bytes, ..., per channel when the last axis is a few
channels) and deflated, which packs smooth tables to a fraction (a sinus texture: 2 MB of
float16 to 0.2 MB). Files of earlier versions wrote ``"__base64__"`` (the plain bytes); they
are still read. In ``.npz`` every
array is its own entry (``params/<name>`` etc.) beside a JSON ``header`` entry, and the file is
read with ``allow_pickle=False``. Everything read goes through :meth:`JointLimit.from_dict`,
which validates kinds, shapes and values.
"""

import base64
import binascii
import io
import json
import math
import zipfile
import zlib

import numpy as np

from .joint import JointLimit

#: Arrays with more elements than this are stored as base64 in JSON.
BASE64_THRESHOLD = 64


#: Binary array types in JSON, narrowest first: an array is written in the first that holds
#: its values exactly (a model's half- or single-precision tables), which loses nothing.
DTYPES = ("<f2", "<f4", "<f8")

#: A last axis this short holds channels (a texture's RGBA): bytes are shuffled per channel.
CHANNELS = 8


def _record(shape, itemsize):
    """Bytes per shuffled record: one value, or one pixel of a few channels."""
    return itemsize * (shape[-1] if shape and 0 < shape[-1] <= CHANNELS else 1)


def _shuffle(raw, record):
    return np.frombuffer(raw, dtype=np.uint8).reshape(-1, record).T.tobytes()


def _unshuffle(raw, record, dtype):
    """The values of shuffled bytes ``raw``, as a flat array of ``dtype``."""
    return np.ascontiguousarray(np.frombuffer(raw, dtype=np.uint8).reshape(record, -1).T).view(dtype).reshape(-1)


def _narrowest(value):
    for dtype in DTYPES[:-1]:
        narrow = value.astype(dtype)
        if np.array_equal(narrow, value):
            return narrow
    return np.ascontiguousarray(value, dtype=DTYPES[-1])


def _encode(value):
    if isinstance(value, np.ndarray):
        if value.size > BASE64_THRESHOLD:
            value = _narrowest(np.asarray(value, dtype=float))
            packed = zlib.compress(_shuffle(value.tobytes(), _record(value.shape, value.itemsize)))
            return {"__zlib__": base64.b64encode(packed).decode("ascii"), "shape": list(value.shape), "dtype": value.dtype.str}
        return {"__array__": value.ravel().tolist(), "shape": list(value.shape)}
    if isinstance(value, dict):
        return {k: _encode(v) for k, v in value.items()}
    if isinstance(value, np.generic):
        return value.item()
    return value


def _decode(value):
    if isinstance(value, dict):
        packed = "__zlib__" in value
        if packed or "__base64__" in value:
            shape = value.get("shape")
            if not isinstance(shape, list) or not all(isinstance(n, int) and n >= 0 for n in shape):
                raise ValueError("malformed array in limit JSON: bad shape")
            dtype = value.get("dtype", "<f8")
            if dtype not in DTYPES:
                raise ValueError(f"malformed array in limit JSON: dtype {dtype!r} is not one of {', '.join(DTYPES)}")
            size = math.prod(shape) * np.dtype(dtype).itemsize
            try:
                raw = base64.b64decode(value["__zlib__" if packed else "__base64__"], validate=True)
                if packed:
                    inflate = zlib.decompressobj()
                    raw = inflate.decompress(raw, size)  # never more than the shape declares
                    if len(raw) != size or inflate.unconsumed_tail or not inflate.eof:
                        raise ValueError(f"the data does not hold the {size} bytes its shape declares")
                    # at the stored precision: a model keeps or widens it (LimitModel.round_single)
                    return _unshuffle(raw, _record(shape, np.dtype(dtype).itemsize), dtype).reshape(shape)
                return np.frombuffer(raw, dtype=dtype).reshape(shape).copy()
            except (TypeError, ValueError, binascii.Error, zlib.error) as err:
                raise ValueError(f"malformed array in limit JSON: {err}") from None
        if "__array__" in value:
            data = value["__array__"]
            shape = value.get("shape")
            if not isinstance(data, list) or not isinstance(shape, list):
                raise ValueError("malformed array in limit JSON")
            try:
                return np.asarray(data, dtype=float).reshape(shape)
            except (TypeError, ValueError) as err:
                raise ValueError(f"malformed array in limit JSON: {err}") from None
        return {k: _decode(v) for k, v in value.items()}
    return value


def limit_to_json(limit):
    """A compact JSON string for ``limit`` (a :class:`JointLimit`)."""
    return json.dumps(_encode(limit.to_dict()), separators=(",", ":"))


def limit_from_json(text):
    """Parse and validate; ``ValueError`` for anything that is not a valid limit."""
    try:
        data = json.loads(text)
    except (TypeError, ValueError) as err:
        raise ValueError(f"not a Joint Limits file: invalid JSON ({err})") from None
    return JointLimit.from_dict(_decode(data))


def _flatten(data, prefix=""):
    header, arrays = {}, {}
    for key, value in data.items():
        if isinstance(value, np.ndarray):
            arrays[prefix + key] = value
        elif isinstance(value, dict):
            sub_header, sub_arrays = _flatten(value, prefix + key + "/")
            header[key] = sub_header
            arrays.update(sub_arrays)
        else:
            header[key] = value
    return header, arrays


def _unflatten(header, arrays):
    data = json.loads(json.dumps(header))
    for path, value in arrays.items():
        node = data
        *parents, leaf = path.split("/")
        for name in parents:
            node = node.setdefault(name, {})
            if not isinstance(node, dict):
                raise ValueError(f"limit archive entry {path!r} clashes with its header")
        node[leaf] = value
    return data


def save_limit_npz(path_or_file, limit):
    """Write ``limit`` as an uncompressed ``.npz`` (arrays + a JSON ``header``)."""
    header, arrays = _flatten(limit.to_dict())
    np.savez(path_or_file, header=np.array(json.dumps(header)), **arrays)


def load_limit_npz(path_or_file):
    """Read a ``.npz`` written by :func:`save_limit_npz`, without pickle, and validate it."""
    try:
        archive = np.load(path_or_file, allow_pickle=False)
    except (OSError, zipfile.BadZipFile, EOFError) as err:
        raise ValueError(f"not a Joint Limits archive: {err}") from None
    except ValueError as err:
        if "pickle" in str(err).lower():
            raise ValueError("not a Joint Limits archive: not a .npz file (numpy would need pickle to read it)") from None
        raise ValueError(f"not a Joint Limits archive: {err}") from None
    if not isinstance(archive, np.lib.npyio.NpzFile):
        raise ValueError("not a Joint Limits archive: a single .npy array, not a .npz archive")
    try:
        with archive:
            if "header" not in archive.files:
                raise ValueError("not a Joint Limits archive: no 'header' entry")
            header = json.loads(str(archive["header"]))
            arrays = {name: archive[name] for name in archive.files if name != "header"}
    except (OSError, zipfile.BadZipFile, EOFError, json.JSONDecodeError) as err:
        raise ValueError(f"not a Joint Limits archive: {err}") from None
    except ValueError as err:
        if "pickle" in str(err).lower():
            raise ValueError("refusing a limit archive that needs pickle (object arrays)") from None
        raise ValueError(f"not a Joint Limits archive: {err}") from None
    if not isinstance(header, dict):
        raise ValueError("not a Joint Limits archive: header is not a mapping")
    return JointLimit.from_dict(_unflatten(header, arrays))


def save_limit(path, limit):
    """Write by extension: ``.json`` or ``.npz``."""
    path = str(path)
    if path.lower().endswith(".json"):
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(limit_to_json(limit))
    elif path.lower().endswith(".npz"):
        save_limit_npz(path, limit)
    else:
        raise ValueError(f"limit files end in .json or .npz, got {path!r}")


def load_limit(path):
    """Read by extension: ``.json`` or ``.npz``; ``ValueError`` for corrupt or foreign files."""
    path = str(path)
    if path.lower().endswith(".npz"):
        return load_limit_npz(path)
    if path.lower().endswith(".json"):
        try:
            with open(path, encoding="utf-8") as fh:
                return limit_from_json(fh.read())
        except UnicodeDecodeError:
            raise ValueError(f"{path} is not a Joint Limits JSON file (not text)") from None
    raise ValueError(f"limit files end in .json or .npz, got {path!r}")


def limit_to_bytes(limit):
    """``.npz`` bytes (for tests and embedding)."""
    buf = io.BytesIO()
    save_limit_npz(buf, limit)
    return buf.getvalue()
