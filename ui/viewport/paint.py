# SPDX-License-Identifier: GPL-3.0-or-later
"""Painting a bone's sinus texture in 3-D: a sphere mesh at the bone whose UVs are the
texture's swing parameterization (:func:`...limits.authoring.pose_helper.layout_sphere`), textured with a
*paint image* of the limit and painted in Texture Paint with Blender's own brushes (or in 2-D
in the Image Editor, on the same image); the limit is rebuilt from the image when painting
ends.

The paint image has the texture's size and layout and holds, as colours, what an artist
paints: G the allowed mask (1 allowed, 0 forbidden; thresholded at 0.5), R the stress (0..1),
B unused. So the allowed region shows green, stressed swings yellow, forbidden swings red or
black. It is separate from the model's packed image (``rig/tasks/texture.py``: R mask, G / B twist
radians, A stress) because Blender's paint blend modes clamp negative values and rescale RGB by
alpha, which would corrupt twist angles; the twist channels come from the model (and its twist
keys) when the limit is rebuilt. :data:`BRUSHES` sets the active brush to add or subtract
green (allowed / forbidden) or red (more / less stress), which leaves the other channel alone.

A painting *session* remembers the armature, bone and sphere; ``depsgraph_update_post``
notices when the sphere leaves Texture Paint (by any means: the mode menu, Tab) and rebuilds
the limit then. :func:`finish_painting` does the same explicitly and returns to Pose Mode.

Undo: strokes are undone with Blender's own image undo. While an object is in Texture Paint,
every undo step Blender pushes (Rebuild Limit's too) holds images only, not the armature's
limit; so after an undo or redo the session is taken from the restored file (the sphere
remembers its bone in custom properties): an undo back into Texture Paint resumes the session,
one out of it ends the session without rebuilding (the restored limit is that step's), and one
between strokes rebuilds the limit when the restored painting differs from it.
"""

import bpy
import numpy as np
from bpy.app.handlers import persistent
from mathutils import Matrix

from ...limits.authoring.pose_helper import layout_sphere
from ...limits.joint import JointLimit
from ...limits.models.sinus.texture import MASK, STRESS
from ...rig.io.app_handlers import install, uninstall
from ...rig.io.exported import PROP_ARMATURE, PROP_BONE
from ...rig.io.storage import write_limit
from ...rig.tasks.display import display_object, place_at_bone
from ...rig.tasks.texture import swing_frame, texture_limit

#: Sphere radius as a fraction of the bone length.
RADIUS_FACTOR = 0.6

#: Brush settings per kind: (colour, blend mode).
BRUSHES = {
    "ALLOWED": ((0.0, 1.0, 0.0), "ADD"),
    "FORBIDDEN": ((0.0, 1.0, 0.0), "SUB"),
    "STRESS_UP": ((1.0, 0.0, 0.0), "ADD"),
    "STRESS_DOWN": ((1.0, 0.0, 0.0), "SUB"),
}

#: Channels of the paint image.
PAINT_STRESS, PAINT_MASK = 0, 1

_session = {}


def sphere_name(obj, pose_bone):
    return f"JL {obj.name} {pose_bone.name} paint sphere"


def session():
    """The current painting session ``{"armature", "bone", "sphere"}`` (empty when none)."""
    return dict(_session)


def paint_image_name(obj, pose_bone):
    return f"JL {obj.name} {pose_bone.name} paint"


def paint_pixels(model):
    """The paint image's pixels ``(H, W, 4)`` for a sinus texture model: R stress, G mask."""
    image = model.params["image"]
    out = np.zeros(image.shape[:2] + (4,))
    out[..., PAINT_STRESS] = image[..., STRESS]
    out[..., PAINT_MASK] = image[..., MASK]
    out[..., 3] = 1.0
    return out


