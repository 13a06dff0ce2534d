# SPDX-License-Identifier: GPL-3.0-or-later
"""A small JSON Schema validator for the subset the project's schemas use (tests only; the
extension never validates against a schema at run time, and adds no dependency for it).

Keywords: ``$ref`` (to ``#/$defs/...``, or to another schema by file name, given in
``schemas``), ``type``, ``const``, ``enum``, ``properties``, ``required``,
``additionalProperties`` (a boolean or a schema), ``items``, ``minimum``, ``maximum``,
``pattern``, ``oneOf``, ``allOf``; annotations ``$schema``, ``$id``, ``$defs``, ``title``,
``description``. Any other keyword is an error, so a schema cannot use more than is checked.
"""

import re

ANNOTATIONS = {"$schema", "$id", "$defs", "title", "description"}
KEYWORDS = {
    "$ref",
    "type",
    "const",
    "enum",
    "properties",
    "required",
    "additionalProperties",
    "items",
    "minimum",
    "maximum",
    "pattern",
    "oneOf",
    "allOf",
}

TYPES = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
}


class SchemaError(ValueError):
    """The instance does not match: the message says where and why."""


def _equal(a, b):
    """JSON equality (``1 == 1.0``, but ``True != 1``)."""
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_equal(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_equal(a[k], b[k]) for k in a)
    return a == b


def validate(instance, schema, root=None, path="$", schemas=None):
    """Raise :class:`SchemaError` unless ``instance`` matches ``schema``; ``schemas`` maps file
    names to the other schemas ``$ref`` may name."""
    root = schema if root is None else root
    schemas = schemas or {}
    unknown = set(schema) - KEYWORDS - ANNOTATIONS
    if unknown:
        raise SchemaError(f"{path}: schema uses keywords outside the checked subset: {sorted(unknown)}")
    if "$ref" in schema:
        ref = schema["$ref"]
        if ref in schemas:
            validate(instance, schemas[ref], schemas[ref], path, schemas)
        elif ref.startswith("#/$defs/"):
            validate(instance, root["$defs"][ref[len("#/$defs/") :]], root, path, schemas)
        else:
            raise SchemaError(f"{path}: $ref {ref!r} is neither '#/$defs/...' nor a schema given")
    if "type" in schema and not TYPES[schema["type"]](instance):
        raise SchemaError(f"{path}: expected {schema['type']}, got {type(instance).__name__}")
    if "const" in schema and not _equal(instance, schema["const"]):
        raise SchemaError(f"{path}: expected {schema['const']!r}, got {instance!r}")
    if "enum" in schema and not any(_equal(instance, option) for option in schema["enum"]):
        raise SchemaError(f"{path}: {instance!r} is not one of {schema['enum']!r}")
    if isinstance(instance, (int, float)) and not isinstance(instance, bool):
        if "minimum" in schema and instance < schema["minimum"]:
            raise SchemaError(f"{path}: {instance} is below {schema['minimum']}")
        if "maximum" in schema and instance > schema["maximum"]:
            raise SchemaError(f"{path}: {instance} is above {schema['maximum']}")
    if isinstance(instance, str) and "pattern" in schema and not re.search(schema["pattern"], instance):
        raise SchemaError(f"{path}: {instance[:40]!r} does not match {schema['pattern']!r}")
    if isinstance(instance, dict):
        for name in schema.get("required", ()):
            if name not in instance:
                raise SchemaError(f"{path}: missing {name!r}")
        properties = schema.get("properties", {})
        extra = schema.get("additionalProperties", True)
        for name, value in instance.items():
            if name in properties:
                validate(value, properties[name], root, f"{path}.{name}", schemas)
            elif extra is False:
                raise SchemaError(f"{path}: unexpected {name!r}")
            elif isinstance(extra, dict):
                validate(value, extra, root, f"{path}.{name}", schemas)
    if isinstance(instance, list) and "items" in schema:
        for i, value in enumerate(instance):
            validate(value, schema["items"], root, f"{path}[{i}]", schemas)
    for sub in schema.get("allOf", ()):
        validate(instance, sub, root, path, schemas)
    if "oneOf" in schema:
        errors, matched = [], 0
        for sub in schema["oneOf"]:
            try:
                validate(instance, sub, root, path, schemas)
                matched += 1
            except SchemaError as err:
                errors.append(str(err))
        if matched != 1:
            detail = "; ".join(errors) if matched == 0 else f"{matched} alternatives match"
            raise SchemaError(f"{path}: must match exactly one alternative ({detail})")
