# SPDX-License-Identifier: GPL-3.0-or-later
"""Rotation clouds and fitted limits stored on pose bones, so they are saved in the .blend.

A cloud is the bone's sampled *local* rotations ``(N, 4)``, kept as base64 float32 text in
``joint_limit.cloud_data``; a fitted limit is JSON (:mod:`...limits.serialize`) in
``joint_limit.limit_data``. Both are validated when read: corrupt text gives ``ValueError``.

Limits read or written in this session are remembered, parsed, outside the .blend and its undo
steps (:data:`_parsed`): turning live enforcement on parses only the limits this session has
not met, and the derived tables a model builds as it is used (a sinus texture's
nearest-boundary entries) live on with it.
"""

import base64
import binascii
import collections
import concurrent.futures
import copy
import json
import os

import numpy as np

from ...limits.ik.limb_rom import limb_from_json, limb_to_json
from ...limits.joint import JointLimit
from ...limits.serialize import limit_from_json, limit_to_json
from . import datastore

CLOUD_PREFIX = "q4f32:"
#: After the samples, which clip (action, file) they came from: a JSON list of ``[name, count]``
#: runs in sample order (clouds stored before clips were recorded are one clip).
CLIPS_MARK = ";clips="


def cloud_to_text(q, clips=None):
    """``q (N, 4)`` as stored text, with its clip runs ``[(name, count), ...]`` when given."""
    q = np.ascontiguousarray(np.asarray(q, dtype="<f4").reshape(-1, 4))
    text = CLOUD_PREFIX + base64.b64encode(q.tobytes()).decode("ascii")
    if clips:
        runs = [[str(name), int(count)] for name, count in clips if count > 0]
        if sum(count for _, count in runs) != len(q):
            raise ValueError(f"clip runs count {sum(c for _, c in runs)} samples, the cloud has {len(q)}")
        text += CLIPS_MARK + json.dumps(runs, separators=(",", ":"))
    return text


def clips_from_text(text, count):
    """The clip runs ``[(name, count), ...]`` of stored cloud text holding ``count`` samples
    (one unnamed clip when none were recorded or they do not add up)."""
    _, mark, tail = (text or "").partition(CLIPS_MARK)
    try:
        runs = [(str(name), int(n)) for name, n in json.loads(tail)] if mark else []
    except (ValueError, TypeError):
        runs = []
    if sum(n for _, n in runs) != count or any(n <= 0 for _, n in runs):
        runs = [("", count)] if count else []
    return runs


def kept_runs(runs, keep):
    """Runs ``[(name, count), ...]`` of the samples ``keep (N,)`` (bool) keeps, in order; runs left
    empty are dropped."""
    edges = np.cumsum([0] + [n for _, n in runs])
    counts = [int(np.count_nonzero(keep[a:b])) for a, b in zip(edges[:-1], edges[1:], strict=True)]
    return [(name, n) for (name, _), n in zip(runs, counts, strict=True) if n]


def clip_labels(runs):
    """``(N,)`` clip name of every sample from runs ``[(name, count), ...]``."""
    return np.repeat(np.array([name for name, _ in runs], dtype=object), [n for _, n in runs])


def cloud_from_text(text):
    """Decode a stored cloud; an empty string is an empty ``(0, 4)`` cloud."""
    if not text:
        return np.zeros((0, 4))
    if not text.startswith(CLOUD_PREFIX):
        raise ValueError("stored rotation cloud is not in Joint Limits format")
    text = text.partition(CLIPS_MARK)[0]
    try:
        raw = base64.b64decode(text[len(CLOUD_PREFIX) :], validate=True)
    except (binascii.Error, ValueError):
        raise ValueError("stored rotation cloud is corrupt (bad base64)") from None
    if len(raw) % 16:
        raise ValueError(f"stored rotation cloud is corrupt ({len(raw)} bytes is not a whole number of quaternions)")
    q = np.frombuffer(raw, dtype="<f4").reshape(-1, 4).astype(float)
    if not np.all(np.isfinite(q)):
        raise ValueError("stored rotation cloud contains NaN")
    return q


def read_cloud(pose_bone):
    return cloud_from_text(datastore.get(pose_bone.joint_limit, "cloud"))


