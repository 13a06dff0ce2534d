# SPDX-License-Identifier: GPL-3.0-or-later
"""The demo's pictures, drawn with matplotlib (no bpy here).

matplotlib is a development dependency of the demo only (``requirements-dev.txt``): the
extension never imports it, and this module imports it inside its functions. Where it is
missing (the demo run from an installed extension, ``blender -c joint_limits demo``),
:func:`missing_reason` says so and the demo writes its report and summary without pictures.

Two kinds of picture:

- :func:`bone_sheet`: one bone. Left, the sphere of directions the bone may point in
  (:mod:`...limits.authoring.swing_map`'s equal-area disc, centred on the limit's reference direction),
  coloured by how much twist is allowed there, outlined in black, with the training poses,
  the impossible action's poses that leave the limit and where the bake put them on top.
  Right, that bone's violation over the frames of the impossible action (as keyed, after the
  bake, with live enforcement), and its twist on each frame against the twist allowed there.
- :func:`rig_sheet`: every bone. Top, the violation over frames of the worst bones and the
  largest violation left after the bake and with live enforcement; bottom, each bone's worst
  violation and frames out, before and after.
"""

import numpy as np

from ...limits.authoring.swing_map import (
    allowed_extent,
    allowed_twist,
    allowed_twists,
    disc_from_direction,
    ring_radius,
    sample_swing_map,
    swing_directions,
    twist_samples,
)

#: Colours: violation before (as keyed), after the bake, with live enforcement.
BEFORE = "#d62728"
AFTER = "#1f77b4"
LIVE = "#2ca02c"

#: The forbidden part of the sphere, the samples, the allowed region's outline.
FORBIDDEN = "#e4e4e4"
SAMPLES = "#202020"
OUTLINE = "black"

#: The allowed twists in the twist panel.
BAND = "#b9dfb9"

#: Twist angles tried per frame in the twist panel (2 degrees apart).
BAND_TWISTS = 180

#: Dots per inch of the PNG files.
DPI = 100


