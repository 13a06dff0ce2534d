# SPDX-License-Identifier: GPL-3.0-or-later
"""One file per rig of engine joint limits: JSON for engines without a file format of their
own, ``.usda`` text for USD Physics.

Per bone the file holds the approximations of :mod:`.engine_limits` in the engine's own names,
units and axes, each with its fidelity (:mod:`.fidelity`), Kelly's break margin in degrees, and
the bone's rest frame so an engine can place the joint:

``rest.matrix``      the bone's rest matrix in armature space (4 x 4, rows; Blender axes, the
                     bone along +Y, metres of the armature's space), ``rest.length``
``joint``            where the joint sits: ``position``, the bone's head in its parent's rest
                     frame (armature space for a root), and ``parent_to_bone``, the bone's rest
                     axes in its parent's (a quaternion ``(w, x, y, z)``)

Each approximation carries its own ``frames``: ``parent_rotation`` (the parent frame ``C`` in the
parent's rest axes) and ``bone_rotation`` (the child frame in the bone's axes), in Blender's
bone axes; engines with an X twist axis get them again in their own axes and names
(``BONE_FROM_ENGINE`` applied).

Angles are radians except where the engine uses degrees (Unreal, USD): the keys say which.
:func:`read_export` reads a JSON export back, checked.
"""

import json
import math

import numpy as np

from ..geometry.quaternion import quaternion_from_matrix, quaternion_multiply, quaternion_rotate
from ..geometry.swing_twist import rotation_from_direction_twist
from . import engine_limits as el
from .fidelity import VOLUME_ROTATIONS, fidelities

FORMAT = "joint_limits_engine_export"
VERSION = 1

#: Per engine, the approximations written: ``(name, swing shape, twist limited)``.
ENGINES = {
    "physx": (("cone", "quarter_angle", True),),
    "unreal": (("cone", "quarter_angle", True),),
    "jolt": (("cone", "sin_half", True), ("pyramid", "pyramid", True)),
    "godot": (("cone", "circle", False),),
    "usd": (("cone", "quarter_angle", True),),
    "vrm": (("cone", "circle", False),),
    "json": (("cone", "quarter_angle", True), ("pyramid", "pyramid", True)),
}

#: File name suffix each engine's export is written with by default.
SUFFIXES = {engine: ".usda" if engine == "usd" else ".json" for engine in ENGINES}

CONVENTIONS = {
    "rotations": "quaternions (w, x, y, z) unless a key says (x, y, z, w); Blender bone axes: the bone points "
    "along +Y, the twist axis",
    "engine_axes": "engines twisting about X: engine X = bone Y, engine Y = bone Z, engine Z = bone X (right-handed); "
    "Godot and VRM cones point along the bone's +Y",
    "joint_rotation": "p = C^-1 q T_y(tau): q the bone's local rotation, C the parent frame, T_y(tau) the child frame",
    "units": "radians unless a key ends in Degrees or _deg (Unreal, USD); positions in the armature's units",
    "fit_rule": "each approximation holds at least target_share of the samples the learned limit accepts",
    "fidelity": "sample_share: share of the bone's samples accepted; volume: share of all rotations accepted "
    "(Monte Carlo, fixed seed); limit_volume: the learned limit's; volume_ratio: volume / limit_volume",
}


def _xyzw(q):
    return [float(q[1]), float(q[2]), float(q[3]), float(q[0])]


def _list(values):
    return [float(v) for v in np.asarray(values, dtype=float).ravel()]


def _rest_frames(matrix, parent_matrix):
    """``(position (3,), parent-to-bone rotation (4,))`` of the bone's head and rest axes in its
    parent's rest frame (armature space for a root)."""
    matrix = np.asarray(matrix, dtype=float)
    if matrix.shape != (4, 4) or not np.all(np.isfinite(matrix)):
        raise ValueError(f"a rest matrix must be a finite 4 x 4, got shape {matrix.shape}")
    if parent_matrix is None:
        parent = np.eye(4)
    else:
        parent = np.asarray(parent_matrix, dtype=float)
        if parent.shape != (4, 4) or not np.all(np.isfinite(parent)):
            raise ValueError(f"a parent rest matrix must be a finite 4 x 4, got shape {parent.shape}")
    rot = parent[:3, :3].T @ matrix[:3, :3]
    position = parent[:3, :3].T @ (matrix[:3, 3] - parent[:3, 3])
    u, _, vt = np.linalg.svd(rot)  # (rest matrices may carry scale: keep the rotation)
    return position, quaternion_from_matrix(u @ vt)


def _engine_axes(q):
    return quaternion_multiply(q, el.BONE_FROM_ENGINE)


