# SPDX-License-Identifier: GPL-3.0-or-later
"""Limits as files and strings: JSON text and ``.npz`` archives, never pickle.

A limit is the plain mapping of :meth:`JointLimit.to_dict`: JSON scalars plus numpy arrays.
In JSON a small array is written as ``{"__array__": [...], "shape": [...]}`` and a large one
(grids, textures) as ``{"__base64__": "<little-endian bytes>", "shape": [...], "dtype": "<f8" or "<f4"}``
(float32 where the values are exactly float32, see ``LimitModel.SINGLE_PRECISION``); in ``.npz`` every
array is its own entry (``params/<name>`` etc.) beside a JSON ``header`` entry, and the file is
read with ``allow_pickle=False``. Everything read goes through :meth:`JointLimit.from_dict`,
which validates kinds, shapes and values.
"""

import base64
import binascii
import io
import json
import zipfile

import numpy as np

from .joint import JointLimit

#: Arrays with more elements than this are stored as base64 in JSON.
BASE64_THRESHOLD = 64


#: Binary array types in JSON: float64, and float32 for arrays that hold float32 values
#: exactly (a model's single-precision tables), which halves them and loses nothing.
DTYPES = ("<f8", "<f4")


def _encode(value):
    if isinstance(value, np.ndarray):
        if value.size > BASE64_THRESHOLD:
            value = np.asarray(value, dtype=float)
            single = value.astype("<f4")
            dtype = "<f4" if np.array_equal(single, value) else "<f8"
            raw = (single if dtype == "<f4" else np.ascontiguousarray(value, dtype="<f8")).tobytes()
            return {"__base64__": base64.b64encode(raw).decode("ascii"), "shape": list(value.shape), "dtype": dtype}
        return {"__array__": value.ravel().tolist(), "shape": list(value.shape)}
    if isinstance(value, dict):
        return {k: _encode(v) for k, v in value.items()}
    if isinstance(value, np.generic):
        return value.item()
    return value


def _decode(value):
    if isinstance(value, dict):
        if "__base64__" in value:
            shape = value.get("shape")
            if not isinstance(shape, list) or not all(isinstance(n, int) and n >= 0 for n in shape):
                raise ValueError("malformed array in limit JSON: bad shape")
            dtype = value.get("dtype", "<f8")
            if dtype not in DTYPES:
                raise ValueError(f"malformed array in limit JSON: dtype {dtype!r} is not one of {', '.join(DTYPES)}")
            try:
                raw = base64.b64decode(value["__base64__"], validate=True)
                return np.frombuffer(raw, dtype=dtype).reshape(shape).astype(float)
            except (TypeError, ValueError, binascii.Error) as err:
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
