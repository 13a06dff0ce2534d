# SPDX-License-Identifier: GPL-3.0-or-later
"""The bpy edge of the swing sphere and twist disk: posing a bone from a picked direction or a
twist angle, keying Kelly's "Draw Interpolation", adding picks to the rotation cloud, and twist
keys that rebuild a sinus texture's twist channels. The maths is in ``limits/authoring/pose_helper.py``.
"""

import numpy as np

from ...limits.authoring import pose_helper as ph
from ...limits.constants import IDENTITY_QUATERNION
from ...limits.geometry.quaternion import axis_angle_from_quaternion, euler_from_quaternion
from ...limits.model import TEXTURE
from ...limits.models.sinus.texture import SinusTextureLimit
from ...rig.io.actions import rotation_channel_values
from ...rig.io.pose_io import local_quaternion
from ...rig.io.storage import read_limit, write_cloud, write_limit
from . import overlay

#: Custom property holding a bone's twist keys: flat floats, 5 per key (direction, min, max).
TWIST_KEYS = "joint_limits_twist_keys"


def reference_of(pose_bone):
    """The limit's reference rotation (identity without a limit)."""
    limit = read_limit(pose_bone)
    return IDENTITY_QUATERNION if limit is None else limit.reference


def set_local_rotation(pose_bone, q):
    """Set a pose bone's rotation from a quaternion in whatever rotation mode it has."""
    mode = pose_bone.rotation_mode
    q = np.asarray(q, dtype=float)
    if mode == "QUATERNION":
        pose_bone.rotation_quaternion = q.tolist()
    elif mode == "AXIS_ANGLE":
        pose_bone.rotation_axis_angle = axis_angle_from_quaternion(q).tolist()
    else:
        pose_bone.rotation_euler = euler_from_quaternion(q, mode).tolist()


def swing_to(pose_bone, direction):
    """Point the bone's +Y at ``direction`` (swing frame), keeping its twist; returns the new
    local rotation."""
    q = ph.swing_to_direction(local_quaternion(pose_bone), direction, reference_of(pose_bone))
    set_local_rotation(pose_bone, q)
    return q


def twist_to(pose_bone, twist):
    """Set the bone's twist (radians about its axis, relative to the reference), keeping its
    swing; returns the new local rotation."""
    q = ph.with_twist(local_quaternion(pose_bone), twist, reference_of(pose_bone))
    set_local_rotation(pose_bone, q)
    return q


def sphere_geometry(obj, pose_bone):
    """``(centre (3,), radius, frame (3, 3))`` of the swing sphere in world space."""
    from ...rig.tasks.texture import swing_frame

    m = np.array(obj.matrix_world @ swing_frame(pose_bone, reference_of(pose_bone)))
    radius = overlay.RADIUS_FACTOR * pose_bone.bone.length
    scale = np.linalg.norm(m[:3, :3], axis=0)
    return m[:3, 3], radius * float(scale.mean()), m[:3, :3] / scale


def pick(obj, pose_bone, origin, ray, far=False):
    """A mouse ray (world) -> ``(direction in the swing frame, hit)``."""
    centre, radius, frame = sphere_geometry(obj, pose_bone)
    return ph.pick_direction(origin, ray, centre, radius, frame, far)


def twist_angle(obj, pose_bone, origin, ray):
    """The angle (radians) of a mouse ray's hit on the twist disk's plane, measured like the
    bone's twist (0 = zero twist), or ``None`` when the ray is parallel to the plane."""
    centre, _radius, frame = sphere_geometry(obj, pose_bone)
    d, _ = ph.current_direction_twist(local_quaternion(pose_bone), reference_of(pose_bone))
    axis = frame @ d
    hit = ph.ray_plane_hit(origin, ray, centre, axis)
    if hit is None:
        return None
    zero = frame @ ph.twist_disk_points(d, 0.0)
    return ph.angle_about_axis(hit, centre, axis, zero)


def key_picks(obj, pose_bone, picks, frame_start, step=ph.ARC_STEP):
    """Key the bone along the great arcs through ``picks (K, 3)`` (Kelly's "Draw
    Interpolation"), one key per frame from ``frame_start``, twist kept. Returns the frames."""
    q = ph.keyed_rotations(local_quaternion(pose_bone), picks, reference_of(pose_bone), step)
    channel, values = rotation_channel_values(pose_bone.rotation_mode, q)
    frames = frame_start + np.arange(len(q))
    for frame, value in zip(frames, values):
        setattr(pose_bone, channel, value.tolist())
        pose_bone.keyframe_insert(data_path=channel, frame=float(frame), group=pose_bone.name)
    return frames


def add_picks_to_cloud(pose_bone, picks):
    """Append the rotations of ``picks`` (the bone's current twist) to its rotation cloud, for
    artist-driven limits; returns the new sample count."""
    local = local_quaternion(pose_bone)
    reference = reference_of(pose_bone)
    q = np.array([ph.swing_to_direction(local, d, reference) for d in np.asarray(picks).reshape(-1, 3)])
    return write_cloud(pose_bone, q, append=True)


def twist_keys(pose_bone):
    """The bone's twist keys ``(K, 5)``."""
    raw = pose_bone.get(TWIST_KEYS)
    return np.zeros((0, 5)) if raw is None else np.asarray(list(raw), dtype=float).reshape(-1, 5)


def record_twist_limit(obj, pose_bone, side):
    """Kelly's "Setting Twist": store the bone's current twist as its ``side`` ("MIN" / "MAX")
    twist limit at its current swing (a twist key), then rebuild the sinus texture's twist
    channels from all keys. Returns the new limit; ``ValueError`` without a sinus texture."""
    limit = read_limit(pose_bone)
    if limit is None or not limit.model.can(TEXTURE):
        raise ValueError(f"{pose_bone.name}: twist limits are recorded into a fitted Sinus Texture limit")
    d, twist = ph.current_direction_twist(local_quaternion(pose_bone), limit.reference)
    keys = ph.record_twist_key(twist_keys(pose_bone), d, twist, side, ph.twist_range_at(limit, d))
    pose_bone[TWIST_KEYS] = keys.ravel().tolist()
    model = limit.model
    image = ph.twist_channels_from_keys(model.params["image"], model.config["layout"], keys)
    limit.model = SinusTextureLimit.from_image(image, model.config["layout"])
    write_limit(pose_bone, limit)
    return limit
