"""The configuration reference, generated at build time from the apps' config classes.

Each ``[table]`` of config.toml is parsed into an attrs class (``structure_config``), so
those classes are what the daemon accepts: their fields are the keys, their types and
defaults are the truth, and their ``#:`` comments and docstrings say what each is for.
Rendering them here (never copying them by hand) keeps the reference true;
``tests/docs/test_config_reference.py`` checks that every key of config.toml is in it.

mkdocs runs `on_page_markdown` for every page; the page holding `MARKER` gets the tables.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import json
import textwrap
import types
import typing
from collections.abc import Iterator
from typing import Any, Final

import attrs

from beamclaw._apps import APPS
from beamclaw._config import SHARED_TABLES
from beamclaw_base import Secret

#: The line of docs/configuration.md that the generated reference replaces.
MARKER: Final = "<!-- config-reference -->"

#: Each app's table and the attrs class it is parsed into (``module:name``). The obs app
#: reads its few keys without a class: its table is described by the docstring of the
#: function that reads it.
_TABLES: Final = {
    "store": "beamclaw_base:StoreConfig",
    "obs": "beamclaw_obs:supervision_tree",
    "cluster": "beamclaw_cluster:ClusterConfig",
    "tools": "beamclaw_tools:ToolsConfig",
    "memory": "beamclaw_memory:MemoryConfig",
    "sandbox": "beamclaw_sandbox:SandboxConfig",
    "mcp": "beamclaw_mcp:McpConfig",
    "core": "beamclaw_core:CoreConfig",
    "scheduler": "beamclaw_scheduler:SchedulerConfig",
    "a2a": "beamclaw_a2a:A2AConfig",
    "gateway": "beamclaw_gateway:GatewayConfig",
}

#: A concrete name the user chooses (a provider, a server, a token) in a table's path.
PLACEHOLDER: Final = "NAME"

_SCALARS: Final = {str: "string", int: "integer", float: "number", bool: "boolean"}


@attrs.frozen
class _Row:
    key: str
    type: str
    default: str
    description: str


@attrs.frozen
class _Section:
    """One TOML table of the reference: its path (``core.providers.NAME``) and its keys."""

    path: str
    array: bool
    doc: str
    rows: tuple[_Row, ...]


def _load(target: str) -> Any:
    module, _, name = target.partition(":")
    return getattr(importlib.import_module(module), name)


def _field_comments(cls: type) -> dict[str, str]:
    """The ``#:`` comment block right above each field of *cls*'s source, by field name."""
    try:
        source = textwrap.dedent(inspect.getsource(cls))
    except (OSError, TypeError):
        return {}
    lines = source.splitlines()
    comments: dict[str, str] = {}
    for node in ast.parse(source).body[0].body:  # type: ignore[attr-defined]
        if not (isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)):
            continue
        block: list[str] = []
        index = node.lineno - 2
        while index >= 0 and lines[index].strip().startswith("#:"):
            block.insert(0, lines[index].strip().removeprefix("#:").strip())
            index -= 1
        if block:
            comments[node.target.id] = " ".join(block)
    return comments


def _args(tp: Any) -> tuple[Any, ...]:
    return typing.get_args(tp)


def _is_union(tp: Any) -> bool:
    return typing.get_origin(tp) in (typing.Union, types.UnionType)


def _item_class(tp: Any) -> type | None:
    """The attrs class of a ``dict[str, C]`` or ``list[C]`` field's values, if they are tables."""
    origin = typing.get_origin(tp)
    if origin is dict and _is_table(_args(tp)[1]):
        return typing.cast(type, _args(tp)[1])
    if origin is list and _is_table(_args(tp)[0]):
        return typing.cast(type, _args(tp)[0])
    return None


def _is_table(tp: Any) -> bool:
    """Whether *tp* is a table of its own below the field (a `Secret` is a value: ``{ env = "VAR" }``)."""
    return attrs.has(tp) and tp is not Secret


def _type_name(tp: Any) -> str:
    if tp is Secret:
        return '`{ env = "VAR" }`'
    if tp in _SCALARS:
        return _SCALARS[tp]
    if typing.get_origin(tp) is typing.Literal:
        return " \\| ".join(f"`{json.dumps(value)}`" for value in _args(tp))
    if _is_union(tp):
        return " or ".join(_type_name(arg) for arg in _args(tp) if arg is not type(None))
    if attrs.has(tp):
        return "table"
    origin = typing.get_origin(tp)
    if origin is dict:
        return f"table of {_type_name(_args(tp)[1])}"
    if origin in (list, frozenset, set) or (origin is tuple and _args(tp)[-1:] == (Ellipsis,)):
        return f"list of {_type_name(_args(tp)[0])}"
    if origin is tuple:
        return "[" + ", ".join(_type_name(arg) for arg in _args(tp)) + "]"
    return f"`{getattr(tp, '__name__', tp)}`"


