# SPDX-License-Identifier: GPL-3.0-or-later
"""A bone's quaternion-surface limit as a native Metaball object: one element per primitive,
negative elements for carved holes; edit it with Blender's own tools, then rebuild the limit.

Placement
---------
Element ``co`` is the primitive's centre ``p`` in the limit's quaternion vector-part space
(:mod:`...limits.models.surface.quaternion_surface`). The object sits beside the rig (:func:`.display.beside_rig`)
with a uniform scale of ``2 * display_scale``: ``|p|`` is about half the rotation angle, so near
the reference the metaball overlays the exp-map cloud display (radians times ``display_scale``).
Moving, scaling or rotating the whole object in Object Mode changes the limit too: the rebuild
reads world positions and undoes the export matrix (radii scale by the cube root of its
determinant).

Mapping of a primitive ``(c, e, k, sign)`` to an element (documented, invertible)
----------------------------------------------------------------------------------
``co = c``; ``radius = R = e + 2 / k`` (both fields vanish beyond it); ``use_negative`` for
``sign = -1``; ``stiffness = t / (1 - (e / R)^2)^3`` with the metaball's ``threshold``
``t = THRESHOLD``: Blender's single-ball field ``s (1 - r^2 / R^2)^3`` then reaches ``t`` exactly at
``r = e``, so a lone element's displayed sphere is the primitive's iso sphere. Blending differs
(Blender's kernel is not eq. 5); the display is a guide, the limit is the rebuild's model.
Reading back: ``R = radius``, ``e = R sqrt(1 - (t / s)^(1/3))`` (0 when ``s <= t``),
``k = 2 / (R - e)``. Stiffness is capped at Blender's 10, i.e. ``e / R <= 0.91``. Scaling an element
(S in Edit Mode) scales its ``e`` and ``R`` together (``k`` inversely); changing its stiffness
moves ``e`` within ``R``; adding an element adds a primitive; Negative makes it carve.
"""

import bpy
import numpy as np
from mathutils import Matrix

from ...limits.geometry.quaternion import quaternion_angle, quaternion_mean
from ...limits.joint import JointLimit, reference_rotation, relative_cloud
from ...limits.model import METABALLS
from ...limits.models.surface.quaternion_surface import QuaternionSurfaceLimit
from ..io.exported import (
    PROP_ARMATURE,
    PROP_BONE,
    PROP_CENTRE,
    PROP_MATRIX,
    PROP_REFERENCE,
    exported_bone,
    find_exported,
    is_exported,
)
from ..io.storage import read_cloud, read_limit, store_limit
from .display import beside_rig, display_collection
from .fit import reference_frame_rotation

#: Metaball threshold of exported objects.
THRESHOLD = 0.05

#: Blender's largest element stiffness.
MAX_STIFFNESS = 10.0

#: Custom property on an exported metaball object (the others: :mod:`..io.exported`).
PROP_POLE = "joint_limits_pole"


def metaball_object_name(obj, pose_bone):
    return f"JL {obj.name} {pose_bone.name} metaball"


def stiffness_from_primitive(radii, stickiness, threshold=THRESHOLD):
    """``(reach R (M,), stiffness s (M,))`` of primitives ``e (M,)``, ``k (M,)`` (module docstring)."""
    e = np.asarray(radii, dtype=float)
    reach = e + 2.0 / np.asarray(stickiness, dtype=float)
    ratio = np.clip(e / reach, 0.0, 0.999)
    return reach, np.minimum(threshold / (1.0 - ratio**2) ** 3, MAX_STIFFNESS)


def primitive_from_stiffness(reach, stiffness, threshold=THRESHOLD):
    """``(e (M,), k (M,))`` of elements of radius ``reach`` and ``stiffness`` (inverse mapping)."""
    reach = np.asarray(reach, dtype=float)
    s = np.asarray(stiffness, dtype=float)
    ratio = np.sqrt(np.clip(1.0 - np.cbrt(threshold / np.maximum(s, 1e-12)), 0.0, 0.995))
    e = reach * ratio
    return e, 2.0 / (reach - e)


def is_limit_metaball(mb_obj):
    return is_exported(mb_obj, "META")


def find_metaball(obj, pose_bone):
    """The metaball exported for ``pose_bone`` of armature ``obj``, or ``None``."""
    return find_exported("META", obj, pose_bone)


def metaball_bone(mb_obj):
    """``(armature object, pose bone)`` of an exported metaball; ``ValueError`` when gone."""
    if not is_limit_metaball(mb_obj):
        raise ValueError(f"{mb_obj.name} is not a metaball exported by Joint Limits")
    return exported_bone(mb_obj)


def _surface_limit(obj, pose_bone):
    """``(JointLimit with a quaternion-surface model, "limit" or "samples")``."""
    limit = read_limit(pose_bone)
    if limit is not None and limit.model.can(METABALLS) and limit.reference.ndim == 1:
        return limit, "limit"
    cloud = read_cloud(pose_bone)
    if not len(cloud):
        raise ValueError(
            f"{pose_bone.name}: its limit is not a quaternion surface and it has no samples to fit one; sample an action first"
        )
    settings = pose_bone.joint_limit
    if limit is not None:
        reference, centre = limit.reference, limit.centre
        rel = limit.to_relative(cloud)
    else:
        frame = reference_frame_rotation(obj, pose_bone) if settings.reference == "FRAME" else None
        reference = reference_rotation(cloud, settings.reference, frame)
        rel = relative_cloud(cloud, reference)
        centre = quaternion_mean(rel)
        if np.sum(rel @ centre) < 0:
            centre = -centre
    model = QuaternionSurfaceLimit.fit(rel, padding=settings.padding)
    return JointLimit(model, reference, centre), "samples"


