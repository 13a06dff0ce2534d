# SPDX-License-Identifier: GPL-3.0-or-later
"""The picture of the cross-validated fit's trade-off (limits/fitting/tradeoff_picture.py)."""

import numpy as np
import pytest

from limits.fitting.tradeoff_picture import KIND_COLOURS, PANEL, _to_pixel, tradeoff_picture


def report(chosen=1):
    return {
        "target": 0.99,
        "chosen": chosen,
        "candidates": [
            {"kind": "euler_box", "volume": 0.02, "recall": 0.95, "error": ""},
            {"kind": "kdop", "volume": 0.01, "recall": 0.995, "error": ""},
            {"kind": "ellipsoid", "volume": 0.5, "recall": 0.0, "error": "could not fit"},
        ],
    }


def test_a_panel_per_bone_with_each_model_where_its_volume_and_recall_put_it():
    picture = tradeoff_picture([report(), report(0), report()], columns=2)
    height, width = PANEL
    assert picture.shape == (2 * height, 2 * width, 4)
    first = picture[:height, :width, :3]
    row, col = _to_pixel(0.01, 0.995, height, width)
    np.testing.assert_allclose(first[row, col], KIND_COLOURS["kdop"])
    np.testing.assert_allclose(first[row - 4, col], 1.0)  # ringed: chosen
    row, col = _to_pixel(0.02, 0.95, height, width)
    np.testing.assert_allclose(first[row, col], KIND_COLOURS["euler_box"])
    assert not np.allclose(first[row - 4, col], 1.0)  # not chosen: no ring
    # more recall is higher up, more volume further right; a failed fit is not drawn
    assert _to_pixel(0.01, 0.999, height, width)[0] < _to_pixel(0.01, 0.99, height, width)[0]
    assert _to_pixel(0.1, 0.99, height, width)[1] > _to_pixel(0.01, 0.99, height, width)[1]
    assert not np.any(np.all(np.isclose(picture[..., :3], KIND_COLOURS["ellipsoid"]), axis=-1))
    with pytest.raises(ValueError, match="no cross-validated fit"):
        tradeoff_picture([])


def test_each_padding_tried_is_a_dim_pixel_of_its_model_colour():
    r = report()
    r["candidates"][0]["curve"] = [[0.001, 0.6, 0.005], [0.05, 0.8, 0.01], [0.1, 0.95, 0.02]]
    r["candidates"][1]["curve"] = [[0.001, float("nan"), 0.003]]  # no folds: nothing to draw
    panel = tradeoff_picture([r])[..., :3]
    height, width = PANEL
    for _, recall, volume in r["candidates"][0]["curve"][:2]:
        row, col = _to_pixel(volume, recall, height, width)
        np.testing.assert_allclose(panel[row, col], 0.6 * np.asarray(KIND_COLOURS["euler_box"]))
    dim_kdop = np.all(np.isclose(panel, 0.6 * np.asarray(KIND_COLOURS["kdop"])), axis=-1)
    assert not dim_kdop.any()
