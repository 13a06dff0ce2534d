# SPDX-License-Identifier: GPL-3.0-or-later
"""IK with limits: a limited chain solve, and Mukai's limb range of motion."""
