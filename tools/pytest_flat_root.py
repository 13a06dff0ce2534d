# SPDX-License-Identifier: GPL-3.0-or-later
"""Pytest plugin: collect the repository root as a plain directory, not a Python package.

The root is the extension, so it has an ``__init__.py``; pytest would import it as a package
named after the checkout's folder, which fails when that name is not an identifier (a clone
into ``joint-limits/``). The tests import the extension the way Blender does instead
(``tools/blender_session.py``).
"""

import pytest


def pytest_collect_directory(path, parent):
    if path == parent.config.rootpath:
        return pytest.Dir.from_parent(parent, path=path)
    return None
