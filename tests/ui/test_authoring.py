# SPDX-License-Identifier: GPL-3.0-or-later
"""Viewport authoring in Blender: painting a limit on the sphere at the bone with Blender's own
paint stroke, and the swing sphere / twist disk operators (their execute paths; the modal
drags cannot run without a window and only wrap the same functions)."""

import bpy
import numpy as np
import pytest
from mathutils import Quaternion, Vector
from rigs import fitted_rig


@pytest.fixture
def textured(clean_file, addon):
    obj, pb, _ = fitted_rig(addon, model="sinus_texture")
    return obj, pb


def _view3d():
    area = next(a for a in bpy.context.screen.areas if a.type == "VIEW_3D")
    region = next(r for r in area.regions if r.type == "WINDOW")
    return area, region


def _stroke(centre, radius_px, size):
    """Dabs on a small spiral around ``centre`` (region pixels)."""
    dabs = []
    for i, t in enumerate(np.linspace(0, 4 * np.pi, 25)):
        r = radius_px * t / (4 * np.pi)
        x, y = centre[0] + r * np.cos(t), centre[1] + r * np.sin(t)
        dabs.append(
            {
                "name": "",
                "location": (0.0, 0.0, 0.0),
                "mouse": (x, y),
                "mouse_event": (x, y),
                "pressure": 1.0,
                "size": size,
                "time": float(i),
                "is_start": i == 0,
                "x_tilt": 0.0,
                "y_tilt": 0.0,
            }
        )
    return dabs


def _paint_pixels(image):
    w, h = image.size
    px = np.empty(w * h * 4, dtype=np.float32)
    image.pixels.foreach_get(px)
    return px.reshape(h, w, 4)


def _pose_facing_the_viewer(addon, obj, pb):
    """Set the view up for a scripted stroke and return ``(pose, direction)``: an allowed pose of
    the bone's cloud whose swing ``direction`` (swing frame) faces the viewer.

    RegionView3D.update() crashes headless, so the view keeps the matrices of the startup file:
    the rig (scaled up) moves to the view's focus instead."""
    storage = addon.rig.io.storage
    rv3d = _view3d()[0].spaces.active.region_3d
    obj.scale = (4.0, 4.0, 4.0)
    obj.location = rv3d.view_location - Vector((0.0, 0.0, 8.0))  # the bone head (z = 2) at the focus
    bpy.context.view_layer.update()
    limit = storage.read_limit(pb)
    cloud = storage.read_cloud(pb)
    toward_viewer = np.array(rv3d.view_rotation @ Vector((0.0, 0.0, 1.0)))
    _, _, frame = addon.ui.viewport.posing.sphere_geometry(obj, pb)
    dirs, _ = addon.limits.geometry.swing_twist.direction_twist(limit.to_relative(cloud))
    facing = (dirs @ frame.T) @ toward_viewer
    facing[~limit.contains(cloud)] = -2
    pose = cloud[int(np.argmax(facing))]
    assert facing.max() > 0.6 and limit.contains(pose)
    d, _ = addon.limits.geometry.swing_twist.direction_twist(limit.to_relative(pose))
    return pose, d


def _paint_forbidden(sphere, d, strokes=3, push=True):
    """Paint ``strokes`` Forbidden strokes on the paint ``sphere`` around swing direction ``d``
    with Blender's own paint operator, in the 3-D view. ``push``: an undo step before each
    stroke (without one a stroke may paint nothing headless, unless an operator run as a user
    would pushed one since Texture Paint was entered)."""
    from bpy_extras.view3d_utils import location_3d_to_region_2d

    area, region = _view3d()
    bpy.context.view_layer.update()
    centre = location_3d_to_region_2d(region, area.spaces.active.region_3d, sphere.matrix_world @ Vector(d.tolist()))
    assert centre is not None and 0 < centre.x < region.width and 0 < centre.y < region.height
    with bpy.context.temp_override(area=area, region=region, space_data=area.spaces.active):
        assert bpy.ops.paint.joint_limits_brush(kind="FORBIDDEN") == {"FINISHED"}
        for _ in range(strokes):  # a brush at strength 1 removes about half the green per stroke
            if push:
                bpy.ops.ed.undo_push(message="Joint Limits test stroke")
            assert bpy.ops.paint.image_paint(stroke=_stroke(centre, 8, 12), mode="NORMAL") == {"FINISHED"}


