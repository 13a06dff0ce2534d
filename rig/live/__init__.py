# SPDX-License-Identifier: GPL-3.0-or-later
"""Live enforcement: handlers that keep every limited bone inside its limit.

``frame_change_post`` limits the pose after animation was evaluated for a frame, and a guarded
``depsgraph_update_post`` limits interactive posing (:mod:`.handlers`). A limited bone that a
live constraint drives (not IK) is limited on its evaluated pose instead, by a corrective
constraint at the end of its stack (:mod:`.corrective`); IK chains holding limited bones are
solved by enforcement itself (:mod:`.limited_ik`). Each armature's limits are compiled once
(:mod:`.compile`, until a setting changes, undo, a file load, or an edit of the bones) into
groups of same-kind models stacked along a bone axis, so a frame costs a few foreach_get /
foreach_set calls and one numpy projection per model kind (:mod:`.basis`); a keyed action is
limited ahead as one motion (:mod:`.ahead`). All mutable state is in :mod:`.state`; bake, report
and sampling pause enforcement through :mod:`.pause`.
"""

from .ahead import work_ahead
from .compile import compiled
from .handlers import enforce_object, enforce_scene, register, unregister
from .state import invalidate, messages, report_once, reset

__all__ = [
    "compiled",
    "enforce_object",
    "enforce_scene",
    "invalidate",
    "messages",
    "register",
    "report_once",
    "reset",
    "unregister",
    "work_ahead",
]
