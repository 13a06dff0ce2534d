# SPDX-License-Identifier: GPL-3.0-or-later
"""Engine approximations (limits/export/engine_limits.py), their files (limits/export/engine_export.py), the
shared fidelity (limits/export/fidelity.py) and the limit file's JSON schema: pure numpy."""

import base64
import json
import math
import re
from pathlib import Path
from urllib.parse import urljoin

import numpy as np
import pytest
from jsonschema import ValidationError
from jsonschema.validators import validator_for
from pxr import Sdf, Usd, UsdPhysics
from referencing import Registry, Resource

from limits.body.motion import range_of_motion
from limits.body.skeleton import humanoid_skeleton
from limits.export import engine_export as ee
from limits.export import engine_limits as el
from limits.export.fidelity import fidelity
from limits.geometry import quaternion as q_lib
from limits.geometry.swing_twist import rotation_from_direction_twist
from limits.joint import JointLimit
from limits.registry import model_class, model_kinds
from limits.serialize import limit_from_json, limit_to_json

SCHEMAS = Path(__file__).resolve().parents[3] / "limits" / "schema"
SCHEMA = json.loads((SCHEMAS / "joint_limit.schema.json").read_text())
EXPORT_SCHEMA = json.loads((SCHEMAS / "engine_export.schema.json").read_text())
#: The export schema's ``$ref: "joint_limit.schema.json"`` (the file beside it) resolves against its
#: ``$id``: the limit schema is registered at that address, so no reference goes to the network.
REGISTRY = Registry().with_resource(urljoin(EXPORT_SCHEMA["$id"], "joint_limit.schema.json"), Resource.from_contents(SCHEMA))
SHAPE_KINDS = ("box", "oriented_box", "ellipsoid", "kdop")


def validate(instance, schema):
    """Raise jsonschema's :class:`ValidationError` unless ``instance`` matches ``schema``, checked by
    the validator of the draft the schema declares (``$schema``: 2020-12)."""
    validator_for(schema)(schema, registry=REGISTRY).validate(instance)


def _reasons(error):
    """Every reason of a :class:`ValidationError`, a line ``path: message`` each, with those of each
    alternative of a ``oneOf`` none of which matched (``error.context``)."""
    return "\n".join([f"{error.json_path}: {error.message}", *map(_reasons, error.context)])


def _cone_samples(count, half_angle, twist, tilt=(0.4, 0.0, 0.2), seed=1):
    """Local rotations with directions uniform in a cone of ``half_angle`` about the bone's +Y
    turned by ``tilt`` (exp map), twists uniform in ``[-twist, twist]``: a region of known volume
    ``(1 - cos a) / 2 * twist / pi`` (Haar measure: uniform direction times uniform twist)."""
    rng = np.random.default_rng(seed)
    cos = rng.uniform(math.cos(half_angle), 1.0, count)
    phi = rng.uniform(0.0, 2.0 * math.pi, count)
    sin = np.sqrt(1.0 - cos**2)
    directions = np.stack((sin * np.cos(phi), cos, sin * np.sin(phi)), axis=-1)
    local = rotation_from_direction_twist(directions, rng.uniform(-twist, twist, count))
    turn = q_lib.quaternion_from_exp_map(np.array(tilt))
    return q_lib.quaternion_multiply(turn, local), turn


def _about(axis, angles):
    return q_lib.quaternion_from_exp_map(np.outer(np.asarray(angles, dtype=float), axis))


@pytest.mark.parametrize("shape", el.SWING_SHAPES)
def test_a_fit_to_samples_in_a_known_cone_accepts_the_target_share_and_finds_the_cone(shape):
    samples, turn = _cone_samples(3000, 0.5, 0.3)
    region = el.fit_swing_twist(samples, shape)
    share = fidelity(region, samples, count=2000).sample_share
    assert share >= el.TARGET_SHARE
    assert share < 0.999  # the target share, not every outlier
    axis = q_lib.quaternion_rotate(turn, [0.0, 1.0, 0.0])
    assert math.degrees(math.acos(min(1.0, float(region.cone_axis @ axis)))) < 1.5
    # the ranges are the cone's and the twist's (99% of uniform samples reach 99.5% of them)
    assert np.all(np.abs(region.swing - 0.5) < (0.04 if shape == "pyramid" else 0.01))
    np.testing.assert_allclose(region.twist, [-0.3, 0.3], atol=0.005)


