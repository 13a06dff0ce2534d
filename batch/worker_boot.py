# SPDX-License-Identifier: GPL-3.0-or-later
"""Run by each spawned worker process before its first clip (``runpy.run_path``; importing
this module does nothing): start Blender as a Python module and enable the add-on under the
parent's module name, so the parent's tasks (functions of the add-on) can be unpickled."""

import sys

RUN_NAME = "__joint_limits_worker__"


def boot(module, directory):
    """Enable extension ``module`` (``bl_ext.<repo>.<id>``) whose repository folder is
    ``directory``, unless it is already loaded."""
    if module in sys.modules:
        return
    import bpy  # noqa: I001 - bpy first: it puts addon_utils on sys.path
    import addon_utils

    repo_module = module.split(".")[1]
    repos = bpy.context.preferences.extensions.repos
    repo = next((r for r in repos if r.module == repo_module), None)
    if repo is None:
        repos.new(name=repo_module, module=repo_module, custom_directory=directory, source="USER")
    elif repo.directory != directory:
        repo.use_custom_directory = True
        repo.custom_directory = directory

    def fail(err):
        raise err

    addon_utils.enable(module, default_set=False, handle_error=fail)


if __name__ == RUN_NAME:
    boot(MODULE, DIRECTORY)  # noqa: F821 - given by the parent through runpy's init_globals
