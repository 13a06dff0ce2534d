# SPDX-License-Identifier: GPL-3.0-or-later
"""Swing directions on the unit sphere <-> texture coordinates, for texture-based limits.

A swing is described by the *direction* the bone's +Y axis points after it, written in the
joint's reference frame: a unit vector ``d = (x, y, z)``; the rest direction is +Y. A *layout*
maps every direction to texture coordinates ``(u, v)`` in ``[0, 1)^2`` and back. A texture of
``shape = (H, W)`` (rows, columns: numpy's image order) splits ``[0, 1)^2`` into ``H x W`` square
texels: column ``floor(u W)``, row ``floor(v H)``; row 0 is the *bottom* row (``v = 0``), as in
Blender's ``Image.pixels`` and Kelly's pixel heights. Flat texel indices are ``row * W + col``.

Layouts
-------
``"equal_area"`` (the default)
    Clarberg's equal-area octahedral map (Clarberg 2008, as in PBRT-v4's
    ``EqualAreaSquareToSphere``), centred on +Y: the rest direction is the middle of the
    texture, the equator ``y = 0`` the inscribed diamond ``|u - 1/2| + |v - 1/2| = 1/2``, and the
    far pole -Y the four corners; ``u`` grows towards +X, ``v`` towards +Z. Every texel covers
    exactly the same solid angle ``4 pi / (H W)``; the only seams are the texture's borders,
    which all lie in the far hemisphere (``y <= 0``), where the octahedral fold mirrors them
    (leaving the left border at ``v`` you re-enter on the left border at ``1 - v``).
``"octahedral"``
    The plain octahedral map (``d / |d|_1`` unfolded), same orientation and seams. Cheaper (no
    trigonometry) but not equal-area.
``"kelly"``
    Kelly's two-hemisphere layout, for importing and exporting his textures. In his notation
    the hemispheres are split by the sign of X (the bone's X axis) and a direction is
    described by an angle and a radius in the Y-Z plane:
    ``theta = atan2(y, z)`` in ``[0, 2 pi)`` gives the column (``u = theta / 2 pi``; his C code
    and HLSL write the same with the components renamed ``(z, y, x) -> (v0, v1, v2)``), the
    projected radius ``rho = sqrt(y^2 + z^2)`` the row: directions with ``x >= 0`` fill the
    bottom half, ``rho`` 0..1 from the bottom row up to mid height (``v = rho / 2``), those
    with ``x < 0`` the top half, ``rho`` 1 at mid height down to 0 at the top row
    (``v = 1 - rho / 2``). His texture is 256 wide (theta) by 512 high (two hemispheres of
    256 rows), i.e. numpy shape ``(512, 256)``. The poles +-X are smeared over the bottom and
    top rows, the ``theta = 0`` half-plane (+Z) is a seam, and the equator ``x = 0`` - which
    passes through the rest direction +Y (``u = 1/4, v = 1/2``) - is the seam between the
    halves, where a row spans ~5 degrees of arc (``acos(1 - 2 / H)``) but only ~0.01 degrees
    across: the worst texels sit right at the rest pose.

Why ``"equal_area"`` is the default (measured by :func:`distortion`; 256 x 256 for the
octahedral layouts, Kelly's 512 x 256; ``tests/limits/models/sinus/test_texture.py`` checks the ordering):

=============  ================  =============  ==============  ================
layout         solid-angle       largest texel  mean texel      texel at +Y
               ratio max/min     arc (rad)      arc (rad)       (rad)
=============  ================  =============  ==============  ================
equal_area     1 (exact)         0.033          0.027           0.022
octahedral     5.1               0.033          0.026           0.011
kelly          ~11600            0.092 (5.3 d)  0.014           0.092 (at +Y)
=============  ================  =============  ==============  ================

(Solid angles of the equal-area and Kelly layouts are closed forms; numerical integration of
the equal-area map gives 1.008, the integration's own error.)
Equal areas mean every direction is resolved alike and painted strokes keep their size; the
largest texel is only 1.2x the mean; no seam or pole lies within 90 degrees of the rest
direction. The plain octahedral map is cheaper but samples the equator five times more
coarsely (in area) than the rest direction. Kelly's layout has its worst texels, 5 degrees
long, exactly at the rest pose, and wedge texels of almost zero area at its poles. A Lambert
azimuthal disc is equal-area too, but wastes the ~21 % of a square texture outside the disc
and stretches radially without bound at its -Y border circle (radial scale
``1 / cos(angle / 2)``), so it was not adopted.

All functions are vectorized over leading axes and take ``layout`` names and ``shape``
``(H, W)`` tuples; cached tables (texel centres, solid angles, neighbours) are read-only.
"""

