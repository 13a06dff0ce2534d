# SPDX-License-Identifier: GPL-3.0-or-later
"""Quaternion-surface limits as metaballs in Blender: export, edit elements, rebuild."""

import bpy
import numpy as np
import pytest
from rigs import expect_error, fitted_rig

pytestmark = pytest.mark.blender42

KIND = "quaternion_surface"


def _export(addon, obj, pb):
    assert bpy.ops.pose.joint_limits_metaball_export() == {"FINISHED"}
    return bpy.data.objects[f"JL {obj.name} {pb.name} metaball"]


def _points(addon, limit, local):
    """Quaternion vector parts ``p`` of local rotations in the limit's chart."""
    return addon.limits.models.surface.quaternion_surface._to_points(limit.to_relative(local), limit.model.params["pole"])


def test_round_trip_and_editing_elements_changes_the_limit(clean_file, addon):
    obj, pb, _ = fitted_rig(addon, model=KIND, frames=120)
    limit = addon.rig.io.storage.read_limit(pb)
    params = limit.model.params
    mb_obj = _export(addon, obj, pb)
    assert mb_obj.type == "META" and mb_obj.name in bpy.data.collections["Joint Limits Display"].objects
    elements = mb_obj.data.elements
    assert len(elements) == len(params["radii"])
    assert [el.use_negative for el in elements] == [bool(s < 0) for s in params["signs"]]
    assert mb_obj.scale[0] == pytest.approx(2.0 * bpy.context.scene.joint_limits.display_scale)
    # the documented mapping inverts exactly (up to float32)
    centres, e, k, signs = addon.rig.tasks.metaball.read_elements(mb_obj)
    np.testing.assert_allclose(centres, params["centres"], atol=1e-6)
    np.testing.assert_allclose(e, params["radii"], atol=1e-5)
    np.testing.assert_allclose(2.0 / k + e, 2.0 / params["stickiness"] + params["radii"], atol=1e-5)

    cloud = addon.rig.io.storage.read_cloud(pb)
    probe = addon.limits.geometry.quaternion.quaternion_random(1000, 3)
    assert bpy.ops.pose.joint_limits_metaball_rebuild() == {"FINISHED"}
    rebuilt = addon.rig.io.storage.read_limit(pb)
    assert rebuilt.model.kind == KIND and pb.joint_limit.model == KIND
    assert rebuilt.contains(cloud).mean() > 0.99
    assert np.mean(rebuilt.contains(probe) == limit.contains(probe)) > 0.99

    # carve by hand: a negative element at one sample forbids it, a far sample stays allowed
    p = _points(addon, limit, cloud)
    mass = p.mean(axis=0)
    near = int(np.argmin(np.linalg.norm(p - mass, axis=1)))
    far = int(np.argmax(np.linalg.norm(p - p[near], axis=1)))
    assert rebuilt.contains(cloud[[near, far]]).all()
    el = mb_obj.data.elements.new(type="BALL")
    el.co = p[near].tolist()
    el.radius = 0.06
    el.stiffness = 2.0
    el.use_negative = True
    assert bpy.ops.pose.joint_limits_metaball_rebuild() == {"FINISHED"}
    carved = addon.rig.io.storage.read_limit(pb)
    assert not carved.contains(cloud[near]) and carved.contains(cloud[far])
    assert carved.model.params["signs"][-1] == -1.0

    # delete the negative element again and move every positive one towards the mass centre
    mb_obj.data.elements.remove(el)
    for el in mb_obj.data.elements:
        if not el.use_negative:
            el.co = (mass + 0.3 * (np.array(el.co) - mass)).tolist()
            el.radius = 0.5 * el.radius
    assert bpy.ops.pose.joint_limits_metaball_rebuild() == {"FINISHED"}
    shrunk = addon.rig.io.storage.read_limit(pb)
    assert shrunk.contains(cloud[near]) and not shrunk.contains(cloud[far])
    assert shrunk.contains(probe).sum() < limit.contains(probe).sum()


def test_object_transform_counts_and_empty_regions_are_refused(clean_file, addon):
    obj, pb, _ = fitted_rig(addon, model="kdop", frames=120)
    assert not bpy.ops.pose.joint_limits_metaball_rebuild.poll()
    mb_obj = _export(addon, obj, pb)  # fitted from the samples: the kdop limit is untouched
    assert addon.rig.io.storage.read_limit(pb).model.kind == "kdop"
    assert bpy.ops.pose.joint_limits_metaball_rebuild.poll()
    cloud = addon.rig.io.storage.read_cloud(pb)
    bpy.ops.object.mode_set(mode="OBJECT")
    mb_obj.scale = mb_obj.scale * 0.3
    bpy.context.view_layer.objects.active = mb_obj
    assert bpy.ops.pose.joint_limits_metaball_rebuild() == {"FINISHED"}
    small = addon.rig.io.storage.read_limit(pb)
    assert pb.joint_limit.model == KIND
    assert small.contains(cloud).mean() < 0.9, "scaling the object shrinks the limit"
    before = pb.joint_limit.limit_data
    for el in mb_obj.data.elements:
        el.use_negative = True
    expect_error(bpy.ops.pose.joint_limits_metaball_rebuild, "Limit unchanged: .*empty")
    assert pb.joint_limit.limit_data == before
