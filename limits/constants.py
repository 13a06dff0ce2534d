# SPDX-License-Identifier: GPL-3.0-or-later
"""Constants shared by the limit maths. Quaternions are ``(w, x, y, z)`` like mathutils."""

import numpy as np

#: Tolerance for norms, angles (radians) and divisions.
EPS = 1e-9

#: The identity rotation as a quaternion ``(w, x, y, z)`` (read-only: it is shared).
IDENTITY_QUATERNION = np.array([1.0, 0.0, 0.0, 0.0])
IDENTITY_QUATERNION.flags.writeable = False

#: Default tolerance of every model's ``contains`` (radians, or the units of the model's own
#: space), so that projected rotations count as inside despite rounding.
CONTAINS_TOLERANCE = 1e-9

#: Violations below this (radians) count as inside (reports, batch check and clean).
INSIDE_TOLERANCE = 1e-4

#: Rows per batch of a large projection or lookup: a batch's per-row temporaries stay in the
#: CPU cache, and a batch is large enough that the per-call overhead of numpy costs little.
CHUNK_ROWS = 16384

#: Largest magnitude a stored limit's parameter may have: they are radians, distances in
#: rotation space, scales and weights, all far below it; a larger one (a damaged or foreign
#: file) overflows the projections' squares into NaN.
MAX_PARAMETER = 1e6

#: Smallest padding (radians) used when fitting: keeps every shape full-dimensional, even
#: around a single rotation or rotations about one axis.
MIN_PADDING = 1e-3

#: A Blender bone points along its local +Y axis: the default twist axis.
BONE_AXIS = np.array([0.0, 1.0, 0.0])

#: Blender's Tait-Bryan Euler orders. ``"XYZ"`` means X is applied first, then Y, then Z,
#: i.e. ``R = Rz @ Ry @ Rx`` (Blender, mathutils).
EULER_ORDERS = ("XYZ", "XZY", "YXZ", "YZX", "ZXY", "ZYX")

#: Blender's pose bone rotation modes.
ROTATION_MODES = ("QUATERNION", *EULER_ORDERS, "AXIS_ANGLE")
