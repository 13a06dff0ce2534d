# SPDX-License-Identifier: GPL-3.0-or-later
"""``joint_limits batch fit|check|clean``: a library of clips, one job, a folder of outputs.

Outputs in ``--output DIR`` (clip names must be unique):

- ``fit``: ``limits.json`` (a limit set, :mod:`.limit_set`), pooled from every clip's samples;
- ``check``: ``reports/<clip>.json`` per clip;
- ``clean``: ``clips/<clip>`` (the limited BVH) and ``reports/<clip>.json`` per clip;
- every job: ``summary.md`` (to read) and ``summary.json`` (for programs).

Clips run in ``--jobs N`` spawned worker processes (each starts Blender as a Python module and
enables the add-on, :mod:`.worker_boot`), or in this process with one job. Outputs are written
atomically (temporary file, then rename), a clip's report last, so a clip whose report exists
(for the same limit set) is done and a second run skips it. A clip that fails (bad file, an
error) is reported and the batch goes on; a clip that ends its worker process is retried alone
(after a worker dies, the clips that were in flight run one at a time) and reported if it ends
that one too. Outputs hold no times, paths or worker numbers and list clips and bones in sorted
order, so the same inputs give the same bytes whatever the number of workers. Progress and an
estimate of the time left go to stderr.
"""

import contextlib
import glob
import hashlib
import json
import multiprocessing
import os
import runpy
import sys
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path

import numpy as np

from . import clip_jobs, worker_boot
from .limit_set import limit_set_text, read_limit_set

JOBS = ("fit", "check", "clean")
CLIP_SUFFIXES = (".bvh",)
SUMMARY_VERSION = 1


def collect_clips(inputs):
    """Clip paths from folders (their ``*.bvh``, recursively), glob patterns and files, sorted by
    name; ``ValueError`` for a missing input, an unsupported file or two clips of one name."""
    found = {}
    for item in inputs:
        path = Path(item)
        if any(c in str(item) for c in "*?["):
            matches = [Path(p) for p in glob.glob(str(item), recursive=True)]
            if not matches:
                raise ValueError(f"no file matches {item}")
        elif path.is_dir():
            matches = [p for p in path.rglob("*") if p.suffix.lower() in CLIP_SUFFIXES]
            if not matches:
                raise ValueError(f"no .bvh clip in the folder {item}")
        elif path.exists():
            matches = [path]
        else:
            raise ValueError(f"no such clip or folder: {item}")
        for p in matches:
            if p.is_dir():
                continue
            if p.suffix.lower() not in CLIP_SUFFIXES:
                raise ValueError(f"{p}: batch reads {', '.join(CLIP_SUFFIXES)} clips")
            found.setdefault(p.resolve(), p)
    by_name = {}
    for p in found.values():
        if p.name in by_name:
            raise ValueError(f"two clips are named {p.name} ({by_name[p.name]} and {p}); outputs are named after clips")
        by_name[p.name] = p
    return [by_name[name] for name in sorted(by_name)]


def _task(job, path, limits_path, out_path):
    """One clip's job in a worker: ``(status, result or message, peak memory MB)``."""
    try:
        if job == "fit":
            result = clip_jobs.fit_samples(path)
        elif job == "check":
            result = clip_jobs.check_clip(path, limits_path)
        else:
            result = clip_jobs.clean_clip(path, limits_path, out_path)
        return "ok", result, clip_jobs.peak_memory_mb()
    except ValueError as err:
        return "failed", str(err), clip_jobs.peak_memory_mb()
    except Exception as err:  # a bug or a file nothing checked for: reported, the batch goes on
        return "failed", f"{type(err).__name__}: {err}", clip_jobs.peak_memory_mb()


def _worker_setup():
    """``(initializer, initargs)`` that load this add-on in a spawned worker."""
    package = __package__.rpartition(".")[0]  # bl_ext.<repo>.<id>
    directory = str(Path(sys.modules[package].__path__[0]).parent)
    init = {"MODULE": package, "DIRECTORY": directory}
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


def _run_tasks(tasks, jobs, on_result):
    """Run ``tasks`` ``[(name, args)]`` through :func:`_task`: here with one job, else in
    ``jobs`` spawned workers; ``on_result(name, status, payload, memory)`` for each."""
    if jobs <= 1:
        for name, args in tasks:
            on_result(name, *_task(*args))
        return
    initializer, initargs = _worker_setup()
    context = multiprocessing.get_context("spawn")

    def pool(n):
        return ProcessPoolExecutor(max_workers=n, mp_context=context, initializer=initializer, initargs=initargs)

    suspects = []
    with pool(min(jobs, len(tasks))) as executor:
        with _spawnable_path():
            futures = {executor.submit(_task, *args): (name, args) for name, args in tasks}
        for future in as_completed(futures):
            try:
                result = future.result()
            except BrokenProcessPool:
                suspects.append(futures[future])
                continue
            on_result(futures[future][0], *result)
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