def read_cloud_clips(pose_bone):
    """``(q (N, 4), runs [(clip name, count), ...])``: the stored cloud and which clip each run
    of its samples came from."""
    text = datastore.get(pose_bone.joint_limit, "cloud")
    q = cloud_from_text(text)
    return q, clips_from_text(text, len(q))


def write_cloud(pose_bone, q, append=False, clip=""):
    """Store ``q (N, 4)`` (or append it to what is stored), its samples from ``clip`` (a name,
    or runs ``[(name, count), ...]``); returns the new sample count."""
    q = np.asarray(q, dtype=float).reshape(-1, 4)
    runs = [(clip, len(q))] if isinstance(clip, str) else list(clip)
    if append:
        old, old_runs = read_cloud_clips(pose_bone)
        q, runs = np.concatenate((old, q)), old_runs + runs
    settings = pose_bone.joint_limit
    settings.cloud_data = cloud_to_text(q, runs)
    settings.cloud_count = len(q)
    return len(q)


#: Parsed entries (limits, limb ranges) by ``(field, token, length, hash)`` of their stored
#: text (the token changes with every write, and undo restores text and token together; the
#: text's own length and hash catch an entry changed behind the token's back), least recently
#: used first.
_parsed = collections.OrderedDict()
#: At most this many bytes of model parameters are remembered (200 sinus textures: 100 MB).
PARSED_CACHE_BYTES = 512 << 20
_parsed_bytes = [0]
#: ``(field, token)`` -> the key of what that token's text parsed to when a reader that trusts
#: the token (live enforcement's compile, panels) last read it: copying megabytes of text out of
#: Blender to hash it on every compile or redraw would cost more than the parse cache saves. The
#: first such read checks the text, so an entry changed behind the token's back is caught then.
_by_token = {}


def _parsed_key(settings, field, text):
    return (field, getattr(settings, datastore.TOKENS[field]), len(text), hash(text))


def _size(value):
    return sum(a.nbytes for a in getattr(value, "model", value).params.values())


def remember_parsed(settings, field, text, value):
    """Remember ``value`` as what the stored ``text`` of ``field`` parses to (after a write)."""
    key = _parsed_key(settings, field, text)
    if key in _parsed:
        _parsed_bytes[0] -= _size(_parsed.pop(key))
    _parsed[key] = value
    _parsed_bytes[0] += _size(value)
    while _parsed_bytes[0] > PARSED_CACHE_BYTES and len(_parsed) > 1:
        old, dropped = _parsed.popitem(last=False)
        _parsed_bytes[0] -= _size(dropped)
        if _by_token.get(old[:2]) == old:
            del _by_token[old[:2]]


def _trusted(settings, field):
    """What the bone's current token of ``field`` parsed to, if remembered, else None."""
    token = getattr(settings, datastore.TOKENS[field])
    key = _by_token.get((field, token)) if token else None
    if key is None or key not in _parsed:
        return None
    _parsed.move_to_end(key)
    return _parsed[key]


def read_parsed(pose_bone, field, parse, what, trust_token=False):
    """The stored entry ``field`` (``"limit"``, ``"limb"``) of ``pose_bone`` as ``parse(text)``
    gives it, parsed once and remembered, or ``None`` when it has none. A stored entry that is
    empty or not text (the store is never written so) is a ``ValueError``, like corrupt JSON.
    ``trust_token``: what the bone's token was last read as, without reading the text again."""
    settings = pose_bone.joint_limit
    if trust_token:
        value = _trusted(settings, field)
        if value is not None:
            return value
    text = datastore.get(settings, field)  # straight from the store: through RNA it is copied twice more
    if not text:
        if datastore.has(settings, field):
            raise ValueError(f"{pose_bone.name}: its stored {what} is empty or not text")
        return None
    key = _parsed_key(settings, field, text)
    value = _parsed.get(key)
    if value is None:
        value = parse(text)
        remember_parsed(settings, field, text, value)
    else:
        _parsed.move_to_end(key)
    if trust_token and key[1]:
        _by_token[key[:2]] = key
    return value