import functools

import numpy as np

#: Layouts by name; the first is the default.
LAYOUTS = ("equal_area", "octahedral", "kelly")
DEFAULT_LAYOUT = "equal_area"

#: Kelly's texture: 256 columns (theta) by 512 rows (two hemispheres), numpy order (H, W).
KELLY_SHAPE = (512, 256)

#: Default texture shapes (H, W) per layout.
DEFAULT_SHAPES = {"equal_area": (256, 256), "octahedral": (256, 256), "kelly": KELLY_SHAPE}

_HALF_PI = 0.5 * np.pi
_TWO_PI = 2.0 * np.pi


def check_layout(layout):
    """``layout`` if it is a known layout name; ``ValueError`` otherwise."""
    if layout not in LAYOUTS:
        raise ValueError(f"texture layout must be one of {LAYOUTS}, got {layout!r}")
    return layout


def texture_shape(size=None, layout=DEFAULT_LAYOUT):
    """The texture shape ``(H, W)`` for a ``size``.

    ``None`` gives the layout's default (:data:`DEFAULT_SHAPES`); an int ``n`` is a resolution:
    ``(n, n)`` for the octahedral layouts, ``(2 n, n)`` (Kelly's proportions) for ``"kelly"``;
    a pair is taken as ``(H, W)``. Both sides must be even and at least 8.
    """
    check_layout(layout)
    if size is None:
        shape = DEFAULT_SHAPES[layout]
    elif np.ndim(size) == 0:
        try:
            n = int(size)
        except (TypeError, ValueError):
            raise ValueError(f"texture size must be an int or (height, width), got {size!r}") from None
        shape = (2 * n, n) if layout == "kelly" else (n, n)
    else:
        try:
            shape = tuple(int(s) for s in size)
        except (TypeError, ValueError):
            raise ValueError(f"texture size must be an int or (height, width), got {size!r}") from None
    if len(shape) != 2 or min(shape) < 8 or shape[0] % 2 or shape[1] % 2 or max(shape) > 8192:
        raise ValueError(f"texture shape (height, width) must be two even sides from 8 to 8192, got {shape}")
    return shape


# -- the maps -------------------------------------------------------------------------------------
def _equal_area_forward(x, y, z):
    ax = np.abs(x)
    az = np.abs(z)
    # r = sqrt(1 - |y|), written (x^2 + z^2) / (1 + |y|) to avoid cancellation near +-Y
    r = x * x
    r += z * z
    den = np.abs(y)
    den += 1.0
    r /= den
    np.sqrt(r, out=r)
    a = np.maximum(ax, az)
    np.maximum(a, 1e-300, out=a)
    b = np.minimum(ax, az)
    b /= a
    phi = np.arctan(b)
    phi *= 2.0 / np.pi
    np.subtract(1.0, phi, out=phi, where=ax < az)
    s = phi
    s *= r  # along z
    t = r
    t -= s  # along x
    lower = y < 0.0
    if lower.any():
        s, t = np.where(lower, 1.0 - t, s), np.where(lower, 1.0 - s, t)
    u = np.copysign(t, x)
    u += 1.0
    u *= 0.5
    v = np.copysign(s, z)
    v += 1.0
    v *= 0.5
    return u, v


def _equal_area_inverse(u, v):
    a = 2.0 * u - 1.0
    b = 2.0 * v - 1.0
    ap, bp = np.abs(a), np.abs(b)
    signed = 1.0 - (ap + bp)
    r = 1.0 - np.abs(signed)
    ratio = np.divide(bp - ap, r, out=np.zeros_like(r), where=r > 0.0)
    phi = np.where(r > 0.0, ratio + 1.0, 1.0) * (np.pi / 4.0)
    y = np.copysign(1.0 - r * r, signed)
    s = r * np.sqrt(np.maximum(2.0 - r * r, 0.0))
    x = np.copysign(np.cos(phi), a) * s
    z = np.copysign(np.sin(phi), b) * s
    return _normalize(x, y, z)


