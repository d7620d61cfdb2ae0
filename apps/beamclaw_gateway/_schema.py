"""Request bodies declared once, as attrs classes, from which come both their validation and
their JSON Schema in the OpenAPI document, so the two cannot drift.

Each field carries its JSON Schema and the end of the sentence a client reads when its
value does not match (``'temperature' must be a number from 0 to 2``). `Shape` validates a
parsed body with jsonschema-rs (the schema compiled once), answers the first error as a
`BadRequest` naming the field, and structures a valid body into the class with cattrs.

Why jsonschema-rs and not the jsonschema package: on a chat request of 20 messages the
latter took 3 ms, a hundred times the hand-written checks it replaces; jsonschema-rs
takes about 12 us (see the note of issue 21 for the figures).

Why not quart-schema: it validates through pydantic or msgspec (attrs only through
msgspec, not installed), reads the body with Quart's ``get_json`` (Python's parser: it
takes ``NaN``, which no other JSON parser does, see `parse_json`), and its errors are the
library's sentences, not ours naming the field: it would need a translation of each.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Final, Generic, TypeVar

import attrs
import cattrs
from cattrs.strategies import configure_union_passthrough
from jsonschema_rs import Draft202012Validator, ValidationError, ValidationErrorKind

from ._turns import BadRequest

#: The key, in a schema, of what a value that does not match it is told (an OpenAPI
#: extension: the document shows clients the sentence they would read).
ERROR: Final = "x-error"
_SCHEMA: Final = "schema"
_T = TypeVar("_T")

_converter = cattrs.Converter(detailed_validation=False)
# A field that is a string or a list of objects (a message's content) is structured by its JSON type.
configure_union_passthrough(str | bool | int | float | None, _converter)


def field(schema: dict[str, Any], error: str, *, default: Any = attrs.NOTHING) -> Any:
    """An attrs field whose JSON value must match *schema*; *error* ends the sentence that
    names the field when it does not ("must be a number from 0 to 2")."""
    return attrs.field(default=default, metadata={_SCHEMA: {**schema, ERROR: error}})


def object_schema(
    model: type, error: str, *, checked: dict[str, dict[str, Any]] | None = None, extra: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The JSON Schema of *model*'s objects: a property per field (required: those without a
    default) and the *checked* properties, which are validated but not kept (see
    `checked_property`), and *extra* keywords. Other keys are allowed: OpenAI's clients send
    many we do not use."""
    fields = attrs.fields(model)
    properties = {f.name: f.metadata[_SCHEMA] for f in fields} | (checked or {})
    required = [f.name for f in fields if f.default is attrs.NOTHING]
    return {"type": "object", "properties": properties, **({"required": required} if required else {}),
            ERROR: error, **(extra or {})}  # fmt: skip


def checked_property(schema: dict[str, Any], error: str) -> dict[str, Any]:
    """A property validated but not kept on the model: accepted when well formed, so a
    client's mistake is an error rather than silently ignored."""
    return {**schema, ERROR: error}


@attrs.frozen
class Shape(Generic[_T]):
    """A model and its schema: `parse` turns a parsed JSON body into the model, or refuses it."""

    model: type[_T]
    #: What the whole value is called when it is not an object ("the body").
    subject: str
    schema: dict[str, Any]
    _validator: Draft202012Validator

    @classmethod
    def of(
        cls, model: type[_T], subject: str, error: str, *, checked: dict[str, dict[str, Any]] | None = None
    ) -> Shape[_T]:
        schema = object_schema(model, error, checked=checked)
        return cls(model, subject, schema, Draft202012Validator(schema))

    def parse(self, data: Any) -> _T:
        """*data* as the model; a 400 `BadRequest` naming the first field that does not match."""
        try:
            errors = [] if self._validator.is_valid(data) else list(self._validator.iter_errors(data))
        except UnicodeEncodeError:  # a string it must read whole (or quote) is not UTF-8
            raise BadRequest(_lone_surrogate(data, [], self.subject) or f"{self.subject} is not valid") from None
        if errors:
            # A value of the wrong kind is told before a missing field (the client sent it).
            error = next((e for e in errors if not isinstance(e.kind, ValidationErrorKind.Required)), errors[0])
            raise BadRequest(_explain(error, self.schema, self.subject))
        return _converter.structure(data, self.model)


def _explain(error: ValidationError, root: dict[str, Any], subject: str) -> str:
    """The sentence a client reads: where the value is, and what it must be, said by the
    innermost schema on the way to the failure that has a sentence (a list's item of the
    wrong type is told what the list must be)."""
    steps = error.instance_path
    keys = [str(key) for key in error.schema_path]
    node, place = root, list[str | int]()
    said, said_at = root[ERROR], list[str | int]()
    index = 0
    while index < len(keys) - 1:
        key, following = keys[index], keys[index + 1]
        if key == "properties":
            node, index = node[key][following], index + 2
            place.append(following)
        elif key == "items":
            node, index = node[key], index + 1
            place.append(steps[len(place)])
        elif isinstance(node.get(key), dict):  # if, then, not
            node, index = node[key], index + 1
        else:
            break
        if ERROR in node:
            said, said_at = node[ERROR], list(place)
    if isinstance(error.kind, ValidationErrorKind.Required):  # said of the missing field, not of its object
        missing = error.kind.property
        said, said_at = node["properties"][missing][ERROR], [*place, missing]
    return f"{_where(said_at) if said_at else subject} {said}"


def _lone_surrogate(value: Any, path: list[str | int], subject: str) -> str | None:
    """What to tell of the first string (or key) in *value* holding a lone surrogate
    (``"\\ud800"`` in JSON), which can be neither validated nor stored; None if there is none."""
    if isinstance(value, str):
        try:
            value.encode()
        except UnicodeEncodeError as exc:
            where = _where(path) if path else subject
            return f"{where} holds a lone surrogate at character {exc.start}; send valid Unicode"
    elif isinstance(value, list):
        for index, item in enumerate(value):
            if (found := _lone_surrogate(item, [*path, index], subject)) is not None:
                return found
    elif isinstance(value, dict):
        for key, item in value.items():
            found = _lone_surrogate(key, path, f"a key of {subject}") or _lone_surrogate(item, [*path, key], subject)
            if found is not None:
                return found
    return None


def _where(path: Iterable[str | int]) -> str:
    """A value's place in the body as clients have always read it: a top-level field (or a
    field of one) quoted (``'stream_options.include_usage'``), a place in a list not
    (``messages[0].content[1].text``)."""
    steps = list(path)
    text = "".join(f"[{step}]" if isinstance(step, int) else f".{step}" for step in steps).removeprefix(".")
    return text if any(isinstance(step, int) for step in steps) else f"'{text}'"