def prefetch_limits(pose_bones):
    """Parse the stored limits of ``pose_bones`` that are not remembered yet, several at a
    time (threads: inflating and checking a sinus texture's tables runs outside Python's lock),
    and remember them, so that :func:`read_limit` finds them. A limit that does not parse is
    left for :func:`read_limit` to report."""
    todo = []
    for pose_bone in pose_bones:
        settings = pose_bone.joint_limit
        if _trusted(settings, "limit") is not None:
            continue
        text = datastore.get(settings, "limit")
        if text and isinstance(text, str) and _parsed_key(settings, "limit", text) not in _parsed:
            todo.append((settings, text))
    workers = min(PARSE_THREADS, os.cpu_count() or 1, len(todo))
    if workers < 2:
        return
    with concurrent.futures.ThreadPoolExecutor(workers) as pool:
        parsed = list(pool.map(_parse_or_none, [text for _, text in todo]))
    for (settings, text), limit in zip(todo, parsed):
        if limit is not None:
            remember_parsed(settings, "limit", text, limit)


#: Threads that parse stored limits at once (:func:`prefetch_limits`).
PARSE_THREADS = 8


def _parse_or_none(text):
    try:
        return limit_from_json(text)
    except Exception:  # noqa: BLE001 - read_limit reports it, bone by bone
        return None


def forget_parsed():
    """Drop the remembered limits (for tests and benchmarks: a session that just opened a file)."""
    _parsed.clear()
    _by_token.clear()
    _parsed_bytes[0] = 0


def read_limit(pose_bone, trust_token=False):
    """The bone's fitted :class:`JointLimit` with its softening settings, or ``None`` when it
    has none. A stored entry that is empty or not text (the store is never written so) is a
    ``ValueError``, like corrupt JSON. ``trust_token``: see :func:`read_parsed`."""
    settings = pose_bone.joint_limit
    limit = read_parsed(pose_bone, "limit", limit_from_json, "limit", trust_token)
    if limit is None:
        return None
    limit = copy.copy(limit)  # its own softening settings; the model (never changed in place) is shared
    if settings.use_softening:
        limit.soft_radius = np.asarray(settings.soft_radius, dtype=float)
        limit.soft_falloff = np.asarray(settings.soft_falloff, dtype=float)
    else:
        limit.soft_radius = np.asarray(0.0)
    return limit


def _checked_text(limit):
    """``(text, read back)``: ``limit`` as the JSON the store keeps, read back first: a limit
    that would not read back (NaN, a zero quaternion...) is a ``ValueError`` before anything
    is written."""
    if not isinstance(limit, JointLimit):
        raise TypeError(f"expected a JointLimit, got {type(limit).__name__}")
    text = limit_to_json(limit)
    return text, limit_from_json(text)


def write_limit(pose_bone, limit):
    """Store ``limit`` (``None`` clears it); ``ValueError`` and nothing written when it would
    not read back (:func:`_checked_text`). What was read back is remembered, so the next read
    (turning enforcement on) need not parse it again."""
    if limit is None:
        pose_bone.joint_limit.limit_data = ""
        return
    text, back = _checked_text(limit)
    settings = pose_bone.joint_limit
    settings.limit_data = text
    remember_parsed(settings, "limit", text, back)


def store_limit(pose_bone, limit):
    """Make ``limit`` the bone's limit and its model (and space) settings match it (a limit
    loaded or rebuilt rather than fitted). Validated first: when it would not read back,
    ``ValueError`` and neither the limit nor the settings change. The settings are set before
    the limit is written because changing them refits from the samples."""
    text, back = _checked_text(limit)
    settings = pose_bone.joint_limit
    if settings.model != limit.model.kind:
        settings.model = limit.model.kind
    mode = limit.model.config.get("mode")
    if mode in {"FULL", "SWING_TWIST"} and settings.mode != mode:
        settings.mode = mode
    settings.limit_data = text
    remember_parsed(settings, "limit", text, back)


def write_limb(pose_bone, model):
    """Store ``model`` (``None`` clears it) as the limb range of ``pose_bone``, the middle bone;
    it is read back first, so a model that would not load is never written."""
    if model is None:
        pose_bone.joint_limit.limb_data = ""
        return
    text = limb_to_json(model)
    limb_from_json(text)
    settings = pose_bone.joint_limit
    settings.limb_data = text
    remember_parsed(settings, "limb", text, model)


def read_limb(pose_bone):
    """The limb range of motion stored with ``pose_bone`` (the middle bone), or ``None``;
    ``ValueError`` when the stored entry does not make a valid model."""
    return read_parsed(pose_bone, "limb", limb_from_json, "limb range")