def _octahedral_forward(x, y, z):
    n = np.abs(x) + np.abs(y) + np.abs(z)
    px, pz = x / n, z / n
    lower = y < 0.0
    a = np.where(lower, (1.0 - np.abs(pz)) * np.copysign(1.0, px), px)
    b = np.where(lower, (1.0 - np.abs(px)) * np.copysign(1.0, pz), pz)
    return 0.5 * (a + 1.0), 0.5 * (b + 1.0)


def _octahedral_inverse(u, v):
    a = 2.0 * u - 1.0
    b = 2.0 * v - 1.0
    y = 1.0 - np.abs(a) - np.abs(b)
    lower = y < 0.0
    a, b = (
        np.where(lower, (1.0 - np.abs(b)) * np.copysign(1.0, a), a),
        np.where(lower, (1.0 - np.abs(a)) * np.copysign(1.0, b), b),
    )
    return _normalize(a, y, b)


def _kelly_forward(x, y, z):
    theta = np.arctan2(y, z)
    theta = np.where(theta < 0.0, theta + _TWO_PI, theta)
    rho = np.minimum(np.sqrt(y * y + z * z), 1.0)
    u = theta / _TWO_PI
    v = np.where(x >= 0.0, 0.5 * rho, 1.0 - 0.5 * rho)
    return u, v


def _kelly_inverse(u, v):
    theta = _TWO_PI * u
    upper = v >= 0.5
    rho = np.where(upper, 2.0 * (1.0 - v), 2.0 * v)
    rho = np.clip(rho, 0.0, 1.0)
    x = np.sqrt(np.maximum(1.0 - rho * rho, 0.0))
    x = np.where(upper, -x, x)
    return _normalize(x, rho * np.sin(theta), rho * np.cos(theta))


def _normalize(x, y, z):
    out = np.stack(np.broadcast_arrays(x, y, z), axis=-1).astype(float)
    n = np.linalg.norm(out, axis=-1, keepdims=True)
    return out / np.where(n > 0.0, n, 1.0)


_FORWARD = {"equal_area": _equal_area_forward, "octahedral": _octahedral_forward, "kelly": _kelly_forward}
_INVERSE = {"equal_area": _equal_area_inverse, "octahedral": _octahedral_inverse, "kelly": _kelly_inverse}


def direction_to_uv(d, layout=DEFAULT_LAYOUT):
    """Texture coordinates ``(u, v)``, two ``(...,)`` arrays in ``[0, 1]``, of directions
    ``d (..., 3)`` (normalized here; a zero vector counts as +Y)."""
    check_layout(layout)
    d = np.asarray(d, dtype=float)
    if d.ndim == 0 or d.shape[-1] != 3:
        raise ValueError(f"directions must have shape (..., 3), got {d.shape}")
    lead = d.shape[:-1]
    d = d.reshape(-1, 3)
    n = np.sqrt(np.sum(d * d, axis=-1))
    zero = n <= 0.0
    x = np.where(zero, 0.0, d[..., 0] / np.where(zero, 1.0, n))
    y = np.where(zero, 1.0, d[..., 1] / np.where(zero, 1.0, n))
    z = np.where(zero, 0.0, d[..., 2] / np.where(zero, 1.0, n))
    u, v = _FORWARD[layout](x, y, z)
    return u.reshape(lead), v.reshape(lead)


def uv_to_direction(u, v, layout=DEFAULT_LAYOUT):
    """Unit directions ``(..., 3)`` at texture coordinates ``u, v (...)`` in ``[0, 1]``."""
    check_layout(layout)
    u = np.clip(np.asarray(u, dtype=float), 0.0, 1.0)
    v = np.clip(np.asarray(v, dtype=float), 0.0, 1.0)
    return _INVERSE[layout](u, v)


def uv_to_texel(u, v, shape):
    """Flat texel indices ``(...,)`` int64 of texture coordinates (``row * W + col``)."""
    h, w = shape
    col = np.minimum((np.asarray(u) * w).astype(np.int64), w - 1)
    row = np.minimum((np.asarray(v) * h).astype(np.int64), h - 1)
    return np.maximum(row, 0) * w + np.maximum(col, 0)


def direction_to_texel(d, layout=DEFAULT_LAYOUT, shape=None):
    """Flat texel indices ``(...,)`` of directions ``d (..., 3)`` in a texture of ``shape``."""
    shape = texture_shape(shape, layout) if shape is None or np.ndim(shape) == 0 else tuple(shape)
    u, v = direction_to_uv(d, layout)
    return uv_to_texel(u, v, shape)


