# SPDX-License-Identifier: GPL-3.0-or-later
"""Every piece of live enforcement's mutable state, in one place, and the problems it reported."""

#: object pointer -> the rig compiled for enforcement (:class:`.compile.CompiledRig`)
cache = {}
#: problems already reported (keys), and their messages (newest last)
reported = set()
problems = []
#: the handlers' re-entry guard and what they know of the scene
scene = {"busy": False, "scene_objects": -1, "armatures": (), "ik_targets": frozenset()}
#: rigs seen in Edit Mode since they were compiled (object pointers)
edited = set()
#: object pointer -> what its last compile parsed and stacked (:class:`.compile.Reuse`)
reuse = {}
#: how many callers paused enforcement (:func:`.pause.suspended`), and whether correctives were
#: added since they were last all removed
corrections = {"paused": 0, "added": False}
#: object pointer -> its correctives recorded over a play (:class:`.played.Recording`)
played = {}


def invalidate(*_args):
    """Forget compiled limits (a setting changed, undo, file load)."""
    cache.clear()
    edited.clear()
    scene["scene_objects"] = -1
    scene["ik_targets"] = frozenset()
    played.clear()


def reset():
    """Forget everything, including which problems were already reported."""
    invalidate()
    reuse.clear()
    reported.clear()
    problems.clear()


def messages():
    """Problems reported by the handlers since the last :func:`reset` (newest last)."""
    return list(problems)


def report_once(key, text):
    if key in reported:
        return
    reported.add(key)
    problems.append(text)
    print(f"Joint Limits: {text}")
