# SPDX-License-Identifier: GPL-3.0-or-later
"""The cross-validated fit report of bones (:mod:`...limits.fitting.cross_validation`): per bone and
model, the held-out recall against the volume, as text for the panel, the CLI and the text
block *Joint Limits Fit Report*."""

import json
import math

from ...limits.body.envelope import SOLVER_ERROR_DEGREES
from ...limits.fitting.cross_validation import VOLUME_PRICE
from ...limits.fitting.tradeoff_picture import COLUMNS, tradeoff_picture

TEXT_NAME = "Joint Limits Fit Report"
PICTURE_NAME = "JL Fit Trade-off"


def read_report(settings):
    """The bone's stored calibration summary (a dict), or ``None`` (fixed padding, or none)."""
    try:
        report = json.loads(settings.fit_report) if settings.fit_report else None
    except ValueError:
        return None
    return report if isinstance(report, dict) and report.get("candidates") else None


def mirrored_line(pose_bone):
    """ "Also learned from ..." when the bone's last fit used its mirror bone's samples, else ""."""
    settings = pose_bone.joint_limit
    try:
        mirrored = json.loads(settings.fit_report).get("mirrored") if settings.fit_report else None
    except (ValueError, AttributeError):
        return ""
    if not isinstance(mirrored, dict):
        return ""
    partner, count = mirrored.get("partner"), mirrored.get("samples")
    if not isinstance(partner, str) or not isinstance(count, int):
        return ""
    whose = "its own" if partner == pose_bone.name else f"{partner}'s"
    return f"Also learned from {count} of {whose} samples, mirrored"


def human_line(pose_bone):
    """What an Auto fit on a human joint joined (:func:`.fit.fit_pose_bone`), or ""."""
    try:
        human = json.loads(pose_bone.joint_limit.fit_report).get("human") if pose_bone.joint_limit.fit_report else None
    except (ValueError, AttributeError):
        return ""
    if not isinstance(human, dict):
        return ""
    left_out = human.get("left_out") or 0
    beyond = f"; {left_out} more than {SOLVER_ERROR_DEGREES:g} degrees beyond a body left out" if left_out else ""
    return (
        f"Human joint {human.get('joint')}: {human.get('own')} samples of yours with the human envelope's "
        f"{human.get('envelope')}, as a reach cone{beyond}"
    )


def _label(entry):
    mode = entry.get("mode") or ""
    return entry["kind"] + (f" {mode.lower().replace('_', '-')}" if mode else "")


def _recall(value):
    """A held-out recall as a percentage, or why there is none (nothing was held out: one sample)."""
    return f"{value:.1%}" if math.isfinite(value) else "unmeasured"


def chosen_line(report):
    """One line: the chosen model, its padding, held-out recall and volume."""
    best = report["candidates"][report["chosen"]]
    return (
        f"{_label(best)}, padding {best['padding']:.3f} rad: held-out recall {_recall(best['recall'])} "
        f"(target {report['target']:.0%}), volume {best['volume']:.2%}"
    )


def report_lines(name, report):
    """Lines of one bone's report: the folds, then one row per candidate model (``*`` chosen,
    ``-`` missed the target)."""
    how = "clips" if report["by_clip"] else "time blocks of one clip"
    lines = [f"{name}: {report['folds']} folds by {how}; target recall {report['target']:.0%}"]
    if not any(math.isfinite(e.get("recall", math.nan)) for e in report["candidates"]):
        lines.append("  (too few samples to hold any out: recall is unmeasured)")
    lines.append(f"  {'model':<26} {'padding':>8} {'recall':>10} {'volume':>8}")
    for i, entry in enumerate(report["candidates"]):
        mark = "*" if i == report["chosen"] else (" " if entry["met"] else "-")
        if entry.get("error"):
            lines.append(f"{mark} {_label(entry):<26} {entry['error']}")
            continue
        lines.append(
            f"{mark} {_label(entry):<26} {entry['padding']:>8.3f} {_recall(entry['recall']):>10} {entry['volume']:>8.2%}"
        )
    return lines


def rig_report_text(pose_bones):
    """The report of every bone of ``pose_bones`` that has one ("" when none has)."""
    out = []
    for pb in pose_bones:
        report = read_report(pb.joint_limit)
        mirrored, human = mirrored_line(pb), human_line(pb)
        if report is not None:
            out += report_lines(pb.name, report) + ([f"  {mirrored}"] if mirrored else []) + [""]
        elif human:
            out += [f"{pb.name}: {human}"] + ([f"  {mirrored}"] if mirrored else []) + [""]
    if not out:
        return ""
    head = [
        "Cross-validated fit: each model fitted without a fold of the samples, tested on it.",
        "recall: share of a held-out clip inside (mean over clips); volume: share of all rotations accepted.",
        "Each model at the padding that trades recall for volume best (recall up to the target counts;",
        f"1% more volume must buy {VOLUME_PRICE:g}% more recall); * chosen (the best trade), - missed the target.",
        f"The image '{PICTURE_NAME}' draws it: a panel per bone below, in rows of {COLUMNS}; in each,",
        "a dot per model at its volume (across, log scale, 0.01% to 100%) and recall (up, log scale",
        "of the share missed: 50% missed at the bottom, 0.1% at the top), dim pixels the other paddings",
        "it tried, the dashed line the target, the chosen model ringed. Colours: Euler box red, box",
        "orange, oriented box yellow, ellipsoid green, k-DOP blue.",
        "",
    ]
    return "\n".join(head + out).rstrip() + "\n"


def write_report_text(pose_bones):
    """Fill the text block :data:`TEXT_NAME` with :func:`rig_report_text` and draw the image
    :data:`PICTURE_NAME` (:func:`...limits.fitting.tradeoff_picture.tradeoff_picture`, the bones with a
    report in the same order); returns the text block (or None when no bone has a report)."""
    import bpy

    from .texture import new_image

    text = rig_report_text(pose_bones)
    if not text:
        return None
    block = bpy.data.texts.get(TEXT_NAME) or bpy.data.texts.new(TEXT_NAME)
    block.clear()
    block.write(text)
    reports = [r for r in (read_report(pb.joint_limit) for pb in pose_bones) if r is not None]
    image = new_image(PICTURE_NAME, tradeoff_picture(reports)[::-1], float_buffer=False, data=False)
    image.pack()
    image.use_fake_user = True  # nothing else uses it: keep it through save/reload
    return block