def missing_reason():
    """``None`` when the pictures can be drawn, else why not (and how to fix it)."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return (
            "pictures not drawn: matplotlib is not installed in this Python (the demo's pictures need it; "
            "`./dev demo` installs it, or run `python -m pip install matplotlib` with Blender's Python)"
        )
    return None


def _figure(width, height):
    from matplotlib.figure import Figure

    return Figure(figsize=(width, height), dpi=DPI)


def _save(fig, path):
    fig.savefig(str(path), dpi=DPI, facecolor="white")


# -- one bone --------------------------------------------------------------------------------------
def _ring_step(radius):
    """Degrees between the rings of a view reaching ``radius`` on the disc."""
    reach = np.degrees(2.0 * np.arcsin(min(radius, 2.0) / 2.0))
    return 15 if reach <= 70 else 30 if reach <= 130 else 45


def sphere_panel(ax, limit, samples, impossible, outside, baked=None):
    """Draw the allowed swing directions of ``limit`` on ``ax`` (see the module docstring).

    ``samples (N, 4)``, ``impossible (F, 4)`` and ``baked (F, 4)`` are local rotations;
    ``outside (F,)`` marks the impossible frames that leave the limit (only those, and where
    the bake put them, are drawn). Returns the colour mesh, for a colour bar."""
    from matplotlib.lines import Line2D
    from matplotlib.patches import Circle

    d, _ = swing_directions(limit, samples)
    points = [disc_from_direction(d)]
    outside = np.asarray(outside, dtype=bool)
    bad = np.asarray(impossible)[outside]
    if len(bad):
        bad_d, _ = swing_directions(limit, bad)
        points.append(disc_from_direction(bad_d))
    reach = max(allowed_extent(limit), float(np.linalg.norm(np.concatenate(points), axis=-1).max()))
    view = min(2.08, reach * 1.12 + 0.08)

    axis, twist = sample_swing_map(limit, view)
    top = max(float(twist.max()), 5.0)
    disc = Circle((0, 0), 2.0, facecolor=FORBIDDEN, edgecolor="#888888", linewidth=1.0, zorder=0)
    ax.add_patch(disc)
    mesh = ax.pcolormesh(
        axis, axis, np.where(twist > 0, twist, np.nan), cmap="viridis", vmin=0.0, vmax=top, shading="nearest", zorder=1
    )
    mesh.set_clip_path(disc)
    if twist.max() > 0 and twist.min() == 0:
        edge = ax.contour(axis, axis, (twist > 0).astype(float), levels=[0.5], colors=OUTLINE, linewidths=1.8, zorder=3)
        edge.set_clip_path(disc)

    step = _ring_step(view)
    for angle in range(step, 180, step):
        r = float(ring_radius(np.radians(angle)))
        if r > view * 1.4:
            break
        ax.add_patch(Circle((0, 0), r, fill=False, edgecolor="#666666", linewidth=0.8, linestyle=":", zorder=2))
        if r < view * 0.97:
            ax.text(
                r * 0.7071,
                r * 0.7071,
                f"{angle}°",
                fontsize=8,
                color="#333333",
                zorder=9,
                ha="center",
                va="center",
                bbox={"facecolor": "white", "alpha": 0.75, "edgecolor": "none", "pad": 1.0},
            )
    ax.axhline(0, color="#999999", linewidth=0.5, zorder=2)
    ax.axvline(0, color="#999999", linewidth=0.5, zorder=2)

    p = points[0]
    ax.scatter(p[:, 0], p[:, 1], s=5, color=SAMPLES, alpha=0.4, linewidths=0, zorder=4)
    ax.plot([0], [0], marker="+", markersize=14, color="white", markeredgewidth=3.5, zorder=5)
    ax.plot([0], [0], marker="+", markersize=13, color="black", markeredgewidth=1.5, zorder=5)

    handles = [
        Line2D(
            [],
            [],
            marker="o",
            linestyle="",
            markersize=4,
            color=SAMPLES,
            alpha=0.6,
            label=f"training poses ({len(samples)} frames)",
        ),
        Line2D([], [], marker="+", linestyle="", markersize=10, color="black", label="reference direction (the centre)"),
        Line2D([], [], color=OUTLINE, linewidth=1.8, label="edge of the allowed directions"),
        Line2D(
            [],
            [],
            marker="s",
            linestyle="",
            markersize=9,
            color=FORBIDDEN,
            markeredgecolor="#888888",
            label="not allowed: no twist fits",
        ),
    ]
    if len(bad):
        p = points[1]
        if baked is not None:
            q, _ = swing_directions(limit, np.asarray(baked)[outside])
            q = disc_from_direction(q)
            ax.scatter(q[:, 0], q[:, 1], s=14, color=AFTER, edgecolors="white", linewidths=0.6, zorder=6)
            handles.append(
                Line2D([], [], marker="o", linestyle="", markersize=5, color=AFTER, label="the same frames after the bake")
            )
        pointed_out = allowed_twist(limit, bad_d) == 0  # no twist makes that direction allowed
        for mask, marker, label in (
            (pointed_out, "x", f"impossible pose pointing outside ({int(pointed_out.sum())} frames)"),
            (~pointed_out, "o", f"impossible pose twisted too far ({int((~pointed_out).sum())} frames)"),
        ):
            if not mask.any():
                continue
            # a white halo under the red markers keeps them readable on any colour
            if marker == "x":
                ax.scatter(p[mask, 0], p[mask, 1], s=46, marker="x", color="white", linewidths=3.4, zorder=7)
                ax.scatter(p[mask, 0], p[mask, 1], s=40, marker="x", color=BEFORE, linewidths=1.5, zorder=8)
            else:
                ax.scatter(
                    p[mask, 0], p[mask, 1], s=34, marker="o", facecolors="none", edgecolors="white", linewidths=3.0, zorder=7
                )
                ax.scatter(
                    p[mask, 0], p[mask, 1], s=30, marker="o", facecolors="none", edgecolors=BEFORE, linewidths=1.3, zorder=8
                )
            handles.append(
                Line2D(
                    [],
                    [],
                    marker=marker,
                    linestyle="",
                    markersize=7,
                    markerfacecolor="none",
                    color=BEFORE,
                    markeredgewidth=1.5,
                    label=label,
                )
            )

    ax.set_xlim(-view, view)
    ax.set_ylim(-view, view)
    ax.set_aspect("equal")
    ax.set_xticks([])
    ax.set_yticks([])
    ax.set_xlabel("←  −X        swing toward the bone's X axis        +X  →\ndotted rings: degrees away from the centre")
    ax.set_ylabel("←  −Z        swing toward the bone's Z axis        +Z  →")
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(-0.02, -0.13), fontsize=8.5, ncol=2, frameon=False)
    return mesh


def timeline_panel(ax, frames, before, after, live, tolerance_deg=0.0):
    """Violation in degrees over ``frames`` of one bone: ``before`` (as keyed), ``after`` the
    bake, ``live`` enforcement, each ``(F,)`` degrees."""
    frames = np.asarray(frames)
    ax.fill_between(frames, 0, before, color=BEFORE, alpha=0.15, linewidth=0)
    ax.plot(
        frames,
        before,
        color=BEFORE,
        linewidth=1.8,
        label=f"as keyed: worst {np.max(before):.1f}°, {int(np.sum(before > tolerance_deg))} frames out",
    )
    ax.plot(
        frames,
        after,
        color=AFTER,
        linewidth=2.6,
        label=f"after bake: worst {np.max(after):.2f}°, {int(np.sum(after > tolerance_deg))} frames out",
    )
    ax.plot(frames, live, color=LIVE, linewidth=1.6, linestyle="--", label=f"live enforcement: worst {np.max(live):.2f}°")
    ax.set_xlim(frames[0], frames[-1])
    ax.set_ylim(-0.02 * max(float(np.max(before)), 1.0), max(float(np.max(before)), 1.0) * 1.45)
    ax.set_xlabel("frame of the impossible action")
    ax.set_ylabel("violation (degrees to the\nnearest allowed pose)")
    ax.grid(True, alpha=0.3)
    ax.legend(loc="upper left", fontsize=8.5, ncol=1)


def twist_panel(ax, limit, frames, impossible, baked):
    """The bone's twist on each frame, as keyed and after the bake, against the twists the limit
    allows at the direction the bone points in after the bake (shaded)."""
    from matplotlib.colors import ListedColormap
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    frames = np.asarray(frames)
    _, twist = swing_directions(limit, impossible)
    baked_d, baked_twist = swing_directions(limit, baked)
    # the bake leaves poses on the boundary, where `contains` flickers: allow a hair of slack
    ok = allowed_twists(limit, baked_d, BAND_TWISTS, tolerance=np.radians(0.25))  # (F, T)
    tw = np.degrees(twist_samples(BAND_TWISTS))
    ax.pcolormesh(frames, tw, np.where(ok.T, 1.0, np.nan), cmap=ListedColormap([BAND]), shading="nearest", zorder=0)
    ax.plot(frames, np.degrees(twist), color=BEFORE, linewidth=0, marker="o", markersize=3.2, zorder=3)
    ax.plot(frames, np.degrees(baked_twist), color=AFTER, linewidth=0, marker="o", markersize=2.0, zorder=4)
    ax.set_xlim(frames[0], frames[-1])
    ax.set_ylim(-180, 180)
    ax.set_yticks(range(-180, 181, 60))
    ax.set_xlabel("frame of the impossible action")
    ax.set_ylabel("twist about the bone's\nY axis (degrees)")
    ax.grid(True, alpha=0.3)
    ax.legend(
        handles=[
            Patch(color=BAND, label="twists allowed at the direction the bone points after the bake"),
            Line2D([], [], color=BEFORE, marker="o", markersize=4, linestyle="", label="twist as keyed"),
            Line2D([], [], color=AFTER, marker="o", markersize=3, linestyle="", label="twist after bake"),
        ],
        loc="upper left",
        bbox_to_anchor=(0.0, -0.2),
        fontsize=8.5,
        frameon=False,
        ncol=1,
    )


def bone_sheet(path, bone):
    """One bone's picture (see the module docstring). ``bone`` is a dict: ``name``, ``model``
    (a label), ``limit`` (:class:`~...limits.joint.JointLimit`), ``samples (N, 4)``,
    ``impossible (F, 4)`` and ``baked (F, 4)`` local rotations, ``frames (F,)``, ``before``,
    ``after``, ``live`` ``(F,)`` violations in degrees, ``tolerance_deg`` (violations up to it
    count as inside)."""
    fig = _figure(15.0, 7.6)
    grid = fig.add_gridspec(
        2, 2, width_ratios=(1.0, 1.05), left=0.05, right=0.97, top=0.88, bottom=0.23, wspace=0.32, hspace=0.42
    )
    sphere = fig.add_subplot(grid[:, 0])
    timeline = fig.add_subplot(grid[0, 1])
    twist = fig.add_subplot(grid[1, 1])
    tolerance = bone.get("tolerance_deg", 0.0)
    outside = np.asarray(bone["before"]) > tolerance
    mesh = sphere_panel(sphere, bone["limit"], bone["samples"], bone["impossible"], outside, bone.get("baked"))
    bar = fig.colorbar(mesh, ax=sphere, shrink=0.8, pad=0.02)
    bar.set_label("twist allowed at this direction (degrees)")
    sphere.set_title("Where the bone may point (coloured), and how much it may twist there", fontsize=10.5)
    timeline_panel(timeline, bone["frames"], bone["before"], bone["after"], bone["live"], tolerance)
    timeline.set_title("How far the bone leaves its limit in the impossible action", fontsize=10.5)
    twist_panel(twist, bone["limit"], bone["frames"], bone["impossible"], bone.get("baked", bone["impossible"]))
    twist.set_title("Its twist on each frame, against the twist allowed where it ends up pointing", fontsize=10.5)
    fig.suptitle(f"{bone['name']}: {bone['model']}", fontsize=14, fontweight="bold")
    _save(fig, path)


def right_of(values):
    """The largest of a ``{name: (F,)}`` map's values (at least 1)."""
    return max(1.0, max(float(np.max(v)) for v in values.values()))


