# SPDX-License-Identifier: GPL-3.0-or-later
"""GPU shaders of the add-on: GLSL sources from ``shaders/``, built with
``GPUShaderCreateInfo``, compiled once per process and cached; and the sinus-texture lookup
on the GPU (:func:`gpu_sinus_lookup`), the twin of ``SinusTextureLimit.contains`` / ``project``.

Importing this module does not touch the GPU (``gpu`` is imported inside the functions), so
the add-on loads headless without one. In background mode drawing is unavailable until
:func:`start_background_gpu` has rendered one tiny Workbench image; that needs EGL (Mesa's
``libegl1``) and *aborts the process* without it, so tests call it in a subprocess.
"""

import atexit
import functools
import os
import re
import tempfile
from pathlib import Path

import numpy as np

from ...limits.geometry import sphere_maps as sm
from ...limits.geometry.quaternion import as_quaternions

#: The folder holding the ``.glsl`` files.
SHADER_DIR = Path(__file__).resolve().parent.parent / "shaders"

#: Invocations per work group of the compute shaders (``local_size_x``).
LOCAL_SIZE = 64

#: Rotations per row of the input and output textures.
ROW_WIDTH = 4096

#: Defined in every shader built here; ``.glsl`` files keep standalone declarations (for
#: ``glslangValidator``) behind ``#ifndef JL_CREATE_INFO``.
CREATE_INFO_DEFINE = "JL_CREATE_INFO"

#: A shader file names the function libraries it uses (prepended in this order) in lines
#: ``// Requires: name.glsl``; ``tests/ui/test_shaders.py`` reads the same lines.
REQUIRES = re.compile(r"^// Requires: (\S+\.glsl)\s*$", re.MULTILINE)

_SHADERS = {}
_STATE = {"background_gpu": False}


@atexit.register
def free_shaders():
    """Drop the compiled shaders. Registered with ``atexit`` (after ``bpy``, so it runs first):
    GPU objects still referenced when the interpreter tears down can crash ``bpy`` as a module
    after its GPU context is gone."""
    _SHADERS.clear()


@functools.cache
def shader_source(name):
    """The text of ``shaders/<name>.glsl``."""
    return (SHADER_DIR / f"{name}.glsl").read_text(encoding="utf-8")


def shader_code(name):
    """The source of ``shaders/<name>.glsl`` with the libraries it requires prepended."""
    text = shader_source(name)
    parts = [shader_source(Path(lib).stem) for lib in REQUIRES.findall(text)]
    return "\n".join(parts + [text])


def start_background_gpu():
    """Bring up OpenGL in background mode (``bpy`` as a module, ``blender -b``) by rendering one
    4 x 4 Workbench image in a temporary scene; a no-op with a UI or once done.

    Without EGL this aborts the whole process (it cannot be caught): call it only where that is
    acceptable, e.g. in a subprocess.
    """
    import bpy

    if not bpy.app.background or _STATE["background_gpu"]:
        return
    scene = bpy.data.scenes.new("JL GPU start")
    camera_data = bpy.data.cameras.new("JL GPU start")
    camera = bpy.data.objects.new("JL GPU start", camera_data)
    try:
        scene.collection.objects.link(camera)
        scene.camera = camera
        scene.render.engine = "BLENDER_WORKBENCH"
        scene.render.resolution_x = scene.render.resolution_y = 4
        scene.render.resolution_percentage = 100
        scene.render.filepath = os.path.join(tempfile.gettempdir(), "joint_limits_gpu_start.png")
        with bpy.context.temp_override(scene=scene):
            bpy.ops.render.render(scene=scene.name)
    finally:
        if os.path.exists(scene.render.filepath):  # (not written unless asked; never left behind)
            os.remove(scene.render.filepath)
        bpy.data.objects.remove(camera)
        bpy.data.cameras.remove(camera_data)
        bpy.data.scenes.remove(scene)
    _STATE["background_gpu"] = True


def sinus_lookup_shader():
    """The compiled sinus-texture lookup compute shader (``sinus_texture_lookup.glsl`` +
    ``sinus_texture_compute.glsl``), built on first use and cached."""
    shader = _SHADERS.get("sinus_texture_compute")
    if shader is None:
        import gpu

        info = gpu.types.GPUShaderCreateInfo()
        info.define(CREATE_INFO_DEFINE, "1")
        info.local_group_size(LOCAL_SIZE, 1, 1)
        info.sampler(0, "FLOAT_2D", "quaternions")
        info.sampler(1, "FLOAT_2D", "limit_image")
        info.sampler(2, "FLOAT_2D", "nearest_table")
        info.image(0, "RGBA32F", "FLOAT_2D", "out_rotation", qualifiers={"WRITE"})
        info.image(1, "RGBA32F", "FLOAT_2D", "out_lookup", qualifiers={"WRITE"})
        info.push_constant("INT", "count")
        info.push_constant("INT", "row_width")
        info.push_constant("INT", "layout_id")
        info.compute_source(shader_code("sinus_texture_compute"))
        shader = gpu.shader.create_from_info(info)
        _SHADERS["sinus_texture_compute"] = shader
    return shader