def export_metaball(obj, pose_bone, scene):
    """Create (or replace) the metaball of ``pose_bone``'s quaternion-surface limit.

    Parameters
    ----------
    obj : bpy.types.Object
        The armature.
    pose_bone : bpy.types.PoseBone
        With a quaternion-surface limit, or with samples (one is fitted; the bone's limit is
        unchanged until Rebuild).
    scene : bpy.types.Scene
        ``joint_limits.display_scale`` and the display collection.

    Returns
    -------
    mb_obj : bpy.types.Object
        ``"JL <armature> <bone> metaball"`` in "Joint Limits Display".
    info : dict
        ``positive``, ``negative`` (element counts), ``source`` ("limit" or "samples").
    """
    limit, source = _surface_limit(obj, pose_bone)
    params = limit.model.params
    name = metaball_object_name(obj, pose_bone)
    mb = bpy.data.metaballs.new(name)
    mb.threshold = THRESHOLD
    mb.resolution = 0.05
    mb.render_resolution = 0.05
    reach, stiffness = stiffness_from_primitive(params["radii"], params["stickiness"])
    for c, r, s, sign in zip(params["centres"], reach, stiffness, params["signs"]):
        el = mb.elements.new(type="BALL")
        el.co = [float(v) for v in c]
        el.radius = float(r)
        el.stiffness = float(s)
        el.use_negative = bool(sign < 0)
    coll = display_collection(scene)
    mb_obj = bpy.data.objects.get(name)
    if mb_obj is not None:
        bpy.data.objects.remove(mb_obj)
    mb_obj = bpy.data.objects.new(name, mb)
    coll.objects.link(mb_obj)
    scale = 2.0 * scene.joint_limits.display_scale
    matrix = Matrix.Translation(beside_rig(obj, pose_bone, scene)) @ Matrix.Diagonal((scale, scale, scale, 1.0))
    mb_obj.matrix_world = matrix
    mb_obj.hide_render = True
    mb_obj.display_type = "WIRE"
    mb_obj[PROP_ARMATURE] = obj.name
    mb_obj[PROP_BONE] = pose_bone.name
    mb_obj[PROP_MATRIX] = [float(x) for row in matrix for x in row]
    mb_obj[PROP_REFERENCE] = [float(x) for x in limit.reference]
    mb_obj[PROP_CENTRE] = [float(x) for x in limit.centre]
    mb_obj[PROP_POLE] = [float(x) for x in params["pole"]]
    negative = int(np.count_nonzero(params["signs"] < 0))
    return mb_obj, {"positive": len(params["signs"]) - negative, "negative": negative, "source": source}


def read_elements(mb_obj):
    """Primitive arrays ``(centres (M, 3), radii, stickiness, signs)`` of the metaball's elements,
    in the exported space (the object's transform since the export undone)."""
    elements = list(mb_obj.data.elements)
    if not elements:
        raise ValueError(f"{mb_obj.name} has no elements")
    co = np.array([tuple(el.co) for el in elements], dtype=float)
    reach = np.array([el.radius for el in elements], dtype=float)
    stiffness = np.array([el.stiffness for el in elements], dtype=float)
    signs = np.array([-1.0 if el.use_negative else 1.0 for el in elements])
    export = np.array(mb_obj[PROP_MATRIX], dtype=float).reshape(4, 4)
    to_params = np.linalg.inv(export) @ np.array(mb_obj.matrix_world, dtype=float)
    centres = co @ to_params[:3, :3].T + to_params[:3, 3]
    reach = reach * np.cbrt(abs(np.linalg.det(to_params[:3, :3])))
    if np.any(reach <= 0):
        raise ValueError(f"{mb_obj.name}: element radii must be positive")
    e, k = primitive_from_stiffness(reach, stiffness)
    return centres, e, k, signs


def rebuild_from_metaball(mb_obj):
    """Rebuild the bone's limit from its (edited) metaball and store it on the bone.

    Returns
    -------
    limit : JointLimit
        The stored limit (quaternion surface), with the bone's current reference and centre
        (the exported ones when the bone's reference changed since the export).
    info : dict
        ``positive``, ``negative``, ``bone``, ``armature``, ``reference_changed``.

    Raises
    ------
    ValueError
        No elements, non-positive radii, an empty region, or a limit that would not read back
        (a degenerate pole); the bone's limit and settings are then unchanged.
    """
    arm, pose_bone = metaball_bone(mb_obj)
    centres, e, k, signs = read_elements(mb_obj)
    try:
        model = QuaternionSurfaceLimit.from_primitives(mb_obj[PROP_POLE], centres, e, k, signs)
    except ValueError as err:
        raise ValueError(f"{mb_obj.name}: {err}") from None
    reference = np.array(mb_obj[PROP_REFERENCE], dtype=float)
    centre = np.array(mb_obj[PROP_CENTRE], dtype=float)
    current = read_limit(pose_bone)
    changed = True
    if current is not None and current.reference.ndim == 1 and quaternion_angle(current.reference, reference) < 1e-6:
        reference, centre, changed = current.reference, current.centre, False
    try:
        store_limit(pose_bone, JointLimit(model, reference, centre))  # validated before anything is written
    except ValueError as err:
        raise ValueError(f"{mb_obj.name}: {err}") from None
    pose_bone.joint_limit.last_error = ""
    negative = int(np.count_nonzero(signs < 0))
    info = {
        "positive": len(signs) - negative,
        "negative": negative,
        "bone": pose_bone.name,
        "armature": arm.name,
        "reference_changed": changed and current is not None,
    }
    return read_limit(pose_bone), info
