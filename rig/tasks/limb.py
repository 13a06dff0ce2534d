# SPDX-License-Identifier: GPL-3.0-or-later
"""A limb's range of motion (Mukai, seed 004; :mod:`...limits.ik.limb_rom`) on a rig: fitted from
the sampled rotation clouds of a limb's two bones, stored with the middle bone.

A limb is named by its *middle* bone (forearm, shin): its parent is the limb *root* (upper
arm, thigh) and its tail the limb's end (wrist, ankle). The model's frame is the root bone's
rest frame with the root's head at the origin (fixed to the root's parent, where a limb at
rest points along +Y): :func:`...limits.ik.limb_geometry.limb_joints` poses the two bones there.

The two bones' clouds are sampled on the same frames (:func:`.sample.sample_rotations`
reads one row per frame for every keyed bone), so row ``i`` of both is one pose; rows only
line up when both clouds hold the same number of samples from the same clips (no rows dropped
from one of them, no densifying or thinning, which work per bone), and the fit refuses
anything else. The model is stored as JSON in the armature's data store
(``joint_limit.limb_data`` of the middle bone), validated whenever it is read.
"""

import numpy as np

from ...limits.geometry.quaternion import quaternion_from_matrix
from ...limits.ik.limb_geometry import limb_joints
from ...limits.ik.limb_picture import limb_range_picture
from ...limits.ik.limb_rom import LimbRangeOfMotion
from ..io.storage import read_cloud_clips, write_limb
from .texture import new_image

#: Fewest poses a limb range of motion is fitted from (below, the sphere of directions is
#: mostly empty and the fit says so instead of guessing).
MIN_LIMB_SAMPLES = 50


class LimbRig(tuple):
    """``(root name, middle name, mid_rest (4,), mid_head (3,), lower_length)``: the rest
    geometry of the limb whose middle bone is ``middle`` (see :func:`limb_rest`)."""

    __slots__ = ()

    root = property(lambda self: self[0])
    middle = property(lambda self: self[1])
    mid_rest = property(lambda self: self[2])
    mid_head = property(lambda self: self[3])
    lower_length = property(lambda self: self[4])


def limb_rest(obj, middle):
    """:class:`LimbRig` of the limb whose middle bone is ``middle`` (a name); ``ValueError``
    when the bone does not exist or has no parent (no limb root)."""
    bone = obj.data.bones.get(middle)
    if bone is None:
        raise ValueError(f"{obj.name} has no bone {middle!r}")
    if bone.parent is None:
        raise ValueError(f"{middle}: a limb's middle bone needs a parent (the limb root: upper arm, thigh); {middle} has none")
    relative = np.linalg.inv(np.array(bone.parent.matrix_local)) @ np.array(bone.matrix_local)
    return LimbRig((bone.parent.name, middle, quaternion_from_matrix(relative[:3, :3]), relative[:3, 3], float(bone.length)))


def limb_poses(obj, middle):
    """``(limb, mid (N, 3), end (N, 3))``: the sampled poses of the limb whose middle bone is
    ``middle``, in the model's frame; ``ValueError`` when the clouds do not line up."""
    limb = limb_rest(obj, middle)
    bones = obj.pose.bones
    q_root, root_runs = read_cloud_clips(bones[limb.root])
    q_mid, mid_runs = read_cloud_clips(bones[middle])
    for name, q in ((limb.root, q_root), (middle, q_mid)):
        if len(q) < MIN_LIMB_SAMPLES:
            raise ValueError(f"{name}: {len(q)} samples, a limb range needs at least {MIN_LIMB_SAMPLES}; sample an action first")
    if len(q_root) != len(q_mid) or root_runs != mid_runs:
        raise ValueError(
            f"{limb.root} and {middle} were not sampled together ({len(q_root)} and {len(q_mid)} samples): "
            "sample both bones from the same actions, without densify or thinning"
        )
    mid, end = limb_joints(q_root, q_mid, limb.mid_rest, limb.mid_head, limb.lower_length)
    return limb, mid, end


def fit_limb(obj, middle, **options):
    """Fit the range of motion of the limb whose middle bone is ``middle`` from the two bones'
    samples, store it with the middle bone, draw its picture (:func:`limb_picture`) and return
    it. ``options`` go to :meth:`...limits.ik.limb_rom.LimbRangeOfMotion.fit`. Nothing is written
    when it fails."""
    _, mid, end = limb_poses(obj, middle)
    model = LimbRangeOfMotion.fit_joints(np.zeros(3), mid, end, **options)
    write_limb(obj.pose.bones[middle], model)
    limb_picture(obj, middle, model)
    return model


def limb_picture(obj, middle, model, size=256):
    """The seed's equal-area picture of ``model`` (:func:`...limits.ik.limb_picture.limb_range_picture`:
    reach left, swivel range right, white where the end cannot go) as the packed image
    ``JL <object> <middle> limb range`` (replaced on every fit, saved with the file)."""
    picture = limb_range_picture(model, size)[::-1]  # (Blender's rows start at the bottom)
    image = new_image(f"JL {obj.name} {middle} limb range", picture, float_buffer=False, data=False)
    image.pack()
    image.use_fake_user = True  # nothing else uses it: keep it through save/reload
    return image
