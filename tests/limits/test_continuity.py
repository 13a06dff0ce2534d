# SPDX-License-Identifier: GPL-3.0-or-later
"""Limiting motion frame after frame (issue 16): no pops where a motion runs along or across a
non-convex limit, every limited pose inside, and the sequence API's batching and continuation."""

import motions as motions_lib
import numpy as np
import pytest

from limits.continuity import Motion, MotionState, pops, step_caps
from limits.geometry.quaternion import quaternion_angle, quaternion_from_exp_map
from limits.joint import JointLimit
from limits.registry import model_class, model_kinds

KINDS = [kind for kind, _, _ in model_kinds()]
#: models whose frame-by-frame projection pops on the paths below (the others are convex in
#: their own space and do not: for them these tests pin that the sequence changes nothing)
NON_CONVEX = ("euler_box", "sdf_grid", "sinus_texture", "quaternion_surface")


def ring_motion(frames=3000):
    return motions_lib.ring_motion(quaternion_from_exp_map, frames)


def paths(frames=160):
    return motions_lib.ring_paths(quaternion_from_exp_map, frames)


def random_walk(seed, frames=1500, scale=0.04):
    """A smooth random walk in exp-map space that wanders far (the Euler box's two Euler
    decompositions trade places along it)."""
    rng = np.random.default_rng(seed)
    return quaternion_from_exp_map(np.cumsum(rng.normal(scale=scale, size=(frames, 3)), axis=0))


@pytest.fixture(scope="module")
def models():
    cloud = ring_motion()
    return {kind: model_class(kind).fit(cloud) for kind in KINDS}


@pytest.fixture(scope="module")
def motions():
    return paths()


@pytest.fixture(scope="module")
def limited(models, motions):
    """Every model's limited version of every path (computed once: the slow models slide)."""
    return {(kind, name): model.project_sequence(q)[0] for kind, model in models.items() for name, q in motions.items()}


def euler_case(seed):
    rng = np.random.default_rng(seed)
    model = model_class("euler_box").fit(quaternion_from_exp_map(rng.normal(size=(500, 3)) * [0.8, 0.5, 0.3]))
    return model, random_walk(seed)


@pytest.mark.parametrize("kind", KINDS)
def test_limited_motion_does_not_pop_and_stays_inside(models, motions, limited, kind):
    model = models[kind]
    for name, q in motions.items():
        out = limited[kind, name]
        assert not pops(q, out).any(), (kind, name, np.flatnonzero(pops(q, out)))
        assert model.contains(out).all(), (kind, name)
        np.testing.assert_allclose(out[0], model.project(q[0]))  # the first frame: a cut


@pytest.mark.parametrize("seed", [2, 3, 5])
def test_euler_box_keeps_one_decomposition(seed):
    model, q = euler_case(seed)
    assert pops(q, model.project(q)).sum() > 10  # Blender's pick switches triples
    limited, _ = model.project_sequence(q)
    assert not pops(q, limited).any()
    assert model.contains(limited).all()


def test_frame_by_frame_projection_pops_on_these_paths(models, motions):
    """What the tests above guard against: each non-convex model pops on some path."""
    for kind in NON_CONVEX[1:]:
        assert any(pops(q, models[kind].project(q)).any() for q in motions.values()), kind


@pytest.mark.parametrize("kind", KINDS)
def test_the_limited_pose_never_moves_more_than_its_reach(motions, limited, kind):
    for name, q in motions.items():
        step = quaternion_angle(limited[kind, name][1:], limited[kind, name][:-1])
        assert np.all(step <= step_caps(quaternion_angle(q[1:], q[:-1])) + 1e-9)


@pytest.mark.parametrize("kind", ["kdop", "sinus_texture", "euler_box"])
def test_a_motion_continued_in_parts_is_limited_as_a_whole(models, motions, limited, kind):
    q = motions["outer"]
    whole = limited[kind, "outer"]
    first, state = models[kind].project_sequence(q[:70])
    second, _ = models[kind].project_sequence(q[70:], state)
    np.testing.assert_allclose(np.concatenate((first, second)), whole, atol=1e-12)


def test_motion_inside_is_returned_unchanged(models):
    q = ring_motion(400)
    for kind, model in models.items():
        inside = q[model.contains(q)]
        limited, state = model.project_sequence(inside)
        np.testing.assert_array_equal(limited, inside, err_msg=kind)
        assert not state.lagging().any()


def test_stacked_limits_limit_each_bone_as_alone(models, motions):
    """``(T, B, 4)`` through a stacked limit: each bone as its own ``(T, 4)`` sequence."""
    cloud = ring_motion()
    limits = [JointLimit.fit(cloud, kind="sinus_texture", reference="REST"), JointLimit.fit(cloud[::2], kind="sinus_texture")]
    stacked = JointLimit.stack(limits)
    q = np.stack([motions["across"], motions["twist"]], axis=1)
    together = stacked.project_sequence(q)
    for b, limit in enumerate(limits):
        np.testing.assert_allclose(together[:, b], limit.project_sequence(q[:, b]), atol=1e-12)
        assert not pops(q[:, b], together[:, b]).any()