def test_volume_of_the_fitted_cone_is_the_analytic_cone_volume():
    samples, _ = _cone_samples(3000, 0.5, 0.3)
    analytic = (1.0 - math.cos(0.5)) / 2.0 * 0.3 / math.pi
    circle = el.fit_swing_twist(samples, "circle")
    fitted = fidelity(circle, samples).volume
    # the fitted cone's own analytic volume, and the known cone's within the fit's few percent
    own = (1.0 - math.cos(circle.swing[0])) / 2.0 * (circle.twist[1] - circle.twist[0]) / (2.0 * math.pi)
    assert fitted == pytest.approx(own, rel=0.02)
    assert fitted == pytest.approx(analytic, rel=0.05)
    # against a learned limit: the ratio is the two volumes' (same draws)
    learned = JointLimit.fit(samples, kind="kdop")
    with_limit = fidelity(circle, samples, learned)
    assert with_limit.volume == fitted
    assert with_limit.volume_ratio == pytest.approx(fitted / with_limit.limit_volume)


def _swing_at(shape, u, v):
    """The swing quaternion ``(w, sx, 0, sz)`` whose coordinates in ``shape``'s measure are
    ``(u, v)``, built from each engine's formula the other way round."""
    if shape in ("quarter_angle", "tan_quarter"):
        tx, tz = (math.tan(u / 4), math.tan(v / 4)) if shape == "quarter_angle" else (u, v)
        n = 1 + tx * tx + tz * tz  # quaternion from the tangents of the quarter angles
        return np.array([(2 - n) / n, 2 * tx / n, 0.0, 2 * tz / n])
    if shape == "sin_half":
        return np.array([math.sqrt(1 - u * u - v * v), u, 0.0, v])
    tx, tz = math.tan(u / 2), math.tan(v / 2)  # pyramid: half angles atan2(s, w)
    w = 1 / math.sqrt(1 + tx * tx + tz * tz)
    return np.array([w, tx * w, 0.0, tz * w])


@pytest.mark.parametrize("shape", ["quarter_angle", "tan_quarter", "sin_half", "pyramid"])
def test_each_swing_shape_measures_a_swing_as_its_engine_does(shape):
    """On a frame axis the limit is the angle; on the diagonal the ellipses (PhysX 5: angles from
    the quarter-angle tangents, PhysX 3: the tangents, Jolt's cone: quaternion components) and
    Jolt's pyramid (each half angle alone) differ."""
    region = el.SwingTwistRegion([1.0, 0, 0, 0], 0.0, [0.6, 0.3], [-0.2, 0.2], shape)
    for axis, limit in (([1.0, 0, 0], 0.6), ([0, 0, 1.0], 0.3)):
        assert region.contains(_about(axis, [limit - 1e-6, -(limit - 1e-6)])).all()
        assert not region.contains(_about(axis, [limit + 1e-6, -(limit + 1e-6)])).any()
    a, b = (el.angle_to_measure(angle, shape) for angle in (0.6, 0.3))
    for scale, ellipse_inside in ((0.7, True), (0.8, False)):  # 2 * 0.7^2 < 1 < 2 * 0.8^2
        swing = _swing_at(shape, scale * a, scale * b)
        np.testing.assert_allclose(el.swing_coordinates(swing[1], swing[3], swing[0], shape), (scale * a, scale * b), atol=1e-12)
        assert region.contains(swing) == (ellipse_inside or shape == "pyramid")
    assert not region.contains(_about([0, 1.0, 0], [0.25]))  # twist beyond 0.2


