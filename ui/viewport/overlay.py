# SPDX-License-Identifier: GPL-3.0-or-later
"""Viewport overlays of the authoring tools: the swing sphere (allowed region coloured by
stress, boundary loop, current swing, picks) and the twist disk, drawn with the GLSL in
``shaders/swing_sphere_*.glsl``.

The drawing is split in three so tests can check pixels headless (Python draw handlers never
run without a window):

- :func:`overlay_data` gathers plain numpy data for a pose bone (its limit sampled onto the
  sphere, the swing frame in world space, the current swing and twist);
- :func:`draw_overlay` draws that data into the bound framebuffer for a view-projection matrix
  (the viewport's, or any other), restoring ``gpu.state`` afterwards;
- :func:`render_offscreen` does the same into a ``GPUOffScreen`` and returns its pixels.

:func:`register` adds two window-manager toggles and one ``SpaceView3D`` draw handler, which
draws for the active pose bone when a toggle is on; :func:`unregister` removes them.
"""

import atexit

import numpy as np

from ...limits.authoring import pose_helper as ph
from ...limits.geometry import sphere_maps as sm
from ...rig.io.storage import read_limit
from .gpu import _SHADERS, CREATE_INFO_DEFINE, shader_code

#: Overlay radius as a fraction of the bone length.
RADIUS_FACTOR = 0.6

#: Twist disk radius (fraction of the sphere radius) and its offset along the bone axis.
DISK_RADIUS, DISK_OFFSET = 0.75, 0.3

#: Colours of the twist disk: allowed sector, zero twist line, current twist line.
COLOUR_DISK = (0.95, 0.75, 0.05, 0.35)
COLOUR_ZERO = (0.7, 0.7, 0.7, 1.0)
COLOUR_TWIST = (0.15, 0.45, 1.0, 1.0)

#: Scene custom property holding the picks (3 floats each): in the file, so undo restores them.
PICKS = "joint_limits_picks"

_state = {"handlers": [], "samples": {}, "textures": {}, "errors": set()}


# -- shaders ---------------------------------------------------------------------------------------
def sphere_shader():
    """The swing sphere shader (``swing_sphere_vert/frag.glsl``), compiled once and cached."""
    shader = _SHADERS.get("swing_sphere")
    if shader is None:
        import gpu

        iface = gpu.types.GPUStageInterfaceInfo("jl_swing_sphere_iface")
        iface.smooth("VEC3", "direction")
        info = gpu.types.GPUShaderCreateInfo()
        info.define(CREATE_INFO_DEFINE, "1")
        info.vertex_in(0, "VEC3", "pos")
        info.vertex_out(iface)
        info.push_constant("MAT4", "model_view_projection")
        info.push_constant("INT", "layout_id")
        info.push_constant("VEC4", "colour_allowed")
        info.push_constant("VEC4", "colour_stressed")
        info.push_constant("VEC4", "colour_forbidden")
        info.sampler(0, "FLOAT_2D", "limit_image")
        info.fragment_out(0, "VEC4", "frag_colour")
        info.vertex_source(shader_code("swing_sphere_vert"))
        info.fragment_source(shader_code("swing_sphere_frag"))
        shader = _SHADERS["swing_sphere"] = gpu.shader.create_from_info(info)
    return shader


def flat_shader():
    """The uniform-colour shader of lines, markers and the twist disk, compiled once."""
    shader = _SHADERS.get("swing_sphere_flat")
    if shader is None:
        import gpu

        info = gpu.types.GPUShaderCreateInfo()
        info.define(CREATE_INFO_DEFINE, "1")
        info.vertex_in(0, "VEC3", "pos")
        info.push_constant("MAT4", "model_view_projection")
        info.push_constant("VEC4", "colour")
        info.fragment_out(0, "VEC4", "frag_colour")
        info.vertex_source(shader_code("swing_sphere_flat_vert"))
        info.fragment_source(shader_code("swing_sphere_flat_frag"))
        shader = _SHADERS["swing_sphere_flat"] = gpu.shader.create_from_info(info)
    return shader


# -- data ------------------------------------------------------------------------------------------
def sampled_image(limit, key=None):
    """``(image, layout)`` of a limit on the sphere (:func:`pose_helper.sample_limit`), cached by
    ``key`` (the stored limit text) so a model is sampled once per edit."""
    if key is not None and key in _state["samples"]:
        return _state["samples"][key]
    out = ph.sample_limit(limit)
    if key is not None:
        if len(_state["samples"]) > 48:
            _state["samples"].clear()
        _state["samples"][key] = out
    return out


