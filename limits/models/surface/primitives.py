# SPDX-License-Identifier: GPL-3.0-or-later
"""Herda et al.'s spherical implicit primitives (seed 002, sections 4.1-4.3), numpy only.

Everything here works on points ``(N, 3)`` of a Euclidean 3-space (for the joint limit: the
vector parts ``(qx, qy, qz)`` of unit quaternions, see :mod:`.quaternion_surface`); lengths are
in the units of that space.

Field (eq. 5)
-------------
A primitive ``i`` has a centre ``c_i (3,)``, a radius ``e_i >= 0``, a stickiness ``k_i > 0`` and a
sign ``s_i = +1`` (adds) or ``-1`` (carves, beyond the paper). With ``r = |P - c_i|`` and
``t = k_i (r - e_i)``::

    f_i(r) = 1 - t              for 0 <= r <= e_i            (f_i(e_i) = 1 = iso)
           = (t - 2)^2 / 4      for e_i < r <= R_i = e_i + 2 / k_i
           = 0                  beyond R_i

and ``F(P) = sum_i s_i f_i(|P - c_i|)``; the region is ``F >= iso = 1``. ``f_i`` is C1 (slope
``-k_i`` at ``e_i`` from both sides, 0 at ``R_i``). ``df_i/de_i = -df_i/dr``.

Fit (eqs. 6 and 7)
------------------
:func:`surface_points` keeps, per solid angle about the cloud's centre of mass, the points whose
radius is within ``T`` of the largest (section 4.1). :func:`fit_primitives` starts with one
primitive at the centre of mass (radius: mean distance to it), then repeatedly splits the
primitive of largest ``C_i`` (eq. 7, the mean squared residual of the surface points inside its
influence radius ``R_i``) into six children on the principal axis of those points, re-optimizes
all primitives on eq. 6 by Levenberg-Marquardt (the energy is a sum of squares: residuals
``(F(P_j) - 1) / sqrt(N)`` and ``sqrt(alpha2 / M) (c_i - c_mass)``; ``alpha1 = 0`` so the size
term vanishes), and stops when a split lowers the energy by less than ``tolerance`` (relative;
that split is undone) or the primitive budget is spent. Then the paper's clean-up drops
primitives with ``e > 1``, centres farther than 1 from the centre of mass, or a low density of
surface points in their influence ball, and a last re-optimization runs without splits.

Cost: one field evaluation is ``O(N M)`` vectorized; one LM iteration builds the ``(N, 4M)``
Jacobian and solves a ``4M x 4M`` system.
"""

import numpy as np

#: The iso value (the paper's, fixed).
ISO = 1.0

#: The paper's fixed stickiness of the fitted (positive) primitives.
STICKINESS = 5.0

#: Levenberg-Marquardt iterations per re-optimization (after a split; final).
LM_ITERATIONS = 25
LM_FINAL_ITERATIONS = 60

#: Children of a split (the paper: six, symmetric on one axis), as offsets in units of the
#: parent's radius.
SPLIT_OFFSETS = np.array([-5.0, -3.0, -1.0, 1.0, 3.0, 5.0]) / 5.0


def primitive_field(x, centres, radii, stickiness, signs, gradient=False):
    """The field ``F`` of eq. 5 (and its gradient) at points ``x``.

    Parameters
    ----------
    x : (R, 3) float array
        Points.
    centres : (M, 3) or (R, M, 3) float array
        Primitive centres (per row when 3-D: stacked models).
    radii, stickiness, signs : (M,) or (R, M) float arrays
        ``e_i``, ``k_i``, ``s_i``.
    gradient : bool
        Also return ``dF/dx``.

    Returns
    -------
    F : (R,) float array
    values : (R, M) float array
        The unsigned ``f_i`` (for "most influential primitive").
    grad : (R, 3) float array or None
    """
    d = x[:, None, :] - centres
    r = np.sqrt(np.einsum("rmi,rmi->rm", d, d))
    t = stickiness * (r - radii)
    # the three pieces at once: (min(t, 2) - 2)^2 / 4 is the middle one, and 0 beyond R_i;
    # inside (t < 0) it is 1 - t + t^2 / 4, so t^2 / 4 comes off there
    outer = np.minimum(t, 2.0) - 2.0
    inner = np.minimum(t, 0.0)
    f = 0.25 * (outer * outer - inner * inner)
    F = np.sum(signs * f, axis=-1)
    if not gradient:
        return F, f, None
    # df/dr = k (outer - inner) / 2: -k inside, k (t - 2) / 2 between, 0 beyond
    weight = (0.5 * stickiness * signs) * (outer - inner) / np.maximum(r, 1e-12)
    grad = np.einsum("rm,rmi->ri", weight, d)
    return F, f, grad


