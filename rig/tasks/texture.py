# SPDX-License-Identifier: GPL-3.0-or-later
"""Sinus textures as Blender images: a packed float image per bone that artists edit in the
Image Editor or Texture Paint, Kelly's 8-bit PNG / float EXR files, Kelly's sinus cone at the
bone, and the boundary tour that keys a bone around its limit.

The image holds the model's channels as they are (data colour space, not sRGB): R the allowed
mask (1 allowed, 0 forbidden), G twist minimum and B twist maximum (radians), A stress 0..1.
Row 0 is the bottom row in both numpy and ``Image.pixels``.
"""

import struct
from pathlib import Path

import bpy
import numpy as np
from mathutils import Quaternion

from ...limits.geometry import sphere_maps
from ...limits.geometry.quaternion import quaternion_multiply
from ...limits.geometry.swing_twist import rotation_from_direction_twist
from ...limits.joint import JointLimit
from ...limits.model import TEXTURE
from ...limits.models.sinus.kelly import from_kelly_rgba8, to_kelly_rgba8
from ...limits.models.sinus.texture import SinusTextureLimit, boundary_rim
from ..io.actions import assign_action, bone_path, new_action, rotation_channel_values, write_curve
from ..io.storage import read_limit, store_limit, write_limit
from .display import display_object, place_at_bone

#: A file's first bytes say what it is, whatever its name: PNG signature, OpenEXR magic number.
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
EXR_MAGIC = b"v/1\x01"

#: OpenEXR header attributes read before the dataWindow is found (real files have about ten).
EXR_MAX_ATTRIBUTES = 256


def image_name(obj, pose_bone):
    return f"JL {obj.name} {pose_bone.name} sinus"


def texture_limit(pose_bone):
    """The bone's limit, which must be a fitted sinus texture (``ValueError`` otherwise)."""
    limit = read_limit(pose_bone)
    if limit is None or not limit.model.can(TEXTURE):
        raise ValueError(f"{pose_bone.name}: fit a Sinus Texture limit first")
    return limit


def _pixels(image):
    w, h = image.size
    px = np.empty(w * h * image.channels, dtype=np.float32)
    image.pixels.foreach_get(px)
    return px.reshape(h, w, image.channels).astype(float)


def new_image(name, array, float_buffer=True, data=True):
    """An image holding ``array (H, W, 4)`` (row 0 at the bottom, as Blender stores pixels),
    replacing one of that name; ``data``: in the data colour space (values, not colours)."""
    old = bpy.data.images.get(name)
    if old is not None:
        bpy.data.images.remove(old)
    h, w, _ = array.shape
    image = bpy.data.images.new(name, width=w, height=h, alpha=True, float_buffer=float_buffer)
    image.colorspace_settings.is_data = data
    image.alpha_mode = "NONE"
    image.pixels.foreach_set(np.ascontiguousarray(array, dtype=np.float32).ravel())
    return image


def edit_image(obj, pose_bone):
    """Create (or refresh) the bone's packed texture image from its fitted limit; returns it."""
    limit = texture_limit(pose_bone)
    image = new_image(image_name(obj, pose_bone), limit.model.params["image"])
    image.pack()
    image.use_fake_user = True  # nothing else uses it: keep it through save/reload
    return image


def rebuild_from_image(obj, pose_bone, image=None):
    """Read the (edited) texture image back into the bone's limit, recomputing the derived
    data (nearest-boundary table, islands). Reference pose and centre are kept. Returns the
    new :class:`~...limits.joint.JointLimit`; ``ValueError`` for a missing or wrong image."""
    limit = texture_limit(pose_bone)
    image = image or bpy.data.images.get(image_name(obj, pose_bone))
    if image is None:
        raise ValueError(f"{pose_bone.name}: no texture image '{image_name(obj, pose_bone)}'; use Edit Texture first")
    if image.channels != 4:
        raise ValueError(f"texture image {image.name!r} has {image.channels} channels, needs 4 (RGBA)")
    config = limit.model.config
    if tuple(image.size) != (config["width"], config["height"]):
        raise ValueError(
            f"texture image {image.name!r} is {image.size[0]}x{image.size[1]}, the limit's texture is "
            f"{config['width']}x{config['height']}; use Edit Texture to make a new image"
        )
    pixels = _pixels(image)
    model = SinusTextureLimit.from_image(pixels, config["layout"])
    rebuilt = JointLimit(model, limit.reference, limit.centre)
    write_limit(pose_bone, rebuilt)
    return rebuilt


