# SPDX-License-Identifier: GPL-3.0-or-later
"""The swing sphere and twist disk overlays (ui/viewport/overlay.py): drawn offscreen headless and
checked pixel by pixel against the limit, and their draw handler removed on unregister.

The GPU part runs in a subprocess (as in tests/ui/test_shaders.py): bringing up OpenGL headless
aborts the process where EGL is missing; such a death before the GPU is up is a skip.
"""

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

GPU_SCRIPT = textwrap.dedent(
    """
    import json, sys
    ROOT = sys.argv[1]
    sys.path.insert(0, ROOT + "/tools")
    sys.path.insert(0, ROOT + "/tests")
    import blender_session

    addon = blender_session.load_extension(ROOT)
    import numpy as np

    addon.ui.viewport.gpu.start_background_gpu()
    print("GPU_READY", flush=True)
    import bpy
    from rigs import fitted_rig

    ph = addon.limits.authoring.pose_helper
    overlay = addon.ui.viewport.overlay
    N = 96
    SCALE = 1.25  # the unit sphere fills 80 % of the image
    # orthographic camera on +Z looking down -Z: pixel (i, j) sees world (x, y)
    ortho = np.diag([1 / SCALE, 1 / SCALE, -0.5, 1.0])
    # turn the swing frame so its +Y (the rest swing, where limits allow most) faces the camera
    TURN = np.eye(4)
    TURN[:3, :3] = [[1, 0, 0], [0, 0, -1], [0, 1, 0]]

    def front_directions():
        c = (np.arange(N) + 0.5) / N * 2 - 1
        x, y = np.meshgrid(c * SCALE, c * SCALE)  # row j is y, column i is x
        r2 = x * x + y * y
        inside = r2 < 0.85 ** 2
        d = np.stack((x, y, np.sqrt(np.clip(1 - r2, 0, 1))), -1)
        return d, inside

    def pixel_of(d):
        i = int((d[0] / SCALE + 1) / 2 * N)
        j = int((d[1] / SCALE + 1) / 2 * N)
        return j, i

    def ramp_distance(px):
        s = np.linspace(0, 1, 101)
        ramp = (1 - s)[:, None] * np.array(ph.COLOUR_ALLOWED) + s[:, None] * np.array(ph.COLOUR_STRESSED)
        premultiplied = ramp[:, :3] * ramp[:, 3:]  # ALPHA blending over black
        return np.min(np.linalg.norm(px[..., None, :3] - premultiplied, axis=-1), axis=-1)

    def check_regions(data, world_to_frame):
        # the current swing marker on the silhouette, outside the checked disc
        plain = dict(data, boundary=np.zeros((0, 3)), picks=[], direction=np.array([1.0, 0.0, 0.0]))
        px = overlay.render_offscreen(plain, ortho @ TURN @ world_to_frame, (N, N), disk=False)
        d, inside = front_directions()
        d = d @ TURN[:3, :3]  # view -> swing frame
        image, layout = data["image"], data["layout"]
        allowed, _ = ph.sphere_values(image, layout, d)
        # skip pixels whose neighbourhood straddles the boundary (texel rounding)
        steady = np.ones_like(inside)
        for off in ([0.03, 0, 0], [-0.03, 0, 0], [0, 0.03, 0], [0, -0.03, 0], [0, 0, 0.03], [0, 0, -0.03]):
            steady &= ph.sphere_values(image, layout, d + off)[0] == allowed
        use = inside & steady
        forbidden_colour = np.array(ph.COLOUR_FORBIDDEN[:3]) * ph.COLOUR_FORBIDDEN[3]
        forbidden_err = np.linalg.norm(px[..., :3] - forbidden_colour, axis=-1)
        allowed_err = ramp_distance(px)
        return {
            "allowed_pixels": int((use & allowed).sum()),
            "forbidden_pixels": int((use & ~allowed).sum()),
            "allowed_wrong": int((use & allowed & (allowed_err > 0.02)).sum()),
            "forbidden_wrong": int((use & ~allowed & (forbidden_err > 0.02)).sum()),
            "corner": px[0, 0].tolist(),
        }

    import gpu

    before = [gpu.state.blend_get(), gpu.state.depth_test_get(), gpu.state.depth_mask_get(), gpu.state.line_width_get()]
    out = {"colours": {"disk": overlay.COLOUR_DISK, "twist": overlay.COLOUR_TWIST, "zero": overlay.COLOUR_ZERO}}
    # 1. the sinus texture of a fitted bone, through overlay_data (its own mask), seen from the
    #    swing frame's +Z
    obj, pb, _ = fitted_rig(addon, model="sinus_texture")
    obj.animation_data.action = None
    pb.rotation_quaternion = addon.rig.io.storage.read_cloud(pb)[10]
    bpy.context.view_layer.update()
    data = overlay.overlay_data(obj, pb, radius=1.0)
    m = data["matrix"]
    out["head"] = np.allclose(m[:3, 3], np.array(obj.matrix_world @ pb.head))
    view = np.linalg.inv(m)
    out["texture"] = check_regions(data, view)

    # 2. a box limit (no mask of its own): sampled onto the sphere
    q_lib = addon.limits.geometry.quaternion
    cloud = addon.rig.io.storage.read_cloud(pb)
    box = addon.limits.joint.JointLimit.fit(cloud, kind="box", reference="REST")
    image, layout = ph.sample_limit(box, size=48)
    box_data = dict(data, matrix=np.eye(4), image=image, layout=layout, key=None, boundary=ph.boundary_loop(image, layout))
    out["box"] = check_regions(box_data, np.eye(4))

    # 3. boundary loop, the current swing marker and a pick opposite the rest direction
    tilt = np.array([0.5, 0.0, np.sqrt(0.75)])
    marked = dict(box_data, direction=tilt, opposite=False, picks=[np.array([-0.5, -0.3, 0.81])], rest=np.array([0.0, 1.0, 0.0]))
    px = overlay.render_offscreen(marked, ortho, (N, N), disk=False)
    j, i = pixel_of(tilt)
    out["marker"] = px[j, i].tolist()
    j, i = pixel_of(marked["picks"][0] / np.linalg.norm(marked["picks"][0]))
    out["pick"] = px[j, i].tolist()
    loop = box_data["boundary"]
    front = loop[loop[:, 2] > 0.5]
    whites = []
    for p in front[::4]:
        j, i = pixel_of(p)
        patch = px[max(j - 1, 0) : j + 2, max(i - 1, 0) : i + 2, :3]
        whites.append(float(np.max(np.min(patch, axis=-1))))
    out["boundary_whites"] = whites

    # 4. the twist disk with the bone pointing at the camera
    disk_data = dict(box_data, direction=np.array([0.0, 0.0, 1.0]), twist=0.2, twist_range=(-0.5, 0.9))
    px = overlay.render_offscreen(disk_data, ortho, (N, N), sphere=False)
    def at(angle, r=0.55):
        p = np.array([np.cos(angle), np.sin(angle), 0.0]) * r * overlay.DISK_RADIUS
        return px[pixel_of(p)].tolist()
    out["disk_inside"] = at(0.6)
    out["disk_outside"] = at(np.pi)
    out["disk_current"] = at(0.2, 0.9)
    out["disk_zero"] = at(0.0, 0.9)
    out["shaders_cached"] = overlay.sphere_shader() is overlay.sphere_shader()
    after = [gpu.state.blend_get(), gpu.state.depth_test_get(), gpu.state.depth_mask_get(), gpu.state.line_width_get()]
    out["state_restored"] = before == after
    overlay.free_gpu()
    print("RESULT " + json.dumps(out), flush=True)
    """
)


