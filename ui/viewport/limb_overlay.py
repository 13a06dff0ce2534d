# SPDX-License-Identifier: GPL-3.0-or-later
"""The reachable workspace of a limb drawn at its root (Mukai's limb range, :mod:`...rig.tasks.limb`): a
sphere of root->end directions, each vertex pushed out to the farthest reach the limb has
along it and coloured by what the range allows there.

Colours (:func:`workspace_colours`): an allowed direction is blue where the middle joint may
swivel little and yellow where it may swivel all around, brighter the farther the end may
reach; a forbidden direction is faint grey on the sphere of the longest reach. Split like
:mod:`.overlay`: :func:`workspace_data` gathers plain numpy data (tests check it headless),
:func:`draw_workspace` draws it with Blender's builtin smooth-colour shader.
"""

import numpy as np

from ...limits.authoring import pose_helper as ph
from ...rig.io.storage import read_limb

#: Sphere tessellation of the workspace (rings, segments).
RINGS, SEGMENTS = 24, 48
#: Colour of forbidden directions.
COLOUR_FORBIDDEN = (0.5, 0.5, 0.5, 0.08)
#: Alpha of allowed directions.
ALPHA = 0.45


def limb_frame_matrix(obj, middle):
    """World matrix ``(4, 4)`` of the limb range's frame of ``middle``'s limb: the root bone's
    rest frame carried by its posed parent (the root's rest frame when it has none)."""
    root = obj.data.bones[middle].parent
    m = np.array(root.matrix_local)
    if root.parent is not None:
        parent = obj.pose.bones[root.parent.name]
        m = np.array(parent.matrix) @ np.linalg.inv(np.array(root.parent.matrix_local)) @ m
    return np.array(obj.matrix_world) @ m


def workspace_colours(model, directions):
    """RGBA ``(V, 4)`` of unit ``directions (V, 3)`` (model frame), and the allowed mask ``(V,)``."""
    allowed = model.allows_direction(directions)
    low, high = model.swivel_range(directions)
    swivel = np.clip((high - low) / (2.0 * np.pi), 0.0, 1.0)
    reach = np.clip(model.reach_range(directions)[1] / model.config["reach_scale"], 0.0, 1.0)
    light = 0.35 + 0.65 * reach
    colours = np.stack((swivel * light, (0.35 + 0.5 * swivel) * light, (1.0 - swivel) * light, np.full(len(swivel), ALPHA)), -1)
    return np.where(allowed[:, None], colours, COLOUR_FORBIDDEN), allowed


def workspace_data(obj, middle):
    """Plain data to draw the workspace of the limb whose middle bone is ``middle``, or
    ``None`` when it has no limb range: ``points (V, 3)`` in world space, ``colours (V, 4)``,
    ``allowed (V,)``, ``triangles (T, 3)``, ``directions (V, 3)`` (model frame) and ``matrix``
    (world from the model's frame)."""
    model = read_limb(obj.pose.bones[middle])
    if model is None:
        return None
    directions, triangles = ph.uv_sphere(RINGS, SEGMENTS)
    colours, allowed = workspace_colours(model, directions)
    reach = np.where(allowed, model.reach_range(directions)[1], model.config["reach_scale"])
    local = model.params["root"] + directions * reach[:, None]
    matrix = limb_frame_matrix(obj, middle)
    points = local @ matrix[:3, :3].T + matrix[:3, 3]
    return {
        "points": points,
        "colours": colours,
        "allowed": allowed,
        "triangles": np.asarray(triangles),
        "directions": directions,
        "matrix": matrix,
    }


def draw_workspace(data, view_projection):
    """Draw ``data`` (:func:`workspace_data`) into the bound framebuffer, blended, no depth
    writes; ``gpu.state`` restored afterwards."""
    import gpu
    from gpu_extras.batch import batch_for_shader
    from mathutils import Matrix

    shader = gpu.shader.from_builtin("SMOOTH_COLOR")
    batch = batch_for_shader(
        shader,
        "TRIS",
        {"pos": np.ascontiguousarray(data["points"], np.float32), "color": np.ascontiguousarray(data["colours"], np.float32)},
        indices=np.ascontiguousarray(data["triangles"], np.int32),
    )
    saved = (gpu.state.blend_get(), gpu.state.depth_mask_get())
    try:
        gpu.state.blend_set("ALPHA")
        gpu.state.depth_mask_set(False)
        gpu.matrix.push()
        gpu.matrix.load_identity()
        gpu.matrix.push_projection()
        gpu.matrix.load_projection_matrix(Matrix(np.asarray(view_projection, dtype=float).tolist()))
        shader.bind()
        batch.draw(shader)
    finally:
        gpu.matrix.pop_projection()
        gpu.matrix.pop()
        gpu.state.blend_set(saved[0])
        gpu.state.depth_mask_set(saved[1])