@pytest.mark.parametrize("leave", ["finish_operator", "mode_change"])
def test_a_painted_forbidden_stroke_keeps_the_bone_out_live(textured, addon, leave):
    obj, pb = textured
    storage, paint, maps = addon.rig.io.storage, addon.ui.viewport.paint, addon.limits.geometry.sphere_maps
    pose, d = _pose_facing_the_viewer(addon, obj, pb)
    limit = storage.read_limit(pb)

    assert bpy.ops.pose.joint_limits_paint_limit() == {"FINISHED"}
    assert bpy.context.mode == "PAINT_TEXTURE"
    sphere = bpy.data.objects[paint.sphere_name(obj, pb)]
    image = bpy.data.images[paint.paint_image_name(obj, pb)]
    assert bpy.context.scene.tool_settings.image_paint.canvas == image
    h, w = limit.model.params["image"].shape[:2]
    assert tuple(image.size) == (w, h) and len(sphere.data.uv_layers) == 1
    before = _paint_pixels(image)
    np.testing.assert_array_equal(before[..., 1] > 0.5, limit.model.params["image"][..., 0] > 0.5)
    _paint_forbidden(sphere, d)
    after = _paint_pixels(image)
    newly_forbidden = (before[..., 1] >= 0.5) & (after[..., 1] < 0.5)
    texel = maps.direction_to_texel(d, limit.model.config["layout"], (h, w))
    assert newly_forbidden.ravel()[texel], "the stroke forbids the swing under the brush"
    assert 5 < newly_forbidden.sum() < 0.2 * h * w
    # only under the stroke: texels far from the brush keep their mask
    centres = maps.texel_centres(limit.model.config["layout"], (h, w))
    far = np.arccos(np.clip(centres @ d, -1, 1)) > 0.8
    assert not newly_forbidden[far].any()
    np.testing.assert_array_equal(after[..., 0], before[..., 0])  # stress untouched

    if leave == "finish_operator":
        assert bpy.ops.paint.joint_limits_finish() == {"FINISHED"}
        assert bpy.context.mode == "POSE" and bpy.context.active_pose_bone == pb
    else:
        bpy.ops.object.mode_set(mode="OBJECT")  # leaving paint mode by any means rebuilds
        bpy.context.view_layer.update()
        assert not paint.session()
        bpy.context.view_layer.objects.active = obj
        bpy.ops.object.mode_set(mode="POSE")
    rebuilt = storage.read_limit(pb)
    assert not rebuilt.contains(pose)
    np.testing.assert_array_equal(rebuilt.model.params["image"][..., 0] < 0.5, after[..., 1] < 0.5)
    # the live handler moves the pose out of the painted region
    obj.animation_data.action = None
    pb.rotation_quaternion = pose
    bpy.context.scene.joint_limits.enforce_live = True
    bpy.context.scene.frame_set(1)
    moved = np.array(pb.rotation_quaternion)
    assert rebuilt.violation(moved) < 1e-4
    d_moved, _ = addon.limits.geometry.swing_twist.direction_twist(rebuilt.to_relative(moved))
    assert not newly_forbidden.ravel()[maps.direction_to_texel(d_moved, limit.model.config["layout"], (h, w))]


