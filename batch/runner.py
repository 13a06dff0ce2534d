# SPDX-License-Identifier: GPL-3.0-or-later
"""``joint_limits batch fit|check|clean``: a library of clips, one job, a folder of outputs.

Outputs in ``--output DIR`` (clips are named by :mod:`.clips`; names must be unique):

- ``fit``: ``limits.json`` (a limit set, :mod:`.limit_set`), pooled from every clip's samples,
  and ``samples/<clip>.npz``, what each clip gave (:mod:`.sample_cache`); with ``--rig`` the
  limits also go onto the rig's armature (:mod:`.onto_rig`);
- ``check``: ``reports/<clip>.json`` per clip;
- ``clean``: ``clips/<clip>`` (the limited clip: BVH, or a .blend for .blend and FBX clips) and
  ``reports/<clip>.json`` per clip;
- every job: ``summary.md`` (to read) and ``summary.json`` (for programs).

Clips run in ``--jobs N`` spawned worker processes, started once per batch (they import the
add-on's batch code without Blender, :mod:`.worker_boot`; only .blend and FBX clips start
Blender in a worker), on a Dask cluster (``--scheduler``, :mod:`.dask_cluster`), or in this
process with one job. Outputs are written atomically (temporary file, then rename), a clip's
report (or samples) last, so a clip whose report exists (for the same limit set), or whose
samples were read from the same file, is done and a second run skips it. A clip that fails
(bad file, an error) is reported and the batch goes on; a clip that ends its worker process is
retried alone (after a worker dies, the clips that were in flight run one at a time) and
reported if it ends that one too. Outputs hold no times, paths or worker numbers and list clips
and bones in sorted order, so the same inputs give the same bytes whatever the number of
workers (a cleaned .blend too, from Blender 5.0: :mod:`.blend_bytes` clears what Blender saves
of the writing process's history). Progress and an estimate of the time left go to stderr.
"""

import collections
import contextlib
import hashlib
import json
import multiprocessing
import os
import runpy
import sys
import time
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path

from ..limits.body.preset import PRESET_DIR, PRESETS, load_preset
from . import clip_jobs, sample_cache, worker_boot
from .clips import ClipRef, collect_clips
from .limit_set import limit_set_text, read_limit_set

JOBS = ("fit", "check", "clean")
SUMMARY_VERSION = 1

__all__ = ["collect_clips", "run_batch"]


def _task(job, ref, limits_path, out_path):
    """One clip's job in a worker (``ref`` a :class:`.clips.ClipRef` as a plain tuple):
    ``(status, result or message, peak memory MB)``."""
    try:
        if job == "fit":
            result = clip_jobs.fit_samples(ref)
        elif job == "check":
            result = clip_jobs.check_clip(ref, limits_path)
        else:
            result = clip_jobs.clean_clip(ref, limits_path, out_path)
        return "ok", result, clip_jobs.peak_memory_mb()
    except ValueError as err:
        return "failed", str(err), clip_jobs.peak_memory_mb()
    except Exception as err:  # a bug or a file nothing checked for: reported, the batch goes on
        return "failed", f"{type(err).__name__}: {err}", clip_jobs.peak_memory_mb()


def _package():
    """``(module name bl_ext.<repo>.<id>, the add-on's folder)``."""
    package = __package__.rpartition(".")[0]
    return package, Path(sys.modules[package].__path__[0])


def _worker_setup():
    """``(initializer, initargs)`` that make this add-on importable in a spawned worker."""
    package, folder = _package()
    init = {"MODULE": package, "DIRECTORY": str(folder.parent)}
    return runpy.run_path, (worker_boot.__file__, init, worker_boot.RUN_NAME)


