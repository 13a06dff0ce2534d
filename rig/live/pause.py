# SPDX-License-Identifier: GPL-3.0-or-later
"""Live enforcement paused or undone: the plain rig while bake, report or sampling evaluate the
unlimited pose, before a save, and when enforcement is switched off."""

import contextlib

from . import corrective, limited_ik, played, state


def paused():
    """Whether live enforcement is paused (:func:`suspended`)."""
    return state.corrections["paused"] > 0


@contextlib.contextmanager
def suspended():
    """Pause live enforcement while the unlimited pose is evaluated (bake, report, sampling with
    constraints): correctives go to influence 0 until the next update after it."""
    neutralize_everywhere()
    state.corrections["paused"] += 1
    try:
        yield
    finally:
        state.corrections["paused"] -= 1


def neutralize(obj):
    """Release the held IK of ``obj`` and set its correctives to influence 0 (the plain rig, bitwise)."""
    if obj.type != "ARMATURE" or obj.pose is None:
        return
    played.forget(obj)
    limited_ik.release(obj)
    corrective.neutralize(obj)


def neutralize_everywhere():
    """:func:`neutralize` every armature (before a save)."""
    if state.corrections["added"]:
        for obj in corrective.armatures():
            neutralize(obj)


def remove_everywhere():
    """Remove every corrective constraint and release every held IK (enforcement off,
    unregister): the plain rigs."""
    for obj in corrective.armatures():
        played.remove(obj)
        limited_ik.release(obj)
        corrective.remove_all(obj)
    state.corrections["added"] = False
    state.played.clear()
