# SPDX-License-Identifier: GPL-3.0-or-later
"""The model contract, run on every model of the registry: a new model inherits these tests.

Each kind fits a cloud, keeps what it fitted, projects into itself, round-trips through plain
data, and offers exactly the capabilities it declares, with the methods they name."""

import numpy as np
import pytest

from limits import model as contract
from limits.geometry.quaternion import quaternion_angle, quaternion_from_exp_map, quaternion_random
from limits.models import MODELS
from limits.registry import BY_KIND, model_class, model_from_dict, model_kinds

#: capability -> the method (or attribute) a model offering it answers with
ANSWERS = {
    contract.STRESS: "stress",
    contract.SIGNED_DISTANCE: "signed_distance",
    contract.TEXTURE: "swing_image",
    contract.ARC_SEARCH: "project_along",
    contract.SCULPT: None,  # (a task's: rig/tasks/sculpt.py reads the grid)
    contract.METABALLS: None,  # (a task's: rig/tasks/metaball.py reads the primitives)
    contract.CALIBRATION: "calibration",
}
IDS = [cls.kind for cls in MODELS]


def cloud(n=300, seed=3):
    rng = np.random.default_rng(seed)
    return quaternion_from_exp_map(rng.normal(size=(n, 3)) * (0.5, 0.3, 0.15) + (0.2, -0.1, 0.1))


@pytest.fixture(scope="module")
def fitted():
    return {cls.kind: cls.fit(cloud()) for cls in MODELS}


def test_the_registry_is_auto_then_every_model_once():
    kinds = [kind for kind, _, _ in model_kinds()]
    assert kinds == ["auto"] + [cls.kind for cls in MODELS]
    assert len(set(kinds)) == len(kinds) and all(BY_KIND[k].kind == k for k in kinds)
    assert all(label and description for _, label, description in model_kinds())
    with pytest.raises(ValueError, match="unknown limit model 'nope'"):
        model_class("nope")


def test_a_model_without_the_required_methods_cannot_be_made():
    class Half(contract.LimitModel):
        kind = "half"

        def contains(self, q):
            return np.ones(np.shape(q)[:-1], dtype=bool)

    with pytest.raises(TypeError, match="abstract"):
        Half({})


@pytest.mark.parametrize("cls", MODELS, ids=IDS)
def test_a_fitted_model_holds_its_cloud_and_projects_into_itself(cls, fitted):
    model = fitted[cls.kind]
    assert isinstance(model, cls) and model.kind == cls.kind
    assert model.contains(cloud()).mean() >= 0.95
    q = quaternion_random(400, np.random.default_rng(5))
    p = model.project(q)
    assert p.shape == q.shape and np.all(np.isfinite(p))
    assert quaternion_angle(p, model.project(p)).max() < 1e-3  # projecting twice moves nothing more
    inside = model.contains(q)
    np.testing.assert_allclose(quaternion_angle(q[inside], p[inside]), 0.0, atol=1e-6)
    np.testing.assert_allclose(model.violation(q), quaternion_angle(q, p), atol=1e-6)


@pytest.mark.parametrize("cls", MODELS, ids=IDS)
def test_a_model_round_trips_through_plain_data(cls, fitted):
    model = fitted[cls.kind]
    again = model_from_dict(model.to_dict())
    assert type(again) is cls
    q = quaternion_random(200, np.random.default_rng(6))
    np.testing.assert_array_equal(again.contains(q), model.contains(q))
    with pytest.raises(TypeError, match="model_from_dict"):
        contract.LimitModel.from_dict(model.to_dict())


@pytest.mark.parametrize("cls", MODELS, ids=IDS)
def test_a_model_offers_exactly_what_it_declares(cls, fitted):
    model = fitted[cls.kind]
    assert set(cls.CAPABILITIES) <= set(contract.CAPABILITIES)
    for capability, answer in ANSWERS.items():
        assert cls.offers(capability) == (capability in cls.CAPABILITIES)
        if answer is not None and capability != contract.CALIBRATION:
            assert hasattr(model, answer) == cls.offers(capability), (cls.kind, capability)
    assert not model.can(contract.CALIBRATION)  # fitted directly, not chosen by auto
    with pytest.raises(ValueError, match="unknown capability"):
        cls.offers("flying")


@pytest.mark.parametrize("cls", [c for c in MODELS if c.offers(contract.STRESS)], ids=lambda c: c.kind)
def test_stress_is_zero_to_one(cls, fitted):
    stress = fitted[cls.kind].stress(quaternion_random(200, np.random.default_rng(7)))
    assert np.all((stress >= 0) & (stress <= 1))


@pytest.mark.parametrize("cls", [c for c in MODELS if c.offers(contract.SIGNED_DISTANCE)], ids=lambda c: c.kind)
def test_signed_distance_is_negative_exactly_inside(cls, fitted):
    model = fitted[cls.kind]
    q = quaternion_random(300, np.random.default_rng(8))
    phi = model.signed_distance(q)
    agree = (phi <= 0) == model.contains(q)
    assert agree.mean() > 0.97  # (the boundary's interpolation may differ by a hair)


@pytest.mark.parametrize("cls", [c for c in MODELS if c.offers(contract.TEXTURE)], ids=lambda c: c.kind)
def test_a_texture_gives_its_image_and_twist_ranges(cls, fitted):
    model = fitted[cls.kind]
    image, layout = model.swing_image()
    assert image.ndim == 3 and isinstance(layout, str)
    allowed, low, high = model.twist_range(cloud()[:50])
    assert allowed.mean() > 0.9 and np.all(low[allowed] <= high[allowed])


def test_sculpting_needs_one_bones_exp_map_grid(fitted):
    grid = fitted["sdf_grid"]
    assert grid.can(contract.SCULPT) == (grid.config["space"] == "EXP_MAP")
    stacked = type(grid).stack([grid, grid])
    assert not stacked.can(contract.SCULPT)


def test_auto_gives_a_model_that_can_show_its_calibration():
    rng = np.random.default_rng(9)
    q = cloud(240)
    clips = np.repeat(np.arange(4), 60)
    model = model_class("auto").fit(q[rng.permutation(240)], clips=clips, candidates=[("euler_box", None)])
    assert model.can(contract.CALIBRATION) and model.calibration is not None
    assert model_class("auto").offers(contract.CALIBRATION)


@pytest.mark.parametrize("kind", ["auto"] + IDS)
def test_one_rotation_fits_or_is_refused_in_words(kind):
    """A bone sampled on one frame: a limit holding that rotation, or a ValueError saying what
    the model needs (never an error from deep in numpy)."""
    from limits.joint import JointLimit

    one = cloud(1)
    try:
        limit = JointLimit.fit(one, kind=kind, clips=np.zeros(1, dtype=int)) if kind == "auto" else JointLimit.fit(one, kind=kind)
    except ValueError as err:
        assert "needs at least" in str(err)
        return
    assert limit.contains(one).all()
