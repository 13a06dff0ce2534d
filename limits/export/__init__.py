# SPDX-License-Identifier: GPL-3.0-or-later
"""Limits for other programs: game-engine joint limits, IK limits, and how faithful each is."""
