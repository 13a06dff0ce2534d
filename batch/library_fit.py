# SPDX-License-Identifier: GPL-3.0-or-later
"""Limits learnt from a library's samples: each bone's samples pooled over the clips, with its
mirror bone's seen in the mirror, fitted (what ``batch fit`` writes; :mod:`.runner`)."""

from dataclasses import dataclass, field

import numpy as np

from ..limits.body.bone_names import match_joints
from ..limits.body.preset import is_humanoid, joint_cones, load_preset, within_body
from ..limits.body.skeleton import Skeleton
from ..limits.body.symmetry import BodyMirror, learn_from_both_sides, neutral_pose
from ..limits.constants import BONE_AXIS
from ..limits.geometry.quaternion import quaternion_conjugate, quaternion_multiply
from ..limits.joint import JointLimit
from ..limits.registry import model_class

#: Why a bone that carries the heading is not limited.
HEADING = "carries the heading or travel (a root, or its position channels move): not limited"
#: The fit settings of a library fit (each passed to the model kinds that take it).
SETTINGS = {"padding": 0.05, "mode": "FULL", "order": "XYZ", "target": 0.99}


@dataclass
class LibraryFit:
    """``limits`` ``{bone: JointLimit}``; ``skipped`` ``{bone: why}``; ``samples`` each bone's own
    sample count; ``mirrored`` ``{bone: (mirror bone, samples)}`` it also learned from;
    ``pooled`` / ``labels`` what each bone was fitted from and each sample's clip; ``rests``
    the first clip's world rest orientation of each bone; ``fit(samples, bone)`` fits one more
    (e.g. the samples in another rig's bone space)."""

    model: str
    limits: dict = field(default_factory=dict)
    skipped: dict = field(default_factory=dict)
    samples: dict = field(default_factory=dict)
    mirrored: dict = field(default_factory=dict)
    pooled: dict = field(default_factory=dict)
    labels: dict = field(default_factory=dict)
    rests: dict = field(default_factory=dict)
    heading: list = field(default_factory=list)
    settings: dict = field(default_factory=dict)
    #: ``{bone: JointCone}`` (:func:`..limits.body.preset.joint_cones`): a humanoid's joints, which
    #: ``auto`` fits with the human envelope (:func:`human_joints`)
    human: dict = field(default_factory=dict)

    def fit(self, cloud, bone, change=None):
        """One limit of ``cloud (N, 4)`` for the clips' ``bone``; ``change`` ``C (4,)``: the
        cloud is in another bone space, ``C^-1 q C`` (a rig's, :mod:`.onto_rig`)."""
        if self.model == "auto" and bone in self.human:
            _, left, right, envelope, body = self.human[bone]
            if change is not None:
                c, inverse = np.asarray(change, dtype=float), quaternion_conjugate(change)
                left, right = quaternion_multiply(left, c), quaternion_multiply(inverse, right)
                envelope, body = (
                    None if q is None else quaternion_multiply(inverse[None], quaternion_multiply(q, c[None]))
                    for q in (envelope, body)
                )
            cloud = np.concatenate((cloud[within_body(cloud, body, left, right)], envelope))
            padding = self.settings["padding"]
            return JointLimit.fit(cloud, kind="reach_cone", reference="REST", padding=padding, frame_left=left, frame_right=right)
        allowed = model_class(self.model).FIT_OPTIONS
        options = {k: v for k, v in self.settings.items() if k in allowed}
        if "twist_axis" in allowed:
            options["twist_axis"] = BONE_AXIS.copy()
        if "clips" in allowed:
            options["clips"] = self.labels[bone]
        return JointLimit.fit(cloud, kind=self.model, **options)


def body_mirror(results, names, pooled):
    """The :class:`..limits.body.symmetry.BodyMirror` of the first clip's skeleton (clip order), in
    its rest pose or the pooled samples' neutral pose; ``None`` when it does not mirror."""
    arrays = results[names[0]]["skeleton"]
    skeleton = Skeleton(arrays["names"], arrays["parents"], arrays["heads"], arrays["tails"], arrays["rest"])
    return BodyMirror.of(skeleton, neutral_pose(skeleton.names, pooled))


def human_joints(results, names):
    """``{bone: (joint, frame_left, frame_right, envelope samples (N, 4))}`` when the first clip's
    skeleton is a humanoid (:func:`..limits.body.preset.is_humanoid`): each joint's human preset rotations (the
    envelope with what real motion showed) in the bone's space and the reach cone's frames,
    read on the skeleton's rest pose, or on the first clip's most neutral frame when the rest
    pose is not a standing one (:func:`..limits.body.preset.joint_cones`). Empty otherwise."""
    arrays = results[names[0]]["skeleton"]
    skeleton = Skeleton(arrays["names"], arrays["parents"], arrays["heads"], arrays["tails"], arrays["rest"])
    matches, _ = match_joints(skeleton.names, skeleton.parents)
    if not is_humanoid(matches):
        return {}
    bones = results[names[0]]["bones"]
    counts = {len(q) for q in bones.values()}
    motion = None
    if len(counts) == 1 and counts != {0}:  # every bone on every frame: the clip's motion
        motion = np.tile([1.0, 0.0, 0.0, 0.0], (counts.pop(), len(skeleton), 1))
        for name, q in bones.items():
            motion[:, skeleton.index(name)] = q
    return joint_cones(skeleton, matches, load_preset("human"), motion)[0]


def fit_library(results, model, symmetry=True, **settings):
    """Pool the clips' samples per bone (``results`` ``{clip: clip_jobs.fit_samples(...)}``,
    pooled in clip-name order), with ``symmetry`` add each bone's mirror partner's
    (:func:`..limits.body.symmetry.learn_from_both_sides`; the first clip's skeleton says which bones
    mirror), fit every bone that does not carry the heading; ``settings`` override
    :data:`SETTINGS`. With ``model`` ``auto`` a humanoid's joints are fitted with the human
    envelope (:func:`human_joints`: a reach cone of the data joined with it), other bones and
    other skeletons from their data alone. Returns a :class:`LibraryFit`; ``ValueError`` for an
    unknown model kind."""
    try:
        model_class(model)
    except (KeyError, ValueError):
        raise ValueError(f"unknown model kind {model!r}") from None
    names = sorted(results)
    out = LibraryFit(model, settings={**SETTINGS, **settings})
    out.heading = sorted({b for n in names for b in results[n]["heading"]})
    pooled, labels = {}, {}
    for n in names:
        for bone, q in results[n]["bones"].items():
            if len(q):
                pooled.setdefault(bone, []).append(q)
                labels.setdefault(bone, []).append(np.full(len(q), n, dtype=object))
                out.rests.setdefault(bone, results[n]["rest"][bone])  # the first clip's rest
    out.pooled = {b: np.concatenate(v) for b, v in pooled.items()}
    out.labels = {b: np.concatenate(v) for b, v in labels.items()}
    out.samples = {b: len(q) for b, q in out.pooled.items()}
    if model == "auto" and names:
        out.human = human_joints(results, names)  # a humanoid's default: its data with the envelope
    if symmetry and names:
        mirror = body_mirror(results, names, out.pooled)
        out.pooled, out.labels, out.mirrored = learn_from_both_sides(mirror, out.pooled, out.labels)
    for bone in sorted(out.pooled):
        if bone in out.heading:
            out.skipped[bone] = HEADING
            continue
        try:
            out.limits[bone] = out.fit(out.pooled[bone], bone)
        except (ValueError, np.linalg.LinAlgError) as err:
            out.skipped[bone] = f"fit failed: {err}"
    return out