def test_an_ellipse_follows_the_samples_spread_and_engines_name_its_axes():
    rng = np.random.default_rng(4)
    swing = np.stack((rng.uniform(-0.7, 0.7, 2000), np.zeros(2000), rng.uniform(-0.2, 0.2, 2000)), axis=-1)
    samples = q_lib.quaternion_from_exp_map(swing)
    region = el.fit_swing_twist(samples, "quarter_angle")
    wide, narrow = sorted(region.swing)[::-1]
    assert wide > 0.6 and narrow < 0.35
    # the frame's X is the wide axis (the principal axis comes first), up to its sign
    x_axis = q_lib.quaternion_rotate(region.frame, [1.0, 0, 0])
    assert abs(x_axis[0]) > 0.99 and region.swing[0] == wide
    params = ee.engine_parameters("physx", "cone", region, np.zeros(3), np.array([1.0, 0, 0, 0]))
    assert params["swing_limit"] == {"yAngle": region.swing[1], "zAngle": region.swing[0]}
    unreal = ee.engine_parameters("unreal", "cone", region, np.zeros(3), np.array([1.0, 0, 0, 0]))
    assert unreal["Swing1LimitDegrees"] == pytest.approx(math.degrees(region.swing[0]))
    # engine X is the bone's Y (the twist axis): the child frame's engine X points along the bone
    jolt = ee.engine_parameters("jolt", "cone", region, np.zeros(3), np.array([1.0, 0, 0, 0]))
    np.testing.assert_allclose(jolt["mTwistAxis2"], [0.0, 1.0, 0.0], atol=1e-12)
    np.testing.assert_allclose(
        q_lib.quaternion_rotate(el.BONE_FROM_ENGINE, [[1.0, 0, 0], [0, 1.0, 0], [0, 0, 1.0]]),
        np.roll(np.eye(3), 1, axis=1),
        atol=1e-12,
    )


def test_the_fit_keeps_to_the_samples_the_learned_limit_accepts():
    samples, _ = _cone_samples(2000, 0.4, 0.2, tilt=(0.0, 0.0, 0.0))
    outliers = _about([1.0, 0, 0], np.linspace(1.8, 2.2, 40))  # far swings the limit leaves out
    cloud = np.concatenate((samples, outliers))

    class Learned:
        def contains(self, q):
            return q_lib.quaternion_angle(q, [1.0, 0, 0, 0]) < 1.0

    plain = el.fit_swing_twist(cloud, "circle", target=0.999)
    kept = el.fit_swing_twist(cloud, "circle", limit=Learned(), target=0.999)
    assert plain.swing[0] > 1.0 > kept.swing[0]


def test_bullet_angles_are_those_of_the_inverse_as_rx_ry_rz_and_the_euler_box_holds_its_share():
    rng = np.random.default_rng(2)
    angles = rng.uniform([-3.0, -1.5, -3.0], [3.0, 1.5, 3.0], size=(500, 3))
    inverse = q_lib.quaternion_from_euler(angles, "ZYX")  # Blender 'ZYX': Rx Ry Rz
    np.testing.assert_allclose(el.bullet_euler_from_quaternion(q_lib.quaternion_conjugate(inverse)), angles, atol=1e-9)
    # the same as Blender's 'XYZ' Euler angles negated
    rotations = q_lib.quaternion_from_euler(-angles, "XYZ")
    np.testing.assert_allclose(el.bullet_euler_from_quaternion(rotations), angles, atol=1e-9)
    samples, _ = _cone_samples(2000, 0.5, 0.3)
    box = el.fit_euler(samples)
    assert fidelity(box, samples, count=2000).sample_share >= el.TARGET_SHARE
    assert np.all(box.lower < 0) and np.all(box.upper > 0)


def _bone(limit, samples, name="upper.L", parent="root"):
    matrix = np.eye(4)
    matrix[:3, :3] = q_lib.matrix_from_quaternion(q_lib.quaternion_from_exp_map([0.0, 0.0, 0.3]))
    matrix[:3, 3] = [0.1, 0.0, 1.2]
    parent_matrix = np.eye(4)
    parent_matrix[:3, 3] = [0.0, 0.0, 1.0]
    return {
        "name": name,
        "parent": parent,
        "matrix": matrix,
        "parent_matrix": parent_matrix,
        "length": 0.3,
        "limit": limit,
        "samples": samples,
    }


@pytest.fixture(scope="module")
def cone_bone():
    samples, _ = _cone_samples(400, 0.5, 0.3)
    return _bone(JointLimit.fit(samples, kind="kdop"), samples)


