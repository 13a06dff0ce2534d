# SPDX-License-Identifier: GPL-3.0-or-later
"""Shared start-up for the benchmark scripts: one thread, Blender with the add-on loaded."""

import os
import sys
import time
from pathlib import Path

for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(var, "1")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tools"))

import blender_session  # noqa: E402


def addon():
    return blender_session.load_extension()


def model_spec(spec):
    """``(kind, fit options)`` of a benchmark's model argument ``kind[:mode[:padding]]``
    (padding in radians; left out: the kind's own)."""
    kind, _, rest = spec.partition(":")
    mode, _, padding = rest.partition(":")
    options = {"mode": mode} if mode else {}
    if padding:
        options["padding"] = float(padding)
    return kind, options


def random_rig(addon, n_bones, frames, seed=0):
    """A fresh file with a rig of ``n_bones`` random bones (each parented to an earlier one)
    keyed with smooth random motion over ``frames`` frames, the scene's range: ``(object,
    rotations (F, n, 4))``."""
    import bpy
    import numpy as np

    bpy.ops.wm.read_homefile(use_empty=True)
    addon.rig.live.reset()
    q = addon.limits.geometry.quaternion
    data = bpy.data.armatures.new("Bench")
    obj = bpy.data.objects.new("Bench", data)
    bpy.context.scene.collection.objects.link(obj)
    bpy.context.view_layer.objects.active = obj
    bpy.ops.object.mode_set(mode="EDIT")
    rng = np.random.default_rng(seed)
    bones = []
    for i in range(n_bones):
        eb = data.edit_bones.new(f"b{i:02d}")
        parent = bones[rng.integers(len(bones))] if bones else None
        eb.head = parent.tail if parent else (0.0, 0.0, 0.0)
        eb.tail = np.array(eb.head) + rng.normal(size=3) * 0.2 + [0, 0, 0.3]
        eb.parent = parent
        bones.append(eb)
    bpy.ops.object.mode_set(mode="POSE")
    # smooth random motion: a random walk in scaled angle-axis per bone
    walk = np.cumsum(rng.normal(scale=0.05, size=(frames, n_bones, 3)), axis=0)
    walk = 0.9 * walk / np.maximum(1.0, np.abs(walk).max(axis=0) / 0.9)
    motion = q.quaternion_from_exp_map(walk)
    addon.rig.io.humanoid.key_rotations(obj, motion, "Random")
    bpy.context.scene.frame_start, bpy.context.scene.frame_end = 1, frames  # (what a play goes through)
    return obj, motion


def play(scene, frames, longest=None):
    """ms per frame_set over one pass of the action (``longest``, a list: the longest frame's ms
    is appended to it)."""
    t0 = start = time.perf_counter()
    worst = 0.0
    for f in range(1, frames + 1):
        scene.frame_set(f)
        if longest is not None:
            now = time.perf_counter()
            worst, start = max(worst, now - start), now
    if longest is not None:
        longest.append(1e3 * worst)
    return (time.perf_counter() - t0) / frames * 1e3
