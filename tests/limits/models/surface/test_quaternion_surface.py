# SPDX-License-Identifier: GPL-3.0-or-later
"""The quaternion implicit surface limit (seed 002; numpy only): reconstruction of synthetic
shapes in quaternion space, carving holes, projection, covers, batching and bad input."""

import numpy as np
import pytest

from limits.continuity import descend
from limits.geometry.quaternion import quaternion_angle, quaternion_from_exp_map, quaternion_random, slerp
from limits.joint import JointLimit
from limits.models.surface import implicit as implicit_surface
from limits.models.surface import quaternion_surface
from limits.models.surface.primitives import primitive_field, surface_points
from limits.models.surface.quaternion_surface import QuaternionSurfaceLimit, _to_points
from limits.registry import model_from_dict
from limits.serialize import limit_from_json, limit_to_json

SURFACE = QuaternionSurfaceLimit


def ball(rng, n, axes, centre=(0.0, 0.0, 0.0)):
    """``n`` points uniformly in an ellipsoid of semi-axes ``axes`` (quaternion vector parts)."""
    u = rng.normal(size=(n, 3))
    u /= np.linalg.norm(u, axis=1, keepdims=True)
    return u * (rng.random(n) ** (1 / 3))[:, None] * axes + centre


def to_q(p, flip_every=2):
    """Unit quaternions with vector parts ``p`` (w > 0), every ``flip_every``-th one negated."""
    q = np.c_[np.sqrt(1.0 - np.sum(p * p, axis=1)), p]
    q[::flip_every] *= -1.0
    return q


def ellipsoid_cloud(seed=0, n=5000):
    return ball(np.random.default_rng(seed), n, (0.45, 0.25, 0.15))


