# SPDX-License-Identifier: GPL-3.0-or-later
"""The numpy conversions agree with Blender's own (mathutils, Bone.matrix_local).

mathutils works in float32: tolerances are about 1e-5.
"""

import blender_session

blender_session.isolate_user_folders()  # (conftest did, for the whole run; this file imports bpy itself)

import bpy  # noqa: E402
import mathutils  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from limits.body.skeleton import bone_frame_from_head_tail_roll, humanoid_skeleton  # noqa: E402
from limits.constants import EULER_ORDERS  # noqa: E402
from limits.geometry.quaternion import (  # noqa: E402
    axis_angle_from_quaternion,
    euler_from_matrix,
    euler_from_quaternion,
    exp_map_from_quaternion,
    matrix_from_quaternion,
    quaternion_from_axis_angle,
    quaternion_from_euler,
    quaternion_from_exp_map,
    quaternion_from_matrix,
    quaternion_random,
    quaternion_short_way,
    quaternion_toward,
)

TOL = 1e-5
N = 500


@pytest.fixture(scope="module")
def rotations():
    return quaternion_random(N, np.random.default_rng(2024))


def cover_gap(a, b):
    """Largest 4D gap between ``b`` and the cover of ``a`` nearest it."""
    return np.max(np.abs(quaternion_toward(np.asarray(a, float), np.asarray(b, float)) - b))


@pytest.mark.parametrize("order", EULER_ORDERS)
def test_euler_from_quaternion_matches(order, rotations):
    ours = euler_from_quaternion(rotations, order)
    theirs = np.array([tuple(mathutils.Quaternion(q).to_euler(order)) for q in rotations])
    np.testing.assert_allclose(ours, theirs, atol=TOL)
    from_matrix = np.array([tuple(mathutils.Matrix(m).to_euler(order)) for m in matrix_from_quaternion(rotations)])
    np.testing.assert_allclose(euler_from_matrix(matrix_from_quaternion(rotations), order), from_matrix, atol=TOL)


@pytest.mark.parametrize("order", EULER_ORDERS)
def test_quaternion_from_euler_matches(order):
    euler = np.random.default_rng(7).uniform(-2 * np.pi, 2 * np.pi, (N, 3))
    ours = quaternion_from_euler(euler, order)
    theirs = np.array([tuple(mathutils.Euler(e, order).to_quaternion()) for e in euler])
    assert cover_gap(ours, theirs) < TOL
    mats = np.array([np.array(mathutils.Euler(e, order).to_matrix()) for e in euler])
    np.testing.assert_allclose(matrix_from_quaternion(ours), mats, atol=TOL)


def test_matrices_match(rotations):
    theirs = np.array([np.array(mathutils.Quaternion(q).to_matrix()) for q in rotations])
    np.testing.assert_allclose(matrix_from_quaternion(rotations), theirs, atol=TOL)
    back = np.array([tuple(mathutils.Matrix(m).to_quaternion()) for m in theirs])
    assert cover_gap(quaternion_from_matrix(theirs), back) < TOL


def test_axis_angle_matches(rotations):
    # Blender keeps the cover (angles up to 2 pi); ours takes the short way. Same rotations,
    # identical numbers on the w >= 0 cover.
    short = quaternion_short_way(rotations)
    ours = axis_angle_from_quaternion(short)
    theirs = np.array([(q.to_axis_angle()[1], *q.to_axis_angle()[0]) for q in map(mathutils.Quaternion, short)])
    np.testing.assert_allclose(ours, theirs, atol=TOL)
    axis_angle = np.concatenate(
        (np.random.default_rng(8).uniform(-7, 7, (N, 1)), np.random.default_rng(9).normal(size=(N, 3))), -1
    )
    built = np.array([tuple(mathutils.Quaternion(a[1:], a[0])) for a in axis_angle])
    assert cover_gap(quaternion_from_axis_angle(axis_angle), built) < TOL
    identity = mathutils.Quaternion().to_axis_angle()
    np.testing.assert_allclose(axis_angle_from_quaternion([1.0, 0, 0, 0]), [identity[1], *identity[0]])


