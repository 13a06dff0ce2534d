# SPDX-License-Identifier: GPL-3.0-or-later
"""Whether a rig's rest pose is a neutral standing posture, and one found in its motion if not.

Anatomical rotations (:mod:`.retarget`) measure each joint from a neutral posture: standing, legs
down, the spine and neck up, arms down or out to the sides (T or A pose). Most rigs rest so.
Some do not: a skeleton whose joints all lie along one axis at rest (Bandai's BVH clips put the
legs and arms along the spine; the rotation channels make the body), or a rig saved in a pose.
:func:`rest_problems` says what is wrong with a rest pose; :func:`neutral_posture` picks the
motion frame nearest a neutral posture, which :class:`.retarget.RigFrames` then builds its
frames on.

Pure numpy.
"""

import numpy as np

from ..geometry.quaternion import as_quaternions
from .skeleton import armature_positions

#: A rest pose is not neutral when a leg or spine bone is further than this from straight down
#: (legs) or up (spine), an upper arm is raised above the shoulder by more than this, or the
#: body's left-right line leans this far from level (degrees).
TOLERANCE_DEGREES = 45.0
#: How far a foot bone on flat ground may slope down to the toes (degrees).
FOOT_SLOPE_DEGREES = 35.0
#: At most this many frames of a motion are scored for :func:`neutral_posture`.
SCORED_FRAMES = 400

_DOWN_BONES = ("hip", "knee")
_UP_BONES = ("spine", "neck")


def _angle(a, b):
    """Degrees between vectors ``a (..., 3)`` and ``b (..., 3)`` (90 when either is zero)."""
    na, nb = np.linalg.norm(a, axis=-1), np.linalg.norm(b, axis=-1)
    ok = (na > 1e-9) & (nb > 1e-9)
    cos = np.sum(a * b, axis=-1) / np.where(ok, na * nb, 1.0)
    return np.where(ok, np.degrees(np.arccos(np.clip(cos, -1.0, 1.0))), 90.0)


def _parts(skeleton, matches):
    """``{joint base: [bone indices]}`` of the matched bones, and the left/right pairs."""
    by_base, sides = {}, {}
    for name, match in matches.items():
        b = skeleton.index(name)
        by_base.setdefault(match.base, []).append(b)
        sides.setdefault(match.joint, []).append(b)
    pairs = [(sides[j][0], sides[j[:-1] + "R"][0]) for j in sides if j.endswith(".L") and j[:-1] + "R" in sides]
    return by_base, pairs


def posture_scores(skeleton, matches, heads, tails):
    """``(..., len(checks))`` degrees by which posed bones ``heads, tails (..., n, 3)`` miss a
    neutral posture, and the checks' names: legs down, spine and neck up (each bone's angle
    beyond its direction), upper arms not raised above the shoulder, and the left-right line
    level, all against the body's up (the hips' heads to the neck's)."""
    by_base, pairs = _parts(skeleton, matches)
    hips = [b for b in by_base.get("hip", [])]
    top = by_base.get("neck", by_base.get("spine", []))
    if not hips or not top:
        return np.zeros(heads.shape[:-2] + (0,)), []
    up = heads[..., min(top), :] - heads[..., hips, :].mean(axis=-2)
    checks, names = [], []
    direction = tails - heads
    for base in _DOWN_BONES:
        for b in by_base.get(base, []):
            checks.append(_angle(direction[..., b, :], -up))
            names.append(f"{skeleton.names[b]} points {checks[-1].mean():.0f} degrees from down")
    for base in _UP_BONES:
        chain = by_base.get(base, [])
        for b in chain:
            if base == "neck" and not any(skeleton.parents[c] == b for c in chain):
                continue  # the head: where its tail sits is the rig's taste
            checks.append(_angle(direction[..., b, :], up))
            names.append(f"{skeleton.names[b]} points {checks[-1].mean():.0f} degrees from up")
    for b in by_base.get("shoulder", []):
        raised = 90.0 - _angle(direction[..., b, :], up)  # above the horizontal
        checks.append(np.maximum(raised, 0.0))
        names.append(f"{skeleton.names[b]} is raised {checks[-1].mean():.0f} degrees above the shoulder")
    for b in by_base.get("ankle", []):
        checks.append(np.maximum(np.abs(90.0 - _angle(direction[..., b, :], up)) - FOOT_SLOPE_DEGREES, 0.0))
        names.append(f"{skeleton.names[b]} slopes {checks[-1].mean():.0f} degrees more than a foot on the ground")
    for left, right in pairs:
        checks.append(np.abs(90.0 - _angle(heads[..., left, :] - heads[..., right, :], up)))
        names.append(f"{skeleton.names[left]} and {skeleton.names[right]} are {checks[-1].mean():.0f} degrees from level")
    return np.stack(checks, axis=-1), names


def rest_problems(skeleton, matches):
    """What makes ``skeleton``'s rest pose not neutral, in words (empty: it is neutral)."""
    scores, names = posture_scores(skeleton, matches, skeleton.heads, skeleton.tails)
    return [name for score, name in zip(scores, names, strict=True) if score > TOLERANCE_DEGREES]


def neutral_posture(skeleton, matches, motion):
    """``(frame, local rotations (n, 4))``: the frame of ``motion (F, n, 4)`` (local rotations)
    nearest a neutral posture (the least summed :func:`posture_scores`; at most
    :data:`SCORED_FRAMES` frames spread over the motion are scored)."""
    motion = as_quaternions(motion, "motion")
    if motion.ndim != 3 or motion.shape[1] != len(skeleton) or len(motion) == 0:
        raise ValueError(f"motion must have shape (F, {len(skeleton)}, 4) with F >= 1, got {motion.shape}")
    frames = np.unique(np.linspace(0, len(motion) - 1, min(len(motion), SCORED_FRAMES)).astype(int))
    heads, tails = armature_positions(skeleton, motion[frames])
    scores, _ = posture_scores(skeleton, matches, heads, tails)
    total = np.nan_to_num(scores.sum(axis=-1), nan=np.inf)
    best = int(frames[int(np.argmin(total))])
    return best, motion[best]


def motion_frames(skeleton, matches, motion=None, directions=None, source="the motion", frame_numbers=None):
    """``(frames, rest_is_neutral, assumed)``: the :class:`.retarget.RigFrames` of a rig that
    plays ``motion (F, n, 4)`` (local rotations, or None), on its rest pose when that is a
    standing one, else on the motion's most neutral frame (:func:`neutral_posture`); whether the
    rest pose is one, and what was assumed, in words (the frames' own notes last), naming the
    motion ``source`` and its frames by ``frame_numbers (F,)`` (default: their index)."""
    from .retarget import RigFrames  # (retarget builds on this module's skeleton helpers)

    problems = rest_problems(skeleton, matches)
    assumed, posture = [], None
    if problems:
        what = "; ".join(problems[:3])
        if motion is None:
            assumed.append(f"the rest pose is not a standing one ({what}) and there is no motion to find one in: taken as it is")
        else:
            frame, posture = neutral_posture(skeleton, matches, motion)
            number = frame if frame_numbers is None else int(frame_numbers[frame])
            assumed.append(f"the rest pose is not a standing one ({what}): the neutral posture is frame {number} of {source}")
    frames = RigFrames(skeleton, matches, directions, posture=posture, motion=motion)
    return frames, not problems, assumed + frames.assumed