def test_paint_brushes_touch_one_channel(textured, addon):
    paint = addon.ui.viewport.paint
    assert set(paint.BRUSHES) == {"ALLOWED", "FORBIDDEN", "STRESS_UP", "STRESS_DOWN"}
    for kind, (colour, blend) in paint.BRUSHES.items():
        channel = paint.PAINT_MASK if kind in ("ALLOWED", "FORBIDDEN") else paint.PAINT_STRESS
        assert colour[channel] == 1.0 and sum(colour) == 1.0 and blend in ("ADD", "SUB")
    obj, pb = textured
    model = addon.rig.io.storage.read_limit(pb).model
    pixels = paint.paint_pixels(model)
    pixels[:4, :4, paint.PAINT_STRESS] = 0.25
    rebuilt = paint.model_from_paint(model, pixels)
    np.testing.assert_allclose(rebuilt.params["image"][:4, :4, 3], 0.25)
    np.testing.assert_array_equal(rebuilt.params["image"][..., 1:3], model.params["image"][..., 1:3])
    with pytest.raises(ValueError, match="paint image"):
        paint.model_from_paint(model, pixels[:8])


def test_swing_sphere_and_twist_disk_operators(textured, addon):
    obj, pb = textured
    ph, posing, overlay = addon.limits.authoring.pose_helper, addon.ui.viewport.posing, addon.ui.viewport.overlay
    obj.animation_data.action = None
    limit = addon.rig.io.storage.read_limit(pb)
    local = addon.rig.io.pose_io.local_quaternion
    pb.rotation_quaternion = addon.rig.io.storage.read_cloud(pb)[5]
    _, twist = ph.current_direction_twist(local(pb), limit.reference)
    bpy.ops.pose.joint_limits_clear_picks()
    targets = [np.array([0.2, 0.95, 0.1]), np.array([-0.3, 0.9, 0.2])]
    for t in targets:
        assert bpy.ops.pose.joint_limits_swing_sphere(direction=t.tolist()) == {"FINISHED"}
    d, twist_now = ph.current_direction_twist(local(pb), limit.reference)
    assert np.allclose(d, targets[-1] / np.linalg.norm(targets[-1]), atol=1e-6) and np.isclose(twist_now, twist, atol=1e-6)
    # the bone's world Y axis points along the picked direction in the swing frame
    bpy.context.view_layer.update()
    centre, radius, frame = posing.sphere_geometry(obj, pb)
    y_world = np.array((obj.matrix_world @ pb.matrix).to_3x3().col[1])
    assert np.allclose(y_world / np.linalg.norm(y_world), frame @ d, atol=1e-5)
    assert np.allclose(centre, np.array(obj.matrix_world @ pb.head))
    # a mouse ray from outside picks the direction it hits
    hit_d, hit = posing.pick(obj, pb, centre + 5 * frame @ d, -(frame @ d))
    assert hit and np.allclose(hit_d, d)
    assert len(overlay.picks()) == 2
    count = pb.joint_limit.cloud_count
    assert bpy.ops.pose.joint_limits_picks_to_cloud() == {"FINISHED"}
    assert pb.joint_limit.cloud_count == count + 2
    bpy.context.scene.frame_current = 10
    assert bpy.ops.pose.joint_limits_key_picks(step=0.05) == {"FINISHED"}
    assert overlay.picks() == []
    curves = addon.rig.io.actions.bone_rotation_curves(obj, obj.animation_data.action)
    frames = {k.co[0] for channel in curves[pb.name].values() for fc in channel.values() for k in fc.keyframe_points}
    assert min(frames) == 10 and len(frames) > 3  # one key per frame along the arcs
    # the twist disk: set the twist, then record it as the maximum twist at this swing
    assert bpy.ops.pose.joint_limits_twist_disk(twist=-0.1) == {"FINISHED"}
    bpy.context.view_layer.update()
    before = (obj.matrix_world @ pb.matrix).to_3x3()
    assert bpy.ops.pose.joint_limits_twist_disk(twist=0.2) == {"FINISHED"}
    d, twist_now = ph.current_direction_twist(local(pb), limit.reference)
    assert np.isclose(twist_now, 0.2) and np.allclose(d, targets[-1] / np.linalg.norm(targets[-1]), atol=1e-6)
    # in the world (mathutils, not our maths): the bone turned about its own +Y by the change
    bpy.context.view_layer.update()
    turn = (before.inverted() @ (obj.matrix_world @ pb.matrix).to_3x3()).to_quaternion()
    expected = Quaternion((0.0, 1.0, 0.0), 0.2 - -0.1)
    assert abs(abs(turn.dot(expected)) - 1.0) < 1e-6
    assert bpy.ops.pose.joint_limits_record_twist_limit(side="MAX") == {"FINISHED"}
    assert posing.twist_keys(pb).shape == (1, 5)
    low, high = ph.twist_range_at(addon.rig.io.storage.read_limit(pb), d)
    assert abs(high - 0.2) < 0.05 and low < high
    # the overlay data of the bone reflects it
    data = overlay.overlay_data(obj, pb)
    assert np.allclose(data["direction"], d) and np.isclose(data["twist"], 0.2) and not data["opposite"]
    assert data["twist_range"] is not None and len(data["boundary"]) > 8


