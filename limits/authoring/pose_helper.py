# SPDX-License-Identifier: GPL-3.0-or-later
"""Maths of the viewport authoring tools (swing sphere, twist disk, painting), numpy only.

Kelly's "Pose Helper" (seed 003, "Model Posing", "Setting Twist"): a sphere centred on the bone
head, in the frame the bone's swings are measured in (its parent's pose, the rest pose and the
limit's reference: ``rig/tasks/texture.py``'s ``swing_frame``), shows where the bone may point; the
animator drags on it to swing the bone and on a disk about the bone axis to twist it.

Conventions are those of :mod:`..models.sinus.texture`: a reference-relative rotation ``q`` splits into
a swing *direction* ``d = q (+Y) q*`` (unit, in the swing frame) and a twist angle about +Y in
``(-pi, pi]`` (:func:`..geometry.swing_twist.direction_twist`); ``rotation_from_direction_twist``
composes them back. Everything here works on plain arrays; ``ui/viewport/overlay.py`` and the
operators feed it mouse rays and frames from Blender.
"""

import numpy as np

from ..geometry import sphere_maps as sm
from ..geometry.quaternion import as_quaternions, quaternion_multiply, quaternion_relative, quaternion_rotate
from ..geometry.swing_twist import direction_twist, rotation_from_direction_twist
from ..model import TEXTURE
from ..models.sinus.texture import MASK, STRESS, TWIST_MAX, TWIST_MIN, _stress_from_mask

#: Twist angles tried per direction when a model without its own mask is sampled.
SAMPLE_TWISTS = 24

#: Default resolution of a sampled sphere (equal-area layout, ``n x n`` directions).
SAMPLE_SIZE = 48

#: Overlay colours (linear RGBA): allowed swings at stress 0 and 1, forbidden swings, boundary,
#: current swing and picks in the hemisphere opposite the rest direction.
COLOUR_ALLOWED = (0.10, 0.75, 0.20, 0.55)
COLOUR_STRESSED = (0.95, 0.75, 0.05, 0.55)
COLOUR_FORBIDDEN = (0.80, 0.08, 0.08, 0.35)
COLOUR_BOUNDARY = (1.0, 1.0, 1.0, 1.0)
COLOUR_CURRENT = (0.15, 0.45, 1.0, 1.0)
COLOUR_OPPOSITE = (0.85, 0.20, 0.95, 1.0)

#: Default arc step of the Draw Interpolation and merge radius of twist keys (radians).
ARC_STEP = np.radians(5.0)
KEY_MERGE = np.radians(3.0)

_Y = np.array([0.0, 1.0, 0.0])


def _unit(v):
    v = np.asarray(v, dtype=float)
    n = np.linalg.norm(v, axis=-1, keepdims=True)
    if np.any(n <= 1e-12):
        raise ValueError("a direction must not be the zero vector")
    return v / n


# -- picking -------------------------------------------------------------------------------------
def ray_sphere_hit(origin, direction, centre, radius, far=False):
    """Where a ray meets a sphere.

    Parameters
    ----------
    origin, direction : (3,) arrays
        The ray (``direction`` need not be unit).
    centre : (3,) array
    radius : float
    far : bool
        Take the far intersection (the back of the sphere, for picking swings that point away
        from the viewer) instead of the near one.

    Returns
    -------
    point : (3,) array
        The hit point. A ray that misses gets the point of the sphere's silhouette nearest the
        ray, so a drag that slides off the sphere keeps moving along its rim.
    hit : bool
        Whether the ray really met the sphere.
    """
    o = np.asarray(origin, dtype=float)
    r = _unit(direction)
    c = np.asarray(centre, dtype=float)
    radius = float(radius)
    if not radius > 0:
        raise ValueError(f"the sphere radius must be positive, got {radius}")
    oc = o - c
    b = float(oc @ r)
    closest = oc - b * r  # centre -> nearest point of the ray's line
    gap2 = radius * radius - float(closest @ closest)
    if gap2 < 0.0 or (b > 0.0 and float(oc @ oc) > radius * radius):
        # missed (or the sphere is behind the ray): nearest point of the silhouette
        n = np.linalg.norm(closest)
        rim = closest / n if n > 1e-12 else _perpendicular(r)
        return c + radius * rim, False
    s = np.sqrt(gap2)
    t = -b + s if far else -b - s
    if t < 0.0:  # origin inside the sphere: the exit point
        t = -b + s
    return o + t * r, True


