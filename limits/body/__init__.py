# SPDX-License-Identifier: GPL-3.0-or-later
"""The human body: skeletons, bone names, anatomical frames (retarget), left/right symmetry, generated motion."""
