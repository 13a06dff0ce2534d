# SPDX-License-Identifier: GPL-3.0-or-later
"""Maths of the authoring tools: the swing sphere and twist disk, the swing map picture."""
