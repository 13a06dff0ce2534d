# SPDX-License-Identifier: GPL-3.0-or-later
"""BVH files read and written with numpy, without Blender's importer.

:func:`read_bvh` parses and checks a file (one ``ValueError`` naming the file, the line and the
problem); :meth:`BvhClip.local_rotations` gives every joint's rotation per frame in the bone
space Blender's importer (``io_anim_bvh``, rotate mode quaternion) gives its pose bones: bones
from each joint's head to its End Site, or the mean of its children's heads (zero-length bones
lengthened by 0.1 along +Y), with Blender's zero-roll orientation
(``vec_roll_to_mat3_normalized``), and ``q_local = rest^-1 @ euler @ rest``. Limits fitted from
these rotations apply to a rig imported with Blender's importer, and the other way round (a test
compares the two).

:meth:`BvhClip.limited_text` writes rotations back: only the rotation channels of the frames it
is given change, as text substituted in place; every other byte of the file (header, positions,
untouched joints and frames, spacing, line endings) stays as it was.
"""

import os
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ...limits.body.skeleton import Skeleton, carries_heading
from ...limits.geometry.quaternion import (
    euler_compatible,
    euler_from_matrix,
    matrix_from_quaternion,
    quaternion_conjugate,
    quaternion_from_euler,
    quaternion_from_matrix,
    quaternion_multiply,
)

POSITION_CHANNELS = ("xposition", "yposition", "zposition")
ROTATION_CHANNELS = ("xrotation", "yrotation", "zrotation")
#: Blender's thresholds for a bone pointing along -Y (``vec_roll_to_mat3_normalized``).
SAFE_THRESHOLD = 6.1e-3
CRITICAL_THRESHOLD = 2.5e-4
#: The rotation Blender's BVH importer gives the armature object (axis_forward -Z, axis_up Y):
#: +90 degrees about X.
Y_UP_TO_Z_UP = np.array([np.sqrt(0.5), np.sqrt(0.5), 0.0, 0.0])
#: Written rotation values: degrees with this many decimals.
DECIMALS = 6


