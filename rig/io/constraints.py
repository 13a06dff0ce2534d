# SPDX-License-Identifier: GPL-3.0-or-later
"""Which bones a constraint moves: its owner, or for IK and Spline IK the chain above it."""

#: Constraints that also move the parents of their owner (a chain), not the owner alone.
CHAIN_CONSTRAINTS = {"IK", "SPLINE_IK"}


def moved_bones(pose_bone, constraint):
    """Names of the bones whose pose ``constraint`` (on ``pose_bone``) sets: its owner, and for IK
    and Spline IK the chain above it (``chain_count`` bones, 0: up to the root; an IK without
    ``use_tail`` counts its chain from the owner's parent)."""
    if constraint.type not in CHAIN_CONSTRAINTS:
        return {pose_bone.name}
    chain = [pose_bone, *pose_bone.parent_recursive]
    if constraint.chain_count:
        chain = chain[: constraint.chain_count + (constraint.type == "IK" and not constraint.use_tail)]
    return {b.name for b in chain}
