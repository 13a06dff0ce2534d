# SPDX-License-Identifier: GPL-3.0-or-later
"""The demo's one-page summary, ``summary.html`` beside ``report.txt``: what the demo did, its
numbers, and its pictures with captions. Plain HTML (any browser opens it), no bpy."""

from html import escape

_STYLE = """
body { font-family: sans-serif; max-width: 1100px; margin: 2em auto; line-height: 1.45; color: #222; }
table { border-collapse: collapse; margin: 0.5em 0 1.5em; }
td, th { border: 1px solid #ccc; padding: 0.25em 0.7em; text-align: left; }
td.n { text-align: right; font-variant-numeric: tabular-nums; }
figure { margin: 1.5em 0 2.5em; }
figure img { max-width: 100%; border: 1px solid #ddd; }
figcaption { margin-top: 0.4em; }
.note { background: #fff3cd; border: 1px solid #e0c36a; padding: 0.6em 1em; }
"""


def summary_html(summary, pictures, note, baked_name, blend_name):
    """The page as a string.

    ``summary`` holds the demo's numbers (:func:`demo.run_demo`'s dict), ``pictures`` is
    ``[(file name, title, caption)]``, ``note`` why there are no pictures (or ``None``)."""
    s = summary
    rows = [
        ("bones with a fitted limit", f"{s['bones_fitted']}"),
        ("frames of training motion (range of motion) they were fitted to", f"{s['rom_frames']}"),
        ("frames of the impossible action", f"{s['impossible_frames']}"),
        ("bones out of their limit in the impossible action, as keyed", f"{s['bones_out_before']}"),
        ("worst violation as keyed", f"{s['worst_before_deg']:.1f}°"),
        ("worst violation left while playing it with live enforcement", f"{s['worst_live_deg']:.3f}°"),
        (f"bones out of their limit after the bake (action {baked_name!r})", f"{s['bones_out_after_bake']}"),
        ("worst violation after the bake", f"{s['worst_after_bake_deg']:.3f}°"),
    ]
    table = "\n".join(f"<tr><td>{escape(k)}</td><td class='n'>{escape(v)}</td></tr>" for k, v in rows)
    if pictures:
        figures = "\n".join(
            f"<figure><h3>{escape(title)}</h3><a href='{escape(name)}'><img src='{escape(name)}' alt='{escape(title)}'></a>"
            f"<figcaption><code>{escape(name)}</code>: {escape(caption)}</figcaption></figure>"
            for name, title, caption in pictures
        )
    else:
        figures = f"<p class='note'>{escape(note or 'no pictures')}</p>"
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>Joint Limits demo: summary</title><style>{_STYLE}</style></head>
<body>
<h1>Joint Limits demo: summary</h1>
<p>Joint Limits learns how far each joint of a rig may rotate from motion the rig already does,
then keeps every pose inside those limits. This demo shows the whole job on a generated humanoid,
with no outside files:</p>
<ol>
<li>It builds a humanoid rig and keys a generated <b>range-of-motion</b> action ({s["rom_frames"]} frames):
the motion the limits are learned from (the training poses).</li>
<li>It fits a <b>limit</b> to every bone from that motion: the set of rotations the bone is allowed.</li>
<li>It keys a second, deliberately <b>impossible</b> action ({s["impossible_frames"]} frames) that bends bones
further than anything in the training motion.</li>
<li>It plays the impossible action with <b>live enforcement</b> on (every pose pulled back into its limit
while playing), and <b>bakes</b> it into a clean action, {escape(repr(baked_name))}.</li>
<li>It measures, per bone and frame, the <b>violation</b>: how many degrees the bone's rotation is from the
nearest rotation its limit allows (0 inside the limit).</li>
</ol>
<h2>Numbers</h2>
<table>{table}</table>
<h2>Pictures</h2>
{figures}
<h2>Files</h2>
<ul>
<li><code>report.txt</code>: per bone, the frames out of limit and the worst violation, before and after the bake.</li>
<li><code>{escape(blend_name)}</code>: open it in Blender (with the extension installed): the rig, its limits,
and the actions RangeOfMotion (assigned), Impossible and {escape(baked_name)}.</li>
</ul>
<p>The demo took {s["seconds"]:.1f} s.</p>
</body></html>
"""


def write_summary(path, summary, pictures, note, baked_name, blend_name):
    """Write :func:`summary_html` to ``path``."""
    path.write_text(summary_html(summary, pictures, note, baked_name, blend_name), encoding="utf-8")