def model_from_paint(model, pixels):
    """A new sinus texture model: ``model`` with the mask and stress painted into ``pixels``
    (paint image channels) and its twist channels kept; derived data recomputed."""
    from ...limits.models.sinus.texture import SinusTextureLimit

    image = np.array(model.params["image"], dtype=float)
    pixels = np.asarray(pixels, dtype=float)
    if pixels.shape[:2] != image.shape[:2]:
        raise ValueError(
            f"the paint image is {pixels.shape[1]}x{pixels.shape[0]}, the limit's texture {image.shape[1]}x{image.shape[0]}"
        )
    image[..., MASK] = pixels[..., PAINT_MASK] >= 0.5
    image[..., STRESS] = np.clip(pixels[..., PAINT_STRESS], 0.0, 1.0)
    return SinusTextureLimit.from_image(image, model.config["layout"])


def paint_image(obj, pose_bone, refresh=True):
    """The bone's packed paint image, created (or, with ``refresh``, rewritten) from its limit."""
    image = bpy.data.images.get(paint_image_name(obj, pose_bone))
    if image is not None and not refresh:
        return image
    model = texture_limit(pose_bone).model
    pixels = paint_pixels(model)
    h, w = pixels.shape[:2]
    if image is None or tuple(image.size) != (w, h):
        if image is not None:
            bpy.data.images.remove(image)
        image = bpy.data.images.new(paint_image_name(obj, pose_bone), width=w, height=h, alpha=True, float_buffer=True)
        image.colorspace_settings.is_data = True
        image.alpha_mode = "NONE"
    image.pixels.foreach_set(np.ascontiguousarray(pixels, dtype=np.float32).ravel())
    image.pack()
    image.use_fake_user = True
    return image


def _read_pixels(image):
    w, h = image.size
    px = np.empty(w * h * image.channels, dtype=np.float32)
    image.pixels.foreach_get(px)
    return px.reshape(h, w, image.channels).astype(float)


def paint_matches(model, pixels):
    """Whether ``pixels`` (paint image channels) hold what ``model`` would read from them: the
    same allowed mask and the same stress (to float32, what the image stores)."""
    image = model.params["image"]
    pixels = np.asarray(pixels)
    if pixels.shape[:2] != image.shape[:2]:
        return False
    same_mask = np.array_equal(pixels[..., PAINT_MASK] >= 0.5, image[..., MASK] >= 0.5)
    stress = np.clip(pixels[..., PAINT_STRESS], 0.0, 1.0).astype(np.float32)
    return same_mask and np.array_equal(stress, image[..., STRESS].astype(np.float32))


def rebuild_from_paint(obj, pose_bone, image=None):
    """Read the bone's paint image back into its limit (mask and stress; twist kept); returns
    the new :class:`JointLimit`. ``ValueError`` for a missing or wrongly sized image or a mask
    that forbids everything; the limit is untouched then."""
    limit = texture_limit(pose_bone)
    image = image or bpy.data.images.get(paint_image_name(obj, pose_bone))
    if image is None:
        raise ValueError(f"{pose_bone.name}: no paint image; use Paint Limit first")
    model = model_from_paint(limit.model, _read_pixels(image))
    rebuilt = JointLimit(model, limit.reference, limit.centre)
    write_limit(pose_bone, rebuilt)
    return rebuilt


def _material(image):
    """A material showing the paint image as it is (emission, nearest texel)."""
    name = f"{image.name} material"
    mat = bpy.data.materials.get(name) or bpy.data.materials.new(name)
    if mat.node_tree is None:
        mat.use_nodes = True
    nodes, links = mat.node_tree.nodes, mat.node_tree.links
    nodes.clear()
    tex = nodes.new("ShaderNodeTexImage")
    tex.image = image
    tex.interpolation = "Closest"
    emit = nodes.new("ShaderNodeEmission")
    out = nodes.new("ShaderNodeOutputMaterial")
    links.new(tex.outputs["Color"], emit.inputs["Color"])
    links.new(emit.outputs[0], out.inputs["Surface"])
    nodes.active = tex  # Texture Paint's "Material" mode paints the active image node
    return mat


