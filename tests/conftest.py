# SPDX-License-Identifier: GPL-3.0-or-later
"""Pytest set-up. Pure-maths tests import ``limits`` directly; Blender tests use the ``addon``
fixture, which loads the checkout as the extension ``bl_ext.dev.joint_limits`` in ``bpy``."""

import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tools"))
sys.path.insert(0, str(ROOT / "tests"))

import blender_session  # noqa: E402

blender_session.isolate_user_folders()

_EXIT = pytest.StashKey[int]()


@pytest.fixture(scope="session")
def addon():
    """The enabled extension module (``bl_ext.dev.joint_limits``), submodules imported."""
    return blender_session.load_extension(ROOT)


@pytest.fixture
def clean_file(addon):
    """An empty Blender file with the extension still enabled."""
    import bpy

    bpy.ops.wm.read_homefile(use_empty=True)
    addon.rig.live.reset()
    yield bpy
    bpy.context.scene.joint_limits.enforce_live = False


def pytest_sessionfinish(session, exitstatus):
    session.config.stash[_EXIT] = int(exitstatus)


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config):
    """bpy 4.2 as a Python module crashes while exiting once a property with an ``update``
    callback was registered (a Blender bug of the module build; 5.0 exits cleanly). The
    compatibility run ends the process itself, after pytest has reported, with pytest's status."""
    bpy = sys.modules.get("bpy")
    if bpy is not None and bpy.app.version < (5, 0, 0) and _EXIT in config.stash:
        stats = getattr(config.pluginmanager.get_plugin("terminalreporter"), "stats", {})
        counts = ", ".join(f"{len(stats[k])} {k}" for k in ("passed", "failed", "error", "skipped") if stats.get(k))
        print(
            f"bpy {bpy.app.version_string}: {counts}; exit status {config.stash[_EXIT]} (the process ends itself, see conftest.py)"
        )
        for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
            stream.flush()
        blender_session.clean_up()
        os._exit(config.stash[_EXIT])