def _perpendicular(v):
    helper = np.array([1.0, 0.0, 0.0]) if abs(v[0]) < 0.9 else np.array([0.0, 0.0, 1.0])
    p = np.cross(v, helper)
    return p / np.linalg.norm(p)


def point_to_direction(point, centre, frame):
    """The unit direction, in the swing frame, of a world ``point`` seen from the sphere's
    ``centre``; ``frame (3, 3)`` is the world rotation of the swing frame (columns = its axes)."""
    v = np.asarray(point, dtype=float) - np.asarray(centre, dtype=float)
    return _unit(np.asarray(frame, dtype=float).T @ v)


def pick_direction(origin, direction, centre, radius, frame, far=False):
    """Mouse ray -> swing direction: ``(d (3,), hit)`` (see :func:`ray_sphere_hit`)."""
    point, hit = ray_sphere_hit(origin, direction, centre, radius, far)
    return point_to_direction(point, centre, frame), hit


def swing_to_direction(local, direction, reference=(1.0, 0.0, 0.0, 0.0)):
    """The local rotation whose bone +Y axis points at ``direction`` (swing frame), with the
    twist of ``local`` kept.

    Parameters
    ----------
    local : (4,) array
        The bone's current local rotation ``(w, x, y, z)``.
    direction : (3,) array
        Picked direction in the swing frame (normalized here).
    reference : (4,) array
        The limit's reference rotation (identity without a limit).

    Returns
    -------
    (4,) unit quaternion on the cover of ``local``.
    """
    reference = as_quaternions(reference, "reference")
    local = as_quaternions(local, "local")
    rel = quaternion_relative(reference, local / np.linalg.norm(local))
    _, twist = direction_twist(rel)
    new = quaternion_multiply(reference, rotation_from_direction_twist(_unit(direction), twist))
    return -new if float(new @ local) < 0.0 else new


def with_twist(local, twist, reference=(1.0, 0.0, 0.0, 0.0)):
    """The local rotation with the swing of ``local`` and twist ``twist`` radians (about the
    bone's +Y after the reference), on the cover of ``local``."""
    reference = as_quaternions(reference, "reference")
    local = as_quaternions(local, "local")
    rel = quaternion_relative(reference, local / np.linalg.norm(local))
    d, _ = direction_twist(rel)
    new = quaternion_multiply(reference, rotation_from_direction_twist(d, twist))
    return -new if float(new @ local) < 0.0 else new


def current_direction_twist(local, reference=(1.0, 0.0, 0.0, 0.0)):
    """``(d (3,), twist)`` of a local rotation in the swing frame of ``reference``."""
    reference = as_quaternions(reference, "reference")
    local = as_quaternions(local, "local")
    return direction_twist(quaternion_relative(reference, local / np.linalg.norm(local)))


def rest_direction(reference=(1.0, 0.0, 0.0, 0.0)):
    """The bone's rest direction (local identity) in the swing frame of ``reference``."""
    reference = as_quaternions(reference, "reference")
    inverse = reference * np.array([1.0, -1.0, -1.0, -1.0])
    return quaternion_rotate(inverse, _Y)


def opposite_hemisphere(direction, rest=_Y):
    """``(...,)`` bool: ``direction (..., 3)`` lies in the hemisphere opposite ``rest`` (a pick
    behind the bone's rest direction, shown differently on the sphere)."""
    return np.sum(np.asarray(direction, dtype=float) * np.asarray(rest, dtype=float), axis=-1) < 0.0


def great_arc(a, b, count):
    """``count`` unit directions from ``a`` to ``b`` (both included) along the shorter great arc;
    antipodal ends turn about an arbitrary perpendicular axis."""
    a, b = _unit(a), _unit(b)
    count = int(count)
    if count < 2:
        raise ValueError("a great arc needs at least 2 points")
    cos = float(np.clip(a @ b, -1.0, 1.0))
    angle = np.arccos(cos)
    t = np.linspace(0.0, 1.0, count)
    if angle < 1e-9:
        return np.tile(a, (count, 1))
    tangent = b - cos * a
    n = np.linalg.norm(tangent)
    tangent = tangent / n if n > 1e-9 else _perpendicular(a)
    out = np.cos(angle * t)[:, None] * a + np.sin(angle * t)[:, None] * tangent
    out[-1] = b if n > 1e-9 else out[-1]
    return out