def _toml(value: Any) -> str:
    if isinstance(value, Secret):
        return f"{{ env = {json.dumps(value.env)} }}"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, str | int | float):
        return json.dumps(value)
    if isinstance(value, list | tuple | frozenset | set):
        return "[" + ", ".join(_toml(item) for item in value) + "]"
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{key} = {_toml(item)}" for key, item in value.items()) + " }" if value else "{}"
    if attrs.has(type(value)):
        return "{ " + ", ".join(f"{f.name} = {_toml(getattr(value, f.name))}" for f in attrs.fields(type(value))) + " }"
    return str(value)


def _default(field: attrs.Attribute[Any]) -> str:
    default: Any = field.default
    if default is attrs.NOTHING:
        return "required"
    if isinstance(default, attrs.Factory):  # type: ignore[arg-type]
        default = default.factory()
    if default is None:
        return "not set"
    return f"`{_toml(default)}`"


def _sections(path: str, cls: type, array: bool = False) -> Iterator[_Section]:
    """The table *cls* at *path*, then the tables below it, depth first."""
    hints = typing.get_type_hints(cls)
    comments = _field_comments(cls)
    rows: list[_Row] = []
    below: list[tuple[str, type, bool]] = []
    for field in attrs.fields(cls):
        if not field.init:
            continue
        tp = hints[field.name]
        item = _item_class(tp)
        description = comments.get(field.name, "")
        if _is_table(tp):
            below.append((f"{path}.{field.name}", tp, False))
            description = description or f"see [{path}.{field.name}](#{_anchor(f'{path}.{field.name}')})"
        elif item is not None and typing.get_origin(tp) is dict:
            sub = f"{path}.{field.name}.{PLACEHOLDER}"
            below.append((sub, item, False))
            description = description or f"one [{sub}](#{_anchor(sub)}) table per name"
        elif item is not None:
            sub = f"{path}.{field.name}"
            below.append((sub, item, True))
            description = description or f"each item a [[{sub}]](#{_anchor(sub)}) table"
        default = "" if _is_table(tp) else _default(field)
        rows.append(_Row(field.name, _type_name(tp), default, description))
    yield _Section(path, array, inspect.cleandoc(cls.__doc__ or "") if _own_doc(cls) else "", tuple(rows))
    for sub, sub_cls, sub_array in below:
        yield from _sections(sub, sub_cls, sub_array)


def _own_doc(cls: type) -> bool:
    # attrs classes without a docstring get a generated one ("ClassName(a, b)"): not prose.
    return bool(cls.__doc__) and not (cls.__doc__ or "").startswith(f"{cls.__name__}(")


def _anchor(path: str) -> str:
    return "table-" + path.replace(".", "-").lower()


def sections() -> list[_Section]:
    """Every table of the reference: the daemon's own, then the apps' in their start order."""
    missing = {*SHARED_TABLES, *APPS} - set(_TABLES)
    if missing:
        raise RuntimeError(f"docs/hooks/config_reference.py: no config class named for {sorted(missing)}")
    found: list[_Section] = []
    for table in (*SHARED_TABLES, *APPS):
        target = _load(_TABLES[table])
        if attrs.has(target):
            found.extend(_sections(table, target))
        else:
            found.append(_Section(table, False, inspect.cleandoc(target.__doc__ or ""), ()))
    return found


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def render() -> str:
    """The reference as Markdown: a heading, the class's docstring and a table per TOML table."""
    out: list[str] = []
    for section in sections():
        title = f"[[{section.path}]]" if section.array else f"[{section.path}]"
        out += [f"### `{title}` {{ #{_anchor(section.path)} }}", ""]
        if section.doc:
            out += [section.doc, ""]
        if section.rows:
            out += ["| key | type | default | description |", "|---|---|---|---|"]
            out += [f"| `{row.key}` | {row.type} | {row.default} | {_cell(row.description)} |" for row in section.rows]
            out.append("")
    return "\n".join(out)


def on_page_markdown(markdown: str, **_: Any) -> str:
    """mkdocs' hook: the page holding `MARKER` gets the reference in its place."""
    if MARKER not in markdown:
        return markdown
    return markdown.replace(MARKER, render())