@pytest.mark.parametrize("engine", [e for e in ee.ENGINES if e != "usd"])
def test_json_exports_read_back_with_the_same_numbers(engine, cone_bone):
    data = ee.rig_export(engine, "Rig", [cone_bone], count=2000)
    back = ee.read_export(ee.export_text(data))
    assert back == json.loads(json.dumps(data))  # every number bit for bit
    validate(back, EXPORT_SCHEMA)
    entry = back["bones"][0]
    assert entry["bone"] == "upper.L" and entry["parent"] == "root"
    assert entry["break_margin_deg"] == el.DEFAULT_BREAK_MARGIN_DEG
    np.testing.assert_allclose(entry["joint"]["position"], [0.1, 0.0, 0.2], atol=1e-12)  # the head in the parent's frame
    for approx in entry["approximations"].values():
        fid = approx["fidelity"]
        assert fid["sample_share"] >= el.TARGET_SHARE and fid["samples"] == 400
        assert 0 < fid["volume"] < 1 and fid["volume_ratio"] == pytest.approx(fid["volume"] / fid["limit_volume"])


def test_the_export_says_how_far_it_got(cone_bone):
    done = []
    data = ee.rig_export("jolt", "Rig", [cone_bone, cone_bone, cone_bone], count=500, progress=done.append)
    assert done == [1, 2, 3] and len(data["bones"]) == 3


def test_each_engine_writes_its_own_units(cone_bone):
    """Degrees where the engine takes degrees, the same angle in radians elsewhere."""
    out = {
        e: ee.rig_export(e, "Rig", [cone_bone], count=2000)["bones"][0]["approximations"]["cone"]
        for e in ("physx", "unreal", "usd", "jolt")
    }
    z_angle = out["physx"]["swing_limit"]["zAngle"]
    assert out["unreal"]["Swing1LimitDegrees"] == pytest.approx(math.degrees(z_angle))
    assert out["usd"]["coneAngle0Limit"] == pytest.approx(math.degrees(z_angle))
    assert out["unreal"]["TwistLimitDegrees"] == pytest.approx(math.degrees(out["physx"]["twist_limit"]["upper"]))
    assert 0.4 < z_angle < 0.6 and 0.4 < out["jolt"]["mNormalHalfConeAngle"] < 0.6


def _usda_values(text):
    """``{joint prim: {attribute: value}}`` of the joints of a .usda written by the export."""
    joints = {}
    for name, body in re.findall(r'def PhysicsSphericalJoint "(\w+)" \([^)]*\)\s*\{(.*?)\n        \}', text, re.S):
        values = {}
        for key, value in re.findall(r"^\s+(?:custom |uniform )?\w+(?:\[\])? ([\w:]+) = (.+)$", body, re.M):
            value = value.strip()
            if value.startswith("("):
                values[key] = [float(v) for v in value.strip("()").split(",")]
            elif value.startswith('"'):
                values[key] = json.loads(value)
            elif not value.startswith("<"):
                values[key] = float(value)
        joints[name] = values
    return joints


def test_the_usd_layer_holds_the_numbers_of_the_export(cone_bone):
    data = ee.rig_export("usd", "Rig", [cone_bone], count=2000)
    text = ee.export_text(data)
    assert text.startswith("#usda 1.0\n")
    joints = _usda_values(text)
    cone = data["bones"][0]["approximations"]["cone"]
    values = joints["upper_L"]
    assert values["physics:coneAngle0Limit"] == cone["coneAngle0Limit"]
    assert values["physics:coneAngle1Limit"] == cone["coneAngle1Limit"]
    assert [values["limit:rotX:physics:low"], values["limit:rotX:physics:high"]] == [cone["rotX_low"], cone["rotX_high"]]
    assert values["physics:localRot0"] == cone["localRot0_wxyz"] and values["physics:localPos0"] == cone["localPos0"]
    assert values["jointLimits:bone"] == "upper.L" and values["jointLimits:breakMarginDeg"] == el.DEFAULT_BREAK_MARGIN_DEG
    assert values["physics:axis"] == "X"
    assert "rel physics:body0 = </Rig/Bodies/root>" in text and 'def Xform "root"' in text