@dataclass
class BvhClip:
    """A parsed BVH file.

    ``names (J,)``, ``parents (J,)`` (-1 for a root), ``offsets (J, 3)``, ``end_offsets``
    (``{joint index: (3,)}`` of End Sites), ``channels`` (per joint, lower-case channel names in
    file order), ``columns`` (per joint, its first column in a motion row), ``frame_time``
    (seconds), ``values (F, C)`` (the motion, degrees for rotations), ``text`` (the file as
    read) and ``motion_lines (F,)`` (index of each frame's line in ``text.splitlines()``)."""

    name: str
    names: list
    parents: np.ndarray
    offsets: np.ndarray
    end_offsets: dict
    channels: list
    columns: list
    frame_time: float
    values: np.ndarray
    text: str
    motion_lines: np.ndarray

    @property
    def frame_count(self):
        return len(self.values)

    @property
    def frame_numbers(self):
        """``(F,)`` frame numbers as Blender's importer keys them (the first frame is 1)."""
        return np.arange(1, self.frame_count + 1)

    def rotated(self, j):
        """Whether joint ``j`` has rotation channels."""
        return self.rotation_columns(j) is not None

    def rotation_columns(self, j):
        """Columns of joint ``j``'s X, Y and Z rotation (``None`` without rotation channels)."""
        chans = self.channels[j]
        if not any(c in ROTATION_CHANNELS for c in chans):
            return None
        return [self.columns[j] + chans.index(c) for c in ROTATION_CHANNELS]

    def euler_order(self, j):
        """Blender's Euler order (axes in the order applied) of joint ``j``'s rotation channels:
        the file's channel order reversed, as the importer reads it."""
        return "".join(c[0].upper() for c in self.channels[j] if c in ROTATION_CHANNELS)[::-1]

    def carries_heading(self, j):
        """:func:`...limits.body.skeleton.carries_heading` for joint ``j``: a root, or a joint whose
        position channels move over the clip (file units)."""
        cols = [self.columns[j] + k for k, c in enumerate(self.channels[j]) if c in POSITION_CHANNELS]
        return carries_heading(self.parents[j] < 0, self.values[:, cols].T)

    def rest_heads_tails(self):
        """``(J, 3)`` heads and tails of the joints' bones at rest (file axes and units), as
        Blender's importer places them: a tail at the End Site, else at the children's mean."""
        heads = np.zeros((len(self.names), 3))
        for j, p in enumerate(self.parents):
            heads[j] = self.offsets[j] + (heads[p] if p >= 0 else 0.0)
        tails = heads.copy()
        for j in range(len(self.names)):
            children = np.flatnonzero(self.parents == j)
            if j in self.end_offsets:
                tails[j] = heads[j] + self.end_offsets[j]
            elif len(children):
                tails[j] = heads[children].mean(axis=0)
            if np.linalg.norm(tails[j] - heads[j]) <= 0.001:
                tails[j, 1] += 0.1
        return heads, tails

    def rest_rotations(self):
        """``(J, 4)`` rest orientation of every joint's bone, as Blender's importer builds it."""
        heads, tails = self.rest_heads_tails()
        # Blender keeps heads and tails in single precision
        direction = tails.astype(np.float32).astype(float) - heads.astype(np.float32).astype(float)
        return quaternion_from_matrix(bone_matrix_zero_roll(direction / np.linalg.norm(direction, axis=1, keepdims=True)))

    def skeleton(self):
        """The clip's rest skeleton (:class:`...limits.body.skeleton.Skeleton`, file axes): what
        :class:`...limits.body.symmetry.BodyMirror` finds the body's symmetry in."""
        heads, tails = self.rest_heads_tails()
        return Skeleton(self.names, self.parents, heads, tails, self.rest_rotations())

    def world_rest_rotations(self):
        """``(J, 4)`` rest orientations in Blender's world space: Blender's importer gives the
        armature object the axis conversion from the file's Y up to Z up (its defaults)."""
        return quaternion_multiply(Y_UP_TO_Z_UP, self.rest_rotations())

    def local_rotations(self):
        """``(F, J, 4)`` local rotation of every joint's bone per frame (identity for a joint
        without rotation channels; NaN where the file holds NaN or infinity)."""
        rest = self.rest_rotations()
        out = np.zeros((self.frame_count, len(self.names), 4))
        out[..., 0] = 1.0
        for j in range(len(self.names)):
            cols = self.rotation_columns(j)
            if cols is None:
                continue
            world = quaternion_from_euler(np.radians(self.values[:, cols]), self.euler_order(j))
            out[:, j] = quaternion_multiply(quaternion_conjugate(rest[j]), quaternion_multiply(world, rest[j]))
        return out

    def channel_angles(self, j, local, previous):
        """Joint ``j``'s rotation channels (degrees, X, Y, Z) for local rotations ``(N, 4)``,
        each triple the equivalent one closest to ``previous (N, 3)`` (degrees, the file's)."""
        rest = self.rest_rotations()[j]
        world = quaternion_multiply(rest, quaternion_multiply(local, quaternion_conjugate(rest)))
        order = self.euler_order(j)
        euler = euler_from_matrix(matrix_from_quaternion(world), order)
        return np.degrees(euler_compatible(euler, np.radians(previous), order))

    def write_limited(self, changes, out_path):
        """Write :meth:`limited_text` to ``out_path`` through a temporary file."""
        path = Path(out_path)
        tmp = path.with_name(f".{path.name}.partial")
        tmp.write_bytes(self.limited_text(changes).encode("utf-8"))
        os.replace(tmp, path)

    def limited_text(self, changes):
        """The file's text with the rotation channels of some frames replaced.

        ``changes`` maps a joint index to ``(frames (N,), local rotations (N, 4))``. Only those
        values are rewritten (``DECIMALS`` decimals); everything else is the original text."""
        edits = {}
        for j, (frames, local) in sorted(changes.items()):
            frames = np.asarray(frames, dtype=int)
            if not len(frames):
                continue
            cols = self.rotation_columns(j)
            angles = self.channel_angles(j, local, self.values[np.ix_(frames, cols)])
            for f, row in zip(frames.tolist(), angles, strict=True):
                line = edits.setdefault(int(self.motion_lines[f]), {})
                for col, value in zip(cols, row, strict=True):
                    line[col] = f"{value:.{DECIMALS}f}"
        lines = self.text.splitlines(keepends=True)
        for index, replace in edits.items():
            lines[index] = _substitute(lines[index], replace)
        return "".join(lines)


def _substitute(line, replace):
    """``line`` with its whitespace-separated tokens at the indices in ``replace`` swapped."""
    parts, last = [], 0
    for k, token in enumerate(re.finditer(r"\S+", line)):
        if k in replace:
            parts.append(line[last : token.start()])
            parts.append(replace[k])
            last = token.end()
    parts.append(line[last:])
    return "".join(parts)


