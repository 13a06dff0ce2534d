# SPDX-License-Identifier: GPL-3.0-or-later
"""Fitting limits to clouds: cross-validated choice of model and padding (``auto``), the trade-off picture."""
