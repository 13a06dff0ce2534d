# SPDX-License-Identifier: GPL-3.0-or-later
"""Rotation geometry: quaternions, swing-twist, the sphere of swing directions and images on it, distance transforms."""