def interpolate_picks(picks, step=ARC_STEP):
    """Kelly's "Draw Interpolation": successive picked directions ``(K, 3)`` joined along great
    arcs, every arc cut into pieces of at most ``step`` radians. Returns ``(M, 3)`` directions
    starting at the first pick and passing through every pick (consecutive duplicates dropped).
    """
    picks = _unit(np.asarray(picks, dtype=float).reshape(-1, 3))
    if len(picks) == 0:
        return picks
    step = float(step)
    if not step > 0:
        raise ValueError("the interpolation step must be positive")
    out = [picks[:1]]
    for a, b in zip(picks[:-1], picks[1:]):
        angle = np.arccos(np.clip(a @ b, -1.0, 1.0))
        if angle < 1e-9:
            continue
        count = int(np.ceil(angle / step)) + 1
        out.append(great_arc(a, b, count)[1:])
    return np.concatenate(out)


def keyed_rotations(local, picks, reference=(1.0, 0.0, 0.0, 0.0), step=ARC_STEP):
    """Local rotations ``(M, 4)`` along the interpolated picks (:func:`interpolate_picks`), the
    twist of ``local`` kept, each on the cover of its predecessor (smooth keys)."""
    path = interpolate_picks(picks, step)
    out = np.empty((len(path), 4))
    previous = as_quaternions(local, "local")
    for i, d in enumerate(path):
        previous = out[i] = swing_to_direction(previous, d, reference)
    return out


# -- the twist disk ------------------------------------------------------------------------------
def angle_about_axis(point, centre, axis, zero):
    """Signed angle (radians, right-handed about ``axis``) of ``point - centre`` projected into the
    plane normal to ``axis``, measured from ``zero`` (projected likewise)."""
    axis = _unit(axis)
    v = np.asarray(point, dtype=float) - np.asarray(centre, dtype=float)
    v = v - (v @ axis) * axis
    z = np.asarray(zero, dtype=float)
    z = _unit(z - (z @ axis) * axis)
    return float(np.arctan2(np.cross(z, v) @ axis, v @ z))


def wrap_angle(angle):
    """Angles wrapped into ``(-pi, pi]``."""
    a = np.mod(np.asarray(angle, dtype=float) + np.pi, 2.0 * np.pi) - np.pi
    return np.where(a <= -np.pi, a + 2.0 * np.pi, a)


def twist_from_drag(start_twist, start_angle, angle):
    """The twist after a drag on the twist disk from mouse angle ``start_angle`` to ``angle``
    (both from :func:`angle_about_axis`) that began at ``start_twist``; in ``(-pi, pi]``."""
    return float(wrap_angle(start_twist + wrap_angle(angle - start_angle)))


def ray_plane_hit(origin, direction, point, normal):
    """Intersection of a ray with a plane, or ``None`` when parallel (or behind the origin)."""
    r = _unit(direction)
    n = _unit(normal)
    den = float(r @ n)
    if abs(den) < 1e-9:
        return None
    t = float((np.asarray(point, dtype=float) - np.asarray(origin, dtype=float)) @ n) / den
    return None if t < 0 else np.asarray(origin, dtype=float) + t * r


def twist_range_at(limit, direction, samples=361):
    """``(low, high)`` twist limits (radians) at one swing direction of a :class:`JointLimit`,
    or ``None`` when no twist is allowed there.

    A sinus texture reads its bilinear twist range; other models are sampled at ``samples``
    twists over ``(-pi, pi]``, and the allowed run holding the sample nearest zero twist (or
    the longest run) is returned.
    """
    d = _unit(direction)
    model = limit.model
    if model.can(TEXTURE):
        allowed, low, high = model.twist_range(rotation_from_direction_twist(d, 0.0)[None])
        if not allowed[0]:
            return None
        return float(low[0]), float(high[0])
    twists = np.linspace(-np.pi, np.pi, int(samples))
    local = limit.from_relative(rotation_from_direction_twist(d[None], twists))
    ok = np.asarray(limit.contains(local), dtype=bool)
    if not ok.any():
        return None
    runs = _runs(ok)
    zero = int(np.argmin(np.abs(twists)))
    best = next((r for r in runs if r[0] <= zero <= r[1]), max(runs, key=lambda r: r[1] - r[0]))
    return float(twists[best[0]]), float(twists[best[1]])


