# SPDX-License-Identifier: GPL-3.0-or-later
"""Sinus textures as Blender images: a packed float image per bone that artists edit in the
Image Editor or Texture Paint, and Kelly's 8-bit PNG / float EXR files.

The image holds the model's channels as they are (data colour space, not sRGB): R the allowed
mask (1 allowed, 0 forbidden), G twist minimum and B twist maximum (radians), A stress 0..1.
Row 0 is the bottom row in both numpy and ``Image.pixels``.
"""

from pathlib import Path

import bpy
import numpy as np

from ..limits.joint import JointLimit
from ..limits.kelly_texture import from_kelly_rgba8, to_kelly_rgba8
from ..limits.sinus_texture import SinusTextureLimit
from .storage import read_limit, store_limit, write_limit

KIND = "sinus_texture"


def image_name(obj, pose_bone):
    return f"JL {obj.name} {pose_bone.name} sinus"


def texture_limit(pose_bone):
    """The bone's limit, which must be a fitted sinus texture (``ValueError`` otherwise)."""
    limit = read_limit(pose_bone)
    if limit is None or limit.model.kind != KIND:
        raise ValueError(f"{pose_bone.name}: fit a Sinus Texture limit first")
    return limit


def _pixels(image):
    w, h = image.size
    px = np.empty(w * h * image.channels, dtype=np.float32)
    image.pixels.foreach_get(px)
    return px.reshape(h, w, image.channels).astype(float)


def _new_image(name, array, float_buffer=True):
    """A data-colour-space image holding ``array (H, W, 4)``, replacing one of that name."""
    old = bpy.data.images.get(name)
    if old is not None:
        bpy.data.images.remove(old)
    h, w, _ = array.shape
    image = bpy.data.images.new(name, width=w, height=h, alpha=True, float_buffer=float_buffer)
    image.colorspace_settings.is_data = True
    image.alpha_mode = "NONE"
    image.pixels.foreach_set(np.ascontiguousarray(array, dtype=np.float32).ravel())
    return image


def edit_image(obj, pose_bone):
    """Create (or refresh) the bone's packed texture image from its fitted limit; returns it."""
    limit = texture_limit(pose_bone)
    image = _new_image(image_name(obj, pose_bone), limit.model.params["image"])
    image.pack()
    image.use_fake_user = True  # nothing else uses it: keep it through save/reload
    return image


def rebuild_from_image(obj, pose_bone, image=None):
    """Read the (edited) texture image back into the bone's limit, recomputing the derived
    data (nearest-boundary table, islands). Reference pose and centre are kept. Returns the
    new :class:`~..limits.joint.JointLimit`; ``ValueError`` for a missing or wrong image."""
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
        image = _new_image("JL export", array, float_buffer=False)
        fmt, depth = "PNG", "8"
    elif suffix == ".exr":
        image = _new_image("JL export", limit.model.params["image"])
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


def import_texture(obj, pose_bone, path):
    """Replace the bone's limit by a texture file (Kelly PNG or EXR of the model's channels).
    The reference pose and centre of an existing limit are kept. ``ValueError`` for missing,
    unreadable or wrongly sized files; the current limit is untouched then."""
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"no texture file {str(path)!r}")
    try:
        image = bpy.data.images.load(str(path), check_existing=False)
    except RuntimeError as err:
        raise ValueError(f"cannot read {path.name}: {err}") from None
    try:
        image.colorspace_settings.is_data = True
        pixels = _pixels(image)
        if pixels.shape[-1] != 4:
            raise ValueError(f"{path.name} has {pixels.shape[-1]} channels, needs RGBA")
        if path.suffix.lower() == ".png":
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
    from ..limits import sphere_maps

    old = read_limit(pose_bone)
    if old is not None and old.model.kind == KIND and tuple(shape) == (old.model.config["height"], old.model.config["width"]):
        return old.model.config["layout"]
    for layout, default in sphere_maps.DEFAULT_SHAPES.items():
        if tuple(shape) == tuple(default):
            return layout
    return sphere_maps.DEFAULT_LAYOUT
