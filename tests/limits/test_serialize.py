# SPDX-License-Identifier: GPL-3.0-or-later
"""Limit files are untrusted: deep nesting, forged array sizes, zip bombs and random damage give
one ``ValueError`` and allocate nothing large (issue 11, items 4 and 8). Pure numpy."""

import base64
import io
import json
import time
import tracemalloc
import zipfile

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from limits.geometry.quaternion import quaternion_from_exp_map
from limits.joint import JointLimit
from limits.serialize import MAX_DEPTH, MAX_ELEMENTS, limit_from_json, limit_to_bytes, limit_to_json, load_limit, load_limit_npz

RNG = np.random.default_rng(7)
CLOUD = quaternion_from_exp_map(RNG.normal(size=(300, 3)) * [0.5, 0.3, 0.2])
LIMITS = {kind: JointLimit.fit(CLOUD, kind=kind) for kind in ("box", "kdop", "sdf_grid")}


def _npz(entries, compress=False):
    """An .npz of raw ``{name: .npy bytes}`` entries (forged headers are the point)."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED if compress else zipfile.ZIP_STORED) as archive:
        for name, data in entries.items():
            archive.writestr(name + ".npy", data)
    return buffer.getvalue()


def _npy(array):
    buffer = io.BytesIO()
    np.save(buffer, array)
    return buffer.getvalue()


def _npy_header(shape, dtype="<f8"):
    buffer = io.BytesIO()
    np.lib.format.write_array_header_1_0(buffer, {"descr": dtype, "fortran_order": False, "shape": shape})
    return buffer.getvalue()


def _header():
    return _npy(np.array(json.dumps({"format": "joint_limits", "version": 1, "model": {"kind": "box"}})))


def _peak(load, data):
    """``(error message, seconds, peak MB traced)`` of a load that must fail."""
    tracemalloc.start()
    start = time.perf_counter()
    with pytest.raises(ValueError) as info:
        load(data)
    seconds = time.perf_counter() - start
    peak = tracemalloc.get_traced_memory()[1] / 1e6
    tracemalloc.stop()
    return str(info.value), seconds, peak


def test_deeply_nested_json_is_a_value_error():
    for depth in (MAX_DEPTH + 1, 100_000):
        with pytest.raises(ValueError, match="nested deeper"):
            limit_from_json("[" * depth + "]" * depth)
        with pytest.raises(ValueError, match="nested deeper"):
            limit_from_json('{"a":' * depth + "1" + "}" * depth)


def test_npz_zip_bomb_is_refused_from_its_headers():
    # 3 GB of zeros declared in a few MB: the header alone is enough to say no
    rows = 3 * 10**9 // 8 // 4
    bomb = io.BytesIO()
    with zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("header.npy", _header())
        with archive.open("model/params/mins.npy", "w", force_zip64=True) as entry:
            entry.write(_npy_header((rows, 4)))
            chunk = bytes(1 << 24)
            for _ in range(6):  # enough zeros to be a bomb in spirit; the rest is never read
                entry.write(chunk)
    message, seconds, peak = _peak(load_limit_npz, io.BytesIO(bomb.getvalue()))
    assert "declares 3" in message and str(MAX_ELEMENTS) in message
    assert seconds < 1.0 and peak < 50, (seconds, peak)


def test_npz_declaring_80_gb_is_refused_before_allocating():
    data = _npz({"header": _header(), "model/params/mins": _npy_header((10**10, 1)) + bytes(64)})
    message, seconds, peak = _peak(load_limit_npz, io.BytesIO(data))
    assert "entry 'model/params/mins' declares 10000000000 elements" in message
    assert peak < 50


@pytest.mark.parametrize(
    "entries, message",
    [
        ({"header": _header(), "model/params/mins": _npy(np.zeros(3, dtype=complex))}, "dtype complex128"),
        ({"header": _header(), "model/params/mins": _npy(np.zeros(3, dtype="M8[s]"))}, "dtype datetime64"),
        ({"header": _header(), "model/params/mins": _npy(np.zeros(3, dtype=[("a", "<f8")]))}, "not a numeric array"),
        ({"header": _npy(np.zeros(3)), "model/params/mins": _npy(np.zeros(3))}, "header is not"),
        ({"header": _header(), "model/params/mins": _npy_header((3,)) + bytes(8)}, "declares 24 bytes of data but holds 8"),
        ({"header": _header(), "model/params/mins": _npy(np.zeros(3)) + bytes(100)}, "declares 24 bytes of data but holds 124"),
        ({"header": _header(), "model/params/mins": b"\x93NUMPY\x09\x00junk"}, "not a Joint Limits archive"),
    ],
    ids=["complex", "datetime", "record", "numeric_header", "short", "long", "bad_version"],
)
def test_npz_entries_are_checked_from_their_headers(entries, message):
    with pytest.raises(ValueError, match=message):
        load_limit_npz(io.BytesIO(_npz(entries)))


def test_json_base64_shape_must_match_its_bytes_before_decoding():
    data = json.loads(limit_to_json(LIMITS["sdf_grid"]))
    params = data["model"]["params"]
    name = next(n for n, v in params.items() if isinstance(v, dict) and "__zlib__" in v)
    packed = params[name]
    params[name] = dict(packed, shape=[10**6, 10**6])
    with pytest.raises(ValueError, match="declares 1000000000000 elements"):
        limit_from_json(json.dumps(data))
    params[name] = dict(packed, shape=[3])  # inflating stops at the 12 bytes declared
    with pytest.raises(ValueError, match="does not hold the 12 bytes its shape declares"):
        limit_from_json(json.dumps(data))
    # the plain base64 of earlier versions: its length must match the shape before decoding
    params[name] = {"__base64__": base64.b64encode(np.zeros(10).tobytes()).decode(), "shape": [3]}
    with pytest.raises(ValueError, match=r"shape \[3\] needs \d+ base64 characters"):
        limit_from_json(json.dumps(data))


def test_load_limit_refuses_missing_files_with_a_value_error(tmp_path):
    for name in ("missing.json", "missing.npz"):
        with pytest.raises(ValueError, match="missing"):
            load_limit(tmp_path / name)


def _mutate(data, edits):
    out = bytearray(data)
    for where, value in edits:
        if out:
            out[where % len(out)] = value
    return bytes(out)


EDITS = st.lists(st.tuples(st.integers(0, 10**7), st.integers(0, 255)), min_size=1, max_size=8)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(kind=st.sampled_from(sorted(LIMITS)), edits=EDITS, cut=st.integers(0, 10**7))
@example(kind="sdf_grid", edits=[(1423, 91)], cut=1)  # a header numpy's tokenizer chokes on
def test_damaged_npz_raises_only_value_error(kind, edits, cut):
    data = _mutate(limit_to_bytes(LIMITS[kind]), edits)
    data = data[: cut % (len(data) + 1)] if cut % 3 == 0 else data
    try:
        load_limit_npz(io.BytesIO(data))
    except ValueError:
        pass


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(kind=st.sampled_from(sorted(LIMITS)), edits=EDITS)
def test_damaged_json_raises_only_value_error(kind, edits):
    text = _mutate(limit_to_json(LIMITS[kind]).encode(), [(w, v % 128) for w, v in edits]).decode("ascii")
    try:
        limit_from_json(text)
    except ValueError:
        pass


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=5),
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(
            st.sampled_from(
                [
                    "format",
                    "version",
                    "model",
                    "kind",
                    "config",
                    "params",
                    "shape",
                    "__array__",
                    "__base64__",
                    "dtype",
                    "reference",
                    "centre",
                    "mins",
                    "maxs",
                ]
            ),
            children,
            max_size=5,
        )
    ),
    max_leaves=30,
)


@settings(max_examples=300, deadline=None)
@given(value=JSON_VALUES, base=st.sampled_from(sorted(LIMITS)))
def test_foreign_json_structures_raise_only_value_error(value, base):
    data = json.loads(limit_to_json(LIMITS[base]))
    for target in (
        value,
        {**data, "model": value},
        {**data, "model": {**data["model"], "params": value}},
        {**data, "model": {**data["model"], "config": value}},
    ):
        try:
            limit_from_json(json.dumps(target))
        except ValueError:
            pass


def test_round_trips_still_work():
    for limit in LIMITS.values():
        assert limit_from_json(limit_to_json(limit)).model.kind == limit.model.kind
        assert load_limit_npz(io.BytesIO(limit_to_bytes(limit))).model.kind == limit.model.kind
