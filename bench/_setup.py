# SPDX-License-Identifier: GPL-3.0-or-later
"""Shared start-up for the benchmark scripts: one thread, Blender with the add-on loaded."""

import os
import sys
from pathlib import Path

for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(var, "1")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tools"))

import blender_session  # noqa: E402


def addon():
    return blender_session.load_extension()