# -- undo ------------------------------------------------------------------------------------------
def _as_user(operator, **props):
    """Run ``operator`` the way a button or shortcut does: Blender pushes an undo step after it
    (``bpy.ops`` from a script does not, unless asked)."""
    return operator("EXEC_DEFAULT", True, **props)


def _ctrl_z(times=1):
    for _ in range(times):
        assert bpy.ops.ed.undo() == {"FINISHED"}
    bpy.context.view_layer.update()


def _rig():
    """The rig and its bone as the file holds them now: undo replaces the data Python held."""
    obj = bpy.data.objects["Rig"]
    return obj, obj.pose.bones["lower"]


def _enforced(pose):
    """Where live enforcement puts the bone from ``pose`` on a frame change."""
    _, pb = _rig()
    pb.rotation_quaternion = pose
    bpy.context.scene.frame_set(1)
    return np.array(_rig()[1].rotation_quaternion)


@pytest.mark.parametrize("apply", ["rebuild_button", "finish_operator", "mode_change"])
def test_ctrl_z_brings_back_the_limit_from_before_painting(textured, addon, apply):
    """Paint Limit, three Forbidden strokes, apply the painting, then Ctrl+Z as a user would:
    the bone's limit (its stored text and what it contains) and the live enforcement return to
    what they were before the painting."""
    obj, pb = textured
    storage, paint = addon.rig.io.storage, addon.ui.viewport.paint
    pose, d = _pose_facing_the_viewer(addon, obj, pb)
    obj.animation_data.action = None
    bpy.context.scene.joint_limits.enforce_live = True
    cloud = storage.read_cloud(pb)
    original_text = pb.joint_limit.limit_data
    original = storage.read_limit(pb)
    assert np.allclose(_enforced(pose), pose)  # allowed: enforcement leaves it alone
    bpy.ops.ed.undo_push(message="before painting")  # the state the user starts from

    assert _as_user(bpy.ops.pose.joint_limits_paint_limit) == {"FINISHED"}
    _paint_forbidden(bpy.data.objects[paint.sphere_name(obj, pb)], d, strokes=3, push=False)  # each stroke is an undo step
    image_name = paint.paint_image_name(obj, pb)
    painted_pixels = _paint_pixels(bpy.data.images[image_name])
    if apply == "rebuild_button":
        assert _as_user(bpy.ops.paint.joint_limits_rebuild) == {"FINISHED"}
    elif apply == "finish_operator":
        assert _as_user(bpy.ops.paint.joint_limits_finish) == {"FINISHED"}
    else:
        assert _as_user(bpy.ops.object.mode_set, mode="OBJECT") == {"FINISHED"}
        bpy.context.view_layer.update()  # the rebuild happens on the update after leaving
    obj, pb = _rig()
    painted = storage.read_limit(pb)
    assert pb.joint_limit.limit_data != original_text and not painted.contains(pose)
    moved = _enforced(pose)  # the handler compiles the painted limit and moves the pose out
    assert not np.allclose(moved, pose, atol=1e-3) and painted.violation(moved) < 1e-4

    if apply == "rebuild_button":
        # Rebuild Limit runs in Texture Paint, where Blender's undo steps hold the image only:
        # Ctrl+Z over the Rebuild step and the three strokes restores the painting, and the
        # limit follows the restored painting
        _ctrl_z(1 + 3)
        assert bpy.context.mode == "PAINT_TEXTURE" and paint.session()["bone"] == "lower"
        np.testing.assert_array_equal(
            _paint_pixels(bpy.data.images[image_name])[..., :2], paint.paint_pixels(original.model)[..., :2].astype(np.float32)
        )
        restored = storage.read_limit(_rig()[1])
        np.testing.assert_array_equal(restored.contains(cloud), original.contains(cloud))
        assert restored.contains(pose)
        assert np.allclose(_enforced(pose), pose)
        # one more Ctrl+Z undoes Paint Limit: Pose Mode and the very limit text of before
        _ctrl_z()
        assert bpy.context.mode == "POSE" and not paint.session()
    else:
        # one Ctrl+Z: back in Texture Paint with the strokes, and the limit of before painting
        _ctrl_z()
        assert bpy.context.mode == "PAINT_TEXTURE"
        np.testing.assert_array_equal(_paint_pixels(bpy.data.images[image_name]), painted_pixels)
        if apply == "mode_change":
            # leaving by the mode menu rebuilds on the update after Blender pushed the mode
            # change's undo step, so that step already holds the painted limit: the limit
            # follows the painting on screen, and undoing the strokes and Paint Limit (3 + 1
            # steps) brings back the limit of before
            assert not storage.read_limit(_rig()[1]).contains(pose)
            _ctrl_z(3 + 1)
            assert bpy.context.mode == "POSE" and not paint.session()
    obj, pb = _rig()
    assert pb.joint_limit.limit_data == original_text
    assert storage.read_limit(pb).contains(pose)
    # live enforcement uses the restored limit (its compiled limits were dropped on undo)
    assert np.allclose(_enforced(pose), pose)

    if apply == "finish_operator":
        # the painting session came back with the undo: finishing again applies the strokes
        assert paint.session()["bone"] == "lower"
        assert _as_user(bpy.ops.paint.joint_limits_finish) == {"FINISHED"}
        assert bpy.context.mode == "POSE" and not _rig()[1].joint_limit.limit_data == original_text
        assert not storage.read_limit(_rig()[1]).contains(pose)
        # and Ctrl+Z past the strokes and Paint Limit (1 + 3 + 1 steps) restores it again
        _ctrl_z(5)
        assert bpy.context.mode == "POSE" and _rig()[1].joint_limit.limit_data == original_text
        assert np.allclose(_enforced(pose), pose)