def update_paint_sphere(obj, pose_bone, cells=64, refresh_image=True):
    """Create or refresh the paint sphere of ``pose_bone`` (a sinus texture): a mesh whose UVs
    are the texture's layout, centred on the bone head in the swing frame, following the
    parent bone; its material shows the bone's paint image (rewritten from the limit when
    ``refresh_image``). Returns ``(sphere, image)``."""
    limit = texture_limit(pose_bone)
    layout = limit.model.config["layout"]
    image = paint_image(obj, pose_bone, refresh=refresh_image)
    verts, faces, uvs = layout_sphere(layout, cells)
    name = sphere_name(obj, pose_bone)
    mesh = bpy.data.meshes.new(name)
    mesh.from_pydata(verts.tolist(), [], faces.tolist())
    uv_layer = mesh.uv_layers.new(name="swing")
    # from_pydata keeps the face corner order: loops are faces row by row
    uv_layer.data.foreach_set("uv", np.ascontiguousarray(uvs.reshape(-1, 2), dtype=np.float32).ravel())
    mesh.materials.append(_material(image))
    mesh.update()
    sphere = display_object(name, mesh, bpy.context.scene)
    sphere[PROP_ARMATURE], sphere[PROP_BONE] = obj.name, pose_bone.name  # for undo: see the module docstring
    sphere.hide_render = True
    sphere.hide_set(False)
    radius = RADIUS_FACTOR * pose_bone.bone.length
    frame = swing_frame(pose_bone, limit.reference) @ Matrix.Diagonal((radius, radius, radius, 1.0))
    place_at_bone(sphere, obj, pose_bone, frame)
    return sphere, image


def start_painting(context, obj, pose_bone, cells=64):
    """Create / refresh the paint sphere and enter Texture Paint on it with the limit image as
    canvas; starts a session (see the module docstring). Returns ``(sphere, image)``."""
    sphere, image = update_paint_sphere(obj, pose_bone, cells)
    if context.object is not None and context.object.mode != "OBJECT":
        bpy.ops.object.mode_set(mode="OBJECT")
    for other in context.view_layer.objects:
        if other.select_get():
            other.select_set(False)
    context.view_layer.objects.active = sphere
    sphere.select_set(True)
    bpy.ops.object.mode_set(mode="TEXTURE_PAINT")
    paint = context.scene.tool_settings.image_paint
    paint.mode = "IMAGE"
    paint.canvas = image
    _session.clear()
    _session.update(armature=obj.name, bone=pose_bone.name, sphere=sphere.name, image=image.name)
    return sphere, image


def set_brush(context, kind, strength=None):
    """Set the active Texture Paint brush up as an allowed / forbidden / stress brush
    (:data:`BRUSHES`: colour and blend mode); returns the brush. In Blender 5 the active brush
    is an asset that is edited in place (``image_paint.brush`` itself is read-only), so this
    changes the brush's own settings, and the unified colour when that is in use."""
    if kind not in BRUSHES:
        raise ValueError(f"brush kind must be one of {sorted(BRUSHES)}, got {kind!r}")
    paint = context.scene.tool_settings.image_paint
    brush = paint.brush
    if brush is None:
        raise ValueError("no active Texture Paint brush: enter Texture Paint and pick a brush first")
    colour, blend = BRUSHES[kind]
    brush.blend = blend
    brush.color = colour
    # Blender 5: per-mode unified settings; 4.x: on the tool settings
    unified = getattr(paint, "unified_paint_settings", None) or getattr(
        context.scene.tool_settings, "unified_paint_settings", None
    )
    if unified is not None and getattr(unified, "use_unified_color", False):
        unified.color = colour
    if strength is not None:
        brush.strength = float(strength)
    return brush


def _session_bone():
    obj = bpy.data.objects.get(_session.get("armature", ""))
    if obj is None or obj.pose is None:
        return None, None
    return obj, obj.pose.bones.get(_session.get("bone", ""))


