# SPDX-License-Identifier: GPL-3.0-or-later
"""A BVH file written by the tests (Y up, centimetres), for the BVH importer's and the NaN tests."""

import numpy as np

JOINTS = (  # name, parent, offset (BVH is Y up, centimetres)
    ("Hips", None, (0, 90, 0)),
    ("Spine", "Hips", (0, 10, 0)),
    ("Head", "Spine", (0, 50, 0)),
    ("LeftArm", "Spine", (15, 45, 0)),
    ("LeftForeArm", "LeftArm", (28, 0, 0)),
    ("LeftHand", "LeftForeArm", (25, 0, 0)),
    ("LeftUpLeg", "Hips", (9, -5, 0)),
    ("LeftLeg", "LeftUpLeg", (0, -42, 0)),
    ("LeftFoot", "LeftLeg", (0, -40, 0)),
)


def write_bvh(path, frames=30, seed=0):
    children = {}
    for name, parent, _ in JOINTS:
        children.setdefault(parent, []).append(name)
    offsets = {name: off for name, _, off in JOINTS}
    lines = ["HIERARCHY"]

    def joint(name, depth):
        pad = "  " * depth
        kind = "ROOT" if depth == 0 else "JOINT"
        lines.append(f"{pad}{kind} {name}")
        lines.append(f"{pad}{{")
        lines.append(f"{pad}  OFFSET {' '.join(str(float(v)) for v in offsets[name])}")
        chans = (
            "6 Xposition Yposition Zposition Zrotation Xrotation Yrotation" if depth == 0 else "3 Zrotation Xrotation Yrotation"
        )
        lines.append(f"{pad}  CHANNELS {chans}")
        for child in children.get(name, []):
            joint(child, depth + 1)
        if name not in children:
            lines.append(f"{pad}  End Site")
            lines.append(f"{pad}  {{")
            lines.append(f"{pad}    OFFSET 0.0 -10.0 0.0")
            lines.append(f"{pad}  }}")
        lines.append(f"{pad}}}")

    joint("Hips", 0)
    rng = np.random.default_rng(seed)
    t = np.linspace(0, 1, frames)[:, None]
    amp = rng.uniform(10, 60, size=(1, 3 * len(JOINTS)))
    phase = rng.uniform(0, 6, size=(1, 3 * len(JOINTS)))
    angles = amp * np.sin(2 * np.pi * t + phase)
    order = [name for name, _, _ in JOINTS]
    seq = []

    def walk(name):
        seq.append(name)
        for child in children.get(name, []):
            walk(child)

    walk("Hips")
    lines += ["MOTION", f"Frames: {frames}", "Frame Time: 0.0333333"]
    for f in range(frames):
        row = [0.0, 90.0, 0.0]
        for name in seq:
            i = order.index(name)
            row += angles[f, 3 * i : 3 * i + 3].tolist()
        lines.append(" ".join(f"{v:.5f}" for v in row))
    path.write_text("\n".join(lines) + "\n")
    return path