@pytest.fixture(scope="module")
def gpu_results(tmp_path_factory):
    env = dict(os.environ, BLENDER_USER_RESOURCES=str(tmp_path_factory.mktemp("blender_user")))
    run = subprocess.run([sys.executable, "-c", GPU_SCRIPT, str(ROOT)], env=env, capture_output=True, text=True, timeout=600)
    tail = "\n".join((run.stdout + run.stderr).splitlines()[-30:])
    if run.returncode < 0 and "GPU_READY" not in run.stdout:
        pytest.skip(
            f"headless OpenGL is unavailable: the process died from signal {-run.returncode} while starting the GPU\n{tail}"
        )
    assert run.returncode == 0, f"GPU subprocess failed (rc {run.returncode}):\n{tail}"
    line = next((x for x in run.stdout.splitlines() if x.startswith("RESULT ")), None)
    assert line is not None, f"GPU subprocess printed no result:\n{tail}"
    return json.loads(line[len("RESULT ") :])


@pytest.mark.parametrize("case", ["texture", "box"])
def test_swing_sphere_colours_allowed_and_forbidden_swings(gpu_results, case):
    r = gpu_results[case]
    assert r["allowed_pixels"] > 200 and r["forbidden_pixels"] > 200, r
    assert r["allowed_wrong"] == 0 and r["forbidden_wrong"] == 0, r
    assert r["corner"] == [0.0, 0.0, 0.0, 1.0]
    if case == "texture":
        assert gpu_results["head"]


def test_swing_sphere_marks_current_swing_picks_and_boundary(gpu_results):
    from limits.authoring import pose_helper as ph

    assert gpu_results["marker"][:3] == pytest.approx(ph.COLOUR_CURRENT[:3], abs=0.01)
    assert gpu_results["pick"][:3] == pytest.approx(ph.COLOUR_OPPOSITE[:3], abs=0.01)
    whites = gpu_results["boundary_whites"]
    assert len(whites) >= 3 and min(whites) > 0.9, whites


def test_twist_disk_shows_range_zero_and_current(gpu_results):
    r = gpu_results
    disk, twist, zero = (r["colours"][k] for k in ("disk", "twist", "zero"))
    assert r["disk_inside"][:3] == pytest.approx([c * disk[3] for c in disk[:3]], abs=0.01)
    assert r["disk_outside"][:3] == [0.0, 0.0, 0.0]
    assert r["disk_current"][:3] == pytest.approx(twist[:3], abs=0.01)
    assert r["disk_zero"][:3] == pytest.approx(zero[:3], abs=0.01)
    assert r["shaders_cached"] and r["state_restored"]


def test_unregister_removes_every_draw_handler(addon):
    import bpy

    overlay = addon.ui.viewport.overlay
    handlers = overlay.draw_handlers()
    assert len(handlers) == 1
    assert hasattr(bpy.types.WindowManager, "joint_limits_swing_sphere")
    addon.unregister()
    try:
        assert overlay.draw_handlers() == []
        assert not hasattr(bpy.types.WindowManager, "joint_limits_swing_sphere")
        with pytest.raises(ValueError):  # already removed from Blender's list
            bpy.types.SpaceView3D.draw_handler_remove(handlers[0], "WINDOW")
        assert not addon.rig.io.app_handlers.ours(bpy.app.handlers.depsgraph_update_post, addon.ui.viewport.paint.__name__)
    finally:
        addon.register()
    assert len(overlay.draw_handlers()) == 1
