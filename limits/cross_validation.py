# SPDX-License-Identifier: GPL-3.0-or-later
"""How well a fitted limit accepts *new* motion, and the padding that makes it do so.

A limit fitted to some motion and padded by a guess rejects much of the next motion of the same
body (issue 13: 64% of held-out frames had every major joint inside the default fit). Here the
padding is measured instead of guessed, by cross-validation over the clips the samples came
from:

Folds (:func:`clip_folds`)
    Samples carry a clip label ``(N,)`` (which action or file each came from). With two or more
    clips, whole clips are held out (``k = min(folds, clips)`` folds, clips dealt to the lightest
    fold, the largest first, so folds hold similar numbers of samples). With one clip, its time
    order is cut into ``k`` contiguous blocks: neighbouring frames are nearly equal, so holding
    out random frames would measure nothing.

Calibration (:func:`calibrate_padding`)
    For a model kind and options, fit on every fold's training part at padding ``p`` and
    measure the geodesic violation (radians) of its held-out samples. The held-out *recall* is
    that of the worst fold (share of its held-out samples inside): every held-out clip must meet
    the target, not only their pool, since clips differ more than frames do, and the kind of
    least volume among several that just meet a pooled target is the one whose estimate was
    luckiest. Starting at the least padding, ``p`` grows by the largest fold's ``target``
    quantile of the violations, a fixed-point step: padding grows a shape by about that angle,
    so the held-out samples that were out by less come in. It stops when the recall meets
    ``target`` or ``p`` reaches ``max_padding``, after at most ``iterations`` rounds, and keeps
    the smallest padding found that meets the target.

Volume (:func:`volume`)
    The share of uniformly random rotations a limit accepts, from a fixed-seed sample (lower is
    tighter; 1 accepts everything).

Choice (:func:`choose`, the ``auto`` model)
    Of the candidates whose cross-validated recall meets the target, the one of least volume;
    when none does, the one of highest recall. :class:`AutoLimit` registers this as the model
    kind ``"auto"``: its ``fit`` returns the chosen kind's model, fitted on all samples at the
    calibrated padding, with the table of every candidate as ``model.calibration``.

Pure numpy; rotations are reference-relative unit quaternions ``(N, 4)``, ``(w, x, y, z)``.
"""

from dataclasses import dataclass, field

import numpy as np

from .checks import check_cloud
from .constants import BONE_AXIS, MIN_PADDING
from .model import LimitModel, model_class, register_model
from .quaternion import quaternion_mean, quaternion_random, quaternion_toward

#: Held-out recall per joint the calibration aims for by default.
DEFAULT_TARGET = 0.99
#: Folds of the cross-validation (fewer when there are fewer clips).
DEFAULT_FOLDS = 5
#: Largest padding the calibration tries (radians): beyond it a limit stops limiting much.
MAX_PADDING = 0.6
#: Fixed-point rounds of the calibration.
ITERATIONS = 4
#: Uniform random rotations of the volume estimate (fixed seed), and the seed.
VOLUME_SAMPLES = 20000
VOLUME_SEED = 0
#: Fewest samples a fold's training part needs to be fitted.
MIN_TRAIN = 8
#: The candidates of ``auto``: ``(kind, mode)`` (``None``: the kind has no mode). Fast to fit
#: and to query; the SDF grid, sinus texture and quaternion surface are left out (10 to 500
#: times slower to fit, and they follow the training samples too closely to generalize).
AUTO_CANDIDATES = (
    ("euler_box", None),
    ("box", "FULL"),
    ("box", "SWING_TWIST"),
    ("oriented_box", "FULL"),
    ("oriented_box", "SWING_TWIST"),
    ("ellipsoid", "FULL"),
    ("ellipsoid", "SWING_TWIST"),
    ("kdop", "FULL"),
    ("kdop", "SWING_TWIST"),
)


def check_clips(clips, n):
    """Clip labels ``(n,)`` as integers 0..C-1 in order of first appearance (``None``: one clip)."""
    if clips is None:
        return np.zeros(n, dtype=np.int64)
    labels = np.asarray(clips).reshape(-1)
    if labels.shape != (n,):
        raise ValueError(f"clip labels must have shape ({n},), one per sample, got {np.shape(clips)}")
    _, first, inverse = np.unique(labels, return_index=True, return_inverse=True)
    rank = np.empty(len(first), dtype=np.int64)
    rank[np.argsort(first)] = np.arange(len(first))
    return rank[inverse.reshape(-1)]


