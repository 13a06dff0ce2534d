# SPDX-License-Identifier: GPL-3.0-or-later
"""``batch check|clean --pictures``: one picture of the library beside ``summary.md``.

Drawn with matplotlib, a development dependency (imported here, inside the function): where it
is missing the batch writes its summaries without the picture and says so in ``summary.md``.
The PNG carries no version or date, so the same summary gives the same bytes.
"""

import io

PICTURE = "summary.png"
#: Bones and clips shown at most (the worst ones).
SHOWN = 25


def draw_summary(summary):
    """PNG bytes for a check or clean summary, or ``(None, why not)``: left, each bone's worst
    violation (degrees) over the library with the clips it leaves its limit in; right, each
    clip's share of frames with a bone out of its limit."""
    try:
        from matplotlib.figure import Figure
    except ImportError:
        return None, "matplotlib is not installed in this Python (python -m pip install matplotlib)"
    bones = [b for b in summary["bones"] if b["worst"]][:SHOWN]
    clips = sorted(
        (c for c in summary["clips"] if c["status"] == "ok" and c["frames"]),
        key=lambda c: (-c["frames_out"] / c["frames"], c["clip"]),
    )[:SHOWN]
    rows = max(len(bones), len(clips), 3)
    fig = Figure(figsize=(11, 1.5 + 0.28 * rows), dpi=90)
    left, right = fig.subplots(1, 2)
    if bones:
        y = range(len(bones))[::-1]
        left.barh(list(y), [b["worst"]["degrees"] for b in bones], color="#d62728")
        left.set_yticks(list(y), [f"{b['bone']} ({b['clips_out']} clip{'s' * (b['clips_out'] != 1)})" for b in bones], fontsize=8)
    else:
        left.text(0.5, 0.5, "no bone out of its limit", ha="center", transform=left.transAxes)
        left.set_yticks([])
    left.set_xlabel("worst violation (degrees to the nearest allowed rotation)")
    left.set_title("Bones, worst first", fontsize=10)
    if clips:
        y = range(len(clips))[::-1]
        right.barh(list(y), [100.0 * c["frames_out"] / c["frames"] for c in clips], color="#1f77b4")
        right.set_yticks(list(y), [c["clip"] for c in clips], fontsize=8)
        right.set_xlim(0, 100)
    else:
        right.set_yticks([])
    right.set_xlabel("frames with a bone out of its limit (%)")
    right.set_title("Clips, most frames out first", fontsize=10)
    fig.tight_layout()
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", metadata={"Software": None})
    return buffer.getvalue(), None