def _humanoid_bones():
    """The embedded demo's rig as the export reads it: the 21-bone humanoid (limits/body/skeleton.py)
    at rest, as rig/io/humanoid.py builds it, each bone with its samples of the demo's
    range-of-motion take (no learned limit: the approximations are fitted to the samples)."""
    skeleton = humanoid_skeleton()
    take = range_of_motion(skeleton, frames=600)

    def rest(i):
        matrix = np.eye(4)
        matrix[:3, :3] = q_lib.matrix_from_quaternion(skeleton.rest_rotations[i])
        matrix[:3, 3] = skeleton.heads[i]
        return matrix

    return [
        {
            "name": name,
            "parent": None if skeleton.parents[i] < 0 else skeleton.names[skeleton.parents[i]],
            "matrix": rest(i),
            "parent_matrix": None if skeleton.parents[i] < 0 else rest(skeleton.parents[i]),
            "length": float(np.linalg.norm(skeleton.tails[i] - skeleton.heads[i])),
            "limit": None,
            "samples": take[:, i],
        }
        for i, name in enumerate(skeleton.names)
    ]


def _usd_physics(path):
    """The stage of the layer at ``path`` and what Pixar's UsdPhysics parser reads from it:
    ``{object type name: {prim path: description}}``."""
    stage = Usd.Stage.Open(str(path))
    parsed = UsdPhysics.UsdPhysicsLoadStageFromPrimRange(stage, ["/"])  # (26.5+; LoadUsdPhysicsFromRange before, now deprecated)
    return stage, {kind.name: {str(p): desc for p, desc in zip(paths, descs)} for kind, (paths, descs) in parsed.items()}


def test_usd_physics_reads_the_humanoids_bodies_joints_and_limits_as_written(tmp_path):
    data = ee.rig_export("usd", "Humanoid", _humanoid_bones(), count=1000)
    path = tmp_path / "Humanoid.usda"
    path.write_text(ee.export_text(data), encoding="utf-8")
    stage, parsed = _usd_physics(path)
    assert sorted(parsed) == ["RigidBody", "SphericalJoint"]
    bodies, joints = parsed["RigidBody"], parsed["SphericalJoint"]
    assert len(bodies) == 21 and len(joints) == 21  # each bone a body and a joint (the hips' to the world)
    f32 = np.float32  # USD's float attributes hold the written doubles rounded to float32
    for entry in data["bones"]:
        name, cone = ee.usd_name(entry["bone"]), entry["approximations"]["cone"]
        body = bodies[f"/Humanoid/Bodies/{name}"]
        assert body.rigidBodyEnabled and not body.kinematicBody
        rest = np.asarray(entry["rest"]["matrix"])  # written transposed (USD's row vectors): read back as Blender's
        np.testing.assert_allclose(list(body.position), rest[:3, 3], atol=1e-6)
        rotation = [body.rotation.GetReal(), *body.rotation.GetImaginary()]
        assert q_lib.quaternion_angle(rotation, q_lib.quaternion_from_matrix(rest[:3, :3])) < 1e-5, name

        joint = joints[f"/Humanoid/Joints/{name}"]
        parent = entry["parent"]
        assert joint.body0 == (Sdf.Path() if parent is None else Sdf.Path(f"/Humanoid/Bodies/{ee.usd_name(parent)}"))
        assert joint.body1 == Sdf.Path(f"/Humanoid/Bodies/{name}")
        assert joint.jointEnabled and joint.axis == UsdPhysics.Axis.X and cone["axis"] == "X"
        assert joint.limit.enabled
        assert (joint.limit.lower, joint.limit.upper) == (f32(cone["coneAngle0Limit"]), f32(cone["coneAngle1Limit"]))
        assert 0 < joint.limit.lower < 180 and 0 < joint.limit.upper < 180  # degrees
        assert list(joint.localPose0Position) == list(map(f32, cone["localPos0"]))
        assert list(joint.localPose1Position) == list(map(f32, cone["localPos1"]))
        for quat, wxyz in (
            (joint.localPose0Orientation, cone["localRot0_wxyz"]),
            (joint.localPose1Orientation, cone["localRot1_wxyz"]),
        ):
            np.testing.assert_allclose([quat.GetReal(), *quat.GetImaginary()], wxyz, atol=1e-6)  # normalised in float32
        # UsdPhysics gives twist limits to generic joints only: the parser's spherical joint has
        # none, so the twist range is read through its LimitAPI (a PhysX-style reader does)
        twist = UsdPhysics.LimitAPI(stage.GetPrimAtPath(f"/Humanoid/Joints/{name}"), "rotX")
        assert (twist.GetLowAttr().Get(), twist.GetHighAttr().Get()) == (f32(cone["rotX_low"]), f32(cone["rotX_high"]))
        assert cone["rotX_low"] < 0 < cone["rotX_high"]