def texel_uv(shape, offset=0.5):
    """Texture coordinates ``(u, v)`` of every texel, two ``(H, W)`` arrays: the centres for
    ``offset = 0.5``, the lower-left corners for ``offset = 0``."""
    h, w = shape
    v, u = np.meshgrid((np.arange(h) + offset) / h, (np.arange(w) + offset) / w, indexing="ij")
    return u, v


@functools.lru_cache(maxsize=16)
def texel_centres(layout, shape):
    """Unit directions ``(H, W, 3)`` of the texel centres (read-only, cached)."""
    check_layout(layout)
    u, v = texel_uv(tuple(shape))
    out = uv_to_direction(u, v, layout)
    out.flags.writeable = False
    return out


def _triangle_solid_angle(a, b, c):
    """Solid angles (steradians) of spherical triangles with unit corners ``(..., 3)``."""
    num = np.abs(np.sum(a * np.cross(b, c), axis=-1))
    den = 1.0 + np.sum(a * b, axis=-1) + np.sum(b * c, axis=-1) + np.sum(c * a, axis=-1)
    return 2.0 * np.arctan2(num, den)


@functools.lru_cache(maxsize=8)
def texel_solid_angles(layout, shape, subdivisions=4):
    """Solid angle of every texel ``(H, W)`` in steradians (read-only, cached; sums to ``4 pi``).

    Exact closed forms for the equal-area layout (every texel ``4 pi / (H W)``) and Kelly's
    (an orthographic hemisphere: ``d omega = rho d rho d theta / sqrt(1 - rho^2)``, so a texel
    spanning ``[rho_a, rho_b]`` and ``d theta`` has ``d theta (sqrt(1 - rho_a^2) -
    sqrt(1 - rho_b^2))``). Otherwise each texel is cut into ``subdivisions^2`` cells whose
    corners are mapped to the sphere and measured as two spherical triangles each.
    """
    check_layout(layout)
    h, w = shape
    if layout == "equal_area":
        out = np.full((h, w), 4.0 * np.pi / (h * w))
        out.flags.writeable = False
        return out
    if layout == "kelly":
        v0, v1 = np.arange(h) / h, (np.arange(h) + 1.0) / h

        def cap(rho):  # solid angle per radian of theta from the pole out to rho
            return 1.0 - np.sqrt(np.maximum(1.0 - np.minimum(rho, 1.0) ** 2, 0.0))

        lower = cap(2.0 * np.minimum(v1, 0.5)) - cap(2.0 * np.minimum(v0, 0.5))
        upper = cap(2.0 * (1.0 - np.maximum(v0, 0.5))) - cap(2.0 * (1.0 - np.maximum(v1, 0.5)))
        out = np.repeat(((lower + upper) * (2.0 * np.pi / w))[:, None], w, axis=1)
        out.flags.writeable = False
        return out
    n = int(subdivisions)
    gu = np.arange(w * n + 1) / (w * n)
    gv = np.arange(h * n + 1) / (h * n)
    vv, uu = np.meshgrid(gv, gu, indexing="ij")
    p = uv_to_direction(uu, vv, layout)
    a, b, c, d = p[:-1, :-1], p[:-1, 1:], p[1:, 1:], p[1:, :-1]
    cells = _triangle_solid_angle(a, b, c) + _triangle_solid_angle(a, c, d)
    out = cells.reshape(h, n, w, n).sum(axis=(1, 3))
    out.flags.writeable = False
    return out


