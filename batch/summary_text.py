# SPDX-License-Identifier: GPL-3.0-or-later
"""The batch summary as Markdown, for a person (``summary.json`` holds the same for programs)."""


def _worst(w):
    return f"{w['degrees']:.1f}° ({w['bone']}, frame {w['frame']})" if w else "-"


def _mirrored(bone):
    m = bone.get("mirrored_from")
    if not m:
        return "-"
    return f"{'itself, mirrored' if m['bone'] == bone['bone'] else m['bone']} ({m['samples']} samples)"


def summary_markdown(s, picture=None, no_picture=None):
    """Markdown text of a summary dict from :func:`.runner.run_batch`, showing the file
    ``picture`` (beside it) or saying why there is none (``no_picture``)."""
    out = [f"# Joint Limits batch {s['job']}", ""]
    failed = [c for c in s["clips"] if c["status"] == "failed"]
    if s["job"] == "fit":
        fitted = [b for b in s["bones"] if "model" in b]
        out += [
            f"Fitted {len(fitted)} bones (model `{s['model']}`) from {s['clips_done']} of {s['clips_total']} clips "
            f"({s['frames']} frames) into `{s['limits']}`; {s['clips_failed']} clips failed.",
            "",
            "Samples are a bone's own; *also learned from* names the mirror bone whose samples, seen in the "
            "mirror, it learned from too (`--sides-apart` fits each side alone).",
            "",
            "| bone | samples | also learned from | limit |",
            "| --- | ---: | --- | --- |",
        ]
        out += [
            f"| {b['bone']} | {b['samples']} | {_mirrored(b)} | {b.get('model') or 'none: ' + b['skipped']} |" for b in s["bones"]
        ]
        rig = s.get("rig")
        if rig:
            out += [
                "",
                f"## Onto the rig {rig['file']}",
                "",
                f"Limits stored on {len(rig['bones'])} bones of the armature `{rig['armature']}` (the file was saved); "
                f"{len(rig['refitted_in_rig_space'])} refitted in the rig's bone space (their rest orientation differs "
                f"from the clips'). Rig bones without a clip bone: {', '.join(rig['rig_bones_unmatched']) or 'none'}.",
                "",
                "| rig bone | clip bone |",
                "| --- | --- |",
            ]
            out += [f"| {r} | {c} |" for r, c in sorted(rig["bones"].items())]
            out += [f"| {r} | not limited: {why} |" for r, why in sorted(rig["not_limited"].items())]
    else:
        verb = "Checked" if s["job"] == "check" else "Cleaned"
        out += [
            f"{verb} {s['clips_done']} of {s['clips_total']} clips ({s['frames']} frames) against `{s['limits']}`; "
            f"{s['clips_failed']} failed.",
            "",
            f"- clips with a bone out of its limit: {s['clips_out']} of {s['clips_done']}",
            f"- frames with a bone out of its limit: {s['frames_out']} of {s['frames']}",
            f"- worst violation: {_worst(s['worst'])}" + (f" in {s['worst']['clip']}" if s["worst"] else ""),
            "",
            "Violations are degrees from a bone's rotation to the nearest rotation its limit allows. Frames are "
            "numbered as Blender keys them: a BVH clip's from 1, as its importer does; a .blend or FBX clip's "
            "as its action's."
            + (" Cleaned clips (in `clips/`) rewrite only the rotation channels of those frames." if s["job"] == "clean" else ""),
            "",
        ]
        if picture:
            out += [f"![Left: bones by worst violation. Right: clips by share of frames out.]({picture})", ""]
        elif no_picture:
            out += [f"(No picture: {no_picture}.)", ""]
        out += ["## Clips, worst first", "", "| clip | frames out | bones out | worst |", "| --- | ---: | ---: | --- |"]
        ok = sorted(
            (c for c in s["clips"] if c["status"] == "ok"), key=lambda c: (-(c["worst"] or {"degrees": 0})["degrees"], c["clip"])
        )
        out += [f"| {c['clip']} | {c['frames_out']}/{c['frames']} | {c['bones_out']} | {_worst(c['worst'])} |" for c in ok]
        out += ["", "## Bones, worst first", "", "| bone | clips out | frames out | worst |", "| --- | ---: | ---: | --- |"]
        for b in s["bones"]:
            w = b["worst"]
            where = f"{w['degrees']:.1f}° ({w['clip']}, frame {w['frame']})" if w else "-"
            out.append(f"| {b['bone']} | {b['clips_out']} | {b['frames_out']} | {where} |")
    if failed:
        out += ["", "## Failed clips", "", "| clip | why |", "| --- | --- |"]
        out += [f"| {c['clip']} | {c['error'].replace('|', '/')} |" for c in failed]
    return "\n".join(out) + "\n"