def rebuild_session():
    """Rebuild the session bone's limit from its paint image (:func:`rebuild_from_paint`);
    returns the new limit or ``None`` without a session. Raises ``ValueError`` for a bad image
    (e.g. everything painted forbidden)."""
    obj, pose_bone = _session_bone()
    if pose_bone is None:
        return None
    from ...rig import live

    limit = rebuild_from_paint(obj, pose_bone)
    live.invalidate()
    return limit


def finish_painting(context):
    """Leave Texture Paint, rebuild the limit and return to the armature in Pose Mode with the
    bone active; the sphere is hidden. Returns the rebuilt limit (``None`` without a session)."""
    obj, pose_bone = _session_bone()
    sphere = bpy.data.objects.get(_session.get("sphere", ""))
    if context.object is not None and context.object.mode != "OBJECT":
        bpy.ops.object.mode_set(mode="OBJECT")
    try:
        limit = rebuild_session()
    finally:
        _session.clear()
    if sphere is not None:
        sphere.select_set(False)
        sphere.hide_set(True)
    if obj is not None:
        context.view_layer.objects.active = obj
        obj.select_set(True)
        bpy.ops.object.mode_set(mode="POSE")
        if pose_bone is not None:
            obj.data.bones.active = obj.data.bones[pose_bone.name]
    return limit


@persistent
def on_depsgraph_update_post(scene, depsgraph=None):
    """Rebuild the limit once the session's sphere has left Texture Paint. Never raises."""
    if not _session:
        return
    try:
        sphere = bpy.data.objects.get(_session["sphere"])
        if sphere is not None and sphere.mode == "TEXTURE_PAINT":
            return
        try:
            rebuild_session()
        finally:
            _session.clear()
    except Exception as err:  # noqa: BLE001 - never raise into Blender
        print(f"Joint Limits: could not rebuild the painted limit ({err})")


def session_in(context):
    """The session the file implies: the active object is a bone's paint sphere in Texture
    Paint (``{}`` otherwise)."""
    sphere = context.view_layer.objects.active if context.view_layer else None
    if sphere is None or sphere.mode != "TEXTURE_PAINT" or PROP_BONE not in sphere or PROP_ARMATURE not in sphere:
        return {}
    obj = bpy.data.objects.get(sphere[PROP_ARMATURE])
    pose_bone = obj.pose.bones.get(sphere[PROP_BONE]) if obj is not None and obj.pose is not None else None
    if pose_bone is None:
        return {}
    return {"armature": obj.name, "bone": pose_bone.name, "sphere": sphere.name, "image": paint_image_name(obj, pose_bone)}


def sync_after_undo(context):
    """Take the session from the file undo or redo restored (see the module docstring); when
    the session goes on, rebuild the limit if the restored painting differs from it. Returns
    the rebuilt limit or ``None``."""
    was = _session.get("sphere")
    _session.clear()
    _session.update(session_in(context))
    if not _session or was != _session["sphere"]:
        return None
    obj, pose_bone = _session_bone()
    image = bpy.data.images.get(_session["image"])
    if image is None or paint_matches(texture_limit(pose_bone).model, _read_pixels(image)):
        return None
    return rebuild_session()


@persistent
def on_undo_redo_post(*_args):
    try:
        sync_after_undo(bpy.context)
    except Exception as err:  # noqa: BLE001 - never raise into Blender
        print(f"Joint Limits: could not follow the painting after undo ({err})")


@persistent
def on_load(*_args):
    _session.clear()


HANDLERS = (
    (bpy.app.handlers.depsgraph_update_post, on_depsgraph_update_post),
    (bpy.app.handlers.undo_post, on_undo_redo_post),
    (bpy.app.handlers.redo_post, on_undo_redo_post),
    (bpy.app.handlers.load_post, on_load),
)


def register():
    install(HANDLERS, __name__)


def unregister():
    uninstall(HANDLERS, __name__)
    _session.clear()
