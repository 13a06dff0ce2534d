# SPDX-License-Identifier: GPL-3.0-or-later
"""A library of generated BVH clips for the batch tests, and what a batch wrote."""

import numpy as np

NAMES = ("Hips", "Spine", "Head", "LArm", "LFore", "LUpLeg", "LLeg", "Tip", "Stub")


PARENTS = (-1, 0, 1, 1, 3, 0, 5, 6, 1)


OFFSETS = (  # Y up, centimetres; legs straight down (-Y: Blender's special case), a zero-length stub
    (0, 90, 0),
    (0, 10, 0),
    (0, 50, 0),
    (15, 45, 0),
    (28, 0, 0),
    (9, -5, 0),
    (0, -42, 0),
    (1e-5, -40, 2e-5),
    (0, 0, 0),
)


ROOT_CHANNELS = ["Xposition", "Yposition", "Zposition", "Zrotation", "Xrotation", "Yrotation"]


ORDERS = (
    ["Zrotation", "Xrotation", "Yrotation"],
    ["Xrotation", "Yrotation", "Zrotation"],
    ["Yrotation", "Zrotation", "Xrotation"],
)


ENDS = {2: (0, 10, 0), 4: (20, 0, 0), 7: (0, -8, 6)}


def _channels():
    return [ROOT_CHANNELS] + [ORDERS[j % 3] for j in range(1, len(NAMES))]


def write_clip(addon, path, seed, frames=12, amplitude=30.0, newline="\n"):
    """A generated clip: every rotation a sine of ``amplitude`` degrees with random phases."""
    bf = addon.rig.io.bvh_file
    rng = np.random.default_rng(seed)
    t = np.linspace(0, 1, frames)[:, None]
    width = sum(len(c) for c in _channels())
    values = amplitude * np.sin(2 * np.pi * t + rng.uniform(0, 6, size=(1, width)))
    values[:, :3] = rng.normal(size=(frames, 3))
    ends = {j: np.array(v, dtype=float) for j, v in ENDS.items()}
    text = bf.bvh_text(NAMES, PARENTS, np.array(OFFSETS, dtype=float), _channels(), ends, 1 / 30, values)
    path.write_bytes(text.replace("\n", newline).encode())
    return path


def _library(addon, folder, wide=("wide.bvh",)):
    folder.mkdir()
    for k in range(3):
        write_clip(addon, folder / f"rom{k}.bvh", seed=k)
    for k, name in enumerate(wide):
        write_clip(addon, folder / name, seed=10 + k, amplitude=120.0, newline="\r\n")
    (folder / "corrupt.bvh").write_text("HIERARCHY\nROOT Hips\n{\n  OFFSET 0 0\n")
    return folder


def _files(folder):
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}
