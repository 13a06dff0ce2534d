# SPDX-License-Identifier: GPL-3.0-or-later
"""Blender's handlers for live enforcement: frame changes, interactive updates, undo, file load and
save. Nothing here raises into Blender: a broken bone is reported once and skipped."""

import functools

import bpy
from bpy.app.handlers import persistent

from ..io.app_handlers import install, uninstall
from . import corrective, limited_ik, pause, played, state
from .ahead import work_ahead
from .basis import enforce_basis, limited_values, project_group
from .compile import compiled


def enforce_object(obj, depsgraph=None, frame_change=False):
    """Project every enabled limited bone of ``obj``; returns how many bones were moved.
    Held IK chains are solved and constraint-driven bones corrected on ``depsgraph``'s
    evaluated pose (the active one by default), in that order: a corrected bone may hang below
    a chain. On a ``frame_change`` the corrections are recorded, or played back
    (:mod:`.played`)."""
    scene = depsgraph.scene if depsgraph is not None else bpy.context.scene
    frame_change = frame_change and scene is not None
    if frame_change and played.plays(obj, scene):
        return 0  # (before compiling: an edit that would recompile the rig forgets the recording)
    rig = compiled(obj)
    moved, written = 0, {}
    if rig.groups:
        moved, written = enforce_basis(obj, rig, scene.frame_current if scene is not None else None)
    if rig.chains or rig.corrected is not None:
        if depsgraph is None:
            depsgraph = bpy.context.evaluated_depsgraph_get()
        stale = moved
        if rig.chains:
            # (solve evaluates the rig again, IK muted and the limited basis, only for a chain
            # it cannot look up)
            held = limited_ik.hold(obj, rig.chains)
            posed, changed = limited_ik.solve(obj, depsgraph, rig.chains, held or stale, functools.partial(limited_values, rig))
            moved += posed
            # the evaluated rig is current unless the basis, a hold or a chain's corrective
            # changed since (the update our own writes cause finds nothing to do)
            stale = bool(stale or held or changed)
        if rig.corrected is not None:
            if stale:
                depsgraph.update()  # the corrected bones' evaluated pose under the limited basis
            moved += _correct(obj, rig, depsgraph)
    if frame_change:
        played.record(obj, rig, scene, written)
    return moved


def _correct(obj, rig, depsgraph):
    def project(group, rotations):
        return project_group(obj, group, rotations)

    return corrective.correct(obj, depsgraph, rig.corrected, project)


def _armatures(scene):
    """The scene's armature objects (the list is rebuilt when objects are added, removed or
    renamed)."""
    objects = scene.objects
    if len(objects) != state.scene["scene_objects"] or any(name not in objects for name in state.scene["armatures"]):
        state.scene["scene_objects"] = len(objects)
        state.scene["armatures"] = tuple(o.name for o in objects if o.type == "ARMATURE")
    return [objects[name] for name in state.scene["armatures"]]


def enforce_scene(scene, depsgraph=None, frame_change=False):
    """Limit every armature of ``scene``; never raises. Returns the number of bones moved."""
    if state.scene["busy"] or pause.paused():
        return 0
    state.scene["busy"] = True
    moved = 0
    try:
        for obj in _armatures(scene):
            if obj.mode == "EDIT":
                state.edited.add(obj.as_pointer())
                continue
            if obj.pose is None:
                continue
            try:
                moved += enforce_object(obj, depsgraph, frame_change)
            except Exception as err:  # noqa: BLE001 - never raise into Blender
                state.report_once((obj.name, None, "object"), f"{obj.name}: enforcement failed ({type(err).__name__}: {err})")
    except Exception as err:  # noqa: BLE001
        state.report_once((None, None, "scene"), f"enforcement failed ({type(err).__name__}: {err})")
    finally:
        state.scene["busy"] = False
    return moved


@persistent
def on_frame_change_post(scene, depsgraph=None):
    try:
        if scene.joint_limits.enforce_live:
            enforce_scene(scene, depsgraph, frame_change=True)
    except Exception as err:  # noqa: BLE001
        state.report_once((None, None, "frame"), f"frame handler failed ({err})")


@persistent
def on_depsgraph_update_post(scene, depsgraph=None):
    """Interactive posing: limit armatures the update touched (guarded against re-entry)."""
    try:
        if state.scene["busy"] or not scene.joint_limits.enforce_live:
            return
        if state.played and (depsgraph is None or len(depsgraph.updates)):
            played.forget_all()  # an edit: the recorded corrections may no longer be the limited ones
        if depsgraph is not None and not any(_concerns_limits(u.id) for u in depsgraph.updates):
            return
        enforce_scene(scene, depsgraph)
    except Exception as err:  # noqa: BLE001
        state.report_once((None, None, "depsgraph"), f"update handler failed ({err})")


def _concerns_limits(data):
    """Whether an update of ``data`` may move a limited bone: an armature, or an object a held
    IK chain aims at (a held IK is muted: Blender no longer re-evaluates the rig for it)."""
    return isinstance(data, bpy.types.Object) and (data.type == "ARMATURE" or data.name in state.scene["ik_targets"])


@persistent
def on_file_or_undo(*_args):
    state.invalidate()


@persistent
def on_save_pre(*_args):
    """Saved correctives stand at influence 0: opened without the add-on, a saved correction
    would pin a bone to the fix of the frame it was saved on."""
    try:
        pause.neutralize_everywhere()
    except Exception as err:  # noqa: BLE001 - never raise into Blender
        state.report_once((None, None, "save"), f"could not reset the correctives before saving ({err})")


@persistent
def on_save_post(*_args):
    """Limit the pose again after the save (:func:`on_save_pre` reset the correctives)."""
    try:
        scene = bpy.context.scene
        if scene is not None and scene.joint_limits.enforce_live:
            depsgraph = bpy.context.evaluated_depsgraph_get()
            depsgraph.update()  # the pose with the correctives at 0, as they now are
            enforce_scene(scene, depsgraph)
    except Exception as err:  # noqa: BLE001
        state.report_once((None, None, "save"), f"could not limit the pose again after saving ({err})")


HANDLERS = (
    (bpy.app.handlers.frame_change_post, on_frame_change_post),
    (bpy.app.handlers.depsgraph_update_post, on_depsgraph_update_post),
    (bpy.app.handlers.load_post, on_file_or_undo),
    (bpy.app.handlers.undo_post, on_file_or_undo),
    (bpy.app.handlers.redo_post, on_file_or_undo),
    (bpy.app.handlers.save_pre, on_save_pre),
    (bpy.app.handlers.save_post, on_save_post),
)


def register():
    install(HANDLERS, __name__)


def unregister():
    uninstall(HANDLERS, __name__)
    if bpy.app.timers.is_registered(work_ahead):
        bpy.app.timers.unregister(work_ahead)
    pause.remove_everywhere()
    state.reset()
