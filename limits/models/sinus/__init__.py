# SPDX-License-Identifier: GPL-3.0-or-later
"""Kelly's sinus texture: the model (``texture``) and Kelly's texture files (``kelly``)."""
