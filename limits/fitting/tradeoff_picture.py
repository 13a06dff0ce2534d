# SPDX-License-Identifier: GPL-3.0-or-later
"""A picture of the cross-validated fit's trade-off (issue 13): per bone, every model tried as a
dot at its best padding's volume (across) and held-out recall (up), the other paddings it tried
as dim pixels (its trade-off curve), the target recall as a dashed line and the chosen model
ringed. Pure numpy: an RGBA array the rig side turns into an image; the text
report (:mod:`...rig.tasks.fit_report`) names the bones and models in the same order.

Each bone has a panel; panels fill rows of :data:`COLUMNS`, in the order the bones are given.
In a panel, volume runs on a log scale from :data:`VOLUME_RANGE` (0.01% to 100% of all
rotations) left to right, and recall up on a log scale of what it misses, from 50% missed at the
bottom to 0.1% at the top (:data:`MISS_RANGE`: recalls near 100% are the ones that differ); a
value beyond the range sits on the edge. Model kinds keep their colour in every panel
(:data:`KIND_COLOURS`)."""

import numpy as np

PANEL = (120, 160)  # (height, width) in pixels
COLUMNS = 4
MARGIN = 8
VOLUME_RANGE = (1e-4, 1.0)
MISS_RANGE = (0.5, 1e-3)  # (bottom, top): the share of held-out samples outside
BACKGROUND = (0.12, 0.12, 0.12)
FRAME = (0.45, 0.45, 0.45)
TARGET = (0.9, 0.9, 0.9)
#: Colour of each model kind (the ``auto`` candidates), and of any other kind.
KIND_COLOURS = {
    "euler_box": (0.9, 0.3, 0.3),
    "box": (0.95, 0.6, 0.2),
    "oriented_box": (0.95, 0.9, 0.3),
    "ellipsoid": (0.35, 0.8, 0.35),
    "kdop": (0.3, 0.6, 0.95),
}
OTHER = (0.8, 0.5, 0.9)


def _to_pixel(volume, recall, height, width):
    """``(row, column)`` of a candidate in a panel of ``height`` x ``width`` (row 0 at the top)."""
    lo, hi = np.log10(VOLUME_RANGE)
    x = (np.log10(np.clip(volume, *VOLUME_RANGE)) - lo) / (hi - lo)
    bottom, top = np.log10(MISS_RANGE)
    miss = np.clip(1.0 - np.asarray(recall, dtype=float), MISS_RANGE[1], MISS_RANGE[0])
    y = (np.log10(miss) - bottom) / (top - bottom)
    inner_w, inner_h = width - 2 * MARGIN, height - 2 * MARGIN
    return int(round(MARGIN + (1.0 - y) * inner_h)), int(round(MARGIN + x * inner_w))


def _square(panel, row, col, radius, colour):
    h, w, _ = panel.shape
    panel[max(row - radius, 0) : min(row + radius + 1, h), max(col - radius, 0) : min(col + radius + 1, w), :3] = colour


def panel_picture(report, height=PANEL[0], width=PANEL[1]):
    """``(height, width, 4)`` RGBA of one bone's calibration summary (the dict of
    :meth:`.cross_validation.Calibration.summary`)."""
    panel = np.ones((height, width, 4))
    panel[..., :3] = BACKGROUND
    top, left, bottom, right = MARGIN, MARGIN, height - MARGIN, width - MARGIN
    panel[top, left:right, :3] = FRAME
    panel[bottom, left:right, :3] = FRAME
    panel[top:bottom, left, :3] = FRAME
    panel[top:bottom, right - 1, :3] = FRAME
    target_row, _ = _to_pixel(1.0, report["target"], height, width)
    dashes = np.arange(left, right)
    panel[target_row, dashes[(dashes // 4) % 2 == 0], :3] = TARGET
    chosen = report["chosen"]
    order = [i for i in range(len(report["candidates"])) if i != chosen] + [chosen]  # the chosen on top
    for entry in report["candidates"]:  # each padding tried, dimmed, under the chosen points
        for _, recall, volume in entry.get("curve", ()):
            if np.isfinite(recall):
                row, col = _to_pixel(volume, recall, height, width)
                _square(panel, row, col, 0, 0.6 * np.asarray(KIND_COLOURS.get(entry["kind"], OTHER)))
    for i in order:
        entry = report["candidates"][i]
        if entry.get("error") or not (np.isfinite(entry["recall"]) and np.isfinite(entry["volume"])):
            continue  # (nothing held out to measure it with: one sample, one clip)
        row, col = _to_pixel(entry["volume"], entry["recall"], height, width)
        if i == chosen:
            _square(panel, row, col, 4, (1.0, 1.0, 1.0))
            _square(panel, row, col, 3, BACKGROUND)
        _square(panel, row, col, 2, KIND_COLOURS.get(entry["kind"], OTHER))
    return panel


def tradeoff_picture(reports, columns=COLUMNS):
    """``(H, W, 4)`` RGBA, row 0 at the top: :func:`panel_picture` of each report in
    ``reports`` (a list of calibration summaries), in rows of ``columns`` panels."""
    if not reports:
        raise ValueError("no cross-validated fit to draw")
    rows = -(-len(reports) // columns)
    height, width = PANEL
    out = np.ones((rows * height, min(columns, len(reports)) * width, 4))
    out[..., :3] = 0.0
    for i, report in enumerate(reports):
        r, c = divmod(i, columns)
        out[r * height : (r + 1) * height, c * width : (c + 1) * width] = panel_picture(report)
    return out
