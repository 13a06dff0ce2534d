# SPDX-License-Identifier: GPL-3.0-or-later
"""What the user asks for on a rig: sample, fit, bake, report, preset, limb, export, ragdoll, texture, sculpt, metaball."""
