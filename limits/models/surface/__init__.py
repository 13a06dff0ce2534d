# SPDX-License-Identifier: GPL-3.0-or-later
"""Herda's quaternion implicit surface: the model, its primitives and the steps that reach the surface."""
