# SPDX-License-Identifier: GPL-3.0-or-later
"""Working through a rig's bones when one bone's data may be broken: that bone is skipped and
named, the others go on.

Stored limits and clouds are validated where they are read, but a bone's data can still fail
in ways no check names: JSON nested too deeply (``RecursionError``), an array declared too big
to allocate (``MemoryError``), a limit that projects to NaN. A per-bone loop runs each bone's
work in ``with guarded(skipped, name):``; a failure is kept in ``skipped`` under the bone's
name instead of ending the loop, and the operator or command reports
:meth:`SkippedBones.summary` once at the end::

    skipped = SkippedBones()
    for pb in bones:
        with guarded(skipped, pb.name):
            limits[pb.name] = read_limit(pb)
"""

import contextlib

#: Bones named in :meth:`SkippedBones.summary` (the rest are counted).
SUMMARY_NAMES = 3

#: Why a bone is skipped whose limit gives NaN or infinity (it is never written).
NOT_FINITE = "its limit gives NaN or infinite rotations"


def describe(err):
    """One line saying what went wrong (a ``ValueError`` already says it for users)."""
    if isinstance(err, RecursionError):
        return "its data is nested too deeply to read"
    if isinstance(err, MemoryError):
        return "its data declares arrays too large for memory"
    if isinstance(err, ValueError):
        return str(err)
    return f"{type(err).__name__}: {err}"


class SkippedBones(dict):
    """``{bone name: why it was skipped}``, in the order the bones failed."""

    def add(self, name, err):
        why = describe(err)
        self[name] = why.removeprefix(f"{name}: ")  # messages that name the bone already

    def summary(self):
        """One line for the status bar: ``skipped 2 bones: 'a' (why), 'b' (why)``."""
        named = [f"{name!r} ({why})" for name, why in list(self.items())[:SUMMARY_NAMES]]
        more = len(self) - len(named)
        tail = f" and {more} more" if more else ""
        return f"skipped {len(self)} bone{'' if len(self) == 1 else 's'}: {', '.join(named)}{tail}"


@contextlib.contextmanager
def guarded(skipped, name):
    """Run a block for bone ``name``. A failure is added to ``skipped`` (a
    :class:`SkippedBones`) and the block left; with ``skipped`` None it is raised again as a
    ``ValueError`` that names the bone."""
    try:
        yield
    except Exception as err:  # noqa: BLE001 - one broken bone must not stop the others
        if skipped is None:
            raise ValueError(f"bone {name!r}: {describe(err).removeprefix(f'{name}: ')}") from err
        skipped.add(name, err)


def naming(name):
    """Run a block for bone ``name`` (an operator on one bone); any failure is raised again as a
    ``ValueError`` that names the bone."""
    return guarded(None, name)