def _runs(ok):
    """Index ranges ``[(first, last)]`` of the True runs of a 1-D bool array."""
    edges = np.flatnonzero(np.diff(np.concatenate(([0], ok.astype(np.int8), [0]))))
    return [(int(a), int(b) - 1) for a, b in zip(edges[::2], edges[1::2])]


def twist_disk_points(direction, angles):
    """Points ``(..., 3)`` of the unit twist disk (swing frame) about the bone axis
    ``direction``: where the bone's +X axis points at twist ``angles`` (radians) with that
    swing, i.e. the swing applied to ``(cos a, 0, -sin a)``. Angle 0 is the zero twist; angles
    grow right-handed about ``direction`` (so :func:`angle_about_axis` with ``zero`` = the
    point at angle 0 reads them back)."""
    d = _unit(direction)
    a = np.asarray(angles, dtype=float)
    swing = rotation_from_direction_twist(d, 0.0)
    local = np.stack((np.cos(a), np.zeros_like(a), -np.sin(a)), axis=-1)
    return quaternion_rotate(swing, local)


def disk_arc(low, high, segments=48):
    """Angles ``(segments + 1,)`` from ``low`` to ``high`` for drawing a partial disk."""
    return np.linspace(float(low), float(high), int(segments) + 1)


# -- sampling a limit onto the sphere ------------------------------------------------------------
def sample_limit(limit, size=SAMPLE_SIZE, twists=SAMPLE_TWISTS):
    """A sinus-texture style image of any :class:`JointLimit` over the sphere of swings.

    Parameters
    ----------
    limit : JointLimit
        Any model. A sinus texture is returned as it is (its own mask, twist range, stress).
    size : int
        Texels per side of the equal-area layout.
    twists : int
        Twist angles tried per direction (evenly over ``(-pi, pi]``).

    Returns
    -------
    image : (H, W, 4) array
        Channels of :mod:`..models.sinus.texture`: allowed (1 when some sampled twist is contained at
        the texel's direction), twist min / max (the extremes of the contained samples; 0 where
        none is), stress (1 outside, falling to 0 :data:`..models.sinus.texture.STRESS_RAMP` radians
        inside).
    layout : str
        The image's sphere layout.
    """
    model = limit.model
    if model.can(TEXTURE):
        return model.swing_image()
    layout = sm.DEFAULT_LAYOUT
    shape = sm.texture_shape(int(size), layout)
    d = sm.texel_centres(layout, shape).reshape(-1, 3)
    tw = np.linspace(-np.pi, np.pi, int(twists), endpoint=False) + np.pi / int(twists)
    rel = rotation_from_direction_twist(d[:, None, :], tw[None, :])  # (N, T, 4)
    ok = np.asarray(limit.contains(limit.from_relative(rel.reshape(-1, 4))), dtype=bool).reshape(len(d), len(tw))
    allowed = ok.any(axis=1)
    low = np.where(allowed, np.min(np.where(ok, tw, np.inf), axis=1), 0.0)
    high = np.where(allowed, np.max(np.where(ok, tw, -np.inf), axis=1), 0.0)
    mask = allowed.reshape(shape)
    stress = _stress_from_mask(mask, layout) if mask.any() else np.ones(shape)
    image = np.stack((mask.astype(float), low.reshape(shape), high.reshape(shape), stress), axis=-1)
    return image, layout


def sphere_values(image, layout, directions):
    """``(allowed (...,) bool, stress (...,))`` of a sampled image at ``directions (..., 3)``
    (mask by nearest texel, stress of that texel)."""
    texel = sm.direction_to_texel(directions, layout, image.shape[:2])
    flat = image.reshape(-1, 4)
    return flat[texel, MASK] > 0.5, flat[texel, STRESS]