def test_sequence_outside_reports_the_moved_rotations(models, motions):
    limit = JointLimit(models["quaternion_surface"], soft_radius=0.05)
    q = motions["outer"][:, None]
    moved, projected, trail = limit.project_sequence_outside(q)
    limited = limit.project_sequence(q)
    assert moved.shape == q.shape[:-1] and moved.any()
    np.testing.assert_allclose(projected, limited[moved], atol=1e-12)
    assert np.all(quaternion_angle(limited[~moved], q[~moved]) <= 1e-5)
    assert isinstance(trail[5], MotionState)
    # continuing from a frame's trail gives what the whole motion gave after it
    rest = limit.project_sequence(q[60:], trail[59])
    np.testing.assert_allclose(rest, limited[60:], atol=1e-12)


def test_sequence_input_is_checked(models):
    with pytest.raises(ValueError, match=r"\(T, \.\.\., 4\)"):
        JointLimit(models["box"]).project_sequence(np.array([1.0, 0, 0, 0]))


def test_one_frame_continues_a_stacked_motion(models, motions):
    """The live handler's case: one pose ``(1, B, 4)`` after the state of the frame before."""
    limit = JointLimit.stack([JointLimit(models["sdf_grid"]), JointLimit(models["sdf_grid"])])
    q = np.stack([motions["outer"], motions["across"]], axis=1)
    whole = limit.project_sequence(q)
    _, state = limit.project_sequence(q[:50], return_state=True)
    np.testing.assert_allclose(limit.project_sequence(q[50:51], state)[0], whole[50], atol=1e-12)
    moved, projected, trail = limit.project_sequence_outside(q[50:51], state)
    np.testing.assert_allclose(projected, whole[50][moved[0]], atol=1e-12)


@pytest.mark.parametrize("kind", KINDS)
def test_a_subset_of_a_stacked_model_projects_as_its_bones(models, motions, kind):
    """LimitModel.subset: the rows the sequence limits frame after frame get their own bone's
    limit (a view for the row-based models, sliced params for the others)."""
    other = model_class(kind).fit(ring_motion(600)[::2])
    if other.group_key() != models[kind].group_key():  # (the quaternion surface keys its size)
        other = model_class(kind).fit(ring_motion()[::-1])
    stacked = type(models[kind]).stack([models[kind], other, models[kind]])
    q = np.stack(list(motions.values()))[:, :40].transpose(1, 0, 2)[:, :3]  # (40, 3, 4)
    rows = np.array([1, 2, 4, 7, 8, 30, 61, 119])
    view = stacked.subset(q.shape[:-1], rows)
    flat = stacked.project(q).reshape(-1, 4)[rows]
    np.testing.assert_allclose(view.project(q.reshape(-1, 4)[rows]), flat, atol=1e-9)
    again = view.subset((len(rows),), [0, 3])
    np.testing.assert_allclose(again.project(q.reshape(-1, 4)[rows[[0, 3]]]), flat[[0, 3]], atol=1e-9)


def test_a_motion_limited_on_demand_is_the_motion_limited_at_once(models, motions):
    """Motion.advance in any steps (the lazy look-ahead) gives what one call gives; frames that
    keep their plain projection are ready without limiting anything."""
    q = np.stack(list(motions.values()), axis=1)  # (T, paths, 4)
    model = models["sinus_texture"]
    whole, _ = model.project_sequence(q)
    motion = Motion(model, q)
    assert 0 < motion.ready < len(q)  # ready up to the first jump
    np.testing.assert_array_equal(motion.out[: motion.ready], model.project(q)[: motion.ready])
    for stop in (motion.ready + 1, 50, 51, 120, len(q)):
        motion.advance(stop)
        assert motion.ready >= stop
    np.testing.assert_allclose(motion.out, whole, atol=1e-12)


@pytest.mark.parametrize("kind", NON_CONVEX)
def test_rows_limited_together_are_each_row_limited_alone(models, motions, kind):
    """Motion.advance steps each row through its own frames (one step takes every row at the
    next frame it needs one, rows at different frames together): the same bits as limiting
    frame after frame, and as limiting each row alone."""
    q = np.stack(list(motions.values()), axis=1)  # (T, paths, 4)
    model = models[kind]
    at_once = Motion(model, q)
    at_once.advance(len(q))
    frame_by_frame = Motion(model, q)
    for t in range(len(q)):
        frame_by_frame.advance(t + 1)
    np.testing.assert_array_equal(at_once.out, frame_by_frame.out)
    for row in range(q.shape[1]):
        alone, _ = model.project_sequence(q[:, row : row + 1])
        np.testing.assert_array_equal(at_once.out[:, row : row + 1], alone)


@pytest.mark.parametrize("kind", NON_CONVEX)
def test_projecting_a_chunk_at_a_time_changes_nothing(models, motions, kind, monkeypatch):
    """The frames are projected CHUNK_FRAMES at a time as the motion advances (turning live
    enforcement on projects the frame shown, not the whole action): the result is the same
    bits as projecting every frame at once, and nothing is projected beyond what was asked."""
    import limits.continuity as continuity

    q = np.stack(list(motions.values()), axis=1)
    model = models[kind]
    monkeypatch.setattr(continuity, "CHUNK_FRAMES", len(q))
    at_once, _ = continuity.project_sequence(model, q)
    monkeypatch.setattr(continuity, "CHUNK_FRAMES", 7)
    motion = Motion(model, q)
    assert motion._projected == 7 and motion.ready <= 7
    motion.advance(len(q))
    np.testing.assert_array_equal(motion.out, at_once)
