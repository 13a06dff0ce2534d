# SPDX-License-Identifier: GPL-3.0-or-later
"""Rebuilds and loads validate the new limit before they write anything: a refused limit
leaves the bone's stored limit and its model setting as they were."""

import bpy
import pytest
from rigs import expect_error, fitted_rig

pytestmark = pytest.mark.blender42


def _unchanged(pb, before):
    assert (pb.joint_limit.model, pb.joint_limit.limit_data) == before, "nothing may be written before validation"


def test_metaball_rebuild_with_a_degenerate_pole_changes_nothing(clean_file, addon):
    obj, pb, _ = fitted_rig(addon, model="kdop", frames=120)
    assert bpy.ops.pose.joint_limits_metaball_export() == {"FINISHED"}
    mb_obj = bpy.data.objects[f"JL {obj.name} {pb.name} metaball"]
    mb_obj[addon.rig.tasks.metaball.PROP_POLE] = [0.0, 0.0, 0.0, 0.0]
    before = (pb.joint_limit.model, pb.joint_limit.limit_data)
    expect_error(
        bpy.ops.pose.joint_limits_metaball_rebuild,
        "pole is not a rotation.*Limit unchanged|Limit unchanged.*pole is not a rotation",
    )
    _unchanged(pb, before)