def engine_parameters(engine, name, region, position, parent_to_bone):
    """The approximation ``region`` (an :class:`.engine_limits.SwingTwistRegion`) in ``engine``'s
    names, units and axes; ``position``, ``parent_to_bone`` place the bone in its parent's rest
    frame (:func:`_rest_frames`)."""
    parent_rot = quaternion_multiply(parent_to_bone, region.frame)  # C in the parent's rest axes
    child_rot = region.child_frame()
    pos = _list(position)
    sx, sz = (float(v) for v in region.swing)
    twist = None if region.twist is None else [float(v) for v in region.twist]
    if engine in ("physx", "json"):
        if name == "pyramid":  # (json only: the pyramid in Jolt's measure, engine axes)
            return {
                "swing_y_limit": sz,
                "swing_z_limit": sx,
                "twist_limit": {"lower": twist[0], "upper": twist[1]},
                "frame_in_parent": {"p": pos, "q_xyzw": _xyzw(_engine_axes(parent_rot))},
                "frame_in_bone": {"p": [0.0, 0.0, 0.0], "q_xyzw": _xyzw(_engine_axes(child_rot))},
            }
        return {
            "joint": "PxD6Joint",
            "motion": {"eTWIST": "eLIMITED", "eSWING1": "eLIMITED", "eSWING2": "eLIMITED"},
            "swing_limit": {"yAngle": sz, "zAngle": sx},
            "twist_limit": {"lower": twist[0], "upper": twist[1]},
            "localPose0": {"p": pos, "q_xyzw": _xyzw(_engine_axes(parent_rot))},
            "localPose1": {"p": [0.0, 0.0, 0.0], "q_xyzw": _xyzw(_engine_axes(child_rot))},
        }
    if engine == "unreal":
        return {
            "Swing1Motion": "ACM_Limited",
            "Swing2Motion": "ACM_Limited",
            "TwistMotion": "ACM_Limited",
            "Swing1LimitDegrees": math.degrees(sx),
            "Swing2LimitDegrees": math.degrees(sz),
            "TwistLimitDegrees": math.degrees(twist[1]),
            "frame_in_parent": {"position": pos, "rotation_wxyz": _list(_engine_axes(parent_rot))},
            "frame_in_bone": {"position": [0.0, 0.0, 0.0], "rotation_wxyz": _list(_engine_axes(child_rot))},
        }
    if engine == "jolt":
        parent_axes, child_axes = _engine_axes(parent_rot), _engine_axes(child_rot)
        return {
            "constraint": "SwingTwistConstraint",
            "mSwingType": "Pyramid" if name == "pyramid" else "Cone",
            "mNormalHalfConeAngle": sx,
            "mPlaneHalfConeAngle": sz,
            "mTwistMinAngle": twist[0],
            "mTwistMaxAngle": twist[1],
            "mPosition1": pos,
            "mTwistAxis1": _list(quaternion_rotate(parent_axes, [1.0, 0.0, 0.0])),
            "mPlaneAxis1": _list(quaternion_rotate(parent_axes, [0.0, 1.0, 0.0])),
            "mPosition2": [0.0, 0.0, 0.0],
            "mTwistAxis2": _list(quaternion_rotate(child_axes, [1.0, 0.0, 0.0])),
            "mPlaneAxis2": _list(quaternion_rotate(child_axes, [0.0, 1.0, 0.0])),
        }
    axis = region.cone_axis
    arc = rotation_from_direction_twist(axis, 0.0)
    if engine == "godot":
        return {
            "class": "JointLimitationCone3D",
            "angle": 2.0 * sx,
            "radius_range": sx / math.pi,
            "cone_axis": _list(axis),
            "rotation_offset_xyzw": _xyzw(arc),
        }
    if engine == "vrm":
        return {"VRMC_springBone_limit": {"specVersion": "1.0-draft", "limit": {"cone": {"angle": sx, "rotation": _xyzw(arc)}}}}
    if engine == "usd":
        return {
            "axis": "X",
            "coneAngle0Limit": math.degrees(sx),
            "coneAngle1Limit": math.degrees(sz),
            "rotX_low": math.degrees(twist[0]),
            "rotX_high": math.degrees(twist[1]),
            "localPos0": pos,
            "localRot0_wxyz": _list(_engine_axes(parent_rot)),
            "localPos1": [0.0, 0.0, 0.0],
            "localRot1_wxyz": _list(_engine_axes(child_rot)),
        }
    raise ValueError(f"unknown engine {engine!r}; known: {', '.join(ENGINES)}")


