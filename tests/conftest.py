# SPDX-License-Identifier: GPL-3.0-or-later
"""Pytest set-up. Pure-maths tests import ``limits`` directly; Blender tests use the ``addon``
fixture, which loads the checkout as the extension ``bl_ext.dev.joint_limits`` in ``bpy``."""

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tools"))
sys.path.insert(0, str(ROOT / "tests"))

import blender_session  # noqa: E402

blender_session.isolate_user_folders()


@pytest.fixture(scope="session")
def addon():
    """The enabled extension module (``bl_ext.dev.joint_limits``), submodules imported."""
    return blender_session.load_extension(ROOT)


@pytest.fixture
def clean_file(addon):
    """An empty Blender file with the extension still enabled."""
    import bpy

    bpy.ops.wm.read_homefile(use_empty=True)
    addon.enforcement.reset()
    yield bpy
    bpy.context.scene.joint_limits.enforce_live = False
