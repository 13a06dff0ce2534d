# SPDX-License-Identifier: GPL-3.0-or-later
"""Headless use: ``blender -b rig.blend -c joint_limits fit|bake|report|demo ...``.

The callback is a plain function (:func:`main`) that tests call directly, because the PyPI
``bpy`` module cannot dispatch ``-c``. It returns 0 on success and prints a message and
returns non-zero on bad input.
"""

import argparse
import sys

import bpy

_handle = []


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        raise ValueError(message)


def _parser():
    p = _Parser(prog="blender -b FILE.blend -c joint_limits", description="Fit, bake and report joint limits headless.")
    sub = p.add_subparsers(dest="command", required=True)

    def common(sp):
        sp.add_argument("--object", help="armature object (default: the only/active armature)")
        sp.add_argument("--bones", nargs="*", help="bone names (default: all bones)")

    sp = sub.add_parser("fit", help="sample actions into rotation clouds and fit limits")
    common(sp)
    sp.add_argument("--actions", nargs="*", help="actions to sample (default: the object's action)")
    sp.add_argument("--model", default=None, help="limit model kind")
    sp.add_argument("--mode", choices=("FULL", "SWING_TWIST"), default=None)
    sp.add_argument("--save", help="write the .blend here (default: overwrite the open file)")

    def frame_range(sp, action_help):
        common(sp)
        sp.add_argument("--action", help=action_help)
        sp.add_argument("--start", type=int)
        sp.add_argument("--end", type=int)

    sp = sub.add_parser("bake", help="bake the action with limits applied into a new action")
    frame_range(sp, "action to bake (default: the object's action)")
    sp.add_argument("--save", help="write the .blend here (default: overwrite the open file)")

    sp = sub.add_parser("report", help="print frames out of limit and the worst violation per bone")
    frame_range(sp, "action to check (default: the object's action)")
    sp.add_argument("--output", help="also write the report text here")

    sp = sub.add_parser("demo", help="build the embedded demo rig, fit, enforce, bake and report")
    sp.add_argument("output", nargs="?", default="out", help="output folder (default: ./out)")
    sp.add_argument("--frames", type=int, default=600, help="frames of generated range of motion")
    return p


def main(argv):
    """Entry point of ``-c joint_limits``; returns an exit code."""
    from . import jobs

    try:
        args = _parser().parse_args(list(argv))
        return getattr(jobs, f"cli_{args.command}")(args)
    except (ValueError, LookupError, OSError, RuntimeError, MemoryError) as err:
        print(f"joint_limits: error: {err}", file=sys.stderr)
        return 2


def register():
    if hasattr(bpy.utils, "register_cli_command"):
        _handle.append(bpy.utils.register_cli_command("joint_limits", main))


def unregister():
    while _handle:
        bpy.utils.unregister_cli_command(_handle.pop())