def bone_entry(engine, bone, target=el.TARGET_SHARE, break_margin=None, count=VOLUME_ROTATIONS):
    """One bone's entry of an export. ``bone`` is a mapping: ``name``, ``parent`` (or None),
    ``matrix`` and ``parent_matrix`` (4 x 4 armature-space rest matrices, the parent's None for a
    root), ``length``, ``limit`` (the learned :class:`~..joint.JointLimit`, or None) and
    ``samples`` (local rotations ``(N, 4)``). ``break_margin`` (degrees) overrides the
    model's or the default; ``count`` random rotations estimate the volumes."""
    if engine not in ENGINES:
        raise ValueError(f"unknown engine {engine!r}; known: {', '.join(ENGINES)}")
    position, parent_to_bone = _rest_frames(bone["matrix"], bone.get("parent_matrix"))
    limit, samples = bone.get("limit"), bone["samples"]
    regions = {
        name: el.fit_swing_twist(samples, shape, limit=limit, target=target, twist=twist)
        for name, shape, twist in ENGINES[engine]
    }
    approximations = {}
    for (name, region), fid in zip(regions.items(), fidelities(regions.values(), samples, limit, count=count)):
        params = engine_parameters(engine, name, region, position, parent_to_bone)
        params["frames"] = {
            "parent_rotation": _list(quaternion_multiply(parent_to_bone, region.frame)),
            "bone_rotation": _list(region.child_frame()),
        }
        params["fidelity"] = fid.to_dict()
        approximations[name] = params
    margin = el.break_margin_deg(limit) if break_margin is None else el.break_margin_deg(None, break_margin)
    entry = {
        "bone": str(bone["name"]),
        "parent": None if bone.get("parent") is None else str(bone["parent"]),
        "rest": {
            "matrix": np.asarray(bone["matrix"], dtype=float).tolist(),
            "length": float(bone.get("length", 0.0)),
            "parent_matrix": None
            if bone.get("parent_matrix") is None
            else np.asarray(bone["parent_matrix"], dtype=float).tolist(),
        },
        "joint": {"position": _list(position), "parent_to_bone": _list(parent_to_bone)},
        "break_margin_deg": margin,
        "samples": int(len(samples)),
        "approximations": approximations,
    }
    if engine == "json" and limit is not None:
        from ..serialize import limit_to_json

        entry["limit"] = json.loads(limit_to_json(limit))
    return entry


def rig_export(engine, armature, bones, target=el.TARGET_SHARE, break_margin=None, count=VOLUME_ROTATIONS, progress=None):
    """The export of a rig as plain data: ``bones`` as for :func:`bone_entry`. ``progress(done)``,
    when given, is called after each bone (fitting a bone's approximations takes a fraction of
    a second)."""
    if not 0.0 < float(target) <= 1.0:
        raise ValueError(f"target share must be in (0, 1], got {target!r}")
    entries = []
    for bone in bones:
        entries.append(bone_entry(engine, bone, target, break_margin, count))
        if progress is not None:
            progress(len(entries))
    return {
        "format": FORMAT,
        "version": VERSION,
        "engine": engine,
        "armature": str(armature),
        "target_share": float(target),
        "conventions": dict(CONVENTIONS),
        "bones": entries,
    }


def export_text(data):
    """The file text of an export made by :func:`rig_export`: ``.usda`` for USD, JSON else."""
    if data["engine"] == "usd":
        return usda_text(data)
    return json.dumps(data, indent=1, allow_nan=False) + "\n"


def read_export(text):
    """A JSON export read back and checked (format, version, the bones' entries); a
    ``ValueError`` says what is wrong."""
    try:
        data = json.loads(text)
    except (TypeError, ValueError, RecursionError) as err:
        raise ValueError(f"not a Joint Limits engine export: invalid JSON ({err})") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise ValueError(f"not a Joint Limits engine export (missing format {FORMAT!r})")
    if data.get("version") != VERSION:
        raise ValueError(f"unsupported engine export version {data.get('version')!r} (this build reads {VERSION})")
    if data.get("engine") not in ENGINES or not isinstance(data.get("bones"), list):
        raise ValueError(f"engine export: 'engine' must be one of {', '.join(ENGINES)} and 'bones' a list")
    for i, entry in enumerate(data["bones"]):
        if not isinstance(entry, dict) or not isinstance(entry.get("bone"), str):
            raise ValueError(f"engine export: bone entry {i} has no bone name")
        for key in ("rest", "joint", "break_margin_deg", "approximations"):
            if key not in entry:
                raise ValueError(f"engine export: bone {entry['bone']!r} has no {key!r}")
    return data