def export_texture(pose_bone, path):
    """Kelly's 8-bit RGBA PNG (``.png``) or the float channels as 32-bit EXR (``.exr``)."""
    limit = texture_limit(pose_bone)
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix == ".png":
        array = to_kelly_rgba8(limit.model).astype(np.float32) / 255.0
        image = new_image("JL export", array, float_buffer=False)
        fmt, depth = "PNG", "8"
    elif suffix == ".exr":
        image = new_image("JL export", limit.model.params["image"])
        fmt, depth = "OPEN_EXR", "32"
    else:
        raise ValueError(f"texture files end in .png (Kelly 8-bit) or .exr (float), got {path.name!r}")
    try:
        settings = bpy.context.scene.render.image_settings
        old = (settings.file_format, settings.color_depth, settings.color_mode)
        settings.file_format, settings.color_mode = fmt, "RGBA"
        settings.color_depth = depth
        try:
            image.save_render(str(path), scene=bpy.context.scene)
        finally:
            settings.file_format, settings.color_depth, settings.color_mode = old[0], old[1], old[2]
    finally:
        bpy.data.images.remove(image)
    return path


def _exr_data_window(fh):
    """``(height, width)`` from the ``dataWindow`` attribute of an OpenEXR header, read after
    the magic number; ``ValueError`` when it is missing or the header is malformed."""
    fh.read(4)  # version and flags
    for _ in range(EXR_MAX_ATTRIBUTES):
        name = b""
        while (c := fh.read(1)) not in (b"\0", b""):
            name += c
            if len(name) > 255:
                raise ValueError("a malformed OpenEXR header")
        if not name:
            break
        kind = b""
        while (c := fh.read(1)) not in (b"\0", b""):
            kind += c
            if len(kind) > 255:
                raise ValueError("a malformed OpenEXR header")
        raw = fh.read(4)
        if len(raw) < 4:
            raise ValueError("a truncated OpenEXR header")
        (size,) = struct.unpack("<i", raw)
        if name == b"dataWindow" and kind == b"box2i" and size == 16:
            x_min, y_min, x_max, y_max = struct.unpack("<4i", fh.read(16))
            return y_max - y_min + 1, x_max - x_min + 1
        if size < 0:
            raise ValueError("a malformed OpenEXR header")
        fh.seek(size, 1)
    raise ValueError("an OpenEXR header without a dataWindow")


def texture_file_kind(path):
    """``("png" | "exr", (height, width))`` of a texture file, decided by its first bytes (not
    its name) and read from its header alone (PNG IHDR, OpenEXR dataWindow), so a file of the
    wrong size is refused before Blender decodes it. ``ValueError`` naming the file otherwise."""
    path = Path(path)
    try:
        with path.open("rb") as fh:
            magic = fh.read(8)
            if magic == PNG_MAGIC:
                chunk = fh.read(16)
                if len(chunk) < 16 or chunk[4:8] != b"IHDR":
                    raise ValueError(f"{path.name} is a damaged PNG (no IHDR header)")
                width, height = struct.unpack(">II", chunk[8:16])
                return "png", (height, width)
            if magic[:4] == EXR_MAGIC:
                fh.seek(4)
                try:
                    return "exr", _exr_data_window(fh)
                except (ValueError, struct.error) as err:
                    raise ValueError(f"{path.name} is {err}") from None
    except OSError as err:
        raise ValueError(f"cannot read {path.name}: {err.strerror or err}") from None
    raise ValueError(f"{path.name} is neither a PNG nor an OpenEXR file")