def surface_points(points, divisions=7, thickness=0.1):
    """Section 4.1: the points near the outer boundary of a volumetric cloud.

    Parameters
    ----------
    points : (N, 3) float array
    divisions : int
        ``L``: intervals of the polar angle ``theta`` (``[0, pi]``) and of the azimuth ``phi``
        (``[-pi, pi)``) about the centre of mass; ``L * L`` solid angles.
    thickness : float
        ``T`` in ``(0, 1]``: keep the points with ``rho > (1 - T) rho_max`` of their solid angle.

    Returns
    -------
    (N,) bool array
        The surface points.
    """
    centre = points.mean(axis=0)
    d = points - centre
    rho = np.linalg.norm(d, axis=1)
    theta = np.arccos(np.clip(d[:, 2] / np.where(rho > 0, rho, 1.0), -1.0, 1.0))
    phi = np.arctan2(d[:, 1], d[:, 0])
    i = np.minimum((theta / np.pi * divisions).astype(np.intp), divisions - 1)
    k = np.minimum(((phi + np.pi) / (2 * np.pi) * divisions).astype(np.intp), divisions - 1)
    cell = i * divisions + k
    rho_max = np.zeros(divisions * divisions)
    np.maximum.at(rho_max, cell, rho)
    return (rho > (1.0 - thickness) * rho_max[cell]) | (rho >= rho_max[cell])


class _Fit:
    """Eq. 6 on fixed surface points ``P (N, 3)``; positive primitives of stickiness ``k``."""

    def __init__(self, P, k, alpha2):
        self.P = P
        self.k = k
        self.alpha2 = alpha2
        self.mass = P.mean(axis=0)

    def residuals(self, c, e):
        F, _, _ = primitive_field(self.P, c, e, self.k, 1.0)
        return F - ISO

    def energy(self, c, e):
        res = self.residuals(c, e)
        reg = np.sum((c - self.mass) ** 2) * self.alpha2 / len(e)
        return float(np.mean(res * res) + reg)

    def jacobian(self, c, e):
        """Data residuals ``(N,)`` and their Jacobian ``(N, M, 4)`` (centre xyz, radius)."""
        d = self.P[:, None, :] - c
        r = np.sqrt(np.einsum("nmi,nmi->nm", d, d))
        t = self.k * (r - e)
        inner = r <= e
        reach = t <= 2.0
        f = np.where(inner, 1.0 - t, np.where(reach, 0.25 * (t - 2.0) ** 2, 0.0))
        dfdr = np.where(inner, -self.k, np.where(reach, 0.5 * self.k * (t - 2.0), 0.0))
        J = np.empty(r.shape + (4,))
        # dr/dc = (c - P) / r = -d / r
        J[..., :3] = -np.where(r > 1e-12, dfdr / np.where(r > 1e-12, r, 1.0), 0.0)[..., None] * d
        J[..., 3] = -dfdr
        return f.sum(axis=1) - ISO, J

    def optimize(self, c, e, iterations):
        """Levenberg-Marquardt on eq. 6 from ``(c (M, 3), e (M,))``; ``e`` kept >= 0."""
        n, m = len(self.P), len(e)
        w = 1.0 / np.sqrt(n)
        reg_w = np.sqrt(self.alpha2 / m)
        energy = self.energy(c, e)
        lam = 1e-3
        for _ in range(iterations):
            res, J = self.jacobian(c, e)
            J = J.reshape(n, 4 * m) * w
            A = J.T @ J
            g = J.T @ (res * w)
            # regularization residuals reg_w (c - mass) on the centre columns
            idx = (np.arange(m)[:, None] * 4 + np.arange(3)).ravel()
            A[idx, idx] += reg_w * reg_w
            g[idx] += reg_w * reg_w * (c - self.mass).ravel()
            diag = np.diag(A).copy()
            improved = False
            for _ in range(8):
                step = np.linalg.solve(A + lam * (diag + 1e-9) * np.eye(4 * m) + 1e-12 * np.eye(4 * m), -g)
                step = step.reshape(m, 4)
                c_new = c + step[:, :3]
                e_new = np.maximum(e + step[:, 3], 0.0)
                new = self.energy(c_new, e_new)
                if new < energy:
                    gain = energy - new
                    c, e, energy = c_new, e_new, new
                    lam = max(lam / 3.0, 1e-9)
                    improved = True
                    break
                lam *= 4.0
            if not improved or gain <= 1e-10 * max(energy, 1e-12):
                break
        return c, e, energy

    def split_criterion(self, c, e):
        """Eq. 7: ``C_i (M,)`` and the influence mask ``(N, M)``."""
        res = self.residuals(c, e)
        r = np.linalg.norm(self.P[:, None, :] - c, axis=-1)
        within = r < e + 2.0 / self.k
        count = within.sum(axis=0)
        total = (within * (res * res)[:, None]).sum(axis=0)
        return np.where(count > 0, total / np.maximum(count, 1), 0.0), within

    def split(self, c, e, i, within):
        """Replace primitive ``i`` by six children on the principal axis of its points."""
        pts = self.P[within[:, i]]
        if len(pts) >= 3:
            cov = np.cov((pts - pts.mean(axis=0)).T)
            vals, vecs = np.linalg.eigh(cov)
            axis = vecs[:, -1]
            spread = max(float(e[i]), 1.5 * float(np.sqrt(max(vals[-1], 0.0))), 1e-3)
        else:
            axis, spread = np.array([1.0, 0.0, 0.0]), max(float(e[i]), 1e-3)
        children = c[i] + np.outer(SPLIT_OFFSETS * spread, axis)
        rest_c = np.delete(c, i, axis=0)
        rest_e = np.delete(e, i)
        # one common child radius, by golden-section search on the energy
        lo, hi = 0.0, max(float(e[i]), 1e-3)
        g = 0.5 * (np.sqrt(5.0) - 1.0)

        def trial(radius):
            return self.energy(np.vstack((rest_c, children)), np.concatenate((rest_e, np.full(6, radius))))

        a, b = hi - g * (hi - lo), lo + g * (hi - lo)
        fa, fb = trial(a), trial(b)
        for _ in range(20):
            if fa < fb:
                hi, b, fb = b, a, fa
                a = hi - g * (hi - lo)
                fa = trial(a)
            else:
                lo, a, fa = a, b, fb
                b = lo + g * (hi - lo)
                fb = trial(b)
        radius = 0.5 * (lo + hi)
        return np.vstack((rest_c, children)), np.concatenate((rest_e, np.full(6, radius)))