def picks(scene=None):
    """The directions picked on the swing sphere since the last clear (swing frame), kept on
    ``scene`` (the context's by default)."""
    import bpy

    scene = scene or bpy.context.scene
    raw = scene.get(PICKS) if scene is not None else None
    return [] if not raw else list(np.asarray(list(raw), dtype=float).reshape(-1, 3))


def set_picks(directions, scene=None):
    import bpy

    scene = scene or bpy.context.scene
    scene[PICKS] = np.asarray(directions, dtype=float).reshape(-1, 3).ravel().tolist()


def overlay_data(obj, pose_bone, radius=None):
    """Plain data to draw the overlays of ``pose_bone``, or ``None`` when it has no limit.

    Returns a dict: ``matrix`` (4, 4) world from the swing frame scaled by the radius, ``image``
    (H, W, 4) and ``layout`` (the limit on the sphere), ``boundary`` (K, 3), ``direction`` (3,)
    and ``twist`` (the current swing), ``opposite`` (the swing points away from the rest
    direction), ``twist_range`` ((low, high) or None), ``picks`` (list of (3,)) and ``rest``.
    """
    from ...rig.io.pose_io import local_quaternion
    from ...rig.tasks.texture import swing_frame

    key = pose_bone.joint_limit.limit_token
    if not key or not pose_bone.joint_limit.has_limit:
        return None
    limit = _state["samples"].get(("limit", key))
    if limit is None:  # parsing a texture's JSON costs more than a redraw should
        limit = _state["samples"][("limit", key)] = read_limit(pose_bone)
    image, layout = sampled_image(limit, key)
    boundary_key = ("boundary", key)
    boundary = _state["samples"].get(boundary_key)
    if boundary is None:
        boundary = _state["samples"][boundary_key] = ph.boundary_loop(image, layout)
    frame = np.array(obj.matrix_world @ swing_frame(pose_bone, limit.reference))
    if radius is None:
        radius = RADIUS_FACTOR * pose_bone.bone.length
    matrix = frame @ np.diag([radius, radius, radius, 1.0])
    local = local_quaternion(pose_bone)
    direction, twist = ph.current_direction_twist(local, limit.reference)
    rest = ph.rest_direction(limit.reference)
    return {
        "matrix": matrix,
        "image": image,
        "layout": layout,
        "boundary": boundary,
        "direction": direction,
        "twist": float(twist),
        "rest": rest,
        "opposite": bool(ph.opposite_hemisphere(direction, rest)),
        "twist_range": ph.twist_range_at(limit, direction),
        "picks": picks(),
        "key": key,
    }


def _image_texture(image, layout, key):
    """The padded image as a cached RGBA32F GPU texture."""
    import gpu

    texture = _state["textures"].get(key) if key is not None else None
    if texture is None:
        padded = np.ascontiguousarray(sm.padded(np.asarray(image, dtype=float), layout), dtype=np.float32)
        rows, cols = padded.shape[:2]
        buffer = gpu.types.Buffer("FLOAT", padded.size, padded.ravel())
        texture = gpu.types.GPUTexture((cols, rows), format="RGBA32F", data=buffer)
        if key is not None:
            if len(_state["textures"]) > 16:
                _state["textures"].clear()
            _state["textures"][key] = texture
    return texture


def _matrix(m):
    from mathutils import Matrix

    return Matrix(np.asarray(m, dtype=float).tolist())


def _batch(shader, kind, points, indices=None):
    from gpu_extras.batch import batch_for_shader

    content = {"pos": np.ascontiguousarray(points, dtype=np.float32)}
    if indices is not None:
        return batch_for_shader(shader, kind, content, indices=np.ascontiguousarray(indices, dtype=np.int32))
    return batch_for_shader(shader, kind, content)


def _flat(mvp, kind, points, colour):
    if len(points) == 0:
        return
    shader = flat_shader()
    batch = _batch(shader, kind, points)
    shader.bind()
    shader.uniform_float("model_view_projection", mvp)
    shader.uniform_float("colour", colour)
    batch.draw(shader)