def import_texture(obj, pose_bone, path):
    """Replace the bone's limit by a texture file (Kelly PNG or EXR of the model's channels,
    told apart by content: :func:`texture_file_kind`). The reference pose and centre of an
    existing limit are kept. ``ValueError`` for missing, unreadable or wrongly sized files,
    the size checked from the header before the image is decoded; the current limit is
    untouched then."""
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"no texture file {str(path)!r}")
    kind, shape = texture_file_kind(path)
    if kind == "png" and shape != sphere_maps.KELLY_SHAPE:
        h, w = sphere_maps.KELLY_SHAPE
        raise ValueError(f"{path.name} is a {shape[1]}x{shape[0]} PNG; a Kelly texture is {w}x{h}")
    if kind == "exr":
        try:
            sphere_maps.texture_shape(shape)
        except ValueError as err:
            raise ValueError(f"{path.name} is a {shape[1]}x{shape[0]} EXR: {err}") from None
    try:
        image = bpy.data.images.load(str(path), check_existing=False)
    except RuntimeError as err:
        raise ValueError(f"cannot read {path.name}: {err}") from None
    try:
        image.colorspace_settings.is_data = True
        pixels = _pixels(image)
        if pixels.shape[-1] != 4:
            raise ValueError(f"{path.name} has {pixels.shape[-1]} channels, needs RGBA")
        if kind == "png":
            model = from_kelly_rgba8(np.rint(pixels * 255.0).astype(np.uint8))
        else:
            layout = _layout_of(pose_bone, pixels.shape[:2])
            model = SinusTextureLimit.from_image(pixels, layout)
    finally:
        bpy.data.images.remove(image)
    old = read_limit(pose_bone)
    reference, centre = (old.reference, old.centre) if old is not None else (np.array([1.0, 0, 0, 0]),) * 2
    limit = JointLimit(model, reference, centre)
    store_limit(pose_bone, limit)
    return limit


def _layout_of(pose_bone, shape):
    old = read_limit(pose_bone)
    if old is not None and old.model.can(TEXTURE) and tuple(shape) == (old.model.config["height"], old.model.config["width"]):
        return old.model.config["layout"]
    for layout, default in sphere_maps.DEFAULT_SHAPES.items():
        if tuple(shape) == tuple(default):
            return layout
    return sphere_maps.DEFAULT_LAYOUT


# -- Kelly's sinus cone at the bone, and the boundary tour that keys a bone around its limit --
def cone_name(obj, pose_bone):
    return f"JL {obj.name} {pose_bone.name} sinus cone"


def update_cone(obj, pose_bone, count=64):
    """Create or update the sinus cone mesh of ``pose_bone``: apex at the bone head, rim along
    the boundary of the allowed swings, as long as the bone. It sits in the frame the swings
    are measured in (parent pose x rest x reference) and follows the parent bone (a Child Of
    constraint), so the bone's Y axis points into the cone while its swing is allowed.
    Returns the object."""
    limit = texture_limit(pose_bone)
    directions, _ = boundary_rim(limit.model, count)
    length = pose_bone.bone.length
    verts = np.concatenate((np.zeros((1, 3)), directions * length))
    faces = [(0, 1 + i, 1 + (i + 1) % count) for i in range(count)]
    faces.append(tuple(range(count, 0, -1)))  # the cap closes the cone
    name = cone_name(obj, pose_bone)
    mesh = bpy.data.meshes.new(name)
    mesh.from_pydata(verts.tolist(), [], faces)
    cone = display_object(name, mesh, bpy.context.scene)
    cone.display_type = "WIRE"
    cone.hide_render = True
    place_at_bone(cone, obj, pose_bone, swing_frame(pose_bone, limit.reference))
    return cone


def swing_frame(pose_bone, reference):
    """Armature-space matrix of the frame swings are measured in, at the bone head."""
    bone = pose_bone.bone
    if pose_bone.parent is not None:
        parent = pose_bone.parent
        frame = parent.matrix @ parent.bone.matrix_local.inverted() @ bone.matrix_local
    else:
        frame = bone.matrix_local.copy()
    rotation = frame.to_quaternion() @ Quaternion(reference.tolist())
    out = rotation.to_matrix().to_4x4()
    out.translation = pose_bone.head
    return out


def boundary_tour(obj, pose_bone, count=48, frame_start=1):
    """A new action keying ``pose_bone`` around the rim of its sinus texture, one key per frame
    (twist at the middle of its range), for previewing the limit. Returns the action; it is
    assigned to the armature (the previous action stays in the file)."""
    limit = texture_limit(pose_bone)
    directions, twist = boundary_rim(limit.model, count)
    rel = rotation_from_direction_twist(directions, twist)
    rel = np.concatenate((rel, rel[:1]))  # back to the start
    local = quaternion_multiply(limit.reference, rel)
    frames = np.arange(frame_start, frame_start + len(local), dtype=float)
    action, container = new_action(obj, f"{pose_bone.name}_boundary_tour")
    channel, values = rotation_channel_values(pose_bone.rotation_mode, local)
    for i in range(values.shape[1]):
        write_curve(container, f"{bone_path(pose_bone.name)}.{channel}", i, frames, values[:, i], pose_bone.name)
    action.use_fake_user = True
    assign_action(obj, action)
    return action
