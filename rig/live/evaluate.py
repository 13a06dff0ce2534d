# SPDX-License-Identifier: GPL-3.0-or-later
"""The pose as Blender evaluates it (with constraints and IK), turned back into local channels."""

import numpy as np

from ...limits.geometry.quaternion import quaternion_from_matrix
from .pause import suspended


def bone_parents(obj):
    """Parent index of every bone (-1 for roots), in ``pose.bones`` order."""
    index = {b.name: i for i, b in enumerate(obj.pose.bones)}
    return np.array([index[b.parent.name] if b.parent else -1 for b in obj.pose.bones], dtype=np.intp)


def rest_matrices(obj):
    """Armature-space rest matrices ``(n, 4, 4)`` in ``pose.bones`` order."""
    bones = obj.data.bones
    m = np.empty(len(bones) * 16, dtype=np.float32)
    bones.foreach_get("matrix_local", m)
    rest = m.reshape(-1, 4, 4).transpose(0, 2, 1).astype(float)
    order = [bones.find(pb.name) for pb in obj.pose.bones]
    return rest[order]


def pose_matrices(obj):
    """Evaluated armature-space pose matrices ``(n, 4, 4)`` (constraints and IK included)."""
    m = np.empty(len(obj.pose.bones) * 16, dtype=np.float32)
    obj.pose.bones.foreach_get("matrix", m)
    return m.reshape(-1, 4, 4).transpose(0, 2, 1).astype(float)


def local_from_pose(pose, rest, parents):
    """Local (``matrix_basis``) matrices that reproduce ``pose (..., n, 4, 4)`` without constraints.

    ``pose = parent_pose @ inv(parent_rest) @ rest @ basis`` (the default inheritance).
    """
    parent_pose = np.where((parents >= 0)[:, None, None], pose[..., np.maximum(parents, 0), :, :], np.eye(4))
    parent_rest = np.where((parents >= 0)[:, None, None], rest[np.maximum(parents, 0)], np.eye(4))
    offset = np.linalg.inv(parent_rest) @ rest
    return np.linalg.inv(offset) @ np.linalg.inv(parent_pose) @ pose


def decompose(matrices):
    """``(location (..., 3), rotation (..., 4), scale (..., 3))`` of affine matrices."""
    loc = matrices[..., :3, 3]
    m3 = matrices[..., :3, :3]
    scale = np.linalg.norm(m3, axis=-2)
    scale = np.where(scale > 1e-12, scale, 1.0)
    rot = m3 / scale[..., None, :]
    flip = np.linalg.det(rot) < 0
    scale[..., 0] = np.where(flip, -scale[..., 0], scale[..., 0])
    rot[..., :, 0] = np.where(flip[..., None], -rot[..., :, 0], rot[..., :, 0])
    return loc, quaternion_from_matrix(rot), scale


def evaluated_local_transforms(obj, scene, frames, progress=None):
    """Local ``(loc (F, n, 3), rot (F, n, 4), scale (F, n, 3))`` of ``obj``'s evaluated pose at
    each of ``frames`` (``scene.frame_set`` per frame). Restores the current frame."""
    rest = rest_matrices(obj)
    parents = bone_parents(obj)
    poses = np.empty((len(frames), len(obj.pose.bones), 4, 4))
    current = scene.frame_current, scene.frame_subframe
    try:
        with suspended():
            for i, f in enumerate(frames):
                scene.frame_set(int(f))
                poses[i] = pose_matrices(obj)
                if progress is not None:
                    progress(i)
    finally:
        scene.frame_set(current[0], subframe=current[1])
    return decompose(local_from_pose(poses, rest, parents))
