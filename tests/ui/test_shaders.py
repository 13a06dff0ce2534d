# SPDX-License-Identifier: GPL-3.0-or-later
"""The GLSL sources in ``shaders/``: every file validates with ``glslangValidator``, and the
sinus-texture lookup on the GPU (``ui/viewport/gpu.py``) agrees with the numpy model.

The GPU test runs in a subprocess: bringing up OpenGL headless aborts the process where EGL is
missing. Such a death (before the GPU is up) is reported as a skip, any other failure fails.
"""

import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SHADERS = ROOT / "ui" / "shaders"
GLSL_FILES = sorted(SHADERS.glob("*.glsl"))

#: Same convention as ``ui/viewport/gpu.py`` (``REQUIRES``): libraries a shader file uses.
REQUIRES = re.compile(r"^// Requires: (\S+\.glsl)\s*$", re.MULTILINE)

#: Shader stage by file name suffix (glslangValidator's ``-S``).
STAGES = {"_compute": "comp", "_vert": "vert", "_frag": "frag"}


def glslang():
    exe = shutil.which("glslangValidator")
    if exe is None:
        pytest.fail(
            "glslangValidator is not on PATH: install glslang-tools "
            "(`sudo apt-get install glslang-tools`; `./dev` installs it on Debian/Ubuntu when it sets up .venv)"
        )
    return exe


def standalone(path):
    """``(source, stage)``: ``path``'s GLSL as one valid translation unit. Function libraries (no
    ``main``) get a trivial main; shaders get their required libraries prepended and declare
    their own interface behind ``#ifndef JL_CREATE_INFO``."""
    text = path.read_text(encoding="utf-8")
    has_main = re.search(r"\bvoid\s+main\s*\(", text) is not None
    if not has_main:
        return f"#version 430\n{text}\nvoid main() {{}}\n", "comp"
    stage = next((s for suffix, s in STAGES.items() if path.stem.endswith(suffix)), None)
    if stage is None:
        pytest.fail(f"{path.name}: name a shader with main() *_compute, *_vert or *_frag.glsl")
    libraries = [(SHADERS / name).read_text(encoding="utf-8") for name in REQUIRES.findall(text)]
    return "\n".join(["#version 430"] + libraries + [text]), stage


def test_every_shader_is_used_and_every_used_shader_exists():
    """The add-on builds its shaders with ``shader_code("<name>")``, whose libraries come in by
    ``// Requires:`` lines: no file is left that nothing builds, and nothing builds a missing
    file."""
    code = "\n".join(p.read_text(encoding="utf-8") for p in (ROOT / "ui" / "viewport").glob("*.py"))
    built = set(re.findall(r'shader_code\("(\w+)"\)', code))
    required = {name[: -len(".glsl")] for p in GLSL_FILES for name in REQUIRES.findall(p.read_text(encoding="utf-8"))}
    assert built, "no shader_code(...) calls found: the test no longer sees how shaders are built"
    assert {p.stem for p in GLSL_FILES} == built | required


