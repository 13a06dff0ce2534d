# SPDX-License-Identifier: GPL-3.0-or-later
"""Batch jobs over libraries of motion clips (``joint_limits batch fit|check|clean``).

``clips``: which clips the inputs name (BVH, .blend actions, FBX); ``..rig.io.bvh_file``: BVH read and
written with numpy (no Blender importer), rotations in the bone space Blender's importer gives;
``blend_clip``: .blend actions and FBX files read and written with Blender; ``limit_set``: one
file of limits for a whole skeleton; ``sample_cache``: what fit read from each clip, kept for a
resumed fit; ``onto_rig``: fitted limits written onto a rig's matching bones; ``clip_jobs``:
what one clip costs (fit samples, check, clean), run in worker processes; ``runner``: inputs,
resume, workers, progress and summaries (``summary_text``, ``summary_pictures``);
``worker_boot``: how a worker gets the add-on's code; ``dask_cluster``: clips on a Dask cluster.
"""
