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

Files are untrusted: before anything is allocated, the loaders check how deep the data nests
and how large its arrays say they are (an ``.npz`` entry's ``.npy`` header, a base64 array's
``shape``), and any bad input leaves them as one ``ValueError``.
"""

import base64
import binascii
import io
import json
import math
import tokenize
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
    """The values of shuffled bytes ``raw``, as a flat array of ``dtype``: one byte plane at a
    time into its place (a third of the time numpy takes to transpose all the bytes at once)."""
    itemsize = np.dtype(dtype).itemsize
    planes = np.frombuffer(raw, dtype=np.uint8).reshape(record // itemsize, itemsize, -1)  # channel, byte, value
    values = np.empty((planes.shape[-1], record // itemsize, itemsize), dtype=np.uint8)
    for channel, byte in np.ndindex(planes.shape[:2]):
        values[:, channel, byte] = planes[channel, byte]
    return values.view(dtype).reshape(-1)


def _narrowest(value):
    for dtype in DTYPES[:-1]:
        narrow = value.astype(dtype)
        if np.array_equal(narrow, value):
            return narrow
    return np.ascontiguousarray(value, dtype=DTYPES[-1])


#: Most array elements one limit file may declare, all arrays together: 2**27 (1 GiB as
#: float64, which is what they become). The largest limits the add-on makes are a 256 x 256
#: sinus texture with its tables (about 0.5 M elements) and an SDF grid at its top resolution
#: (128**3, 2 M); a sinus texture imported at 4096 x 4096 still fits. Checked before reading:
#: an .npz of zeros compresses about 1000:1, so a 3 MB file can declare 3 GB.
MAX_ELEMENTS = 2**27

#: Deepest nesting of mappings and lists a limit file may have (real ones nest 4 deep).
MAX_DEPTH = 32

#: Most entries an .npz limit archive may have (real ones have a header and a few arrays).
MAX_ENTRIES = 1024

#: Longest ``header`` entry of an .npz limit archive, in characters (real ones hold about 200).
MAX_HEADER_CHARS = 1 << 20

#: Array kinds an .npz entry may hold: float, signed and unsigned integer, boolean (the
#: ``header`` entry is one unicode string). Anything else (objects, records, dates) is refused.
NPZ_KINDS = "fiub"


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
            text = value["__zlib__" if packed else "__base64__"]
            size = _declared_elements(shape, "array in limit JSON") * np.dtype(dtype).itemsize
            expected = 4 * math.ceil(size / 3)
            if not isinstance(text, str) or (not packed and len(text) != expected):
                raise ValueError(f"malformed array in limit JSON: shape {shape} needs {expected} base64 characters")
            try:
                raw = base64.b64decode(text, validate=True)
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


def _declared_elements(shape, what, total=0):
    """Elements of an array of ``shape`` (plus ``total`` already declared), refused above
    :data:`MAX_ELEMENTS`."""
    size = math.prod(shape)
    if size + total > MAX_ELEMENTS:
        before = f" ({total} more before it)" if total else ""
        raise ValueError(f"{what} declares {size} elements{before}, more than a limit holds ({MAX_ELEMENTS})")
    return size


def _check_depth(data):
    """``ValueError`` when ``data`` nests mappings and lists deeper than :data:`MAX_DEPTH`."""
    stack = [(data, 1)]
    while stack:
        value, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise ValueError(f"not a Joint Limits file: nested deeper than {MAX_DEPTH} levels")
        children = value.values() if isinstance(value, dict) else value if isinstance(value, list) else ()
        stack.extend((child, depth + 1) for child in children if isinstance(child, (dict, list)))


def _limit_from_data(data, what="file"):
    """:meth:`JointLimit.from_dict` of untrusted ``data``: only ``ValueError`` leaves it."""
    _check_depth(data)
    try:
        return JointLimit.from_dict(_decode(data))
    except ValueError:
        raise
    except MemoryError:
        raise ValueError(f"not a Joint Limits {what}: too large to load") from None
    except (TypeError, KeyError, IndexError, AttributeError, OverflowError, RecursionError) as err:
        raise ValueError(f"not a Joint Limits {what}: {type(err).__name__}: {err}") from None


def limit_to_json(limit):
    """A compact JSON string for ``limit`` (a :class:`JointLimit`)."""
    return json.dumps(_encode(limit.to_dict()), separators=(",", ":"))


def limit_from_json(text):
    """Parse and validate; ``ValueError`` for anything that is not a valid limit."""
    try:
        data = json.loads(text)
    except (TypeError, ValueError) as err:
        raise ValueError(f"not a Joint Limits file: invalid JSON ({err})") from None
    except RecursionError:
        raise ValueError(f"not a Joint Limits file: nested deeper than {MAX_DEPTH} levels") from None
    except MemoryError:
        raise ValueError("not a Joint Limits file: too large to load") from None
    return _limit_from_data(data)


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


def _npy_header(entry, name):
    """``(shape, dtype, header bytes)`` of an open ``.npy`` zip entry, from its header alone."""
    version = np.lib.format.read_magic(entry)
    if version == (1, 0):
        shape, _, dtype = np.lib.format.read_array_header_1_0(entry)
    elif version == (2, 0):
        shape, _, dtype = np.lib.format.read_array_header_2_0(entry)
    else:
        raise ValueError(f"entry {name!r} is .npy format {version}, not 1.0 or 2.0")
    return shape, dtype, entry.tell()


def _check_npz_entries(archive):
    """Check every entry of the open ``archive`` (a :class:`zipfile.ZipFile`) from its ``.npy``
    header before any array is read: the allowed kinds (:data:`NPZ_KINDS`), the declared sizes
    (:data:`MAX_ELEMENTS` all together) and that each entry holds exactly the bytes its header
    declares. Returns ``{name: ZipInfo}`` without the ``.npy`` suffixes."""
    infos = archive.infolist()
    if len(infos) > MAX_ENTRIES:
        raise ValueError(f"{len(infos)} entries, more than a limit has ({MAX_ENTRIES})")
    entries, total = {}, 0
    for info in infos:
        name = info.filename.removesuffix(".npy")
        if name == info.filename:
            raise ValueError(f"entry {info.filename!r} is not a .npy array")
        with archive.open(info) as entry:
            shape, dtype, header_bytes = _npy_header(entry, name)
        if dtype.hasobject:
            raise ValueError(f"entry {name!r} needs pickle (object arrays): refused")
        kinds = "U" if name == "header" else NPZ_KINDS
        if dtype.kind not in kinds or dtype.fields is not None or dtype.subdtype is not None:
            raise ValueError(
                f"entry {name!r} has dtype {dtype}, not a numeric array" if name != "header" else "the header is not text"
            )
        if name == "header" and (shape != () or dtype.itemsize > 4 * MAX_HEADER_CHARS):
            raise ValueError(f"the header is not one string of at most {MAX_HEADER_CHARS} characters")
        size = _declared_elements(shape, f"entry {name!r}", total)
        total += size if name != "header" else 0  # (the header's size is capped above)
        if info.file_size != header_bytes + size * dtype.itemsize:
            raise ValueError(
                f"entry {name!r} declares {size * dtype.itemsize} bytes of data but holds {info.file_size - header_bytes}"
            )
        entries[name] = info
    return entries


def _read_npz(path_or_file):
    """``(header mapping, {name: array})`` of a limit archive, checked before reading."""
    with zipfile.ZipFile(path_or_file) as archive:
        entries = _check_npz_entries(archive)
        if "header" not in entries:
            raise ValueError("no 'header' entry")
        arrays = {}
        for name, info in entries.items():
            with archive.open(info) as entry:
                arrays[name] = np.lib.format.read_array(entry, allow_pickle=False)
    header = json.loads(str(arrays.pop("header")))
    if not isinstance(header, dict):
        raise ValueError("header is not a mapping")
    return header, arrays


def load_limit_npz(path_or_file):
    """Read a ``.npz`` written by :func:`save_limit_npz`, without pickle, and validate it.

    Each entry's ``.npy`` header is checked first (:func:`_check_npz_entries`), so a foreign
    or forged archive is refused before its arrays are allocated; only ``ValueError`` leaves.
    """
    try:
        header, arrays = _read_npz(path_or_file)
    except ValueError as err:
        if "pickle" in str(err).lower():
            raise ValueError(f"refusing a limit archive that needs pickle (object arrays): {err}") from None
        raise ValueError(f"not a Joint Limits archive: {err}") from None
    except (
        OSError,
        zipfile.BadZipFile,
        zlib.error,
        EOFError,
        RecursionError,
        KeyError,
        TypeError,
        RuntimeError,
        NotImplementedError,
        SyntaxError,
        tokenize.TokenError,
    ) as err:
        # (zlib: a corrupt compressed entry; RuntimeError, NotImplementedError: an encrypted
        # one or an unknown compression method; SyntaxError, TokenError: an ``.npy`` header
        # numpy cannot parse)
        raise ValueError(f"not a Joint Limits archive: {type(err).__name__}: {err}") from None
    except MemoryError:
        raise ValueError("not a Joint Limits archive: too large to load") from None
    try:
        data = _unflatten(header, arrays)
    except (RecursionError, TypeError, AttributeError) as err:
        raise ValueError(f"not a Joint Limits archive: {type(err).__name__}: {err}") from None
    return _limit_from_data(data, "archive")


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
        except OSError as err:
            raise ValueError(f"cannot read {path}: {err.strerror or err}") from None
        except MemoryError:
            raise ValueError(f"{path} is too large for a Joint Limits file") from None
    raise ValueError(f"limit files end in .json or .npz, got {path!r}")


def limit_to_bytes(limit):
    """``.npz`` bytes (for tests and embedding)."""
    buf = io.BytesIO()
    save_limit_npz(buf, limit)
    return buf.getvalue()