def test_break_margin_override_and_bad_values(cone_bone):
    data = ee.rig_export("physx", "Rig", [cone_bone], break_margin=25.0, count=1000)
    assert data["bones"][0]["break_margin_deg"] == 25.0
    with pytest.raises(ValueError, match="break margin"):
        ee.rig_export("physx", "Rig", [cone_bone], break_margin=-1.0, count=1000)


@pytest.mark.parametrize(
    "text, match",
    [
        ("{not json", "invalid JSON"),
        ('{"format": "joint_limits", "version": 1}', "not a Joint Limits engine export"),
        ('{"format": "joint_limits_engine_export", "version": 99}', "unsupported engine export version 99"),
        ('{"format": "joint_limits_engine_export", "version": 1, "engine": "havok", "bones": []}', "'engine' must be one of"),
        ('{"format": "joint_limits_engine_export", "version": 1, "engine": "physx", "bones": [{"bone": "a"}]}', "has no 'rest'"),
    ],
)
def test_corrupt_exports_are_refused_with_a_clear_error(text, match):
    with pytest.raises(ValueError, match=match):
        ee.read_export(text)


def test_bad_input_to_the_fit_and_the_export_is_refused(cone_bone):
    with pytest.raises(ValueError, match="empty or not"):
        el.fit_swing_twist(np.zeros((0, 4)))
    with pytest.raises(ValueError, match="non-finite"):
        el.fit_swing_twist(np.full((3, 4), np.nan))
    with pytest.raises(ValueError, match="target share"):
        el.fit_swing_twist(cone_bone["samples"], target=1.5)
    with pytest.raises(ValueError, match="swing shape"):
        el.fit_swing_twist(cone_bone["samples"], "star")
    with pytest.raises(ValueError, match="unknown engine 'havok'"):
        ee.rig_export("havok", "Rig", [cone_bone])
    with pytest.raises(ValueError, match="rest matrix"):
        ee.rig_export("physx", "Rig", [dict(cone_bone, matrix=np.eye(3))])


# -- every model kind: its file matches the schema, and it exports --------------------------------
@pytest.fixture(scope="module")
def fitted_kinds():
    """One limit per stored kind and mode, fitted to one small cloud (``auto`` writes one of
    these kinds and is left out)."""
    rng = np.random.default_rng(1)
    cloud = q_lib.quaternion_from_exp_map(rng.normal(size=(200, 3)) * [0.4, 0.2, 0.3] + [0.3, 0.0, 0.0])
    out = {}
    for kind, _, _ in model_kinds():
        if kind == "auto":
            continue
        for mode in ("FULL", "SWING_TWIST") if kind in SHAPE_KINDS else (None,):
            options = {} if mode is None else {"mode": mode}
            out[(kind, mode)] = JointLimit.fit(cloud, kind=kind, **options)
    return cloud, out


#: Keywords with no effect on validation that the schemas may use (JSON Schema 2020-12).
ANNOTATIONS = {"$schema", "$id", "$defs", "$comment", "title", "description", "default", "examples"}
SCHEMA_MAPS = {"properties", "patternProperties", "$defs", "dependentSchemas"}  # name -> subschema
SCHEMA_LISTS = {"allOf", "anyOf", "oneOf", "prefixItems"}


def _unknown_keywords(schema, known, path="#"):
    """Keywords the validator would silently ignore (a misspelt 'requried' checks nothing)."""
    unknown = [f"{path}/{key}" for key in schema if key not in known]
    for key, value in schema.items():
        if key in SCHEMA_MAPS:
            subs = [(f"{path}/{key}/{name}", sub) for name, sub in value.items()]
        elif key in SCHEMA_LISTS:
            subs = [(f"{path}/{key}/{i}", sub) for i, sub in enumerate(value)]
        elif isinstance(value, dict) and key not in ("const", "enum", "default"):
            subs = [(f"{path}/{key}", value)]  # items, additionalProperties, not, ...
        else:
            subs = []
        for sub_path, sub in subs:
            unknown += _unknown_keywords(sub, known, sub_path)
    return unknown