def run_batch(job, inputs, output, limits=None, model="auto", jobs=1, stream=None):
    """Run ``job`` over the clips ``inputs`` (folders, globs, files) into the folder ``output``;
    returns ``(summary dict, stats)`` where stats (not written anywhere) holds the run's
    seconds and the workers' peak memory."""
    stream = stream or sys.stderr
    if job not in JOBS:
        raise ValueError(f"batch job must be one of {', '.join(JOBS)}, got {job!r}")
    if jobs < 1:
        raise ValueError(f"--jobs must be at least 1, got {jobs}")
    clips = collect_clips(inputs)
    output = Path(output)
    limits_sha = None
    if job != "fit":
        if not limits:
            raise ValueError(f"batch {job} needs --limits FILE (a limit set written by batch fit)")
        read_limit_set(limits)  # refuse a bad file before any clip runs
        limits = str(Path(limits).resolve())
        limits_sha = _sha256(limits)
    output.mkdir(parents=True, exist_ok=True)
    reports_dir, clips_dir = output / "reports", output / "clips"
    if job != "fit":
        reports_dir.mkdir(exist_ok=True)
    if job == "clean":
        clips_dir.mkdir(exist_ok=True)

    results, failures, tasks = {}, {}, []
    for clip in clips:
        out_clip = clips_dir / clip.name if job == "clean" else None
        if job != "fit":
            done = _done_report(reports_dir / f"{clip.name}.json", out_clip, limits_sha)
            if done is not None:
                results[clip.name] = done
                continue
        tasks.append((clip.name, (job, str(clip), limits, str(out_clip) if out_clip else None)))
    progress = _Progress(job, len(clips), len(clips) - len(tasks), stream)
    memory = []

    def on_result(name, status, payload, peak):
        memory.append(peak)
        if status != "ok":
            failures[name] = payload
            progress.tick(name, True)
            return
        if job != "fit":
            payload["limits_sha256"] = limits_sha
            clip_jobs.write_atomic(reports_dir / f"{name}.json", _json_bytes(payload))
        results[name] = payload
        progress.tick(name, False)

    start = time.monotonic()
    if jobs > 1 and tasks:
        _check_parallel_possible()
    _run_tasks(tasks, min(jobs, max(len(tasks), 1)), on_result)
    if job == "fit":
        summary = _fit(results, failures, model, output)
    else:
        summary = _summary(job, results, failures, Path(limits).name, limits_sha)
    clip_jobs.write_atomic(output / "summary.json", _json_bytes(summary))
    from .summary_text import summary_markdown

    clip_jobs.write_atomic(output / "summary.md", summary_markdown(summary).encode("utf-8"))
    stats = {"seconds": time.monotonic() - start, "peak_memory_mb": max(memory, default=0.0), "ran": len(tasks)}
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


def _fit(results, failures, model, output):
    """Pool the clips' samples per bone (clip order: by name), fit each bone, write the limit
    set; returns the summary."""
    from ..limits.constants import BONE_AXIS
    from ..limits.joint import JointLimit
    from ..limits.model import model_class

    names = sorted(results)
    heading = sorted({b for n in names for b in results[n]["heading"]})
    pooled, labels = {}, {}
    for n in names:
        for bone, q in results[n]["bones"].items():
            if len(q):
                pooled.setdefault(bone, []).append(q)
                labels.setdefault(bone, []).append(np.full(len(q), n, dtype=object))
    available = {"padding": 0.05, "mode": "FULL", "twist_axis": BONE_AXIS.copy(), "order": "XYZ", "target": 0.99}
    try:
        allowed = model_class(model).FIT_OPTIONS
    except (KeyError, ValueError):
        raise ValueError(f"unknown model kind {model!r}") from None
    limits, skipped, samples = {}, {}, {}
    for bone in sorted(pooled):
        cloud = np.concatenate(pooled[bone])
        samples[bone] = len(cloud)
        if bone in heading:
            skipped[bone] = "carries the heading or travel (a root, or its position channels move): not limited"
            continue
        options = {k: available[k] for k in allowed if k in available}
        if "clips" in allowed:
            options["clips"] = np.concatenate(labels[bone])
        try:
            limits[bone] = JointLimit.fit(cloud, kind=model, **options)
        except (ValueError, np.linalg.LinAlgError) as err:
            skipped[bone] = f"fit failed: {err}"
    if not limits:
        why = "; ".join(f"{b}: {w}" for b, w in sorted(skipped.items())) or "no clip gave samples"
        if failures:
            first = sorted(failures)[0]
            why += f"; {len(failures)} clips failed, {first}: {failures[first]}"
        raise ValueError(f"no bone could be fitted ({why})")
    text = limit_set_text(limits, clips=names, model=model, samples=samples, skipped=skipped)
    clip_jobs.write_atomic(output / "limits.json", text.encode("utf-8"))
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
            {"bone": b, "samples": samples[b], **({"model": limits[b].model.kind} if b in limits else {"skipped": skipped[b]})}
            for b in sorted(samples)
        ],
    }