# -- USD ----------------------------------------------------------------------------------------
def usd_name(name):
    """A valid USD prim name for a bone name (letters, digits and ``_``; not starting with a
    digit)."""
    out = "".join(c if c.isalnum() and c.isascii() else "_" for c in str(name))
    return out if out and not out[0].isdigit() else "_" + out


def _tuple(values, fmt=repr):
    return "(" + ", ".join(fmt(float(v)) for v in values) + ")"


def _matrix4d(matrix):
    """USD's ``matrix4d`` of a Blender matrix: USD multiplies row vectors, so the transpose."""
    rows = np.asarray(matrix, dtype=float).T
    return "(" + ", ".join(_tuple(row) for row in rows) + ")"


def usda_text(data):
    """A ``.usda`` layer: one ``Xform`` per body (each exported bone and its parent, at its rest
    matrix, with ``PhysicsRigidBodyAPI``) and one ``PhysicsSphericalJoint`` per bone: cone about
    its X axis, the twist range as a ``PhysicsLimitAPI:rotX`` (UsdPhysics defines twist limits
    on generic joints only: a reader that honours the spherical joint alone leaves twist free),
    the break margin and fidelity as ``jointLimits:`` attributes."""
    bones = data["bones"]
    matrices = {entry["parent"]: entry["rest"]["parent_matrix"] for entry in bones if entry["parent"] is not None}
    matrices.update({entry["bone"]: entry["rest"]["matrix"] for entry in bones})
    parents = {entry["parent"] for entry in bones if entry["parent"] is not None}
    root = usd_name(data["armature"])
    lines = [
        "#usda 1.0",
        "(",
        f'    doc = "Joint Limits engine export of {data["armature"]} (format {FORMAT} {VERSION})"',
        "    metersPerUnit = 1",
        '    upAxis = "Z"',
        ")",
        "",
        f'def Xform "{root}"',
        "{",
        '    def Scope "Bodies"',
        "    {",
    ]
    exported = [entry["bone"] for entry in bones]
    names = exported + sorted(parents - set(exported))
    for name in names:
        lines += [
            f'        def Xform "{usd_name(name)}" (',
            '            prepend apiSchemas = ["PhysicsRigidBodyAPI"]',
            "        )",
        ]
        lines += ["        {", f'            custom string jointLimits:bone = "{_escape(name)}"']
        if matrices.get(name) is not None:
            lines += [
                f"            matrix4d xformOp:transform = {_matrix4d(matrices[name])}",
                '            uniform token[] xformOpOrder = ["xformOp:transform"]',
            ]
        lines.append("        }")
    lines += ["    }", "", '    def Scope "Joints"', "    {"]
    for entry in bones:
        cone = entry["approximations"]["cone"]
        fid = cone["fidelity"]
        lines += [
            f'        def PhysicsSphericalJoint "{usd_name(entry["bone"])}" (',
            '            prepend apiSchemas = ["PhysicsLimitAPI:rotX"]',
            "        )",
            "        {",
        ]
        if entry["parent"] is not None:
            lines.append(f"            rel physics:body0 = </{root}/Bodies/{usd_name(entry['parent'])}>")
        lines += [
            f"            rel physics:body1 = </{root}/Bodies/{usd_name(entry['bone'])}>",
            f'            uniform token physics:axis = "{cone["axis"]}"',
            f"            float physics:coneAngle0Limit = {cone['coneAngle0Limit']!r}",
            f"            float physics:coneAngle1Limit = {cone['coneAngle1Limit']!r}",
            f"            float limit:rotX:physics:low = {cone['rotX_low']!r}",
            f"            float limit:rotX:physics:high = {cone['rotX_high']!r}",
            f"            point3f physics:localPos0 = {_tuple(cone['localPos0'])}",
            f"            quatf physics:localRot0 = {_tuple(cone['localRot0_wxyz'])}",
            f"            point3f physics:localPos1 = {_tuple(cone['localPos1'])}",
            f"            quatf physics:localRot1 = {_tuple(cone['localRot1_wxyz'])}",
            f'            custom string jointLimits:bone = "{_escape(entry["bone"])}"',
            f"            custom double jointLimits:breakMarginDeg = {entry['break_margin_deg']!r}",
            f"            custom double jointLimits:sampleShare = {fid['sample_share']!r}",
            f"            custom double jointLimits:volume = {fid['volume']!r}",
        ]
        if fid["limit_volume"] is not None:
            lines.append(f"            custom double jointLimits:limitVolume = {fid['limit_volume']!r}")
        lines.append("        }")
    lines += ["    }", "}", ""]
    return "\n".join(lines)


def _escape(text):
    return str(text).replace("\\", "\\\\").replace('"', '\\"')