@pytest.mark.parametrize("path", GLSL_FILES, ids=lambda p: p.name)
def test_glsl_validates(path, tmp_path):
    exe = glslang()
    text = path.read_text(encoding="utf-8")
    assert text.startswith("// SPDX-License-Identifier: GPL-3.0-or-later"), f"{path.name}: SPDX header"
    for name in REQUIRES.findall(text):
        assert (SHADERS / name).is_file(), f"{path.name} requires a missing {name}"
    source, stage = standalone(path)
    unit = tmp_path / f"{path.stem}.{stage}"
    unit.write_text(source, encoding="utf-8")
    run = subprocess.run([exe, "-S", stage, str(unit)], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, f"{path.name} does not validate:\n{run.stdout}{run.stderr}"


GPU_SCRIPT = textwrap.dedent(
    """
    import json, sys, time
    ROOT = sys.argv[1]
    sys.path.insert(0, ROOT + "/tools")
    import blender_session

    addon = blender_session.load_extension(ROOT)
    import numpy as np

    start = time.time()
    addon.ui.viewport.gpu.start_background_gpu()
    print("GPU_READY", flush=True)
    q_lib = addon.limits.geometry.quaternion
    st = addon.limits.models.sinus.texture
    sm = addon.limits.geometry.sphere_maps
    JointLimit = addon.limits.joint.JointLimit
    rng = np.random.default_rng(7)

    # a synthetic cone cloud: swing in an ellipse of half-axes 0.9 / 0.5 rad, swing-dependent twist
    n = 4000
    phi = rng.uniform(0, 2 * np.pi, n)
    r = np.sqrt(rng.uniform(0, 1, n))
    swing = q_lib.quaternion_from_exp_map(np.stack((0.9 * r * np.cos(phi), 0 * r, 0.5 * r * np.sin(phi)), -1))
    tw = rng.uniform(-0.4, 0.4, n) + 0.3 * r * np.cos(phi)
    cloud = q_lib.quaternion_multiply(swing, q_lib.quaternion_from_exp_map(np.outer(tw, [0.0, 1.0, 0.0])))

    out = {}
    for layout, size in (("equal_area", None), ("octahedral", 64), ("kelly", 64)):
        limit = JointLimit.fit(cloud, kind="sinus_texture", layout=layout, size=size)
        model = limit.model
        # uniform random rotations (mostly forbidden swings) and the cloud perturbed (near and
        # across the boundary, twist clamps at allowed swings)
        uniform = rng.normal(size=(3000, 4))
        uniform /= np.linalg.norm(uniform, axis=-1, keepdims=True)
        wobble = q_lib.quaternion_from_exp_map(rng.normal(scale=0.15, size=(3000, 3)))
        local = np.concatenate((uniform, q_lib.quaternion_multiply(cloud[:3000], wobble)))
        rel = limit.to_relative(local).astype(np.float32).astype(float)  # what the GPU sees
        bad = np.array([[np.nan, 0, 0, 0], [0, 0, 0, 0], [np.inf, 1, 0, 0]])
        rel = np.concatenate((rel, bad))
        t0 = time.time()
        contains, projected, stress = addon.ui.viewport.gpu.gpu_sinus_lookup(model, rel, stress=True)
        gpu_s = time.time() - t0
        good = slice(0, len(rel) - len(bad))
        ref_contains = model.contains(rel)
        ref_projected = model.project(rel)
        ref_stress = model.stress(rel)
        # rows within float32 rounding of a texel edge or of a twist limit may differ
        g = rel[good]
        h, w = model.config["height"], model.config["width"]
        d, twist = st.direction_twist(g)
        u, v = sm.direction_to_uv(d, layout)
        frac_u, frac_v = u * w % 1.0, v * h % 1.0
        edge = (np.minimum(frac_u, 1 - frac_u) < 1e-3) | (np.minimum(frac_v, 1 - frac_v) < 1e-3)
        look = model._lookup(g, None)
        limit_edge = (np.abs(twist - look["low"]) < 1e-4) | (np.abs(twist - look["high"]) < 1e-4)
        clear = ~(edge | limit_edge)
        p = projected[good].astype(float)
        p /= np.linalg.norm(p, axis=-1, keepdims=True)
        rp = ref_projected[good] / np.linalg.norm(ref_projected[good], axis=-1, keepdims=True)
        sign = np.where(np.sum(p * rp, axis=-1) < 0, -1.0, 1.0)
        angle = 4 * np.arcsin(np.clip(np.linalg.norm(p - sign[:, None] * rp, axis=-1) / 2, 0, 1))
        out[layout] = {
            "rows": int(len(g)),
            "contained": int(ref_contains[good].sum()),
            "forbidden_swings": int((~look["allowed"]).sum()),
            "moved": int((~ref_contains[good]).sum()),
            "ambiguous": int((~clear).sum()),
            "contains_mismatch": int((contains[good] != ref_contains[good])[clear].sum()),
            "contains_mismatch_ambiguous": int((contains[good] != ref_contains[good])[~clear].sum()),
            "max_angle": float(angle[clear].max()),
            "max_angle_ambiguous": float(angle[~clear].max()) if (~clear).any() else 0.0,
            "max_stress_error": float(np.abs(stress[good] - ref_stress[good])[clear].max()),
            "bad_rows_contained": bool(contains[len(g):].any()),
            "bad_rows_stress_nan": bool(np.isnan(stress[len(g):]).all()),
            "bad_rows_unchanged": bool(np.array_equal(projected[len(g):], rel[len(g):].astype(np.float32), equal_nan=True)),
            "gpu_s": gpu_s,
        }
    out["seconds_after_gpu_start"] = time.time() - start
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
            f"headless OpenGL is unavailable: the process died from signal {-run.returncode} while "
            f"starting the GPU (needs EGL: libegl1, libgl1-mesa-dri)\n{tail}"
        )
    assert run.returncode == 0, f"GPU subprocess failed (rc {run.returncode}):\n{tail}"
    line = next((x for x in run.stdout.splitlines() if x.startswith("RESULT ")), None)
    assert line is not None, f"GPU subprocess printed no result:\n{tail}"
    return json.loads(line[len("RESULT ") :])


@pytest.mark.parametrize("layout", ["equal_area", "octahedral", "kelly"])
def test_gpu_sinus_lookup_matches_numpy(gpu_results, layout):
    r = gpu_results[layout]
    # the sample exercises all three cases: contained, twist-clamped and forbidden swings
    assert r["contained"] > 300 and r["forbidden_swings"] > 1000 and r["moved"] - r["forbidden_swings"] > 100, r
    assert r["ambiguous"] < 0.05 * r["rows"], r
    assert r["contains_mismatch"] == 0, r
    assert r["contains_mismatch_ambiguous"] <= r["ambiguous"], r
    assert r["max_angle"] < 1e-4, r
    assert r["max_stress_error"] < 1e-4, r
    assert not r["bad_rows_contained"] and r["bad_rows_stress_nan"] and r["bad_rows_unchanged"], r
