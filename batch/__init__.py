# SPDX-License-Identifier: GPL-3.0-or-later
"""Batch jobs over libraries of motion clips (``joint_limits batch fit|check|clean``).

``bvh_file``: BVH read and written with numpy (no Blender importer), rotations in the bone space
Blender's importer gives; ``limit_set``: one file of limits for a whole skeleton; ``clip_jobs``:
what one clip costs (fit samples, check, clean), run in worker processes; ``runner``: inputs,
resume, workers, progress and summaries; ``worker_boot``: how a spawned worker loads the add-on.
"""