@pytest.mark.parametrize("schema", [SCHEMA, EXPORT_SCHEMA], ids=["joint_limit", "engine_export"])
def test_the_schemas_are_valid_json_schema_with_no_unknown_keyword(schema):
    validator = validator_for(schema)
    validator.check_schema(schema)  # against the draft's meta-schema
    assert _unknown_keywords(schema, set(validator.VALIDATORS) | ANNOTATIONS) == []


def test_the_schema_names_every_stored_kind_and_its_parameters():
    alternatives = [ref["$ref"].rsplit("/", 1)[1] for ref in SCHEMA["properties"]["model"]["oneOf"]]
    assert set(alternatives) | {"auto"} == {kind for kind, _, _ in model_kinds()}
    for kind in alternatives:
        params = SCHEMA["$defs"][kind]["properties"]["params"]
        cls = model_class(kind)
        assert set(params["required"]) == set(cls.PARAM_SHAPES), kind
        assert set(params["properties"]) == set(cls.PARAM_SHAPES) | set(cls.DERIVED_PARAMS), kind


def test_every_kind_written_by_serialize_matches_the_schema(fitted_kinds):
    _, limits = fitted_kinds
    for limit in limits.values():
        validate(json.loads(limit_to_json(limit)), SCHEMA)  # raises ValidationError naming the path
    assert len(limits) == 13  # 8 kinds, 5 of them in two modes


def test_files_of_earlier_versions_still_match_the_schema(fitted_kinds):
    """Earlier versions wrote large arrays as plain base64 ('__base64__'); they are still read,
    and the schema still describes them."""
    limit = fitted_kinds[1][("sdf_grid", None)]
    data = json.loads(limit_to_json(limit))
    phi = np.asarray(limit.model.params["phi"], dtype="<f4")
    data["model"]["params"]["phi"] = {
        "__base64__": base64.b64encode(phi.tobytes()).decode("ascii"),
        "shape": list(phi.shape),
        "dtype": "<f4",
    }
    validate(data, SCHEMA)
    np.testing.assert_array_equal(limit_from_json(json.dumps(data)).model.params["phi"], limit.model.params["phi"])


@pytest.mark.parametrize(
    "change, match",
    [
        (lambda d: d.update(version=2), r"^\$\.version: 1 was expected$"),
        (lambda d: d["model"].update(kind="cube"), r"^\$\.model: .* is not valid under any of the given schemas$"),
        (lambda d: d.pop("centre"), r"^\$: 'centre' is a required property$"),
        (lambda d: d["model"]["params"].pop("maxs"), r"^\$\.model\.params: 'maxs' is a required property$"),
        (lambda d: d["model"]["config"].update(mode="HALF"), r"^\$\.model\.config\.mode: 'HALF' is not one of"),
        (lambda d: d["reference"].update(shape=[3]), r"^\$\.reference\.shape: "),
    ],
)
def test_the_schema_refuses_what_the_reader_refuses(fitted_kinds, change, match):
    data = json.loads(limit_to_json(fitted_kinds[1][("box", "SWING_TWIST")]))
    change(data)
    with pytest.raises(ValidationError) as refused:
        validate(data, SCHEMA)
    assert re.search(match, _reasons(refused.value), re.MULTILINE), _reasons(refused.value)


def test_every_kind_exports_to_an_engine(fitted_kinds):
    cloud, limits = fitted_kinds
    bones = [_bone(limit, cloud, name=f"{kind}_{mode}") for (kind, mode), limit in limits.items()]
    data = ee.rig_export("json", "Rig", bones, count=1000)
    validate(json.loads(ee.export_text(data)), EXPORT_SCHEMA)
    for entry, limit in zip(data["bones"], limits.values()):
        assert entry["approximations"]["cone"]["fidelity"]["limit_volume"] > 0
        back = limit_from_json(json.dumps(entry["limit"]))  # the learned limit travels whole in JSON exports
        assert back.model.kind == limit.model.kind and limit_to_json(back) == limit_to_json(limit)
        validate(entry["limit"], SCHEMA)
