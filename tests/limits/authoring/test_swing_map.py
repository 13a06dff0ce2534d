# SPDX-License-Identifier: GPL-3.0-or-later
"""The demo's sphere pictures without drawing them: the equal-area disc of swing directions
(limits/authoring/swing_map.py) and a limit sampled on it; and that only the demo's picture code imports
matplotlib, inside its functions. Pure numpy, no bpy."""

import ast
from pathlib import Path

import numpy as np
import pytest

from limits.authoring import swing_map as smap
from limits.geometry.quaternion import quaternion_from_exp_map, quaternion_multiply
from limits.joint import JointLimit

ROOT = Path(__file__).resolve().parents[3]
RNG = np.random.default_rng(5)


def unit(v):
    return v / np.linalg.norm(v, axis=-1, keepdims=True)


@pytest.fixture(scope="module")
def cone_limit():
    """A swing-twist k-DOP fitted to swings within 0.5 rad of +Y (rest), twist within 0.3 rad."""
    n = 2000
    phi = RNG.uniform(0, 2 * np.pi, n)
    r = 0.5 * np.sqrt(RNG.uniform(0, 1, n))
    swing = quaternion_from_exp_map(np.stack((r * np.cos(phi), 0 * r, r * np.sin(phi)), -1))
    twist = quaternion_from_exp_map(np.outer(RNG.uniform(-0.3, 0.3, n), [0.0, 1.0, 0.0]))
    return JointLimit.fit(quaternion_multiply(swing, twist), kind="kdop", reference="REST", mode="SWING_TWIST")


def test_disc_round_trip_and_equal_area_radii():
    d = unit(RNG.normal(size=(500, 3)))
    p = smap.disc_from_direction(d)
    assert np.all(np.linalg.norm(p, axis=-1) <= 2.0 + 1e-12)
    np.testing.assert_allclose(smap.direction_from_disc(p), d, atol=1e-9)
    # a direction theta from +Y lands at 2 sin(theta / 2): the centre, 90 degrees, the opposite pole
    np.testing.assert_allclose(
        np.linalg.norm(smap.disc_from_direction([[0, 1, 0], [1, 0, 0], [0, 0, -1]]), axis=-1), [0, np.sqrt(2), np.sqrt(2)]
    )
    np.testing.assert_allclose(np.linalg.norm(smap.disc_from_direction([0.0, -1.0, 0.0])), 2.0)
    np.testing.assert_allclose(smap.ring_radius(np.radians([0, 90, 180])), [0, np.sqrt(2), 2])
    # +X is to the right, +Z up
    np.testing.assert_allclose(smap.disc_from_direction([[1, 0, 0], [0, 0, 1]]), [[np.sqrt(2), 0], [0, np.sqrt(2)]], atol=1e-12)
    # equal area: uniform directions fill the disc uniformly (a quarter of them inside radius 1)
    inner = np.linalg.norm(smap.disc_from_direction(unit(RNG.normal(size=(20000, 3)))), axis=-1) < 1.0
    assert abs(inner.mean() - 0.25) < 0.015
    with pytest.raises(ValueError, match=r"\(\.\.\., 3\), got shape \(4, 2\)"):
        smap.disc_from_direction(np.zeros((4, 2)))


def test_allowed_twist_inside_outside_and_on_the_edge(cone_limit):
    inside = smap.allowed_twist(cone_limit, [[0.0, 1.0, 0.0], unit(np.array([0.2, 1.0, 0.0]))])
    # about 2 x 0.3 rad of twist is allowed near the rest direction (plus the default padding)
    assert np.all((inside > 30) & (inside < 60)), inside
    assert smap.allowed_twist(cone_limit, [[1.0, 0.0, 0.0], [0.0, -1.0, 0.0]]).tolist() == [0.0, 0.0]
    # on the edge itself contains() flickers; with a tolerance the projected pose's twist counts
    edge = cone_limit.project(quaternion_from_exp_map(np.array([[1.2, 0.0, 0.0]])))
    d, twist = smap.swing_directions(cone_limit, edge)
    ok = smap.allowed_twists(cone_limit, d, 180, tolerance=np.radians(0.25))[0]
    nearest = np.argmin(np.abs(smap.twist_samples(180) - twist[0]))
    assert ok[nearest]


def test_sampled_map_and_extent(cone_limit):
    axis, twist = smap.sample_swing_map(cone_limit, radius=2.0, size=41, twists=24)
    assert twist.shape == (41, 41) and np.all(np.isfinite(twist))
    assert twist[20, 20] > 0  # the centre (rest) is allowed
    assert twist[0, 0] == 0 and twist[20, 0] == 0  # far from it is not
    # the allowed swings reach about 0.5 rad (+ padding) from rest: 2 sin(0.6 / 2) ~ 0.59 on the disc
    extent = smap.allowed_extent(cone_limit)
    assert 0.45 < extent < 0.85, extent


def test_only_the_demo_pictures_import_matplotlib_and_only_inside_functions():
    """The extension's runtime needs bpy, mathutils and numpy only: matplotlib is a development
    dependency of the demo's pictures (requirements-dev.txt) and of the batch summary's optional
    picture (``--pictures``, which says why it is missing without it), imported lazily there."""
    skip = {"tests", "tools", "bench"}
    importers = {}
    for path in ROOT.rglob("*.py"):
        parts = path.relative_to(ROOT).parts
        if skip & set(parts) or any(part.startswith(".") for part in parts):  # (.venv*, caches)
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        top_level = {id(node) for node in tree.body}
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            if any(n.split(".")[0] == "matplotlib" for n in names):
                importers.setdefault(str(path.relative_to(ROOT)), []).append("top level" if id(node) in top_level else "function")
    assert set(importers) == {"cli/demo/pictures.py", "batch/summary_pictures.py"}, importers
    assert all(set(where) == {"function"} for where in importers.values()), importers
