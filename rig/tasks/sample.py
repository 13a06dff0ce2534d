# SPDX-License-Identifier: GPL-3.0-or-later
"""Actions -> per-bone rotation clouds, kept in the armature's data store (:mod:`..io.datastore`)."""

import contextlib

import numpy as np

from ...limits.geometry.quaternion import quaternion_unroll
from ..io.actions import action_frames, assign_action, keyed_rotations
from ..io.storage import write_cloud
from ..live.evaluate import evaluated_local_transforms


@contextlib.contextmanager
def temporarily_assigned(obj, action):
    """Assign ``action`` to ``obj`` for the block, then restore the previous action and slot."""
    anim = obj.animation_data or obj.animation_data_create()
    old_action = anim.action
    old_slot = getattr(anim, "action_slot", None)
    try:
        if action is not old_action:
            assign_action(obj, action)
        yield
    finally:
        if anim.action is not old_action:
            anim.action = old_action
            if old_slot is not None and hasattr(anim, "action_slot"):
                try:
                    anim.action_slot = old_slot
                except (TypeError, RuntimeError):
                    pass


def drop_bad_rotations(rotations, source):
    """Keep the usable rows of ``{name: (N, 4)}`` rotations read from ``source`` (named in the
    notes): rows holding NaN or infinity (keys and mocap files can hold them; the conversions
    keep them non-finite) or of zero length are dropped and counted.

    Returns ``(kept {name: (M, 4)}, dropped {name: count}, notes)``; a bone left without rows
    is not in ``kept``.
    """
    kept, dropped, notes = {}, {}, []
    for name, rows in rotations.items():
        good = np.all(np.isfinite(rows), axis=-1) & (np.linalg.norm(rows, axis=-1) > 1e-6)
        if not good.all():
            dropped[name] = int((~good).sum())
            notes.append(f"{name}: dropped {dropped[name]} NaN or zero rotations in {source}")
        if good.any():
            kept[name] = rows[good]
    return kept, dropped, notes


def dropped_message(dropped):
    """``"dropped N NaN or zero rotations (bone, ...)"`` for ``dropped {name: count}``."""
    names = ", ".join(list(dropped)[:3]) + (", ..." if len(dropped) > 3 else "")
    return f"dropped {sum(dropped.values())} NaN or zero rotations ({names})"


def sample_rotations(obj, bone_names, actions, start=None, end=None, evaluated=False, scene=None, clips=None):
    """Local rotations per bone from ``actions``: ``({name: (N, 4)}, notes, dropped)``.

    ``clips``, a dict, is filled with ``{name: [(action name, count), ...]}``: which action each
    run of a bone's samples came from (cross-validated fitting holds actions out).

    ``evaluated=False`` reads keyframes (fast); ``True`` evaluates every frame with constraints
    and IK. Bones without keys in an action contribute nothing from it; rows with NaN or
    infinity are dropped (:func:`drop_bad_rotations`), counted per bone in ``dropped
    {name: count}`` and named in the notes. Raises ``ValueError`` when nothing at all could be
    sampled.
    """
    if not actions:
        raise ValueError(f"{obj.name} has no action to sample; assign one or pick actions")
    chunks = {name: [] for name in bone_names}
    notes, dropped = [], {}
    for action in actions:
        frames = action_frames(action, start, end)
        if evaluated:
            with temporarily_assigned(obj, action):
                index = [obj.pose.bones.find(n) for n in bone_names]
                _, rot, _ = evaluated_local_transforms(obj, scene, frames)
                q = rot[:, index]
                keyed = np.ones(len(bone_names), dtype=bool)
        else:
            q, keyed = keyed_rotations(obj, action, bone_names, frames)
        if not keyed.any():
            notes.append(f"action {action.name!r} has no rotation keys for these bones")
        keyed_rows = {name: q[:, b] for b, name in enumerate(bone_names) if keyed[b]}
        kept, bad, bad_notes = drop_bad_rotations(keyed_rows, repr(action.name))
        notes += bad_notes
        for name, count in bad.items():
            dropped[name] = dropped.get(name, 0) + count
        for name, rows in kept.items():
            chunks[name].append(quaternion_unroll(rows))
            if clips is not None:
                clips.setdefault(name, []).append((action.name, len(rows)))
    clouds = {name: np.concatenate(parts) for name, parts in chunks.items() if parts}
    if not clouds:
        raise ValueError("nothing to sample: " + ("; ".join(notes) or "no keyed rotations in the frame range"))
    return clouds, notes, dropped


def store_clouds(obj, clouds, append=False, densify_angle=0.0, min_spacing=0.0, clips=None):
    """Write clouds onto the pose bones; returns ``{name: sample count}``.

    ``densify_angle > 0`` inserts slerp samples so consecutive samples are at most that far
    apart (seed 000, Fig. 2); ``min_spacing > 0`` thins the cloud so no two kept samples are
    closer than that (Holden's subsampling). Both in radians, within each clip. ``clips``
    ``{name: [(clip name, count), ...]}`` (or one clip name for every bone) records where the
    samples came from.
    """
    from ...limits.cloud import densify_slerp, subsample_rotations

    counts = {}
    for name, q in clouds.items():
        runs = clips.get(name, [("", len(q))]) if isinstance(clips, dict) else [(clips or "", len(q))]
        parts, stops = [], np.cumsum([0] + [n for _, n in runs])
        for (clip, _), a, b in zip(runs, stops[:-1], stops[1:], strict=True):
            part = q[a:b]
            if densify_angle > 0:
                part = densify_slerp(part, densify_angle)
            if min_spacing > 0:
                part = part[subsample_rotations(part, min_spacing)]
            parts.append((clip, part))
        q = np.concatenate([part for _, part in parts])
        counts[name] = write_cloud(obj.pose.bones[name], q, append=append, clip=[(c, len(p)) for c, p in parts])
    return counts
