# SPDX-License-Identifier: GPL-3.0-or-later
"""Texture files are judged by content, not name, and their size is read from the header
before Blender decodes them (issue 11, item 8). Every file is written here."""

import struct
import time
import zlib

import bpy
import numpy as np
import pytest
from rigs import expect_error, fitted_rig


@pytest.fixture
def textured(clean_file, addon):
    obj, pb, _ = fitted_rig(addon, model="sinus_texture")
    return obj, pb


def write_png(path, width, height):
    """A valid RGBA 8-bit PNG of zeros (zlib squeezes them: large images stay small files)."""

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    row = b"\0" * (1 + 4 * width)
    pixels = zlib.compressobj(1)
    body = b"".join(pixels.compress(row) for _ in range(height)) + pixels.flush()
    header = struct.pack(">IIBBBBB", width, height, 8, 6, 0, 0, 0)
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", body) + chunk(b"IEND", b""))
    return path


def write_exr_header(path, width, height):
    """The header of an OpenEXR file declaring a ``width x height`` data window (no pixels)."""

    def attribute(name, kind, value):
        return name + b"\0" + kind + b"\0" + struct.pack("<i", len(value)) + value

    header = attribute(b"compression", b"compression", b"\0") + attribute(
        b"dataWindow", b"box2i", struct.pack("<4i", 0, 0, width - 1, height - 1)
    )
    path.write_bytes(b"v/1\x01" + struct.pack("<i", 2) + header + b"\0")
    return path


def test_kelly_png_named_jpg_is_read_as_kelly(textured, addon, tmp_path):
    obj, pb = textured
    limit = addon.rig.io.storage.read_limit(pb)
    png = tmp_path / "limit.png"
    assert bpy.ops.pose.joint_limits_texture_export(filepath=str(png)) == {"FINISHED"}
    renamed = png.rename(tmp_path / "limit.jpg")
    assert bpy.ops.pose.joint_limits_texture_import(filepath=str(renamed)) == {"FINISHED"}
    loaded = addon.rig.io.storage.read_limit(pb)
    assert loaded.model.config["layout"] == "kelly"
    kelly = addon.limits.models.sinus.kelly
    np.testing.assert_array_equal(kelly.to_kelly_rgba8(loaded.model), kelly.to_kelly_rgba8(limit.model))


def test_oversized_png_is_refused_from_its_header(textured, addon, tmp_path):
    obj, pb = textured
    before = pb.joint_limit.limit_data
    path = write_png(tmp_path / "huge.png", 2048, 2048)
    images = set(bpy.data.images)
    start = time.perf_counter()
    expect_error(
        bpy.ops.pose.joint_limits_texture_import, "huge.png is a 2048x2048 PNG; a Kelly texture is 256x512", filepath=str(path)
    )
    assert time.perf_counter() - start < 0.5
    assert set(bpy.data.images) == images and pb.joint_limit.limit_data == before


@pytest.mark.parametrize(
    "write, message",
    [
        (lambda p: write_exr_header(p, 100_000, 100_000), "big.exr is a 100000x100000 EXR: texture shape"),
        (lambda p: write_exr_header(p, 3, 5), "big.exr is a 3x5 EXR: texture shape"),
        (
            lambda p: p.write_bytes(b"v/1\x01\x02\0\0\0compression\0compression\0\x01\0\0\0\0\0"),
            "big.exr is an OpenEXR header without a dataWindow",
        ),
        (lambda p: p.write_bytes(b"\xff\xd8\xff\xe0 a JPEG"), "big.exr is neither a PNG nor an OpenEXR file"),
        (lambda p: p.write_bytes(b"\x89PNG\r\n\x1a\n"), "big.exr is a damaged PNG"),
    ],
    ids=["huge_exr", "odd_exr", "no_window", "jpeg", "short_png"],
)
def test_bad_texture_headers_are_refused_by_name(textured, addon, tmp_path, write, message):
    obj, pb = textured
    before = pb.joint_limit.limit_data
    path = tmp_path / "big.exr"
    write(path)
    expect_error(bpy.ops.pose.joint_limits_texture_import, message, filepath=str(path))
    assert pb.joint_limit.limit_data == before
