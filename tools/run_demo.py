# SPDX-License-Identifier: GPL-3.0-or-later
"""``./dev demo [OUTPUT]``: the embedded default, through the add-on's own CLI command."""

import sys

import blender_session

if __name__ == "__main__":
    addon = blender_session.load_extension()
    sys.exit(addon.cli.main(["demo", *sys.argv[1:]]))