def colours(allowed, stress):
    """Overlay colours ``(..., 4)``: the stress ramp from :data:`COLOUR_ALLOWED` (0) to
    :data:`COLOUR_STRESSED` (1) where allowed, :data:`COLOUR_FORBIDDEN` elsewhere."""
    allowed = np.asarray(allowed, dtype=bool)
    s = np.clip(np.nan_to_num(np.asarray(stress, dtype=float), nan=1.0), 0.0, 1.0)[..., None]
    ramp = (1.0 - s) * np.array(COLOUR_ALLOWED) + s * np.array(COLOUR_STRESSED)
    return np.where(allowed[..., None], ramp, np.array(COLOUR_FORBIDDEN))


def boundary_loop(image, layout, count=96):
    """The rim of the allowed region of a sampled image, ``(count, 3)`` directions (a closed
    loop; see :func:`..models.sinus.texture.boundary_rim`). Empty ``(0, 3)`` when everything or nothing
    is allowed."""
    from ..models.sinus.texture import SinusTextureLimit, boundary_rim

    mask = image[..., MASK] > 0.5
    if mask.all() or not mask.any():
        return np.zeros((0, 3))
    model = SinusTextureLimit.__new__(SinusTextureLimit)
    model.params = {"image": np.asarray(image, dtype=float)}
    model.config = {"layout": layout, "height": image.shape[0], "width": image.shape[1], "islands": 1}
    directions, _ = boundary_rim(model, count)
    return directions


def uv_sphere(rings=24, segments=48):
    """A unit UV sphere about +Y for drawing: ``(vertices (V, 3), triangles (T, 3) int32)``, the
    triangles wound counter-clockwise seen from outside."""
    rings, segments = int(rings), int(segments)
    theta = np.linspace(0.0, np.pi, rings + 1)
    phi = np.linspace(0.0, 2.0 * np.pi, segments + 1)
    th, ph = np.meshgrid(theta, phi, indexing="ij")
    verts = np.stack((np.sin(th) * np.sin(ph), np.cos(th), np.sin(th) * np.cos(ph)), axis=-1).reshape(-1, 3)
    tris = []
    row = segments + 1
    for i in range(rings):
        for j in range(segments):
            a, b = i * row + j, i * row + j + 1
            c, d = a + row, b + row
            if i > 0:
                tris.append((a, c, b))
            if i < rings - 1:
                tris.append((b, c, d))
    tris = np.asarray(tris, dtype=np.int32)
    # orient outward: the normal of each triangle must agree with its centroid
    p = verts[tris]
    n = np.cross(p[:, 1] - p[:, 0], p[:, 2] - p[:, 0])
    flip = np.sum(n * p.mean(axis=1), axis=-1) < 0
    tris[flip] = tris[flip][:, ::-1]
    return verts, tris


def marker(direction, radius=0.06, segments=16, lift=1.01):
    """A small disk of triangles ``(segments * 3, 3)`` on the sphere around ``direction`` (the
    current swing / a pick), ``lift`` times the sphere radius so it draws above the sphere."""
    d = _unit(direction)
    e1 = _perpendicular(d)
    e2 = np.cross(d, e1)
    a = np.linspace(0.0, 2.0 * np.pi, int(segments) + 1)
    rim = lift * (d + radius * (np.cos(a)[:, None] * e1 + np.sin(a)[:, None] * e2))
    centre = lift * d
    tris = np.stack((np.broadcast_to(centre, (segments, 3)), rim[:-1], rim[1:]), axis=1)
    return tris.reshape(-1, 3)


