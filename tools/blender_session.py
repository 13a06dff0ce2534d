# SPDX-License-Identifier: GPL-3.0-or-later
"""Start Blender-as-a-module with the checkout loaded the way Blender loads an extension.

Used by the tests, the benchmarks and ``./dev demo``. Blender's user folders and the caches of
Blender, Mesa and the libraries it loads go to one temporary folder (set before ``import bpy``),
removed when the process ends, so a run leaves nothing in the home or temporary directory.
"""

import atexit
import importlib
import os
import pkgutil
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EXTENSION_ID = "joint_limits"
REPO_MODULE = "dev"
MODULE = f"bl_ext.{REPO_MODULE}.{EXTENSION_ID}"


#: Folders this process made, removed at exit (:func:`clean_up`).
_made = []


def isolate_user_folders():
    """Point Blender's user resources and the caches (``XDG_CACHE_HOME``: Blender's shader cache
    and thumbnails, Mesa's shader cache; matplotlib's, for the demo's pictures) at a fresh
    temporary folder (before ``import bpy``)."""
    if "bpy" not in sys.modules and "BLENDER_USER_RESOURCES" not in os.environ:
        os.environ["BLENDER_USER_RESOURCES"] = _temporary("joint_limits_user_")
        os.environ["XDG_CACHE_HOME"] = os.path.join(os.environ["BLENDER_USER_RESOURCES"], "cache")
        os.environ["MPLCONFIGDIR"] = os.path.join(os.environ["XDG_CACHE_HOME"], "matplotlib")
    return os.environ.get("BLENDER_USER_RESOURCES")


def _temporary(prefix):
    if not _made:  # registered before bpy is imported, so it runs after Blender's own exit
        atexit.register(clean_up)
    _made.append(tempfile.mkdtemp(prefix=prefix))
    return _made[-1]


def clean_up():
    """Remove the folders this process made (at exit; call it before ending the process by
    ``os._exit``, which skips the exit handlers)."""
    while _made:
        shutil.rmtree(_made.pop(), ignore_errors=True)


def load_extension(root=ROOT):
    """Register a local extension repository whose ``joint_limits`` entry links to ``root``,
    enable ``bl_ext.dev.joint_limits`` and return the module, with every submodule imported so
    callers can reach them as attributes (``addon.rig.io.actions``)."""
    isolate_user_folders()
    import bpy  # noqa: I001 - bpy first: it puts addon_utils on sys.path
    import addon_utils

    if MODULE in sys.modules and MODULE in bpy.context.preferences.addons:
        return sys.modules[MODULE]
    parent = Path(_temporary("joint_limits_repo_"))
    (parent / EXTENSION_ID).symlink_to(Path(root).resolve(), target_is_directory=True)
    repos = bpy.context.preferences.extensions.repos
    repo = repos.get(REPO_MODULE) if hasattr(repos, "get") else None
    if repo is None:
        repo = repos.new(name=REPO_MODULE, module=REPO_MODULE, custom_directory=str(parent), source="USER")
    else:
        repo.custom_directory = str(parent)
    addon_utils.enable(MODULE, default_set=True, handle_error=_raise)
    module = sys.modules[MODULE]
    for info in pkgutil.walk_packages(module.__path__, MODULE + "."):
        importlib.import_module(info.name)
    return module


def _raise(err):
    raise err
