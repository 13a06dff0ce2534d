# SPDX-License-Identifier: GPL-3.0-or-later
"""Installing and removing this add-on's ``bpy.app.handlers`` functions, by module name, so a
reload never leaves a stale copy behind and unregister removes every one."""


def ours(handler_list, module):
    """Handlers in ``handler_list`` defined in ``module`` (a module name)."""
    return [h for h in handler_list if getattr(h, "__module__", "") == module]


def install(pairs, module):
    """Append each ``(handler_list, function)`` of ``pairs``, replacing an older copy."""
    for handler_list, func in pairs:
        for old in ours(handler_list, module):
            if old.__name__ == func.__name__:
                handler_list.remove(old)
        handler_list.append(func)


def uninstall(pairs, module):
    """Remove every handler of ``module`` from the lists named in ``pairs``."""
    for handler_list, _func in pairs:
        for old in ours(handler_list, module):
            handler_list.remove(old)
