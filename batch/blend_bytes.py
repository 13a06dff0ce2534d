# SPDX-License-Identifier: GPL-3.0-or-later
"""A saved .blend whose bytes depend on its data only, not on the process that wrote it.

Blender 5.0 and 5.2 write the same data-blocks in the same order with the same (stable,
hashed) "old pointer" identifiers whatever the process, but a few bytes still carry the
writing process's history (measured on two saves of one cleaned clip: the same process twice,
a fresh process, after another clip):

- ``ID.session_uid`` of every data-block (and ``bPoseChannel.runtime.session_uid``): a counter
  of this process's data-blocks, so it depends on what the process opened before. Blender
  gives every data-block a new one when it reads a file (not an undo step), so the value saved
  means nothing to a reader;
- ``FileGlobal``: the bytes after the end of its strings (``colorspace_*_name``: uninitialised
  stack memory) and its ``_pad`` fields;
- ``ScrEdge.v1``/``v2``: a screen edge's two vertices in the order of their memory addresses;
  Blender sorts them again by the new addresses when it reads the file.

:func:`deterministic_blend` rewrites those (session ids and padding to zero, each edge's
vertices in the order of their saved identifiers) and nothing else, reading the file's own
struct catalogue (``DNA1``) for where the fields are. A zstd-compressed file is decompressed
and compressed again frame by frame (Blender's frames and seek table, its level), so the
result is compressed as Blender wrote it. Blender 4.2 saves memory addresses as identifiers:
its files cannot be made the same this way, and are returned with only these fields fixed.

Data the process made itself is left as it is, even where Blender made it at random: a mesh
created here (an FBX import) has a clock-based ``face_sets_color_seed`` and a shader node a
random ``identifier``; in a file that was read, they are the file's.
"""

import re
import struct

ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
SEEK_TABLE_MAGIC = 0x8F92EAB1
SKIPPABLE_MAGIC = 0x184D2A5E
#: Blender's level (``ZSTD_COMPRESSION_LEVEL`` in ``writefile.cc``).
ZSTD_LEVEL = 3

_fixes_by_catalogue = {}


def deterministic_blend(data):
    """``data`` (the bytes of a saved .blend, zstd-compressed or not) with the bytes that
    depend on the writing process set as described in the module's docstring. A file of a
    layout this does not know (not a 64-bit little-endian .blend) is returned unchanged."""
    if data[:4] == ZSTD_MAGIC:
        frames = _zstd_frames(data)
        raw = b"".join(frames)
        fixed = _fixed(raw)
        return data if fixed is None else _zstd_compress(fixed, [len(f) for f in frames])
    fixed = _fixed(data)
    return data if fixed is None else fixed


def _zstd_frames(data):
    """The decompressed frames of a zstd file, split as Blender wrote them (its seek table at
    the end gives each frame's sizes; without one, one frame)."""
    import zstandard

    decompressor = zstandard.ZstdDecompressor()
    if len(data) >= 17 and struct.unpack_from("<I", data, len(data) - 4)[0] == SEEK_TABLE_MAGIC:
        count, flags = struct.unpack_from("<IB", data, len(data) - 9)
        entry = 12 if flags & 0x80 else 8
        table = len(data) - 9 - count * entry
        if not flags & 0x7F and struct.unpack_from("<II", data, table - 8) == (SKIPPABLE_MAGIC, count * entry + 9):
            frames, offset = [], 0
            for k in range(count):
                compressed, size = struct.unpack_from("<II", data, table + k * entry)
                frames.append(decompressor.decompress(data[offset : offset + compressed], max_output_size=size))
                offset += compressed
            return frames
    return [decompressor.stream_reader(data, read_across_frames=True).read()]


def _zstd_compress(raw, sizes):
    """``raw`` compressed in frames of ``sizes`` bytes, with a seek table, as Blender writes it."""
    import zstandard

    compressor = zstandard.ZstdCompressor(level=ZSTD_LEVEL)
    out, table, offset = [], [], 0
    for size in sizes:
        frame = compressor.compress(raw[offset : offset + size])
        out.append(frame)
        table.append(struct.pack("<II", len(frame), size))
        offset += size
    out.append(struct.pack("<II", SKIPPABLE_MAGIC, 8 * len(sizes) + 9))
    out += table
    out.append(struct.pack("<IBI", len(sizes), 0, SEEK_TABLE_MAGIC))
    return b"".join(out)


def _blocks(raw):
    """``(header size, block header size, [(offset of the data, struct index, count, length)])``
    of an uncompressed .blend, or ``None`` for a layout not handled here."""
    if raw[:7] != b"BLENDER":
        return None
    if raw[7:9].isdigit() and raw[9:12] == b"-01":  # Blender 5.0 and later: LargeBHead8
        header, head, layout = int(raw[7:9]), 32, "<4siQqq"
    elif raw[7:9] == b"-v":  # 64-bit little-endian, before 5.0: BHead8
        header, head, layout = 12, 24, "<4siQii"
    else:
        return None
    blocks, pos = [], header
    while pos + head <= len(raw):
        fields = struct.unpack_from(layout, raw, pos)
        code = fields[0]
        if head == 32:
            sdna, length, count = fields[1], fields[3], fields[4]
        else:
            length, sdna, count = fields[1], fields[3], fields[4]
        blocks.append((code, pos + head, sdna, count, length))
        pos += head + length
        if code == b"ENDB":
            break
    return blocks