def test_ctrl_z_reverts_swing_sphere_and_twist_disk_edits(textured, addon):
    """Each authoring operator, run as a user would, is one undo step: Ctrl+Z restores the pose,
    the picks, the keys, the twist keys and the sinus texture's twist channels, and live
    enforcement uses the restored limit."""
    obj, pb = textured
    ph, posing, overlay, storage = (
        addon.limits.authoring.pose_helper,
        addon.ui.viewport.posing,
        addon.ui.viewport.overlay,
        addon.rig.io.storage,
    )
    local = addon.rig.io.pose_io.local_quaternion
    obj.animation_data.action = None
    pb.rotation_quaternion = storage.read_cloud(pb)[5]
    overlay.set_picks([])
    limit = storage.read_limit(pb)
    _, twist0 = ph.current_direction_twist(local(pb), limit.reference)

    def state():
        obj, pb = _rig()
        action = obj.animation_data.action if obj.animation_data else None
        keys = 0 if action is None else sum(len(fc.keyframe_points) for fc in addon.rig.io.actions.action_fcurves(obj, action))
        return {
            "rotation": tuple(np.round(pb.rotation_quaternion, 6)),
            "picks": [tuple(np.round(p, 6)) for p in overlay.picks()],
            "keys": keys,
            "cloud": pb.joint_limit.cloud_count,
            "twist_keys": posing.twist_keys(pb).tolist(),
            "limit": pb.joint_limit.limit_data,
        }

    bpy.ops.ed.undo_push(message="before authoring")
    start = state()
    t1, t2 = np.array([-0.3, 0.9, 0.2]), np.array([0.2, 0.95, 0.1])  # t1 is an allowed swing
    assert _as_user(bpy.ops.pose.joint_limits_swing_sphere, direction=t1.tolist()) == {"FINISHED"}
    one_pick = state()
    assert _as_user(bpy.ops.pose.joint_limits_swing_sphere, direction=t2.tolist()) == {"FINISHED"}
    d, twist = ph.current_direction_twist(local(_rig()[1]), limit.reference)
    assert np.allclose(d, t2 / np.linalg.norm(t2), atol=1e-6) and np.isclose(twist, twist0, atol=1e-6)
    assert len(state()["picks"]) == 2
    _ctrl_z()
    assert state() == one_pick  # the bone points at the first pick again, with one pick
    d, _ = ph.current_direction_twist(local(_rig()[1]), limit.reference)
    assert np.allclose(d, t1 / np.linalg.norm(t1), atol=1e-6)

    bpy.context.scene.frame_current = 10
    assert _as_user(bpy.ops.pose.joint_limits_key_picks, step=0.05) == {"FINISHED"}
    assert state()["keys"] > 0 and state()["picks"] == []
    _ctrl_z()
    assert state() == one_pick  # no keys, and the pick is back
    assert _as_user(bpy.ops.pose.joint_limits_picks_to_cloud) == {"FINISHED"}
    assert state()["cloud"] == start["cloud"] + 1
    _ctrl_z()
    assert state() == one_pick
    assert _as_user(bpy.ops.pose.joint_limits_clear_picks) == {"FINISHED"}
    assert state()["picks"] == []
    _ctrl_z()
    assert state() == one_pick

    d1 = t1 / np.linalg.norm(t1)
    low0, high0 = ph.twist_range_at(limit, d1)
    twist_max = low0 + 0.4 * (high0 - low0)  # a twist limit tighter than the fitted one
    bpy.context.scene.joint_limits.enforce_live = True  # before the twist disk's undo step
    assert _as_user(bpy.ops.pose.joint_limits_twist_disk, twist=twist_max) == {"FINISHED"}
    d, twist = ph.current_direction_twist(local(_rig()[1]), limit.reference)
    assert np.isclose(twist, twist_max) and np.allclose(d, d1, atol=1e-6)
    twisted = state()
    assert _as_user(bpy.ops.pose.joint_limits_record_twist_limit, side="MAX") == {"FINISHED"}
    recorded = storage.read_limit(_rig()[1])
    _, high1 = ph.twist_range_at(recorded, d)
    assert len(state()["twist_keys"]) == 1 and abs(high1 - twist_max) < 0.01
    # between the recorded maximum and the fitted one: limited now, allowed before
    beyond = 0.5 * (high1 + high0)
    assert high1 + 0.02 < beyond < high0 - 0.02
    pose = posing.twist_to(_rig()[1], beyond)
    _, limited = ph.current_direction_twist(_enforced(pose), limit.reference)
    assert limited < high1 + 1e-3

    _ctrl_z()
    assert state() == twisted  # no twist keys, the limit of before
    _, twist_high = ph.twist_range_at(storage.read_limit(_rig()[1]), d)
    assert np.isclose(twist_high, high0)
    pose = posing.twist_to(_rig()[1], beyond)
    assert np.allclose(_enforced(pose), pose)  # enforcement uses the restored limit
    _ctrl_z()
    assert state() == one_pick
    _ctrl_z()
    assert state() == start