def fit_primitives(P, stickiness=STICKINESS, alpha2=0.01, max_primitives=31, tolerance=0.02, min_density=0.05):
    """Fit positive primitives to surface points (module docstring).

    Parameters
    ----------
    P : (N, 3) float array
        Surface points (N >= 4).
    stickiness : float
        ``k`` of every primitive (the paper: 5).
    alpha2 : float
        Weight of the centre-of-mass term of eq. 6 (the paper: 0.01).
    max_primitives : int
        Stop splitting before exceeding this many primitives.
    tolerance : float
        Stop when a split lowers the energy by less than this fraction.
    min_density : float
        Clean-up: drop primitives whose density of surface points inside their influence ball is
        below this fraction of the cloud's (points per volume of the ball about the centre of
        mass reaching the farthest point).

    Returns
    -------
    centres : (M, 3) float array
    radii : (M,) float array
    report : dict
        ``energies`` (after each stage), ``splits``, ``removed`` (by the clean-up), ``energy``.
    """
    fit = _Fit(P, float(stickiness), float(alpha2))
    mass = fit.mass
    c = mass[None, :].copy()
    e = np.array([float(np.mean(np.linalg.norm(P - mass, axis=1)))])
    c, e, energy = fit.optimize(c, e, LM_ITERATIONS)
    energies = [energy]
    splits = 0
    while len(e) + 5 <= max_primitives and energy > 1e-10:
        crit, within = fit.split_criterion(c, e)
        i = int(np.argmax(crit))
        c2, e2 = fit.split(c, e, i, within)
        c2, e2, energy2 = fit.optimize(c2, e2, LM_ITERATIONS)
        if energy2 > energy * (1.0 - tolerance):
            if energy2 < energy:
                c, e, energy = c2, e2, energy2
                splits += 1
                energies.append(energy)
            break
        c, e, energy = c2, e2, energy2
        splits += 1
        energies.append(energy)
    # clean-up (section 4.3)
    extent = float(np.max(np.linalg.norm(P - mass, axis=1))) or 1e-9
    influence = e + 2.0 / fit.k
    counts = (np.linalg.norm(P[:, None, :] - c, axis=-1) < influence).sum(axis=0)
    density = counts / influence**3
    cloud_density = len(P) / extent**3
    keep = (e <= 1.0) & (np.linalg.norm(c - mass, axis=1) <= 1.0) & (density >= min_density * cloud_density)
    if not keep.any():
        keep[int(np.argmax(density))] = True
    removed = int(np.count_nonzero(~keep))
    c, e = c[keep], e[keep]
    c, e, energy = fit.optimize(c, e, LM_FINAL_ITERATIONS)
    energies.append(energy)
    return c, e, {"energies": energies, "splits": splits, "removed": removed, "energy": energy}