# -- painting: the UV sphere of a texture layout -------------------------------------------------
def layout_sphere(layout=sm.DEFAULT_LAYOUT, cells=64):
    """A sphere mesh whose UVs are a texture layout's swing parameterization.

    The mesh is the texture square ``[0, 1]^2`` cut into ``cells x cells`` quads (Kelly's
    layout: ``cells x 2 cells``, his proportions) and mapped onto the unit sphere with
    :func:`..geometry.sphere_maps.uv_to_direction`. No face crosses a seam of the layout (seams lie on
    the square's borders), so painting a face paints the texels it covers; vertices along the
    seams are duplicated (not welded), which keeps their UVs apart.

    Returns
    -------
    vertices : (V, 3) unit directions
    faces : (F, 4) int vertex indices, counter-clockwise seen from outside
    uvs : (F, 4, 2) texture coordinates per face corner
    """
    sm.check_layout(layout)
    cols = int(cells)
    rows = 2 * cols if layout == "kelly" else cols
    u = np.linspace(0.0, 1.0, cols + 1)
    v = np.linspace(0.0, 1.0, rows + 1)
    vv, uu = np.meshgrid(v, u, indexing="ij")
    verts = sm.uv_to_direction(uu, vv, layout).reshape(-1, 3)
    r, c = np.meshgrid(np.arange(rows), np.arange(cols), indexing="ij")
    a = (r * (cols + 1) + c).ravel()
    faces = np.stack((a, a + 1, a + cols + 2, a + cols + 1), axis=-1)
    uv = np.stack((uu.ravel(), vv.ravel()), axis=-1)
    uvs = uv[faces]
    # orient outward (the maps mirror some quadrants)
    p = verts[faces]
    n = np.cross(p[:, 2] - p[:, 0], p[:, 3] - p[:, 1])
    flip = np.sum(n * p.mean(axis=1), axis=-1) < 0
    faces[flip] = faces[flip][:, ::-1]
    uvs[flip] = uvs[flip][:, ::-1]
    return verts, faces, uvs


def mask_changes(before, after):
    """``(newly_forbidden, newly_allowed)`` texel masks between two images ``(H, W, 4)``."""
    b = np.asarray(before)[..., MASK] > 0.5
    a = np.asarray(after)[..., MASK] > 0.5
    return b & ~a, a & ~b


def twist_channels_from_keys(image, layout, keys, smoothing=8):
    """The image with its twist channels rebuilt from twist keys (Kelly's "Setting Twist").

    Parameters
    ----------
    image : (H, W, 4) array
        A sinus texture image (mask and stress are kept).
    layout : str
    keys : (K, 5) array
        Rows ``(dx, dy, dz, twist_min, twist_max)``: swing direction (swing frame) and the
        twist limits recorded there.

    Returns
    -------
    (H, W, 4) array: twist min / max interpolate the keys smoothly over the sphere
    (:meth:`..models.sinus.texture.SinusTextureLimit.from_keys` with the image's own mask).
    """
    from ..models.sinus.texture import SinusTextureLimit

    keys = np.asarray(keys, dtype=float).reshape(-1, 5)
    image = np.array(image, dtype=float)
    mask = image[..., MASK] > 0.5
    keyed = SinusTextureLimit.from_keys(keys[:, :3], keys[:, 3], keys[:, 4], mask=mask, layout=layout, smoothing=smoothing)
    image[..., TWIST_MIN] = keyed.params["image"][..., TWIST_MIN]
    image[..., TWIST_MAX] = keyed.params["image"][..., TWIST_MAX]
    return image


def record_twist_key(keys, direction, twist, side, current_range=None, merge=KEY_MERGE):
    """Add a twist key at ``direction``: ``side`` ``"MIN"`` or ``"MAX"`` sets that limit to
    ``twist``; the other end comes from a key already within ``merge`` radians (which is
    replaced) or from ``current_range`` (the range there now), kept ``>=`` / ``<=`` ``twist``.
    Returns the new ``(K, 5)`` key array."""
    if side not in ("MIN", "MAX"):
        raise ValueError(f"side must be 'MIN' or 'MAX', got {side!r}")
    keys = np.asarray(keys, dtype=float).reshape(-1, 5)
    d = _unit(direction)
    twist = float(twist)
    low, high = current_range if current_range is not None else (twist, twist)
    if len(keys):
        arcs = np.arccos(np.clip(keys[:, :3] @ d, -1.0, 1.0))
        near = int(np.argmin(arcs))
        if arcs[near] <= merge:
            low, high = keys[near, 3], keys[near, 4]
            keys = np.delete(keys, near, axis=0)
    if side == "MIN":
        low, high = twist, max(float(high), twist)
    else:
        low, high = min(float(low), twist), twist
    return np.concatenate((keys, [[d[0], d[1], d[2], low, high]]))