@contextlib.contextmanager
def _spawnable_path():
    """While workers start, leave Blender's script folders out of ``sys.path``: a spawned process
    gets the parent's path, and with them on it ``import bpy`` finds Blender's inner ``bpy``
    package (scripts/modules) instead of the module."""
    import bpy

    roots = [os.path.join(r, "") for r in (bpy.utils.resource_path(k) for k in ("LOCAL", "USER", "SYSTEM")) if r]
    saved = list(sys.path)
    sys.path[:] = [p for p in saved if not any(os.path.join(p, "").startswith(r) for r in roots)]
    try:
        yield
    finally:
        sys.path[:] = saved


class _Progress:
    def __init__(self, job, total, skipped, stream):
        self.job, self.total, self.done, self.failed, self.stream = job, total, skipped, 0, stream
        self.todo = total - skipped
        self.start = time.monotonic()
        if skipped:
            print(f"batch {job}: {skipped} of {total} clips already done, skipped", file=stream)

    def tick(self, name, failed):
        self.done += 1
        self.failed += failed
        elapsed = time.monotonic() - self.start
        ran = self.done - (self.total - self.todo)
        eta = elapsed / ran * (self.total - self.done)
        state = " FAILED" if failed else ""
        print(
            f"batch {self.job}: {self.done}/{self.total} clips ({self.failed} failed), "
            f"{elapsed:.1f} s, about {eta:.0f} s left: {name}{state}",
            file=self.stream,
            flush=True,
        )


def _runs_here(args):
    """Whether this process may run a task itself beside its workers: BVH clips only (numpy;
    .blend and FBX clips replace the open file and run Blender code that could crash), and not
    the test hook's crashing clip, which must end a worker."""
    ref = ClipRef(*args[1])
    return ref.kind == "bvh" and ref.name != os.environ.get(clip_jobs.CRASH_ENV)


def _largest_first(tasks):
    """``tasks`` in the order the workers take them: clips this process cannot run (.blend,
    FBX) first, then BVH clips by size, largest first (ties by name). This process takes them
    from the end, so it runs the small clips and comes back to its workers often; a large clip
    here would leave them idle once they finish what they hold."""

    def size(args):
        try:
            return os.path.getsize(ClipRef(*args[1]).path)
        except OSError:
            return 0

    return sorted(tasks, key=lambda t: (_runs_here(t[1]), -size(t[1]), t[0]))


def _run_tasks(tasks, jobs, on_result):
    """Run ``tasks`` ``[(name, args)]`` through :func:`_task`: here with one job; else in
    spawned workers, this process taking BVH clips from the end of the queue
    (:func:`_largest_first`) while they start and between their results (``jobs - 1`` workers
    when it can take some, else ``jobs``). ``on_result(name, status, payload, worker's peak
    memory MB or None if run here)`` for each."""
    if jobs <= 1:
        for name, args in tasks:
            on_result(name, *_task(*args)[:2], None)
        return
    initializer, initargs = _worker_setup()
    context = multiprocessing.get_context("spawn")

    def pool(n):
        return ProcessPoolExecutor(max_workers=n, mp_context=context, initializer=initializer, initargs=initargs)

    queue = collections.deque(_largest_first(tasks))
    workers = jobs - 1 if any(_runs_here(args) for _, args in tasks) else jobs
    suspects, inflight = [], {}
    executor = pool(workers)
    with _spawnable_path():
        while queue or inflight:
            broken = False
            while executor is not None and queue and len(inflight) < 4 * workers:
                try:
                    future = executor.submit(_task, *queue[0][1])
                except BrokenProcessPool:  # a worker died since the last look: its clip is in flight
                    broken = True
                    break
                inflight[future] = queue.popleft()
            here = bool(queue) and _runs_here(queue[-1][1])
            done = [f for f in inflight if f.done()]
            if not done and inflight and not here:
                done = wait(inflight, return_when=FIRST_COMPLETED).done
            for future in sorted(done, key=lambda f: inflight[f][0]):
                name, args = inflight.pop(future)
                try:
                    result = future.result()
                except BrokenProcessPool:
                    suspects.append((name, args))
                    continue
                on_result(name, *result)
            if (suspects or broken) and executor is not None:  # a worker died: the rest run one at a time
                executor.shutdown(wait=False)
                executor = None
                suspects += [t for t in queue if not _runs_here(t[1])]
                queue = collections.deque(t for t in queue if _runs_here(t[1]))
            if here and queue:
                name, args = queue.pop()
                on_result(name, *_task(*args)[:2], None)
    if executor is not None:
        executor.shutdown()
    executor = None
    for name, args in sorted(suspects, key=lambda t: t[0]):  # alone, one at a time
        executor = executor or pool(1)
        try:
            with _spawnable_path():
                future = executor.submit(_task, *args)
            result = future.result()
        except BrokenProcessPool:
            executor.shutdown(wait=False)
            executor = None
            result = ("failed", "the worker process ended while running this clip (a crash)", 0.0)
        on_result(name, *result)
    if executor is not None:
        executor.shutdown()