def dumbbell_cloud(seed=0, n=5000):
    """Two balls of radius 0.2 at x = +-0.35 joined by a bar of radius 0.07."""
    rng = np.random.default_rng(seed)
    lobes = [ball(rng, 2 * n // 5, (0.2,) * 3, (side * 0.35, 0, 0)) for side in (1, -1)]
    m = n - 2 * (2 * n // 5)
    x, angle, r = rng.uniform(-0.35, 0.35, m), rng.uniform(0, 2 * np.pi, m), 0.07 * np.sqrt(rng.random(m))
    return np.vstack(lobes + [np.c_[x, r * np.cos(angle), r * np.sin(angle)]])


CAVITY, CAVITY_RADIUS = np.array([0.15, 0.0, 0.0]), 0.2


def holed_cloud(seed=0, n=20000):
    p = ball(np.random.default_rng(seed), n, (0.5,) * 3)
    return p[np.linalg.norm(p - CAVITY, axis=1) > CAVITY_RADIUS]


@pytest.fixture(scope="module")
def shapes():
    out = {}
    for name, p in (("ellipsoid", ellipsoid_cloud()), ("dumbbell", dumbbell_cloud())):
        out[name] = (p, SURFACE.fit(to_q(p)), SURFACE.fit(to_q(p), grow=False, carve=False))
    return out


@pytest.mark.parametrize("name", ["ellipsoid", "dumbbell"])
def test_synthetic_shapes_are_reconstructed(shapes, name):
    p, model, paper = shapes[name]
    q = to_q(p)
    assert model.contains(q).all(), "every sample is allowed"
    assert np.allclose(np.linalg.norm(model.params["pole"] - [1, 0, 0, 0]), 0.0, atol=0.05)
    far = to_q(np.array([[0.0, 0.0, 0.6], [0.0, 0.7, 0.0], [0.9, 0.0, 0.0]]), 1)
    assert not model.contains(far).any()
    assert not paper.contains(far).any()
    # Fig. 11 (c): the field at the surface points is centred on iso = 1
    surface = p[surface_points(p)]
    F = primitive_field(surface, *(paper.params[k] for k in ("centres", "radii", "stickiness", "signs")))[0]
    assert abs(np.median(F) - 1.0) < 0.03
    assert np.mean(np.abs(F - 1.0) < 0.1) > 0.8
    hist, edges = np.histogram(F, bins=20, range=(0.5, 1.5))
    assert 0.9 <= edges[np.argmax(hist)] + 0.025 <= 1.1
    assert paper.fit_report["splits"] >= 1 and paper.fit_report["energies"][-1] < paper.fit_report["energies"][0]


def test_dumbbell_waist_is_covered_by_the_paper_surface_and_narrowed_by_carving(shapes):
    p, model, paper = shapes["dumbbell"]
    plain = SURFACE.fit(to_q(p), carve=False)
    lobe = to_q(np.array([[0.35, 0.15, 0.0], [-0.35, 0.0, 0.15]]), 1)
    waist = to_q(np.c_[np.zeros(6), np.linspace(0.15, 0.3, 6), np.zeros(6)], 1)
    assert paper.contains(lobe).all() and model.contains(lobe).all()
    assert plain.contains(waist).all(), "k = 5 blends the lobes over the waist (the paper's weakness)"
    assert model.fit_report["holes"], "the empty space around the bar is found"
    assert not model.contains(waist).all() and model.contains(waist).sum() < plain.contains(waist).sum()


def test_a_hole_is_covered_without_carving_and_outside_with_it():
    p = holed_cloud()
    q = to_q(p)
    plain = SURFACE.fit(q, carve=False)
    carved = SURFACE.fit(q)
    centre = to_q(CAVITY[None], 1)
    assert plain.contains(centre).all(), "the paper's surface covers the hole (its section 4.3)"
    assert not carved.contains(centre).any()
    assert carved.contains(q).all(), "carving never removes a sample"
    holes = carved.fit_report["holes"]
    assert len(holes) == 1 and holes[0]["primitives"] >= 1
    assert np.linalg.norm(np.array(holes[0]["centre"]) - CAVITY) < 0.1
    assert quaternion_angle(np.array(holes[0]["rotation"]), centre[0]) < 0.2
    assert np.count_nonzero(carved.params["signs"] < 0) == holes[0]["primitives"]
    # most of the empty ball is now forbidden
    probe = to_q(ball(np.random.default_rng(5), 500, (0.5 * CAVITY_RADIUS,) * 3, CAVITY), 1)
    assert carved.contains(probe).mean() < 0.2 < plain.contains(probe).mean()


@pytest.mark.parametrize("carve", [False, True])
def test_projection_ends_on_the_surface_and_closer_than_the_nearest_sample(carve):
    p = holed_cloud(n=8000)
    q = to_q(p)
    model = SURFACE.fit(q, carve=carve)
    rng = np.random.default_rng(3)
    queries = np.concatenate((quaternion_random(600, rng), to_q(ball(rng, 300, (0.75,) * 3), 3)))
    outside = ~model.contains(queries)
    assert outside.sum() > 300
    projected = model.project(queries)
    stats = model.last_projection
    assert model.contains(projected).all()
    F = model.field(projected[outside])
    assert np.abs(F - 1.0).max() < 1e-6, "on the surface"
    np.testing.assert_array_equal(model.project(projected), projected)  # idempotent
    np.testing.assert_array_equal(projected[~outside], queries[~outside])
    moved = quaternion_angle(queries[outside], projected[outside])
    nearest = np.min(quaternion_angle(queries[outside][:, None, :], q[None, ::4, :]), axis=1)
    assert np.all(moved <= nearest + 1e-9)
    np.testing.assert_allclose(model.violation(queries[outside]), moved, atol=1e-9)
    assert np.all(model.violation(queries[~outside]) == 0.0)
    assert stats["rows"] == outside.sum() and stats["steps"].sum() == stats["rows"]
    # worst case is bounded: every row used at most GRADIENT_STEPS steps (or the fallback)
    assert stats["steps"][0] == 0


def test_q_and_minus_q_give_the_same_answers(shapes):
    _, model, _ = shapes["dumbbell"]
    q = np.concatenate((quaternion_random(500, 8), to_q(ball(np.random.default_rng(9), 500, (0.6,) * 3), 1)))
    np.testing.assert_array_equal(model.contains(q), model.contains(-q))
    np.testing.assert_allclose(model.field(q), model.field(-q), atol=1e-12)
    a, b = model.project(q), model.project(-q)
    assert quaternion_angle(a, b).max() < 1e-9
    assert np.all(np.sum(b * -q, axis=1) >= 0), "results on the input's cover"
    np.testing.assert_allclose(model.violation(q), model.violation(-q), atol=1e-9)


def test_fitting_from_either_cover_gives_the_same_model():
    p = ellipsoid_cloud(n=2000)
    a = SURFACE.fit(to_q(p, 2))
    b = SURFACE.fit(to_q(p, 3))
    probe = quaternion_random(1000, 2)
    np.testing.assert_array_equal(a.contains(probe), b.contains(probe))


def test_non_finite_rows_and_shapes():
    model = SURFACE.fit(to_q(ellipsoid_cloud(n=1000)))
    q = np.array([[np.nan, 0, 0, 0], [1.0, 0, 0, 0], [0.0, 1.0, 0, 0]])
    assert model.contains(q).tolist() == [False, True, False]
    out = model.project(q)
    assert np.array_equal(out[0], q[0], equal_nan=True) and np.array_equal(out[1], q[1])
    assert np.isnan(model.violation(q)[0]) and model.violation(q)[1] == 0.0 and model.violation(q)[2] > 0
    assert model.contains(q[1]).shape == () and model.project(q[2]).shape == (4,)
    assert model.project(np.tile(q[2], (2, 3, 1))).shape == (2, 3, 4)


def test_by_hand_carving_and_adding():
    model = SURFACE.fit(to_q(ellipsoid_cloud(n=2000)))
    target = to_q(np.array([[0.05, 0.0, 0.0]]), 1)
    assert model.contains(target).all()
    carved = model.with_primitive(target[0], 0.08, sign=-1)
    assert not carved.contains(target).any()
    added = model.with_primitive([0.0, 0.6, 0.0], 0.5, sign=1)
    assert added.contains(to_q(np.array([[0.0, 0.6, 0.0]]), 1)).all()
    assert not model.contains(to_q(np.array([[0.0, 0.6, 0.0]]), 1)).any()


def test_joint_limit_round_trips_and_stacking():
    rng = np.random.default_rng(4)
    a = JointLimit.fit(to_q(ellipsoid_cloud(1, 1500)), kind="quaternion_surface")
    b = JointLimit.fit(to_q(ellipsoid_cloud(2, 1500)), kind="quaternion_surface")
    probe = quaternion_random(400, rng)
    back = limit_from_json(limit_to_json(a))
    np.testing.assert_array_equal(back.contains(probe), a.contains(probe))
    np.testing.assert_array_equal(back.project(probe), a.project(probe))
    again = model_from_dict(a.model.to_dict())
    np.testing.assert_array_equal(again.contains(probe), a.model.contains(probe))
    # surfaces of different primitive counts stack, padded with inert primitives
    assert a.group_key() == b.group_key()
    mixed = [a.model, a.model.with_primitive([0.3, 0.0, 0.0], 0.05, sign=-1), b.model]
    assert len({len(m.params["radii"]) for m in mixed}) > 1
    padded = SURFACE.stack(mixed)
    three = np.stack((probe[:200], probe[100:300], probe[200:]), axis=1)  # (200, B=3, 4)
    projected = padded.project(three)
    contained = padded.contains(three)
    for i, m in enumerate(mixed):
        np.testing.assert_array_equal(contained[:, i], m.contains(three[:, i]))
        np.testing.assert_allclose(projected[:, i], m.project(three[:, i]), atol=1e-12)
        assert m.contains(projected[:, i]).all()
    models = [a.model.with_primitive([0.0, 0.0, 0.0], 0.01, sign=1), a.model.with_primitive([0.3, 0.0, 0.0], 0.05, sign=-1)]
    assert models[0].group_key() == models[1].group_key()
    stacked = SURFACE.stack(models)
    q = probe[:2]
    np.testing.assert_array_equal(stacked.contains(q), [models[0].contains(q[0]), models[1].contains(q[1])])
    out = stacked.project(q)
    for i in range(2):
        np.testing.assert_allclose(out[i], models[i].project(q[i]), atol=1e-12)
    many = np.stack((probe[:50], probe[50:100]), axis=1)  # (50, B=2, 4)
    np.testing.assert_array_equal(stacked.contains(many)[:, 1], models[1].contains(probe[50:100]))
    # a motion limits a few rows at a time on subset views: they build a bone's anchor points
    # once, for the stack (a view made before they exist built its own, every frame)
    view = stacked.subset((2,), [1])
    anchors = view._anchors_for(1)
    assert stacked._anchors_for(1) is anchors
    assert stacked.subset((2,), [1])._anchors_for(1) is anchors


def test_bad_input_errors_clearly():
    q = to_q(ellipsoid_cloud(n=100))
    with pytest.raises(ValueError, match="at least 8 rotations"):
        SURFACE.fit(q[:5])
    bad = q.copy()
    bad[3, 1] = np.nan
    with pytest.raises(ValueError, match="non-finite"):
        SURFACE.fit(bad)
    with pytest.raises(ValueError, match="shape"):
        SURFACE.fit(q[:, :3])
    with pytest.raises(ValueError, match="zero quaternions"):
        SURFACE.fit(np.vstack((q, np.zeros((1, 4)))))
    data = SURFACE.fit(q).to_dict()
    for name, value, message in (
        ("signs", lambda v: v * 0.5, "signs"),
        ("radii", lambda v: -v, "must not be negative"),
        ("stickiness", lambda v: v[:-1], "entries like 'radii'"),
        ("centres", lambda v: v * np.nan, "NaN"),
    ):
        broken = {**data, "params": {**data["params"], name: value(data["params"][name])}}
        with pytest.raises(ValueError, match=message):
            model_from_dict(broken)
    empty = {**data, "params": {**data["params"], "signs": -np.ones_like(data["params"]["signs"])}}
    with pytest.raises(ValueError, match="empty"):
        model_from_dict(empty)


def test_degenerate_clouds_fit():
    rng = np.random.default_rng(0)
    same = np.tile([1.0, 0.0, 0.0, 0.0], (20, 1))
    line = to_q(np.outer(np.linspace(-0.3, 0.3, 50), [1.0, 0.0, 0.0]), 1)
    flat = to_q(np.c_[rng.uniform(-0.3, 0.3, (200, 2)), np.zeros(200)], 1)
    for q in (same, line, flat):
        model = SURFACE.fit(q)
        assert model.contains(q).all()
        out = model.project(quaternion_random(100, 1))
        assert np.isfinite(out).all() and model.contains(out).all()


def test_stray_samples_get_primitives_of_their_own_instead_of_swelling_the_surface():
    """A knee-like arc (one bend of up to 110 degrees) with six stray samples: growing the
    nearest sphere out to each stray made one primitive larger than the whole space (radius
    1.1-1.6) and the surface accept 42-97% of all rotations (issue 13)."""
    rng = np.random.default_rng(3)
    for _ in range(3):
        angle = rng.uniform(0, 1.9, 3000) ** rng.uniform(0.5, 2)
        arc = np.outer(angle, [1.0, 0.0, 0.0]) + rng.normal(size=(3000, 3)) * np.array([0.02, 0.08, 0.05])
        stray = rng.normal(size=(6, 3)) * 0.9
        q = quaternion_from_exp_map(np.concatenate((arc, stray)))
        limit = JointLimit.fit(q, kind="quaternion_surface")
        assert limit.contains(q).all(), "every training rotation stays inside"
        assert np.max(limit.model.params["radii"]) < 0.9
        assert np.mean(limit.contains(quaternion_random(50000, 1))) < 0.15


def helix_outside(T=600):
    """A path winding around the x axis at radius 0.32, from x = -0.55 to 0.55 (one cover)."""
    s = np.linspace(0.0, 1.0, T)
    return to_q(np.c_[-0.55 + 1.1 * s, 0.32 * np.cos(12 * np.pi * s), 0.32 * np.sin(12 * np.pi * s)], 10**9)


def jumps(q, p):
    """Frames where ``p`` moves more than 3x ``q``'s step and 0.05 rad beyond it."""
    step_in, step = quaternion_angle(q[1:], q[:-1]), quaternion_angle(p[1:], p[:-1])
    return int(np.count_nonzero((step > 3.0 * step_in) & (step > step_in + 0.05)))


def test_projections_end_where_the_way_out_is_normal_to_the_surface(shapes):
    """Beyond the paper's step to the most influential primitive, the projection moves along
    the surface towards the nearest point: the displacement is (nearly) along the normal."""
    p, model, _ = shapes["dumbbell"]
    q = to_q(ball(np.random.default_rng(1), 2000, (0.7,) * 3), 3)
    q = q[~model.contains(q)]
    projected = model.project(q)
    assert model.contains(projected).all()
    pole = model.params["pole"]
    x, s = _to_points(q, pole), _to_points(projected, pole)
    _, _, grad = primitive_field(s, *model._prims(None), gradient=True)
    normal = grad / np.linalg.norm(grad, axis=1, keepdims=True)
    d = x - s
    sine = np.linalg.norm(d - np.sum(d * normal, axis=1)[:, None] * normal, axis=1) / np.linalg.norm(d, axis=1)
    assert np.median(sine) < 0.03  # (the paper's step alone: 0.061)


def test_a_path_outside_projects_with_few_jumps(shapes):
    _, model, _ = shapes["ellipsoid"]
    q = helix_outside()
    assert (~model.contains(q)).sum() > 300
    assert jumps(q, model.project(q)) <= 5  # (the paper's step alone: 26)


def test_a_slide_walks_along_the_surface_within_its_reach_cheaper_than_a_descent(shapes, monkeypatch):
    """``slide`` (how a motion goes on where the projection is out of reach): from the
    projection of a point on a path outside, towards a point 8 frames on, at most 0.05 rad."""
    _, model, _ = shapes["dumbbell"]
    q = helix_outside(400)
    q = q[~model.contains(q)]
    start, target, cap = model.project(q[:-8]), q[8:], np.full(len(q) - 8, 0.05)
    slid = model.slide(target, start, cap)
    assert model.contains(slid).all()
    assert np.all(quaternion_angle(slid, start) <= cap + 1e-12)
    gained = quaternion_angle(start, target) - quaternion_angle(slid, target)
    assert np.all(gained >= -1e-12) and np.mean(gained > 0.01) > 0.9
    # the generic way, a descent by project_near, gets about as far for more field evaluations
    # (its steps towards ``target`` are mostly along the normal: it takes more of them)
    counted = []
    field = implicit_surface.primitive_field
    monkeypatch.setattr(implicit_surface, "primitive_field", lambda x, *a, **k: counted.append(len(x)) or field(x, *a, **k))
    monkeypatch.setattr(quaternion_surface, "primitive_field", implicit_surface.primitive_field)
    model.slide(target, start, cap)
    slide_cost, counted[:] = sum(counted), []
    descended = descend(model, target, start, cap)
    assert np.mean(quaternion_angle(slid, target)) < np.mean(quaternion_angle(descended, target)) + 0.005
    assert 1.5 * slide_cost < sum(counted)  # (4.7 a row against 8.0)


def test_a_slide_to_a_rotation_inside_or_from_inside(shapes):
    _, model, _ = shapes["ellipsoid"]
    centre = model.project(np.array([1.0, 0.0, 0.0, 0.0]))  # (inside: itself)
    q = helix_outside(50)
    # towards an allowed rotation: the rotation ``cap`` on the way (or itself, within reach)
    inside = slerp(centre, q, 0.05)
    assert model.contains(inside).all()
    far = model.slide(inside, np.broadcast_to(centre, inside.shape), np.full(50, 0.01))
    np.testing.assert_allclose(quaternion_angle(far, centre), 0.01, atol=1e-9)
    near = model.slide(inside, np.broadcast_to(centre, inside.shape), np.full(50, 10.0))
    np.testing.assert_allclose(quaternion_angle(near, inside), 0.0, atol=1e-7)
    # from deep inside towards one outside, with reach to spare: onto the surface, then along it
    q = q[~model.contains(q)]
    out = model.slide(q, np.broadcast_to(centre, q.shape), np.full(len(q), 3.0))
    assert model.contains(out).all()
    np.testing.assert_allclose(model.field(out), 1.0, atol=implicit_surface.CROSSING_FIELD)
    # (a slide walks a few steps along the surface: near the nearest point, not on it)
    assert np.mean(quaternion_angle(out, q)) <= np.mean(quaternion_angle(model.project(q), q)) + 0.05
    # a non-finite target: the slide stays where it is
    bad = q.copy()
    bad[3] = np.nan
    np.testing.assert_array_equal(model.slide(bad, out, np.full(len(q), 0.1))[3], out[3])


def test_project_near_lands_on_the_surface_next_to_a_point_just_outside(shapes):
    _, model, _ = shapes["dumbbell"]
    q = helix_outside(200)
    inside = model.project(q)
    outside = ~model.contains(q)
    # a point a little outside each projection, continued from the projection itself
    nudged = slerp(inside[outside], q[outside], 0.05)
    near = model.project_near(nudged, inside[outside])
    assert model.contains(near).all()
    np.testing.assert_allclose(model.field(near), 1.0, atol=implicit_surface.CROSSING_FIELD)
    # about as near as the full projection (Newton steps along the gradient, not the nearest point)
    assert np.all(quaternion_angle(near, nudged) <= quaternion_angle(model.project(nudged), nudged) + 0.005)