def bone_matrix_zero_roll(direction):
    """``(N, 3, 3)`` Blender's rest matrix of bones along unit ``direction (N, 3)`` with roll 0
    (columns: the bone's X, Y = direction, Z), including its special case near -Y."""
    x, y, z = np.moveaxis(np.asarray(direction, dtype=float), -1, 0)
    theta = 1.0 + y
    theta_alt = x * x + z * z
    regular = (theta > SAFE_THRESHOLD) | (theta_alt > CRITICAL_THRESHOLD**2)
    theta = np.where(theta <= SAFE_THRESHOLD, theta_alt * 0.5 + theta_alt * theta_alt * 0.125, theta)
    theta = np.where(regular, theta, 1.0)
    m = np.stack(
        (
            np.stack((1 - x * x / theta, x, -x * z / theta), -1),
            np.stack((-x, y, -z), -1),
            np.stack((-x * z / theta, z, 1 - z * z / theta), -1),
        ),
        axis=-2,
    )
    m[~regular] = np.diag([-1.0, -1.0, 1.0])
    return m


def read_bvh(path):
    """Parse and check the BVH file at ``path``; returns a :class:`BvhClip`."""
    path = Path(path)
    try:
        text = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError:
        raise ValueError(f"{path.name} is not a BVH file (not text)") from None
    except OSError as err:
        raise ValueError(f"cannot read {path.name}: {err.strerror or err}") from None
    try:
        return _parse(path.name, text)
    except ValueError as err:
        raise ValueError(f"{path.name} is not a valid BVH file: {err}") from None


def _numbers(tokens, count, what):
    if len(tokens) != count:
        raise ValueError(f"{what} needs {count} numbers, got {len(tokens)}")
    try:
        values = np.array([float(t) for t in tokens])
    except ValueError:
        raise ValueError(f"{what} holds {' '.join(tokens)!r}, not numbers") from None
    if not np.isfinite(values).all():
        raise ValueError(f"{what} holds NaN or infinity")
    return values