def _catalogue(dna):
    """The struct catalogue of a ``DNA1`` block: ``(names, types, type sizes, structs)``,
    ``structs[i] = (type index, [(type index, name index)])``."""
    if dna[:8] != b"SDNANAME":
        raise ValueError("not a Blender struct catalogue (DNA1)")
    pos = 8

    def count():
        nonlocal pos
        (n,) = struct.unpack_from("<i", dna, pos)
        pos += 4
        return n

    def strings(n):
        nonlocal pos
        out = []
        for _ in range(n):
            end = dna.index(b"\0", pos)
            out.append(dna[pos:end].decode("latin-1"))
            pos = end + 1
        pos = (pos + 3) & ~3
        return out

    def tag(name):
        nonlocal pos
        if dna[pos : pos + 4] != name:
            raise ValueError(f"struct catalogue: {name.decode()} expected")
        pos += 4

    names = strings(count())
    tag(b"TYPE")
    types = strings(count())
    tag(b"TLEN")
    sizes = struct.unpack_from(f"<{len(types)}h", dna, pos)
    pos = (pos + 2 * len(types) + 3) & ~3
    tag(b"STRC")
    structs = []
    for _ in range(count()):
        kind, n = struct.unpack_from("<hh", dna, pos)
        fields = struct.unpack_from(f"<{2 * n}h", dna, pos + 4)
        structs.append((kind, list(zip(fields[0::2], fields[1::2], strict=True))))
        pos += 4 + 4 * n
    return names, types, sizes, structs


def _layouts(catalogue):
    """Per struct index ``[(offset, size, dotted name, type name)]``, nested structs (not
    arrays of them, not pointers) expanded."""
    names, types, sizes, structs = catalogue
    by_type = {kind: i for i, (kind, _) in enumerate(structs)}
    layouts = {}

    def layout(i):
        if i not in layouts:
            out, offset = [], 0
            for kind, name_index in structs[i][1]:
                name = names[name_index]
                pointer = name.startswith(("*", "(*"))
                size = 8 if pointer else sizes[kind]
                for n in re.findall(r"\[(\d+)\]", name):
                    size *= int(n)
                if not pointer and "[" not in name and kind in by_type:
                    out += [(offset + o, s, f"{name}.{inner}", t) for o, s, inner, t in layout(by_type[kind])]
                else:
                    out.append((offset, size, name, types[kind]))
                offset += size
            layouts[i] = out
        return layouts[i]

    return [layout(i) for i in range(len(structs))]


def _fixes(catalogue):
    """Per struct index that needs any: ``(zero [(offset, size)], strings [(offset, size)],
    edge (v1 offset, v2 offset) or None, struct size)``."""
    _, types, sizes, structs = catalogue
    out = {}
    for i, fields in enumerate(_layouts(catalogue)):
        kind = structs[i][0]
        zero = [(o, s) for o, s, name, _ in fields if re.search(r"(^|\.)session_uid(\.uid_)?$", name)]
        strings, edge = [], None
        if types[kind] == "FileGlobal":
            zero += [(o, s) for o, s, name, _ in fields if name.startswith("_pad")]
            strings = [(o, s) for o, s, name, t in fields if t == "char" and name.endswith("]") and "[" in name]
        if types[kind] == "ScrEdge":
            where = {name: o for o, _, name, _ in fields}
            edge = (where["*v1"], where["*v2"])
        if zero or strings or edge:
            out[i] = (zero, strings, edge, sizes[kind])
    return out


def _fixed(raw):
    """The uncompressed .blend ``raw`` with its process-dependent bytes set, or ``None``."""
    blocks = _blocks(raw)
    if not blocks:
        return None
    dna = next((b for b in blocks if b[0] == b"DNA1"), None)
    if dna is None:
        return None
    catalogue = raw[dna[1] : dna[1] + dna[4]]
    if catalogue not in _fixes_by_catalogue:  # the same for every file one Blender writes
        _fixes_by_catalogue.clear()
        _fixes_by_catalogue[catalogue] = _fixes(_catalogue(catalogue))
    fixes = _fixes_by_catalogue[catalogue]
    out = bytearray(raw)
    for _, start, sdna, count, _ in blocks:
        fix = fixes.get(sdna)
        if fix is None:
            continue
        zero, strings, edge, size = fix
        for k in range(count):
            base = start + k * size
            for offset, n in zero:
                out[base + offset : base + offset + n] = bytes(n)
            for offset, n in strings:
                text = out[base + offset : base + offset + n]
                end = text.find(0)
                if end >= 0:
                    out[base + offset + end : base + offset + n] = bytes(n - end)
            if edge:
                a, b = (base + o for o in edge)
                if out[a : a + 8][::-1] > out[b : b + 8][::-1]:  # little-endian: compare as numbers
                    out[a : a + 8], out[b : b + 8] = out[b : b + 8], out[a : a + 8]
    return bytes(out)
