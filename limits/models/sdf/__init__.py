# SPDX-License-Identifier: GPL-3.0-or-later
"""Engell-Nørregård's signed-distance-field grid: the model (``grid``), its build, lookup, projection, space and sculpted meshes."""