def _parse(name, text):
    lines = [(i, line.split()) for i, line in enumerate(text.splitlines())]
    lines = [(i, tokens) for i, tokens in lines if tokens]
    if not lines or lines[0][1][0].upper() != "HIERARCHY":
        raise ValueError("does not start with HIERARCHY")
    names, parents, offsets, channels, ends, stack = [], [], [], [], {}, []
    k = 1
    while True:
        if k >= len(lines):
            raise ValueError("no MOTION section")
        number, tokens = lines[k]
        word = tokens[0].lower()
        where = f"line {number + 1}"
        if word in ("root", "joint"):
            if (word == "root") != (not stack):
                raise ValueError(f"{where}: {tokens[0]} {'outside a joint' if not stack else 'inside a joint'}")
            if len(tokens) < 2:
                raise ValueError(f"{where}: {tokens[0]} without a name")
            joint = "_".join(tokens[1:])
            body = [t for _, t in lines[k + 1 : k + 4]]
            if len(body) < 3 or body[0] != ["{"] or body[1][0].upper() != "OFFSET" or body[2][0].upper() != "CHANNELS":
                raise ValueError(f"{where}: joint {joint!r} needs '{{', OFFSET and CHANNELS lines")
            offsets.append(_numbers(body[1][1:], 3, f"{where}: OFFSET of {joint!r}"))
            chans = [c.lower() for c in body[2][2:]]
            declared = body[2][1] if len(body[2]) > 1 else ""
            if not declared.isdigit() or int(declared) != len(chans):
                raise ValueError(f"{where}: CHANNELS of {joint!r} declares {declared or 'no count'} but names {len(chans)}")
            rotations = sum(c in ROTATION_CHANNELS for c in chans)
            if any(c not in POSITION_CHANNELS + ROTATION_CHANNELS for c in chans) or len(set(chans)) != len(chans):
                raise ValueError(f"{where}: joint {joint!r} has channels {' '.join(body[2][2:])}")
            if rotations not in (0, 3):
                raise ValueError(f"{where}: joint {joint!r} has {rotations} rotation channels (0 or 3 are read)")
            names.append(joint)
            parents.append(stack[-1] if stack else -1)
            channels.append(chans)
            stack.append(len(names) - 1)
            k += 4
        elif [t.lower() for t in tokens] == ["end", "site"]:
            body = [t for _, t in lines[k + 1 : k + 4]]
            if not stack or len(body) < 3 or body[0] != ["{"] or body[1][0].upper() != "OFFSET" or body[2] != ["}"]:
                raise ValueError(f"{where}: End Site needs '{{', OFFSET and '}}' lines inside a joint")
            ends[stack[-1]] = _numbers(body[1][1:], 3, f"{where}: End Site OFFSET")
            k += 4
        elif tokens == ["}"]:
            if not stack:
                raise ValueError(f"{where}: '}}' closes nothing")
            stack.pop()
            k += 1
        elif word == "motion":
            if stack or not names:
                raise ValueError(f"{where}: MOTION before the hierarchy is complete")
            break
        else:
            raise ValueError(f"{where}: unexpected {' '.join(tokens)[:40]!r} in the hierarchy")
    header = [t for _, t in lines[k + 1 : k + 3]]
    if len(header) < 1 or [t.lower() for t in header[0][:1]] != ["frames:"] or len(header[0]) != 2 or not header[0][1].isdigit():
        raise ValueError("MOTION needs a 'Frames: N' line")
    frame_count = int(header[0][1])
    if frame_count == 0:
        raise ValueError("the file holds no motion (Frames: 0)")
    if len(header) < 2 or [t.lower() for t in header[1][:2]] != ["frame", "time:"] or len(header[1]) != 3:
        raise ValueError("MOTION needs a 'Frame Time: seconds' line")
    (frame_time,) = _numbers(header[1][2:], 1, "Frame Time")
    if frame_time <= 0.0:
        raise ValueError(f"Frame Time must be positive, got {frame_time}")
    rows = lines[k + 3 :]
    if len(rows) != frame_count:
        raise ValueError(f"'Frames: {frame_count}' but the file holds {len(rows)} frames")
    width = sum(len(c) for c in channels)
    for number, tokens in rows:
        if len(tokens) != width:
            raise ValueError(f"line {number + 1}: {len(tokens)} numbers, the hierarchy has {width} channels")
    flat = [t for _, tokens in rows for t in tokens]
    try:
        values = np.array(flat, dtype=float).reshape(frame_count, width)
    except ValueError:
        bad = next(t for t in flat if not is_number(t))
        raise ValueError(f"{bad[:20]!r} in the motion is not a number") from None
    columns = np.concatenate(([0], np.cumsum([len(c) for c in channels])[:-1])).tolist()
    return BvhClip(
        name=name,
        names=names,
        parents=np.array(parents, dtype=int),
        offsets=np.array(offsets, dtype=float).reshape(-1, 3),
        end_offsets=ends,
        channels=channels,
        columns=columns,
        frame_time=float(frame_time),
        values=values,
        text=text,
        motion_lines=np.array([number for number, _ in rows], dtype=int),
    )


def is_number(token):
    """Whether a BVH token reads as a number."""
    try:
        float(token)
    except ValueError:
        return False
    return True


def bvh_text(names, parents, offsets, channels, end_offsets, frame_time, values):
    """The text of a BVH file (``\\n`` line endings): the hierarchy of joints ``names`` with
    ``parents`` (-1 for a root; a parent before its children), ``offsets (J, 3)``,
    ``channels`` (per joint, e.g. ``["Xposition", ..., "Zrotation", ...]``), End Sites
    ``{joint index: (3,)}``, and ``values (F, C)`` written with ``DECIMALS`` decimals."""
    out = ["HIERARCHY"]

    def joint(j, depth):
        pad = "  " * depth
        out.append(f"{pad}{'ROOT' if parents[j] < 0 else 'JOINT'} {names[j]}")
        out.append(f"{pad}{{")
        out.append(f"{pad}  OFFSET {' '.join(f'{v:.{DECIMALS}f}' for v in offsets[j])}")
        out.append(f"{pad}  CHANNELS {len(channels[j])} {' '.join(channels[j])}")
        for child in (c for c in range(len(names)) if parents[c] == j):
            joint(child, depth + 1)
        if j in end_offsets:
            out.extend(
                (f"{pad}  End Site", f"{pad}  {{", f"{pad}    OFFSET {' '.join(f'{v:.{DECIMALS}f}' for v in end_offsets[j])}")
            )
            out.append(f"{pad}  }}")
        out.append(f"{pad}}}")

    for root in (j for j in range(len(names)) if parents[j] < 0):
        joint(root, 0)
    values = np.asarray(values, dtype=float)
    out += ["MOTION", f"Frames: {len(values)}", f"Frame Time: {frame_time:.{DECIMALS}f}"]
    out += [" ".join(f"{v:.{DECIMALS}f}" for v in row) for row in values]
    return "\n".join(out) + "\n"