# -- every bone ------------------------------------------------------------------------------------
def rig_sheet(path, frames, before, after, live, worst=5, tolerance_deg=0.0):
    """Every bone's violation (see the module docstring). ``before``, ``after``, ``live`` map bone
    names to ``(F,)`` violations in degrees over ``frames``."""
    names = sorted(before, key=lambda n: -float(np.max(before[n])))
    residual = (
        max(float(np.max(after[n])) for n in names) > tolerance_deg or max(float(np.max(live[n])) for n in names) > tolerance_deg
    )
    fig = _figure(13.0, 11.0)
    grid = fig.add_gridspec(2, 1, height_ratios=(1.0, 1.3), left=0.1, right=0.97, top=0.93, bottom=0.06, hspace=0.25)
    top = fig.add_subplot(grid[0])
    frames = np.asarray(frames)
    colours = ("#d62728", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#bcbd22", "#17becf")
    for i, name in enumerate(names[:worst]):
        top.plot(
            frames,
            before[name],
            color=colours[i % len(colours)],
            linewidth=1.4,
            label=f"{name} as keyed (worst {np.max(before[name]):.1f}°)",
        )
    top.plot(
        frames, np.max([after[n] for n in names], axis=0), color=AFTER, linewidth=2.4, label="after bake: largest over all bones"
    )
    top.plot(
        frames,
        np.max([live[n] for n in names], axis=0),
        color=LIVE,
        linewidth=1.6,
        linestyle="--",
        label="live enforcement: largest over all bones",
    )
    top.set_xlim(frames[0], frames[-1])
    top.set_ylim(bottom=0)
    top.set_xlabel("frame of the impossible action")
    top.set_ylabel("violation (degrees from the nearest allowed pose)")
    top.grid(True, alpha=0.3)
    top.set_ylim(-0.02 * right_of(before), right_of(before) * 1.35)
    top.legend(loc="upper left", fontsize=8.5, ncol=2)
    top.text(
        0.99,
        0.03,
        "after bake and with live enforcement every bone stays on 0° on every frame" if not residual else "",
        transform=top.transAxes,
        ha="right",
        va="bottom",
        fontsize=8.5,
        color=AFTER,
    )
    top.set_title(
        f"The impossible action over time: the {min(worst, len(names))} worst bones, and what is left after limiting", fontsize=10
    )

    bars = fig.add_subplot(grid[1])
    y = np.arange(len(names))
    worst_before = np.array([np.max(before[n]) for n in names])
    worst_after = np.array([np.max(after[n]) for n in names])
    out_before = [int(np.sum(before[n] > tolerance_deg)) for n in names]
    out_after = [int(np.sum(after[n] > tolerance_deg)) for n in names]
    bars.barh(y - 0.2, worst_before, height=0.4, color=BEFORE, label="worst violation as keyed")
    bars.barh(y + 0.2, worst_after, height=0.4, color=AFTER, label="worst violation after bake")
    right = float(worst_before.max()) if len(names) else 1.0
    for i in range(len(names)):
        bars.text(
            worst_before[i] + right * 0.01,
            y[i] - 0.2,
            f"{worst_before[i]:.1f}°  {out_before[i]}/{len(frames)} frames out",
            va="center",
            fontsize=7,
        )
        bars.text(
            worst_after[i] + right * 0.01,
            y[i] + 0.2,
            f"{worst_after[i]:.2f}°  {out_after[i]} out",
            va="center",
            fontsize=7,
            color=AFTER,
        )
    bars.set_yticks(y, names, fontsize=8)
    bars.invert_yaxis()
    bars.set_xlim(0, right * 1.35)
    bars.set_xlabel("worst violation over the action (degrees from the nearest allowed pose)")
    bars.set_ylabel("bone (worst first)")
    bars.grid(True, axis="x", alpha=0.3)
    bars.legend(loc="lower right", fontsize=8)
    bars.set_title("Every bone: worst violation and frames out of limit, as keyed and after bake", fontsize=10)
    fig.suptitle("Impossible action: every limited bone, before and after limiting", fontsize=13, fontweight="bold")
    _save(fig, path)