def clip_folds(clips, folds=DEFAULT_FOLDS):
    """The fold ``(N,)`` of every sample, 0..k-1 (module docstring: whole clips, or contiguous
    time blocks of a single clip). ``k = 1`` (no cross-validation possible) when there are
    fewer than ``2 * MIN_TRAIN`` samples."""
    labels = np.asarray(clips, dtype=np.int64).reshape(-1)
    n = len(labels)
    if folds < 2:
        raise ValueError(f"cross-validation needs at least 2 folds, got {folds}")
    if n < 2 * MIN_TRAIN:
        return np.zeros(n, dtype=np.int64)
    count = int(labels.max()) + 1 if n else 0
    if count >= 2:
        k = min(folds, count)
        sizes = np.bincount(labels, minlength=count)
        load = np.zeros(k)
        fold_of_clip = np.empty(count, dtype=np.int64)
        for clip in np.argsort(-sizes, kind="stable"):
            fold_of_clip[clip] = int(np.argmin(load))
            load[fold_of_clip[clip]] += sizes[clip]
        return fold_of_clip[labels]
    k = min(folds, n // MIN_TRAIN)
    return np.minimum(np.arange(n) * k // n, k - 1)


def volume(model, centre, samples=VOLUME_SAMPLES, seed=VOLUME_SEED):
    """Share of uniformly random rotations ``model`` accepts, each on the cover of ``centre (4,)``
    (the cloud's mean, as :class:`~.joint.JointLimit` presents rotations)."""
    uniform = quaternion_toward(quaternion_random(samples, seed), np.asarray(centre, dtype=float))
    return float(np.mean(model.contains(uniform)))


def cloud_centre(rotations):
    """The mean of a relative cloud on the cover most of it lies on (as :class:`~.joint.JointLimit`)."""
    centre = quaternion_mean(rotations)
    return -centre if np.sum(rotations @ centre) < 0 else centre


@dataclass
class Candidate:
    """One model kind's cross-validated result: ``padding`` (radians) calibrated so that the
    held-out ``recall`` meets the target (when ``met``), and the ``volume`` of the model fitted
    on all samples at that padding. ``error`` says why it could not be fitted (then no model)."""

    kind: str
    mode: str | None
    padding: float = 0.0
    recall: float = 0.0
    volume: float = 1.0
    met: bool = False
    error: str = ""
    model: LimitModel | None = field(default=None, repr=False)

    @property
    def label(self):
        return self.kind + (f" {self.mode.lower().replace('_', '-')}" if self.mode else "")

    def summary(self):
        """Plain data for reports (no model)."""
        return {
            "kind": self.kind,
            "mode": self.mode or "",
            "padding": round(float(self.padding), 4),
            "recall": round(float(self.recall), 4),
            "volume": round(float(self.volume), 4),
            "met": bool(self.met),
            "error": self.error,
        }


@dataclass
class Calibration:
    """What a calibrated fit found: the ``target`` recall, the number of ``folds`` and whether
    they were ``by_clip`` (else time blocks of one clip), every ``candidates`` entry, and the
    ``chosen`` one (an index into ``candidates``)."""

    target: float
    folds: int
    by_clip: bool
    candidates: list
    chosen: int

    @property
    def best(self):
        return self.candidates[self.chosen]

    def summary(self):
        """Plain data (JSON-ready) for reports and the bone's settings."""
        return {
            "target": self.target,
            "folds": self.folds,
            "by_clip": self.by_clip,
            "chosen": self.chosen,
            "candidates": [c.summary() for c in self.candidates],
        }


def _fit_options(kind, mode, options):
    """The options ``kind``'s fit takes, from ``options`` (its mode set)."""
    allowed = model_class(kind).FIT_OPTIONS
    out = {name: value for name, value in options.items() if name in allowed and name != "padding"}
    if mode is not None:
        out["mode"] = mode
    return out


def held_out_violations(rotations, folds, kind, padding, options):
    """Geodesic violation (radians) of every sample by the ``kind`` model fitted, at ``padding``,
    on the other folds; ``(N,)`` (NaN where a fold's training part was too small)."""
    out = np.full(len(rotations), np.nan)
    for fold in np.unique(folds):
        held = folds == fold
        if np.count_nonzero(~held) < MIN_TRAIN:
            continue
        model = model_class(kind).fit(rotations[~held], padding=padding, **options)
        out[held] = model.violation(rotations[held])
    return out


def calibrate_padding(
    rotations,
    folds,
    kind,
    options=None,
    target=DEFAULT_TARGET,
    max_padding=MAX_PADDING,
    iterations=ITERATIONS,
    tolerance=1e-6,
):
    """``(padding, recall)``: the least padding (radians) found at which the ``kind`` model's
    held-out recall meets ``target`` on every fold (module docstring), and the worst fold's;
    when no padding up to ``max_padding`` meets it, the padding of the best recall found."""
    options = dict(options or {})
    padding, best = MIN_PADDING, None
    for _ in range(max(int(iterations), 1)):
        violation = held_out_violations(rotations, folds, kind, padding, options)
        tested = [violation[(folds == fold) & np.isfinite(violation)] for fold in np.unique(folds)]
        tested = [v for v in tested if len(v)]
        if not tested:
            return padding, 1.0
        recall = min(float(np.mean(v <= tolerance)) for v in tested)
        if best is None or recall > best[1]:
            best = (padding, recall)
        if recall >= target or padding >= max_padding:
            break
        step = max(float(np.quantile(v, target, method="higher")) for v in tested)
        padding = min(padding + max(step, MIN_PADDING), max_padding)
    return best


def evaluate_candidate(rotations, folds, kind, mode, options, target, centre):
    """A :class:`Candidate`: calibrated padding, held-out recall, and the model fitted on all
    ``rotations`` at that padding with its volume. Errors of the model (too few samples...) are
    kept in ``error`` rather than raised."""
    candidate = Candidate(kind, mode)
    fit_options = _fit_options(kind, mode, options)
    try:
        if len(np.unique(folds)) > 1:
            candidate.padding, candidate.recall = calibrate_padding(rotations, folds, kind, fit_options, target)
        else:
            candidate.padding, candidate.recall = MAX_PADDING / 2, float("nan")
        candidate.model = model_class(kind).fit(rotations, padding=candidate.padding, **fit_options)
        candidate.volume = volume(candidate.model, centre)
    except ValueError as err:
        candidate.error = str(err)
        return candidate
    candidate.met = bool(candidate.recall >= target or np.isnan(candidate.recall))
    return candidate


def choose(candidates):
    """Index of the candidate to use: least volume among those that meet the target, else the
    highest recall (least volume among equals). ``ValueError`` when none could be fitted."""
    usable = [i for i, c in enumerate(candidates) if c.model is not None]
    if not usable:
        reasons = "; ".join(f"{c.label}: {c.error}" for c in candidates)
        raise ValueError(f"no limit model could be fitted ({reasons})")
    met = [i for i in usable if candidates[i].met]
    if met:
        return min(met, key=lambda i: candidates[i].volume)
    return min(usable, key=lambda i: (-candidates[i].recall, candidates[i].volume))


def cross_validated_fit(
    rotations,
    clips=None,
    candidates=AUTO_CANDIDATES,
    target=DEFAULT_TARGET,
    folds=DEFAULT_FOLDS,
    **options,
):
    """Calibrate every candidate on ``rotations (N, 4)`` (reference-relative) and choose one.

    Parameters
    ----------
    rotations : (N, 4) array
        Time-ordered within each clip.
    clips : (N,) array, optional
        Clip label of every sample (any values; ``None``: one clip).
    candidates : sequence of (kind, mode)
        Model kinds to try, ``mode`` ``None`` for kinds without one.
    target : float
        Held-out recall to meet, in (0, 1].
    folds : int
        Folds of the cross-validation (at least 2).
    **options
        Further fit options (``twist_axis``, ``order``...), each passed to the kinds that take it.

    Returns
    -------
    Calibration
        With one fitted model per usable candidate (``candidates[i].model``).
    """
    q = check_cloud(rotations)
    if not 0.0 < float(target) <= 1.0:
        raise ValueError(f"target recall must be in (0, 1], got {target!r}")
    labels = check_clips(clips, len(q))
    fold = clip_folds(labels, folds)
    centre = cloud_centre(q)
    results = [evaluate_candidate(q, fold, kind, mode, options, float(target), centre) for kind, mode in candidates]
    return Calibration(float(target), int(fold.max()) + 1, bool(labels.max() > 0), results, choose(results))


@register_model
class AutoLimit(LimitModel):
    """Not a shape of its own: :meth:`fit` picks, per bone, the model kind and padding that meet
    a target held-out recall at the least volume (:func:`cross_validated_fit`) and returns that
    kind's model."""

    kind = "auto"
    label = "Auto"
    description = "Per bone, the model and padding that accept new motion (cross-validated by clip) at the least volume"
    ui_order = 0
    FIT_OPTIONS = ("clips", "target", "twist_axis", "order")

    @classmethod
    def fit(
        cls,
        rotations,
        clips=None,
        target=DEFAULT_TARGET,
        twist_axis=BONE_AXIS,
        order="XYZ",
        candidates=AUTO_CANDIDATES,
        **options,
    ):
        """The chosen model (of another kind), fitted on all ``rotations``, with the
        :class:`Calibration` of every candidate as its ``calibration`` attribute. One candidate
        (``candidates=[(kind, mode)]``) calibrates that kind's padding alone."""
        calibration = cross_validated_fit(
            rotations, clips, candidates, target=target, twist_axis=twist_axis, order=order, **options
        )
        model = calibration.best.model
        model.calibration = calibration
        return model
