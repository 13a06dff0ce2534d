# SPDX-License-Identifier: GPL-3.0-or-later
"""Every limit model a user can choose, by kind: ``auto`` first, then :data:`..models.MODELS`."""

from .fitting.cross_validation import AutoLimit
from .models import MODELS as _MODELS

#: The model menu, in order.
MODELS = (AutoLimit, *_MODELS)
#: kind -> class
BY_KIND = {cls.kind: cls for cls in MODELS}


def model_class(kind):
    """The class for ``kind``; ``ValueError`` lists the known kinds otherwise."""
    try:
        return BY_KIND[kind]
    except (KeyError, TypeError):
        raise ValueError(f"unknown limit model {kind!r}; known: {', '.join(sorted(BY_KIND))}") from None


def model_kinds():
    """``[(kind, label, description), ...]`` in menu order, for UI enums."""
    return [(cls.kind, cls.label, cls.description) for cls in BY_KIND.values()]


def model_from_dict(data):
    """A model of any kind from :meth:`.model.LimitModel.to_dict` output, validated."""
    if not isinstance(data, dict):
        raise ValueError(f"a limit model must be a mapping, got {type(data).__name__}")
    return model_class(data.get("kind")).from_dict(data)
