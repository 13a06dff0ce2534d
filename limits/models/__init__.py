# SPDX-License-Identifier: GPL-3.0-or-later
"""The limit models, one module or sub-package each (:mod:`..model` states the contract).

``MODELS`` is the list a new model is added to, in the order of the model menu; ``auto``
(:mod:`..fitting.cross_validation`) chooses among them and :mod:`..registry` offers both.
"""

from .box import BoxLimit
from .ellipsoid import EllipsoidLimit
from .euler_box import EulerBoxLimit
from .kdop import KDopLimit
from .oriented_box import OrientedBoxLimit
from .reach_cone import ReachConeLimit
from .sdf.grid import SdfGridLimit
from .sinus.texture import SinusTextureLimit
from .surface.quaternion_surface import QuaternionSurfaceLimit

MODELS = (
    EulerBoxLimit,
    BoxLimit,
    OrientedBoxLimit,
    EllipsoidLimit,
    KDopLimit,
    SdfGridLimit,
    SinusTextureLimit,
    QuaternionSurfaceLimit,
    ReachConeLimit,
)