def draw_overlay(data, view_projection, sphere=True, disk=True):
    """Draw the overlays of ``data`` (:func:`overlay_data`) into the bound framebuffer.

    ``view_projection`` is a 4 x 4 matrix (the viewport's ``region_data.perspective_matrix``).
    The sphere shows only its nearest surface (a depth pre-pass; it writes depth). Blending,
    depth test, depth mask and line width are restored afterwards; face culling and the colour
    mask are left at Blender's defaults (``"NONE"``, all channels: ``gpu.state`` cannot read
    them).
    """
    import gpu

    mvp = _matrix(np.asarray(view_projection, dtype=float) @ data["matrix"])
    saved = (gpu.state.blend_get(), gpu.state.depth_test_get(), gpu.state.depth_mask_get(), gpu.state.line_width_get())
    try:
        gpu.state.blend_set("ALPHA")
        gpu.state.depth_test_set("NONE")
        gpu.state.depth_mask_set(False)
        if sphere:
            shader = sphere_shader()
            verts, tris = _sphere_mesh()
            batch = _batch(shader, "TRIS", verts, tris)
            shader.bind()
            shader.uniform_float("model_view_projection", mvp)
            shader.uniform_int("layout_id", sm.LAYOUTS.index(data["layout"]))
            shader.uniform_float("colour_allowed", ph.COLOUR_ALLOWED)
            shader.uniform_float("colour_stressed", ph.COLOUR_STRESSED)
            shader.uniform_float("colour_forbidden", ph.COLOUR_FORBIDDEN)
            texture = _image_texture(data["image"], data["layout"], data.get("key"))  # alive until drawn
            shader.uniform_sampler("limit_image", texture)
            # only the nearest surface, whatever the winding: a depth-only pass, then colour
            # where the depth matches (in the viewport this also hides it behind nearer objects)
            gpu.state.depth_test_set("LESS_EQUAL")
            gpu.state.depth_mask_set(True)
            gpu.state.color_mask_set(False, False, False, False)
            batch.draw(shader)
            gpu.state.color_mask_set(True, True, True, True)
            batch.draw(shader)
            gpu.state.depth_test_set("NONE")
            gpu.state.depth_mask_set(False)
            gpu.state.line_width_set(2.0)
            loop = np.asarray(data["boundary"]) * 1.002
            if len(loop):
                segments = np.stack((loop, np.roll(loop, -1, axis=0)), axis=1).reshape(-1, 3)
                _flat(mvp, "LINES", segments, ph.COLOUR_BOUNDARY)
            for pick in data.get("picks", ()):
                colour = ph.COLOUR_OPPOSITE if ph.opposite_hemisphere(pick, data["rest"]) else ph.COLOUR_BOUNDARY
                _flat(mvp, "TRIS", ph.marker(pick, radius=0.03), colour)
            colour = ph.COLOUR_OPPOSITE if data["opposite"] else ph.COLOUR_CURRENT
            _flat(mvp, "TRIS", ph.marker(data["direction"]), colour)
        if disk:
            _draw_disk(mvp, data)
    finally:
        gpu.state.color_mask_set(True, True, True, True)
        gpu.state.face_culling_set("NONE")
        gpu.state.blend_set(saved[0])
        gpu.state.depth_test_set(saved[1])
        gpu.state.depth_mask_set(saved[2])
        gpu.state.line_width_set(saved[3])


def disk_geometry(data, segments=48):
    """The twist disk of ``data`` in the swing frame (unit = sphere radius): ``sector`` (T * 3, 3)
    triangles over the allowed twist range (empty when none), ``zero`` and ``current`` (2, 3)
    line segments from the disk centre."""
    d = data["direction"]
    centre = DISK_OFFSET * d
    sector = np.zeros((0, 3))
    if data["twist_range"] is not None:
        low, high = data["twist_range"]
        rim = centre + DISK_RADIUS * ph.twist_disk_points(d, ph.disk_arc(low, high, segments))
        fan = np.broadcast_to(centre, (len(rim) - 1, 3))
        sector = np.stack((fan, rim[:-1], rim[1:]), axis=1).reshape(-1, 3)
    zero = np.stack((centre, centre + DISK_RADIUS * ph.twist_disk_points(d, 0.0)))
    current = np.stack((centre, centre + 1.1 * DISK_RADIUS * ph.twist_disk_points(d, data["twist"])))
    return sector, zero, current


def _draw_disk(mvp, data):
    import gpu

    sector, zero, current = disk_geometry(data)
    gpu.state.face_culling_set("NONE")
    _flat(mvp, "TRIS", sector, COLOUR_DISK)
    gpu.state.line_width_set(2.0)
    _flat(mvp, "LINES", zero, COLOUR_ZERO)
    _flat(mvp, "LINES", current, COLOUR_TWIST)


_MESH = {}


def _sphere_mesh():
    if "sphere" not in _MESH:
        _MESH["sphere"] = ph.uv_sphere(32, 64)
    return _MESH["sphere"]