def distortion(layout=DEFAULT_LAYOUT, shape=None):
    """How evenly a layout samples the sphere at a texture ``shape`` (default: the layout's).

    Returns a dict: ``solid_angle_ratio`` (max / min texel solid angle), ``min_solid_angle`` and
    ``max_solid_angle`` (steradians), ``max_texel_arc`` and ``mean_texel_arc`` (radians: a
    texel's size is the longer of the arcs between its opposite corners), ``min_texel_step``
    (radians: the smallest arc between the centres of two neighbouring texels),
    ``arc_near_rest`` (the size of the texel holding +Y) and ``shape``.
    """
    shape = texture_shape(shape, layout) if shape is None or np.ndim(shape) == 0 else tuple(shape)
    omega = texel_solid_angles(layout, shape)
    u, v = texel_uv(shape, 0.0)
    h, w = shape
    corners = [uv_to_direction(u + du / w, v + dv / h, layout) for du, dv in ((0, 0), (1, 0), (1, 1), (0, 1))]
    diag1 = np.arccos(np.clip(np.sum(corners[0] * corners[2], axis=-1), -1.0, 1.0))
    diag2 = np.arccos(np.clip(np.sum(corners[1] * corners[3], axis=-1), -1.0, 1.0))
    size = np.maximum(diag1, diag2)
    centres = texel_centres(layout, shape)
    steps = np.concatenate(
        (
            np.sum(centres[:, 1:] * centres[:, :-1], axis=-1).ravel(),
            np.sum(centres[1:] * centres[:-1], axis=-1).ravel(),
        )
    )
    rest = direction_to_texel(np.array([0.0, 1.0, 0.0]), layout, shape)
    return {
        "shape": shape,
        "solid_angle_ratio": float(omega.max() / max(omega.min(), 1e-300)),
        "min_solid_angle": float(omega.min()),
        "max_solid_angle": float(omega.max()),
        "max_texel_arc": float(size.max()),
        "mean_texel_arc": float(size.mean()),
        "min_texel_step": float(np.arccos(np.clip(steps.max(), -1.0, 1.0))),
        "arc_near_rest": float(size.ravel()[rest]),
    }


# -- neighbours across seams ----------------------------------------------------------------------
def wrap_texels(rows, cols, layout, shape):
    """Texel coordinates ``(rows, cols)`` (int arrays, possibly outside the texture by less
    than one texture size) moved back into it across the layout's seams.

    Octahedral layouts fold mirror-wise across each border (leaving the left border at row
    ``r`` re-enters at row ``H - 1 - r``); Kelly's wraps its columns and crosses the poles
    (bottom and top rows) to the opposite column ``c + W / 2``.
    """
    h, w = shape
    rows = np.asarray(rows, dtype=np.int64)
    cols = np.asarray(cols, dtype=np.int64)
    if layout == "kelly":
        below, above = rows < 0, rows >= h
        flip = below | above
        rows = np.where(below, -rows - 1, np.where(above, 2 * h - 1 - rows, rows))
        cols = np.where(flip, cols + w // 2, cols) % w
        return rows, cols
    for _ in range(2):
        left, right = cols < 0, cols >= w
        cols = np.where(left, -cols - 1, np.where(right, 2 * w - 1 - cols, cols))
        rows = np.where(left | right, h - 1 - rows, rows)
        below, above = rows < 0, rows >= h
        rows = np.where(below, -rows - 1, np.where(above, 2 * h - 1 - rows, rows))
        cols = np.where(below | above, w - 1 - cols, cols)
    return rows, cols


@functools.lru_cache(maxsize=64)
def shifted_texels(layout, shape, drow, dcol):
    """Flat index ``(H * W,)`` of the texel ``(drow, dcol)`` away from each texel, across
    seams (read-only, cached)."""
    h, w = shape
    rows, cols = np.meshgrid(np.arange(h), np.arange(w), indexing="ij")
    r, c = wrap_texels(rows + drow, cols + dcol, layout, shape)
    out = (r * w + c).ravel()
    out.flags.writeable = False
    return out


def neighbour_texels(layout, shape, diagonal=True):
    """Flat indices ``(k, H * W)`` of each texel's 4 (or with ``diagonal`` 8) neighbours."""
    offsets = [(-1, 0), (1, 0), (0, -1), (0, 1)]
    if diagonal:
        offsets += [(-1, -1), (-1, 1), (1, -1), (1, 1)]
    return np.stack([shifted_texels(layout, tuple(shape), dr, dc) for dr, dc in offsets])


@functools.lru_cache(maxsize=16)
def padded_texels(layout, shape):
    """Flat texel index ``((H + 2) * (W + 2),)`` int64 of every texel of the texture with a
    one-texel border continued across the seams (see :func:`padded`; read-only, cached)."""
    h, w = shape
    rows, cols = np.meshgrid(np.arange(-1, h + 1), np.arange(-1, w + 1), indexing="ij")
    r, c = wrap_texels(rows, cols, layout, (h, w))
    out = (r * w + c).ravel()
    out.flags.writeable = False
    return out


def padded(image, layout):
    """``image (H, W, ...)`` with a one-texel border ``(H + 2, W + 2, ...)`` copied across the
    seams, so bilinear lookups near the edges need no wrapping."""
    h, w = image.shape[:2]
    flat = image.reshape((h * w,) + image.shape[2:])
    return flat[padded_texels(layout, (int(h), int(w)))].reshape((h + 2, w + 2) + image.shape[2:])
