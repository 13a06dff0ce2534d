# SPDX-License-Identifier: GPL-3.0-or-later
"""The body's symmetry (issue 13): a bone's samples seen in the mirror as its partner's."""

import numpy as np
import pytest

from limits.body.symmetry import mirrored_samples, reflect_rotations, symmetry_plane
from limits.geometry.quaternion import (
    matrix_from_quaternion,
    quaternion_angle,
    quaternion_from_matrix,
    quaternion_multiply,
    quaternion_random,
)

BONE_Y = np.array([0.0, 1.0, 0.0])


def reflection(normal):
    n = np.asarray(normal, dtype=float) / np.linalg.norm(normal)
    return np.eye(3) - 2.0 * np.outer(n, n)


@pytest.mark.parametrize("normal", [(1, 0, 0), (0, 0, 1), (0.3, -0.8, 0.2)])
def test_reflected_rotation_is_the_rotation_seen_in_the_mirror(normal):
    q = quaternion_random(200, 1)
    s = reflection(normal)
    expected = s @ matrix_from_quaternion(q) @ s
    np.testing.assert_allclose(matrix_from_quaternion(reflect_rotations(q, normal)), expected, atol=1e-12)


def mirrored_rests(seed, normal, roll):
    """A bone's rest orientation and its partner's: the mirror image, rolled by ``roll`` about
    its own Y (a rig whose rolls are not mirror images)."""
    rest = matrix_from_quaternion(quaternion_random(1, seed)[0])
    s = reflection(normal)
    flip = np.diag([-1.0, 1.0, 1.0])  # the partner's X axis points the other way
    c, si = np.cos(roll), np.sin(roll)
    roll_y = np.array([[c, 0, si], [0, 1, 0], [-si, 0, c]])
    return rest, s @ rest @ flip @ roll_y


@pytest.mark.parametrize("roll", [0.0, 0.7, -2.0])
@pytest.mark.parametrize("normal", [(1, 0, 0), (0.3, -0.8, 0.2)])
def test_partner_posed_with_the_mirrored_sample_is_the_mirror_image(normal, roll):
    rest, partner_rest = mirrored_rests(3, normal, roll)
    q = quaternion_random(300, 4)
    q *= np.sign(q[:, :1])
    out = mirrored_samples(q, quaternion_from_matrix(rest), quaternion_from_matrix(partner_rest), normal)
    s = reflection(normal)
    posed = rest @ matrix_from_quaternion(q)  # (N, 3, 3): the bone's axes, posed, armature axes
    partner_posed = partner_rest @ matrix_from_quaternion(out)
    # the bone's direction (its Y axis), posed, is mirrored exactly
    np.testing.assert_allclose(partner_posed[:, :, 1], (s @ posed)[:, :, 1], atol=1e-9)
    # and the whole frame: the partner's axes relate to the bone's as at rest
    at_rest = rest.T @ s @ partner_rest
    np.testing.assert_allclose(partner_posed, s @ posed @ at_rest, atol=1e-9)
    # mirroring back gives the samples again
    back = mirrored_samples(out, quaternion_from_matrix(partner_rest), quaternion_from_matrix(rest), normal)
    assert quaternion_angle(back, q).max() < 1e-9


def test_blender_x_mirror_convention_when_rolls_are_mirror_images():
    rest, partner_rest = mirrored_rests(5, (1, 0, 0), 0.0)
    q = quaternion_random(50, 6)
    q *= np.sign(q[:, :1])
    seen = mirrored_samples(q, quaternion_from_matrix(rest), quaternion_from_matrix(partner_rest), (1, 0, 0))
    np.testing.assert_allclose(seen, q * [1, 1, -1, -1], atol=1e-12)


def test_identity_stays_identity_and_twist_keeps_its_size():
    rest, partner_rest = mirrored_rests(7, (0, 0, 1), 0.4)
    twist = quaternion_from_matrix(np.array([[np.cos(0.5), 0, np.sin(0.5)], [0, 1, 0], [-np.sin(0.5), 0, np.cos(0.5)]]))
    out = mirrored_samples(
        np.stack([[1.0, 0, 0, 0], twist]), quaternion_from_matrix(rest), quaternion_from_matrix(partner_rest), (0, 0, 1)
    )
    np.testing.assert_allclose(out[0], [1, 0, 0, 0], atol=1e-12)
    assert quaternion_angle(out[1], np.array([1.0, 0, 0, 0])) == pytest.approx(0.5)
    # a twist about the bone's own axis mirrors to a twist about the partner's, turning the other way
    np.testing.assert_allclose(matrix_from_quaternion(out[1]) @ BONE_Y, BONE_Y, atol=1e-12)
    assert quaternion_angle(quaternion_multiply(out[1], twist), np.array([1.0, 0, 0, 0])) == pytest.approx(0.0, abs=1e-9)


def test_symmetry_plane_from_pairs_and_which_pairs_mirror():
    rng = np.random.default_rng(0)
    normal = np.array([0.2, 0.1, 1.0]) / np.linalg.norm([0.2, 0.1, 1.0])
    point = np.array([0.3, -0.2, 1.0])
    heads = rng.normal(size=(6, 3)) + 2.0 * normal
    partners = heads - 2.0 * ((heads - point) @ normal)[:, None] * normal
    partners[5] += 0.5  # one pair whose rest does not mirror
    found, at, mirrored = symmetry_plane(heads, partners, np.full(6, 0.3))
    assert abs(abs(found @ normal) - 1.0) < 0.02
    assert abs((at - point) @ normal) < 0.1
    assert mirrored[:5].all() and not mirrored[5]
    with pytest.raises(ValueError, match="symmetry plane"):
        symmetry_plane(heads[:1], heads[:1], [0.3])
