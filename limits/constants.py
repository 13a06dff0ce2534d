# SPDX-License-Identifier: GPL-3.0-or-later
"""Constants shared by the limit maths. Quaternions are ``(w, x, y, z)`` like mathutils."""

import numpy as np

#: Tolerance for norms, angles (radians) and divisions.
EPS = 1e-9

#: The identity rotation as a quaternion ``(w, x, y, z)``.
IDENTITY_QUATERNION = np.array([1.0, 0.0, 0.0, 0.0])

#: A Blender bone points along its local +Y axis: the default twist axis.
BONE_AXIS = np.array([0.0, 1.0, 0.0])

#: Blender's Tait-Bryan Euler orders. ``"XYZ"`` means X is applied first, then Y, then Z,
#: i.e. ``R = Rz @ Ry @ Rx`` (Blender, mathutils).
EULER_ORDERS = ("XYZ", "XZY", "YXZ", "YZX", "ZXY", "ZYX")

#: Blender's pose bone rotation modes.
ROTATION_MODES = ("QUATERNION", *EULER_ORDERS, "AXIS_ANGLE")
