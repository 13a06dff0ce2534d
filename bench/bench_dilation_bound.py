# SPDX-License-Identifier: GPL-3.0-or-later
"""(d') How far can limits that grow around their samples get? An upper bound for issue 13.

The limit of joint j is taken to be every rotation within angle ``r_j`` of one of its training
samples (what the SDF grid builds, and what padding does to any fitted shape). Each clip is held
out in turn, as in bench_generalization.py (both sides learning from each other unless
``--sides-apart``), and the radii are
chosen *knowing the held-out clips*, one per joint for all folds: no fit that sees only the
training clips can do better within this family. Printed: whole-body recall (mean over held-out
clips; issue 13's 11 joints) and mean volume (share of uniformly random rotations) with one
radius for every joint, then the best whole-body recall per mean-volume budget with a radius
per joint (greedy: each step raises the joint whose recall gain per volume is largest), with
and without issue 13's caps (shoulders <= 15%, hip <= 5%).

    ./dev bench bench/bench_dilation_bound.py CLIP.bvh [...] [--random 20000]
"""

import argparse
import time

import _setup
import numpy as np
from bench_generalization import BANDAI_MAJOR

addon = _setup.addon()

#: Radii tried (radians).
RADII = np.arange(0.005, np.pi + 0.005, 0.005)
#: Issue 13's caps on single joints' volumes.
CAPS = {"UpperArm_L": 0.15, "UpperArm_R": 0.15, "UpperLeg_L": 0.05}


def nearest_angles(queries, samples, chunk=2000):
    """``(Q,)``: each query's angle to the nearest of ``samples (N, 4)`` (either cover)."""
    out = np.empty(len(queries))
    for start in range(0, len(queries), chunk):
        dots = np.abs(queries[start : start + chunk] @ samples.T).max(axis=1)
        out[start : start + chunk] = 2.0 * np.arccos(np.clip(dots, 0.0, 1.0))
    return out


def greedy(need, weight, volumes, budget, top):
    """Radius indices per joint: from the largest common radius within half the ``budget``
    (whole-body recall needs every joint, so one joint alone gains nothing from zero), raise the
    joint of best recall gain per volume while the mean volume stays within ``budget``
    (``top[j]``: the largest index joint j may take)."""
    joints = volumes.shape[0]
    common = np.flatnonzero(volumes.mean(axis=0) <= 0.5 * budget)
    k = np.minimum(common[-1] if len(common) else 0, top)
    while True:
        inside = need <= k
        best = None
        for j in range(joints):
            others = np.delete(inside, j, axis=1).all(axis=1)
            gained = np.cumsum(np.bincount(need[others, j], weights=weight[others], minlength=volumes.shape[1]))
            steps = np.arange(k[j] + 1, top[j] + 1)
            cost = (volumes[j, steps] - volumes[j, k[j]]) / joints
            fits = volumes[np.arange(joints), k].mean() + cost <= budget
            steps, cost = steps[fits], cost[fits]
            if not len(steps):
                continue
            ratio = (gained[steps] - gained[k[j]]) / np.maximum(cost, 1e-12)
            i = int(np.argmax(ratio))
            if ratio[i] > 0 and (best is None or ratio[i] > best[0]):
                best = (ratio[i], j, steps[i])
        if best is None:
            return k
        k[best[1]] = best[2]


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("clips", nargs="+", help="BVH clips of one skeleton (at least 3)")
    p.add_argument("--joints", nargs="*", default=list(BANDAI_MAJOR))
    p.add_argument("--random", type=int, default=20_000, help="uniform random rotations for the volume")
    p.add_argument("--budgets", nargs="*", type=float, default=[0.04, 0.05, 0.06, 0.07, 0.08, 0.10, 0.12])
    p.add_argument("--sides-apart", action="store_true", help="no mirrored samples (batch fit's --sides-apart)")
    args = p.parse_args()
    t0 = time.perf_counter()
    refs = addon.batch.clips.collect_clips(args.clips)
    results = {r.name: addon.batch.clip_jobs.fit_samples(tuple(r)) for r in refs}
    names, joints = sorted(results), args.joints
    uniform = addon.limits.geometry.quaternion.quaternion_random(args.random, 0)
    # per held-out clip: its frames' angle to the nearest training sample, per joint; and the
    # volume of each radius, per joint (mean over folds)
    need, weight, volumes = [], [], np.zeros((len(joints), len(RADII)))
    library = addon.batch.library_fit
    for held in names:
        train = {n: results[n] for n in names if n != held}
        pooled = {joint: np.concatenate([r["bones"][joint] for r in train.values()]) for joint in results[held]["bones"]}
        if not args.sides_apart:  # both sides learn from each other, as batch fit does
            labels = {joint: np.zeros(len(q)) for joint, q in pooled.items()}
            mirror = library.body_mirror(train, sorted(train), pooled)
            pooled = addon.limits.body.symmetry.learn_from_both_sides(mirror, pooled, labels)[0]
        angles = []
        for j, joint in enumerate(joints):
            train = pooled[joint]
            angles.append(nearest_angles(results[held]["bones"][joint], train))
            volumes[j] += np.searchsorted(np.sort(nearest_angles(uniform, train)), RADII, side="right") / len(uniform)
        need.append(np.minimum(np.searchsorted(RADII, np.stack(angles, axis=1) - 1e-12), len(RADII) - 1))
        weight.append(np.full(len(angles[0]), 1.0 / (len(names) * len(angles[0]))))
    need, weight, volumes = np.concatenate(need), np.concatenate(weight), volumes / len(names)
    print(
        f"{len(names)} clips held out in turn, {len(joints)} joints, {len(uniform)} random rotations; {time.perf_counter() - t0:.0f} s"
    )

    def recall(k):
        return float(weight[(need <= k).all(axis=1)].sum())

    def volume(k):
        return float(volumes[np.arange(len(joints)), k].mean())

    print("\none radius for every joint: radius, whole-body recall, mean volume")
    for r in (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.8, 1.0):
        k = np.full(len(joints), np.searchsorted(RADII, r - 1e-9))
        print(f"  {r:4.2f} rad  {recall(k):6.1%}  {volume(k):6.2%}")
    capped = [j for j, n in enumerate(joints) if n in CAPS]
    top = np.array([np.searchsorted(volumes[j], CAPS[n] + 1e-12, side="right") - 1 for j, n in enumerate(joints) if n in CAPS])
    ceiling = float(weight[(need[:, capped] <= top).all(axis=1)].sum())
    print(f"\nissue 13 caps (shoulders <= 15%, hip <= 5%), every other joint unlimited: whole-body recall at most {ceiling:.1%}")
    for caps in ({}, CAPS):
        top = np.array(
            [
                np.searchsorted(volumes[j], caps[n] + 1e-12, side="right") - 1 if n in caps else len(RADII) - 1
                for j, n in enumerate(joints)
            ]
        )
        print(
            f"\na radius per joint chosen knowing the held-out clips{', with issue 13 caps' if caps else ''}: budget, whole-body recall, mean volume"
        )
        for budget in args.budgets:
            k = greedy(need, weight, volumes, budget, top)
            radii = " ".join(f"{n}={RADII[i]:.2f}" for n, i in zip(joints, k))
            print(f"  {budget:4.0%}  {recall(k):6.1%}  {volume(k):6.2%}   {radii}")


if __name__ == "__main__":
    main()