def test_exp_map_matches(rotations):
    ours = exp_map_from_quaternion(rotations)
    theirs = np.array([tuple(mathutils.Quaternion(q).to_exponential_map()) for q in rotations])
    np.testing.assert_allclose(ours, theirs, atol=TOL)
    vectors = np.random.default_rng(10).normal(size=(N, 3)) * 2
    built = np.array([tuple(mathutils.Quaternion(v)) for v in vectors])
    assert cover_gap(quaternion_from_exp_map(vectors), built) < TOL


# -- bone frames ---------------------------------------------------------------------------------------

SPECIAL_BONES = [
    ((0, 0, 0), (0, 1, 0), 0.0),
    ((0, 0, 0), (0, -1, 0), 0.0),
    ((0, 0, 0), (0, -1, 0), 0.7),
    ((1, 2, 3), (1, 1.5, 3), -2.0),
    ((0, 0, 0), (0, 0, 1), 0.0),
    ((0, 0, 0), (0, 0, -1), 1.2),
    ((0, 0, 0), (1, 0, 0), np.pi / 2),
    ((0, 0, 0), (-1, 0, 0), -np.pi / 2),
    ((0, 0, 0), (1e-5, -1, 0), 0.2),  # inside Blender's -Y threshold
    ((0, 0, 0), (3e-3, -1, 1e-3), 0.2),  # series expansion zone
    ((0, 0, 0), (0.05, -1, 0.05), -0.4),
    ((0, 0, 0), (0.2, -1, -0.1), 3.0),
]


@pytest.fixture(scope="module")
def armature_bones():
    rng = np.random.default_rng(11)
    cases = list(SPECIAL_BONES)
    for _ in range(60):
        cases.append((tuple(rng.normal(size=3)), tuple(rng.normal(size=3)), float(rng.uniform(-np.pi, np.pi))))
    data = bpy.data.armatures.new("FrameCheck")
    obj = bpy.data.objects.new("FrameCheck", data)
    bpy.context.scene.collection.objects.link(obj)
    bpy.context.view_layer.objects.active = obj
    bpy.ops.object.mode_set(mode="EDIT")
    for k, (head, tail, roll) in enumerate(cases):
        bone = data.edit_bones.new(f"b{k}")
        bone.head, bone.tail, bone.roll = head, tail, roll
    bpy.ops.object.mode_set(mode="OBJECT")
    matrices = np.array([np.array(data.bones[f"b{k}"].matrix_local) for k in range(len(cases))])
    yield cases, matrices
    bpy.data.objects.remove(obj)
    bpy.data.armatures.remove(data)


def test_bone_frames_match_blender(armature_bones):
    cases, matrices = armature_bones
    heads = np.array([c[0] for c in cases], float)
    tails = np.array([c[1] for c in cases], float)
    rolls = np.array([c[2] for c in cases], float)
    ours = bone_frame_from_head_tail_roll(heads, tails, rolls)
    np.testing.assert_allclose(ours, matrices[:, :3, :3], atol=TOL)
    np.testing.assert_allclose(matrices[:, :3, 3], heads, atol=TOL)


def test_humanoid_rest_rotations_match_blender():
    sk = humanoid_skeleton()
    data = bpy.data.armatures.new("Humanoid")
    obj = bpy.data.objects.new("Humanoid", data)
    bpy.context.scene.collection.objects.link(obj)
    bpy.context.view_layer.objects.active = obj
    bpy.ops.object.mode_set(mode="EDIT")
    bones = []
    for b, name in enumerate(sk.names):
        bone = data.edit_bones.new(name)
        bone.head, bone.tail, bone.roll = sk.heads[b], sk.tails[b], sk.rolls[b]
        if sk.parents[b] >= 0:
            bone.parent = bones[sk.parents[b]]
        bones.append(bone)
    bpy.ops.object.mode_set(mode="OBJECT")
    try:
        theirs = np.array([tuple(data.bones[name].matrix_local.to_quaternion()) for name in sk.names])
        assert cover_gap(sk.rest_rotations, theirs) < TOL
        # Blender's own X-mirror name flip agrees with ours.
        from limits.body.skeleton import mirror_name

        for name in sk.names:
            flipped = bpy.utils.flip_name(name)
            assert (mirror_name(name) or name) == flipped
    finally:
        bpy.data.objects.remove(obj)
        bpy.data.armatures.remove(data)