def render_offscreen(data, view_projection, size=(64, 64), sphere=True, disk=True, background=(0.0, 0.0, 0.0, 1.0)):
    """Draw the overlays into a new ``GPUOffScreen`` of ``size (width, height)`` cleared to
    ``background``; returns its pixels ``(height, width, 4)`` float (row 0 at the bottom).

    Needs a GPU context (headless: ``rig.gpu.start_background_gpu`` first)."""
    import gpu

    width, height = size
    offscreen = gpu.types.GPUOffScreen(width, height, format="RGBA32F")
    try:
        with offscreen.bind():
            fb = gpu.state.active_framebuffer_get()
            fb.clear(color=background, depth=1.0)
            with gpu.matrix.push_pop():
                gpu.matrix.load_identity()
                gpu.matrix.load_projection_matrix(_matrix(np.eye(4)))
                draw_overlay(data, view_projection, sphere=sphere, disk=disk)
            buffer = fb.read_color(0, 0, width, height, 4, 0, "FLOAT")
        buffer.dimensions = width * height * 4
        return np.frombuffer(buffer, dtype=np.float32).reshape(height, width, 4).astype(float)
    finally:
        offscreen.free()


# -- the viewport ----------------------------------------------------------------------------------
def _draw_callback():
    """The ``SpaceView3D`` draw handler: overlays of the active pose bone. Never raises."""
    import bpy

    try:
        context = bpy.context
        wm = context.window_manager
        sphere = getattr(wm, "joint_limits_swing_sphere", False)
        disk = getattr(wm, "joint_limits_twist_disk", False)
        limb = getattr(wm, "joint_limits_limb_workspace", False)
        if not (sphere or disk or limb) or context.mode != "POSE" or context.active_pose_bone is None:
            return
        if limb and context.region_data is not None and context.active_pose_bone.parent is not None:
            from .limb_overlay import draw_workspace, workspace_data

            workspace = workspace_data(context.object, context.active_pose_bone.name)
            if workspace is not None:
                draw_workspace(workspace, np.array(context.region_data.perspective_matrix))
        if not (sphere or disk):
            return
        data = overlay_data(context.object, context.active_pose_bone)
        if data is None or context.region_data is None:
            return
        draw_overlay(data, np.array(context.region_data.perspective_matrix), sphere=sphere, disk=disk)
    except Exception as err:  # noqa: BLE001 - a draw handler must never raise
        text = f"{type(err).__name__}: {err}"
        if text not in _state["errors"]:
            _state["errors"].add(text)
            print(f"Joint Limits overlay: {text}")


def draw_handlers():
    """The draw handlers this module has added (and not yet removed)."""
    return list(_state["handlers"])


def _redraw(_self, context):
    for window in getattr(context.window_manager, "windows", ()):
        for area in window.screen.areas:
            if area.type == "VIEW_3D":
                area.tag_redraw()


def register():
    import bpy

    bpy.types.WindowManager.joint_limits_swing_sphere = bpy.props.BoolProperty(
        name="Swing Sphere",
        description="Show the active bone's allowed swings, stress and boundary on a sphere at its head; "
        "drag on it with the Swing Sphere tool",
        default=False,
        update=_redraw,
    )
    bpy.types.WindowManager.joint_limits_twist_disk = bpy.props.BoolProperty(
        name="Twist Disk",
        description="Show the active bone's twist against zero and the allowed twist range at its swing",
        default=False,
        update=_redraw,
    )
    bpy.types.WindowManager.joint_limits_limb_workspace = bpy.props.BoolProperty(
        name="Limb Workspace",
        description="Show where the end of the active bone's limb may be (its limb range, the active bone being the "
        "middle bone): a sphere at the limb root out to the farthest reach, blue where the middle joint may swivel "
        "little, yellow where it may swivel all around, brighter the farther it reaches",
        default=False,
        update=_redraw,
    )
    unregister_handlers()
    handle = bpy.types.SpaceView3D.draw_handler_add(_draw_callback, (), "WINDOW", "POST_VIEW")
    _state["handlers"].append(handle)


def unregister_handlers():
    import bpy

    while _state["handlers"]:
        bpy.types.SpaceView3D.draw_handler_remove(_state["handlers"].pop(), "WINDOW")


@atexit.register
def free_gpu():
    """Drop the cached GPU textures and this module's compiled shaders (they are rebuilt on
    demand). Called on unregister and at exit (see ``rig.gpu.free_shaders``)."""
    _state["textures"].clear()
    for name in ("swing_sphere", "swing_sphere_flat"):
        _SHADERS.pop(name, None)


def unregister():
    import bpy

    unregister_handlers()
    free_gpu()
    _state["samples"].clear()
    for name in ("joint_limits_swing_sphere", "joint_limits_twist_disk", "joint_limits_limb_workspace"):
        if hasattr(bpy.types.WindowManager, name):
            delattr(bpy.types.WindowManager, name)
