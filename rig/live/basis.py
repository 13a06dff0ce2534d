# SPDX-License-Identifier: GPL-3.0-or-later
"""The basis path: the limited bones' own channels (``matrix_basis``) limited and written, each
pose remembered by its input bytes (a keyed frame's pose is the one the look-ahead gave it)."""

import numpy as np

from ..io.pose_io import PoseArrays
from . import state
from .ahead import PENDING, look_ahead, resolve
from .compile import Group, blend_limited, group_rotations
from .lookahead import action_identity

#: Poses remembered per rig (about 3 kB each for 60 bones).
MEMO_SIZE = 4096


def project_group(obj, group, arrays, motion=False, previous=None):
    """``(moved (..., R), limited (..., R, 4))`` for the ``R`` bones of ``group`` in ``arrays``
    (one pose, or poses over frames): which rotations leave their limit, and every rotation
    after limiting (the others as they are). With ``motion`` the pose is the frame after
    ``previous`` (a :class:`...limits.continuity.MotionState` or ``None`` for a cut), limited as
    a motion, and a third item is the state after it."""
    q, ok = group_rotations(obj, group, arrays)
    if motion:
        moved, p, trail = group.limit.project_sequence_outside(q[None], previous)
        moved = moved[0]
    else:
        moved, p = group.limit.project_outside(q)
    moved, limited = blend_limited(group, q, ok, moved, p)
    if motion:
        return moved, limited, trail[0]
    return moved, limited


def limited_values(rig, key):
    """The channel values the basis path writes for the input pose ``key`` (``{channel: (n, k)}``,
    empty: none), or None when it has not limited that pose: held IK chains are solved ahead on
    the limited poses of the action (:mod:`.ik_lookahead`)."""
    if not rig.groups:
        return {}
    hit = rig.memo.get(key)
    if hit is PENDING:
        hit = resolve(rig, key)
    return None if hit is None else hit[1]


def enforce_basis(obj, rig, frame=None):
    """Limit the basis of the rig's limited bones at ``frame``; returns how many moved and the
    values written (``{channel: array}``, empty: none)."""
    arrays = PoseArrays(obj.pose.bones)
    key = arrays.key()
    hit = rig.memo.get(key)
    if hit is None and look_ahead(obj, rig, arrays):
        hit = rig.memo.get(key)
    if hit is PENDING:
        hit = resolve(rig, key)
    last, rig.last = rig.last, (frame, action_identity(obj))
    if hit is None:
        if len(rig.memo) > MEMO_SIZE:
            rig.memo.clear()
            rig.looked_ahead = rig.ahead = None
        rig.computed += 1
        cut = last is None or last[1] != rig.last[1] or frame is None or last[0] is None or abs(frame - last[0]) > 1
        hit = rig.memo[key] = limit_pose(obj, rig, arrays, cut)
        if hit[1]:
            # the pose we are about to write is our own result: when an update hands it back
            # (depsgraph_update_post after our write), leave it alone, so influence and
            # softening apply once instead of compounding.
            rig.memo.setdefault(arrays.key(), (0, {}, None))
    moved, written, states = hit
    for group, motion_state in states or ():
        group.state = motion_state
    if written:
        arrays.write_values(written)
        # a transform tag re-evaluates the pose and what depends on it (skin, bone children)
        # for less than the geometry tag RNA pose edits use
        obj.update_tag(refresh={"OBJECT"})
    return moved, written


def limit_pose(obj, rig, arrays, cut=True):
    """``(bones moved, written values, states)`` for the pose in ``arrays``: each group's bones
    limited as the frame after the group's last (``cut``: afresh)."""
    rows, values = [], []
    for group in list(rig.groups):
        try:
            moved, limited, motion_state = project_group(obj, group, arrays, True, None if cut else group.state)
        except Exception as err:  # noqa: BLE001 - isolate the broken bone, keep the rest
            rig.groups.remove(group)
            if len(group.rows) > 1:
                rig.groups.extend(Group([m]) for m in group.members)
                return limit_pose(obj, rig, arrays, True)
            state.report_once(
                (obj.name, group.names[0], "error"), f"{obj.name}: bone {group.names[0]!r} skipped ({type(err).__name__}: {err})"
            )
            continue
        group.state = motion_state
        rows.append(group.rows[moved])
        values.append(limited[moved])
    states = tuple((group, group.state) for group in rig.groups)
    rows = np.concatenate(rows) if rows else np.zeros(0, dtype=np.intp)
    if len(rows) == 0:
        return 0, {}, states
    channels = arrays.set_local_quaternions(rows, np.concatenate(values))
    return len(rows), arrays.values(channels), states
