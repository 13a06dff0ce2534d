# SPDX-License-Identifier: GPL-3.0-or-later
"""Headless use: ``blender -b rig.blend -c joint_limits fit|bake|report|export|demo ...``.

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
    from ..limits.registry import model_kinds

    kinds = model_kinds()
    p = _Parser(
        prog="blender -b [FILE.blend] -c joint_limits",
        description="Fit, bake and report joint limits headless. fit, bake and report work on the open .blend file; demo needs none.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="model kinds (fit --model):\n" + "\n".join(f"  {kind:<20} {description}" for kind, _, description in kinds),
    )
    sub = p.add_subparsers(dest="command", required=True, metavar="{fit,bake,report,batch,export,demo}")

    def command(name, summary, description):
        return sub.add_parser(name, help=summary, description=description)

    def common(sp):
        sp.add_argument("--object", help="armature object (default: the only or active armature)")
        sp.add_argument("--bones", nargs="+", metavar="BONE", help="bone names (default: all bones)")

    sp = command(
        "fit",
        "sample actions into rotation clouds and fit limits",
        "Sample the named actions (default: the armature's action) into each bone's rotation cloud, fit each "
        "bone's limit with its settings (or --model / --mode), and save the file.",
    )
    common(sp)
    sp.add_argument("--actions", nargs="+", metavar="ACTION", help="actions to sample (default: the object's action)")
    sp.add_argument(
        "--model",
        choices=[kind for kind, _, _ in kinds],
        metavar="KIND",
        help=f"limit model kind for every fitted bone: {', '.join(kind for kind, _, _ in kinds)} (described by --help without a command; default: each bone's own setting)",
    )
    sp.add_argument(
        "--mode",
        choices=("FULL", "SWING_TWIST"),
        help="fit one shape to the whole rotation, or separate shapes to swing and twist (default: each bone's own setting)",
    )
    sp.add_argument(
        "--limb",
        nargs="+",
        metavar="MIDDLE_BONE",
        help="also fit the range of motion of each limb named by its middle bone (forearm, shin; its parent is the "
        "limb root) from the two bones' samples (Mukai's limb range; sampled with the limb's bones added)",
    )
    sp.add_argument(
        "--preset",
        choices=("human",),
        help="fit from a preset instead of the actions: 'human' (a full range of motion, CMU 143_21) matched to the "
        "bones by name (Rigify, Mixamo, Unreal, CMU and other BVH names) and turned into each bone's own axes and "
        "rest pose; bones it does not match are listed and left alone",
    )
    sp.add_argument(
        "--add-data",
        action="store_true",
        help="with --preset: also sample the actions (--actions, default the object's action) and fit from both",
    )
    sp.add_argument("--save", metavar="PATH", help="write the .blend here (default: overwrite the open file)")

    def frame_range(sp, action_help):
        common(sp)
        sp.add_argument("--action", help=action_help)
        sp.add_argument("--start", type=int, metavar="FRAME", help="first frame (default: the action's first key)")
        sp.add_argument("--end", type=int, metavar="FRAME", help="last frame (default: the action's last key)")

    sp = command(
        "bake",
        "bake the action with limits applied into a new action",
        "Evaluate the action frame by frame (constraints and IK included), limit every limited bone and key the "
        "result into a new action '<action>_limited', then save the file.",
    )
    frame_range(sp, "action to bake (default: the object's action)")
    sp.add_argument("--save", metavar="PATH", help="write the .blend here (default: overwrite the open file)")

    sp = command(
        "report",
        "print frames out of limit and the worst violation per bone",
        "Evaluate the action and print, per limited bone, the frames out of its limit and the worst violation.",
    )
    frame_range(sp, "action to check (default: the object's action)")
    sp.add_argument("--output", metavar="PATH", help="also write the report text here")

    sp = command(
        "batch",
        "fit, check or clean a library of clips: BVH, .blend actions, FBX (no open .blend needed)",
        "Run one job over clips (BVH files, every action of .blend files or file.blend:Action, FBX files through "
        "Blender's importer; folders, glob patterns), in worker processes or on a Dask cluster: 'fit' pools the "
        "clips' rotations and writes a limit set (OUTPUT/limits.json; with --rig also onto a rig's armature); "
        "'check' writes a JSON report per clip (OUTPUT/reports/); 'clean' writes every clip limited (OUTPUT/clips/: "
        "same skeleton, channels and frame rate; only the rotation values of frames out of a limit change; .blend "
        "and FBX clips are written as .blend). Every job writes OUTPUT/summary.md and summary.json. Clips already "
        "done are skipped, so an interrupted batch resumes; a bad clip is reported and the batch goes on. .blend "
        "and FBX clips replace the open file.",
    )
    sp.add_argument("job", choices=("fit", "check", "clean"), help="what to do with each clip")
    sp.add_argument(
        "clips",
        nargs="+",
        metavar="CLIP",
        help="BVH, .blend (or file.blend:Action) and FBX files, folders (searched recursively) or glob patterns",
    )
    sp.add_argument("--output", required=True, metavar="DIR", help="folder for the outputs (made if missing)")
    sp.add_argument("--limits", metavar="FILE", help="limit set to check or clean against (a batch fit's limits.json)")
    sp.add_argument(
        "--preset",
        choices=("human",),
        help="check, clean: against a human body instead of a limit set: the human preset (clinical ranges of motion "
        "with the shapes real motion shows) on each clip's own skeleton; no fit needed",
    )
    sp.add_argument(
        "--model",
        default="auto",
        choices=[kind for kind, _, _ in kinds],
        metavar="KIND",
        help="limit model kind for batch fit (default: auto)",
    )
    sp.add_argument(
        "--sides-apart",
        action="store_true",
        help="fit: each side learns from its own samples only (default: left/right bones also learn from each other's, seen in the mirror)",
    )
    sp.add_argument(
        "--rig",
        metavar="RIG.blend",
        help="fit: also write the limits onto the matching bones of this file's armature and save it",
    )
    sp.add_argument(
        "--bone-map",
        metavar="FILE.json",
        help='fit --rig: {"clip bone": "rig bone", ...} for names automatic matching misses (case, separators, prefixes such as mixamorig:, Left/Right, .L/.R, _l/_r are matched already)',
    )
    sp.add_argument(
        "--pictures",
        action="store_true",
        help="check, clean: also draw OUTPUT/summary.png, shown in summary.md (needs matplotlib)",
    )
    sp.add_argument("--jobs", type=int, default=1, metavar="N", help="worker processes (default: 1, in this process)")
    sp.add_argument(
        "--scheduler",
        metavar="ADDRESS",
        help="run the clips on the Dask scheduler at ADDRESS (e.g. tcp://host:8786) instead of local processes; needs dask and distributed",
    )

    from ..limits.export.engine_export import ENGINES
    from ..limits.export.engine_limits import DEFAULT_BREAK_MARGIN_DEG, TARGET_SHARE

    sp = command(
        "export",
        "write the rig's limits for a game or physics engine (one file)",
        "Fit each sampled bone's engine limits (PhysX D6 cone and twist, Unreal Swing1/Swing2/Twist, Jolt "
        "SwingTwist cone and pyramid, Godot JointLimitationCone3D, USD Physics spherical joints as .usda, the VRM "
        "spring-bone limit draft, or Joint Limits JSON with every approximation and the learned limit) and write "
        "one file: per bone the engine's parameters in its units and axes, how faithful they are (share of the "
        "samples accepted, volume against the learned limit), the break margin and the rest frame.",
    )
    common(sp)
    sp.add_argument("--format", required=True, choices=list(ENGINES), help="engine: " + ", ".join(ENGINES))
    sp.add_argument("--output", required=True, metavar="FILE", help="file to write (.json, or .usda for usd)")
    sp.add_argument(
        "--target",
        type=float,
        default=TARGET_SHARE,
        help=f"share of the samples the learned limit accepts that each approximation accepts (default {TARGET_SHARE})",
    )
    sp.add_argument(
        "--break-margin",
        type=float,
        metavar="DEG",
        help=f"degrees beyond the limit before a joint breaks, for every bone (default: the model's, else {DEFAULT_BREAK_MARGIN_DEG:g})",
    )

    sp = command(
        "demo",
        "build the embedded demo rig, fit, enforce, bake and report",
        "Build the embedded humanoid and its generated range of motion (no .blend or other file needed), fit "
        "limits, enforce them live, bake an impossible action and write the report, pictures and .blend.",
    )
    sp.add_argument("output", nargs="?", default="out", help="output folder (default: ./out)")
    sp.add_argument("--frames", type=int, default=600, help="frames of generated range of motion (default: 600)")
    return p


def main(argv):
    """Entry point of ``-c joint_limits``; returns an exit code (``--help`` prints and returns 0)."""
    from . import jobs

    try:
        args = _parser().parse_args(list(argv))
        return getattr(jobs, f"cli_{args.command}")(args)
    except SystemExit as done:  # --help: argparse printed it and would end Blender
        return done.code if isinstance(done.code, int) else 0
    except (ValueError, LookupError, OSError, RuntimeError, MemoryError) as err:
        print(f"joint_limits: error: {err}", file=sys.stderr)
        return 2


def register():
    if hasattr(bpy.utils, "register_cli_command"):
        _handle.append(bpy.utils.register_cli_command("joint_limits", main))


def unregister():
    while _handle:
        bpy.utils.unregister_cli_command(_handle.pop())