def _texture(array, fmt="RGBA32F"):
    """A float texture from ``array (rows, columns, 4)`` (row 0 first)."""
    import gpu

    array = np.ascontiguousarray(array, dtype=np.float32)
    rows, cols = array.shape[:2]
    buffer = gpu.types.Buffer("FLOAT", array.size, array.ravel())
    return gpu.types.GPUTexture((cols, rows), format=fmt, data=buffer)


def _read(texture, count):
    """The first ``count`` texels of an RGBA32F texture as ``(count, 4)`` float32."""
    buffer = texture.read()
    # flatten first: the buffer protocol of multi-dimensional gpu Buffers reports wrong strides
    buffer.dimensions = texture.width * texture.height * 4
    return np.frombuffer(buffer, dtype=np.float32).reshape(-1, 4)[:count].copy()


def sinus_textures(model):
    """``(image, nearest)``: the model's data as uploaded to the shader, float32 arrays in row
    order: the image padded by one texel across the layout's seams ``(H + 2, W + 2, 4)`` and the
    nearest-boundary table ``(H, W, 4)`` (direction, 0)."""
    model._check_single()
    layout = model.config["layout"]
    image = sm.padded(np.asarray(model.params["image"], dtype=float), layout)
    nearest = model.nearest_table()  # (derived: the GPU looks it up whole)
    nearest = np.concatenate((nearest, np.zeros(nearest.shape[:2] + (1,))), axis=-1)
    return image.astype(np.float32), nearest.astype(np.float32)


def gpu_sinus_lookup(model, q, stress=False):
    """Run ``contains`` and ``project`` of a sinus texture model on the GPU.

    Parameters
    ----------
    model : SinusTextureLimit
        An unstacked model (any layout).
    q : (..., 4) array
        Reference-relative rotations ``(w, x, y, z)`` (the model's input); sent as float32.
    stress : bool
        Also return the stress.

    Returns
    -------
    contains : (...,) bool
    projected : (..., 4) float32
    stress : (...,) float32, only with ``stress=True`` (NaN for non-finite rows)

    Needs a GPU context (in background mode call :func:`start_background_gpu` first). The
    shader follows the numpy code step by step in float32 (``shaders/README.md``); results
    agree except for rotations within float32 rounding of a texel edge or of a twist limit.
    """
    import gpu

    q = as_quaternions(q)
    lead = q.shape[:-1]
    rows = np.ascontiguousarray(q.reshape(-1, 4), dtype=np.float32)
    count = len(rows)
    if count == 0:
        empty = (np.zeros(lead, dtype=bool), np.zeros(lead + (4,), dtype=np.float32))
        return empty + (np.zeros(lead, dtype=np.float32),) if stress else empty
    width = min(count, ROW_WIDTH)
    height = -(-count // width)
    padded_rows = np.zeros((height * width, 4), dtype=np.float32)
    padded_rows[:count] = rows
    image, nearest = sinus_textures(model)
    shader = sinus_lookup_shader()
    quaternions = _texture(padded_rows.reshape(height, width, 4))
    limit_image = _texture(image)
    nearest_table = _texture(nearest)
    out_rotation = gpu.types.GPUTexture((width, height), format="RGBA32F")
    out_lookup = gpu.types.GPUTexture((width, height), format="RGBA32F")
    shader.bind()
    shader.uniform_sampler("quaternions", quaternions)
    shader.uniform_sampler("limit_image", limit_image)
    shader.uniform_sampler("nearest_table", nearest_table)
    shader.image("out_rotation", out_rotation)
    shader.image("out_lookup", out_lookup)
    shader.uniform_int("count", count)
    shader.uniform_int("row_width", width)
    shader.uniform_int("layout_id", sm.LAYOUTS.index(model.config["layout"]))
    gpu.compute.dispatch(shader, -(-width // LOCAL_SIZE), height, 1)
    projected = _read(out_rotation, count).reshape(lead + (4,))
    lookup = _read(out_lookup, count)
    contains = (lookup[:, 0] > 0.5).reshape(lead)
    if stress:
        return contains, projected, lookup[:, 1].reshape(lead)
    return contains, projected
