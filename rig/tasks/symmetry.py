# SPDX-License-Identifier: GPL-3.0-or-later
"""Which bones of a rig mirror which, and a bone's samples with its partner's seen in the mirror
(:class:`...limits.body.symmetry.BodyMirror`): left/right pairs learn from each other's samples
(issue 13).

Partners are found by name (:func:`...limits.body.skeleton.mirror_name`: Blender's, Mixamo's, CMU's,
Character Creator's conventions) and kept only when the pose agrees: each head, mirrored through
the character's symmetry plane, lands near the partner's. The rest pose is tried first; a rig
whose rest pose is not symmetric (some BVH skeletons point one side's limbs along the spine)
mirrors in its *neutral* pose, each bone at the mean of its samples. A bone on the plane whose
name has no side (spine, neck, head) is its own partner: its samples leaning left teach it
leaning right."""

from ...limits.body import symmetry
from ..io.skeleton_io import skeleton_from_armature
from ..io.storage import read_cloud


def neutral_pose(armature):
    """``(n, 4)`` the mean of each bone's stored samples (``pose.bones`` order; the identity for a
    bone without samples, or with samples that cannot be read)."""
    clouds = {}
    for pb in armature.pose.bones:
        if pb.joint_limit.cloud_count:
            try:
                clouds[pb.name] = read_cloud(pb)
            except ValueError:
                continue
    return symmetry.neutral_pose([pb.name for pb in armature.pose.bones], clouds)


def body_mirror(armature):
    """The :class:`~...limits.body.symmetry.BodyMirror` of an armature object, or ``None`` when neither
    its rest pose nor its neutral pose mirrors."""
    skeleton = skeleton_from_armature(armature)
    if not len(skeleton):
        return None
    return symmetry.BodyMirror.of(skeleton, neutral_pose(armature))