def _json_bytes(data):
    return (json.dumps(data, sort_keys=True, indent=1, allow_nan=False) + "\n").encode("utf-8")


def _sha256(path):
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def _done_report(report_path, clip_out, limits_sha):
    """The report at ``report_path`` if the clip is complete (its outputs exist, for the same
    limit set), else ``None``."""
    try:
        report = json.loads(report_path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(report, dict) or report.get("limits_sha256") != limits_sha:
        return None
    if clip_out is not None and not clip_out.exists():
        return None
    return report


def run_batch(
    job,
    inputs,
    output,
    limits=None,
    model="auto",
    jobs=1,
    stream=None,
    rig=None,
    bone_map=None,
    scheduler=None,
    pictures=False,
    symmetry=True,
    preset=None,
):
    """Run ``job`` over the clips ``inputs`` (folders, globs, files, ``file.blend:Action``)
    into the folder ``output``; returns ``(summary dict, stats)`` where stats (not written
    anywhere) holds the run's seconds, the clips it ran, and the peak memory in MB of its
    workers (``worker_peak_mb``, ``None`` when none ran a clip) and of this process.

    ``rig`` (fit): a .blend whose armature gets the limits (:mod:`.onto_rig`), with
    ``bone_map`` (a JSON file) naming pairs automatic matching would miss. ``scheduler``: a
    Dask scheduler address; the clips run there (:mod:`.dask_cluster`) instead of ``jobs``
    local processes. ``symmetry`` (fit): left/right bones learn from each other's samples seen
    in the mirror (:func:`..limits.body.symmetry.learn_from_both_sides`; the first clip's skeleton
    says which bones mirror). .blend and FBX clips replace the file open in this process (one job).
    ``pictures`` (check, clean): draw ``summary.png`` (:mod:`.summary_pictures`, matplotlib).
    ``preset`` (check, clean): instead of ``limits``, a preset's name (``"human"``): each clip is
    checked against the preset fitted to its own skeleton, no fit needed."""
    stream = stream or sys.stderr
    if job not in JOBS:
        raise ValueError(f"batch job must be one of {', '.join(JOBS)}, got {job!r}")
    if jobs < 1:
        raise ValueError(f"--jobs must be at least 1, got {jobs}")
    if job != "fit" and (rig or bone_map):
        raise ValueError("--rig and --bone-map go with batch fit")
    if bone_map and not rig:
        raise ValueError("--bone-map maps the clips' bones to a rig's: give --rig too")
    if bone_map:
        from .onto_rig import read_bone_map

        bone_map = read_bone_map(bone_map)
    clips = collect_clips(inputs)
    output = Path(output)
    limits_sha = None
    if job == "fit" and preset:
        raise ValueError("--preset goes with batch check and clean (a fit learns from the clips)")
    if job != "fit":
        if bool(limits) == bool(preset):
            raise ValueError(f"batch {job} needs --limits FILE (a limit set written by batch fit) or --preset NAME, one of them")
        if preset:
            path = PRESET_DIR / PRESETS[preset] if preset in PRESETS else None
            if path is None:
                raise ValueError(f"no preset named {preset!r} (presets: {', '.join(sorted(PRESETS))})")
            load_preset(preset)  # refuse a damaged file before any clip runs
            limits, limits_sha = f"{clip_jobs.PRESET_PREFIX}{preset}", _sha256(path)
        else:
            read_limit_set(limits)  # refuse a bad file before any clip runs
            limits = str(Path(limits).resolve())
            limits_sha = _sha256(limits)
    output.mkdir(parents=True, exist_ok=True)
    reports_dir, clips_dir, samples_dir = output / "reports", output / "clips", output / "samples"
    for folder, used in ((reports_dir, job != "fit"), (clips_dir, job == "clean"), (samples_dir, job == "fit")):
        if used:
            folder.mkdir(exist_ok=True)

    results, failures, tasks, keys = {}, {}, [], {}
    for clip in clips:
        out_clip = clips_dir / clip.cleaned_name if job == "clean" else None
        if job == "fit":
            keys[clip.name] = sample_cache.clip_key(clip)
            done = sample_cache.read_samples(samples_dir / f"{clip.out_name}.npz", keys[clip.name])
        else:
            done = _done_report(reports_dir / f"{clip.out_name}.json", out_clip, limits_sha)
        if done is not None:
            results[clip.name] = done
            continue
        tasks.append((clip.name, (job, tuple(clip), limits, str(out_clip) if out_clip else None)))
    out_names = {clip.name: clip.out_name for clip in clips}
    progress = _Progress(job, len(clips), len(clips) - len(tasks), stream)
    memory = []

    def on_result(name, status, payload, peak):
        memory.append(peak)
        if status != "ok":
            failures[name] = payload
            progress.tick(name, True)
            return
        if job == "fit":
            sample_cache.write_samples(samples_dir / f"{out_names[name]}.npz", keys[name], payload)
        else:
            payload["limits_sha256"] = limits_sha
            clip_jobs.write_atomic(reports_dir / f"{out_names[name]}.json", _json_bytes(payload))
        results[name] = payload
        progress.tick(name, False)

    start = time.monotonic()
    if scheduler and tasks:
        from .dask_cluster import run_on_dask

        run_on_dask(scheduler, tasks, on_result, _package()[1])
    else:
        if jobs > 1 and tasks:
            _check_parallel_possible()
        _run_tasks(tasks, min(jobs, max(len(tasks), 1)), on_result)
    if job == "fit":
        summary = _fit(results, failures, model, output, rig, bone_map, symmetry)
    else:
        summary = _summary(job, results, failures, Path(limits).name, limits_sha)
    clip_jobs.write_atomic(output / "summary.json", _json_bytes(summary))
    from .summary_text import summary_markdown

    picture = no_picture = None
    if pictures and job != "fit":
        from .summary_pictures import PICTURE, draw_summary

        png, no_picture = draw_summary(summary)
        if png is not None:
            clip_jobs.write_atomic(output / PICTURE, png)
            picture = PICTURE
    text = summary_markdown(summary, picture, no_picture)
    clip_jobs.write_atomic(output / "summary.md", text.encode("utf-8"))
    workers = [m for m in memory if m is not None]
    stats = {
        "seconds": time.monotonic() - start,
        "ran": len(tasks),
        "ran_in_workers": len(workers),
        "worker_peak_mb": max(workers) if workers else None,
        "process_peak_mb": clip_jobs.peak_memory_mb(),
    }
    return summary, stats


def _check_parallel_possible():
    import bpy

    if bpy.app.binary_path:
        raise ValueError(
            "--jobs N > 1 runs workers with Blender as a Python module (pip install bpy); "
            "from the blender program run with --jobs 1"
        )


def _summary(job, results, failures, limits_name, limits_sha):
    clips = []
    for name in sorted(set(results) | set(failures)):
        if name in failures:
            clips.append({"clip": name, "status": "failed", "error": failures[name]})
            continue
        r = results[name]
        entry = {k: r[k] for k in ("frames", "frames_out", "bones_out", "worst")}
        clips.append({"clip": name, "status": "ok", **entry, **({"output": r["output"]} if "output" in r else {})})
    bones = {}
    for name in sorted(results):
        for row in results[name]["bones"]:
            b = bones.setdefault(row["bone"], {"bone": row["bone"], "clips_out": 0, "frames_out": 0, "worst": None})
            if row["frames_out"]:
                b["clips_out"] += 1
                b["frames_out"] += row["frames_out"]
                if b["worst"] is None or row["worst_degrees"] > b["worst"]["degrees"]:
                    b["worst"] = {"clip": name, "frame": row["worst_frame"], "degrees": row["worst_degrees"]}
    worst = None
    for c in clips:
        if c["status"] == "ok" and c["worst"] and (worst is None or c["worst"]["degrees"] > worst["degrees"]):
            worst = {"clip": c["clip"], **c["worst"]}
    ok = [c for c in clips if c["status"] == "ok"]
    return {
        "format": "joint_limits.batch_summary",
        "version": SUMMARY_VERSION,
        "job": job,
        "limits": limits_name,
        "limits_sha256": limits_sha,
        "clips_total": len(clips),
        "clips_done": len(ok),
        "clips_failed": len(failures),
        "clips_out": sum(1 for c in ok if c["frames_out"]),
        "frames": sum(c["frames"] for c in ok),
        "frames_out": sum(c["frames_out"] for c in ok),
        "worst": worst,
        "clips": clips,
        "bones": sorted(bones.values(), key=lambda b: (-(b["worst"] or {"degrees": 0.0})["degrees"], b["bone"])),
    }


def _fit(results, failures, model, output, rig=None, bone_map=None, symmetry=True):
    """Fit the library (:func:`.library_fit.fit_library`), write the limit set (and onto
    ``rig``); returns the summary."""
    from .library_fit import fit_library

    names = sorted(results)
    fitted = fit_library(results, model, symmetry)
    limits, skipped, samples, mirrored = fitted.limits, fitted.skipped, fitted.samples, fitted.mirrored
    if not limits:
        why = "; ".join(f"{b}: {w}" for b, w in sorted(skipped.items())) or "no clip gave samples"
        if failures:
            first = sorted(failures)[0]
            why += f"; {len(failures)} clips failed, {first}: {failures[first]}"
        raise ValueError(f"no bone could be fitted ({why})")
    learned = {b: {"bone": p, "samples": n} for b, (p, n) in mirrored.items() if b in limits}
    text = limit_set_text(limits, clips=names, model=model, samples=samples, skipped=skipped, mirrored=learned)
    clip_jobs.write_atomic(output / "limits.json", text.encode("utf-8"))
    onto = None
    if rig:
        from .onto_rig import fit_onto_rig

        onto = fit_onto_rig(rig, fitted.pooled, fitted.rests, set(fitted.heading), limits, fitted.fit, bone_map)
    clips = [{"clip": n, "status": "ok", "frames": results[n]["frames"]} for n in names]
    clips += [{"clip": n, "status": "failed", "error": failures[n]} for n in sorted(failures)]
    clips.sort(key=lambda c: c["clip"])
    return {
        "format": "joint_limits.batch_summary",
        "version": SUMMARY_VERSION,
        "job": "fit",
        "model": model,
        "limits": "limits.json",
        "limits_sha256": hashlib.sha256(text.encode("utf-8")).hexdigest(),
        "clips_total": len(clips),
        "clips_done": len(names),
        "clips_failed": len(failures),
        "frames": sum(results[n]["frames"] for n in names),
        "clips": clips,
        "bones": [
            {
                "bone": b,
                "samples": samples[b],
                **({"model": limits[b].model.kind} if b in limits else {"skipped": skipped[b]}),
                **({"mirrored_from": learned[b]} if b in learned else {}),
            }
            for b in sorted(samples)
        ],
        **({"rig": onto} if onto else {}),
    }
