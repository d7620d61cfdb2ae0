"""Configuration tables into attrs classes: unknown keys and wrong types name the key.

Shared by the apps (core imports it from here), so every ``[table]`` of config.toml
is checked the same way and every error reads the same.
"""

from __future__ import annotations

import re
from typing import Any, TypeVar, get_origin

import cattrs
from cattrs.cols import list_structure_factory

from beamclaw_obs import scrub

from ._secret import Secret, TextOrSecret

T = TypeVar("T")

_KEY_INDEX = re.compile(r"\['([^']*)'\]")  # cattrs writes table keys as ['name']


class ConfigError(ValueError):
    """A configuration value is missing, unknown or of the wrong type; the message names it."""


def _converter() -> cattrs.Converter:
    converter = cattrs.Converter(forbid_extra_keys=True)

    def secret(value: Any, _: type) -> Secret:
        if isinstance(value, dict) and set(value) == {"env"} and isinstance(value["env"], str):
            return Secret(value["env"])
        raise ValueError('a secret must be written { env = "VARIABLE" }, never as a literal value')

    def strict_str(value: Any, _: type) -> str:
        if not isinstance(value, str):
            raise TypeError(f"expected a string, got {type(value).__name__} {value!r}")
        return value

    def strict_bool(value: Any, _: type) -> bool:
        if not isinstance(value, bool):
            raise TypeError(f"expected true or false, got {value!r}")
        return value

    def strict_int(value: Any, _: type) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"expected an integer, got {value!r}")
        return value

    def strict_float(value: Any, _: type) -> float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise TypeError(f"expected a number, got {value!r}")
        return float(value)

    def strict_list_factory(type_: Any, converter_: cattrs.Converter) -> Any:
        # cattrs takes any iterable for a list, so a string ("PATH") would become its letters.
        structure = list_structure_factory(type_, converter_)

        def strict_list(value: Any, cl: Any) -> Any:
            if not isinstance(value, list):
                raise TypeError(f"expected a list, got {value!r}")
            return structure(value, cl)

        return strict_list

    def is_list(type_: Any) -> bool:
        return get_origin(type_) is list

    converter.register_structure_hook_factory(is_list, strict_list_factory)
    converter.register_structure_hook(Secret, secret)

    def text_or_secret(value: Any, _: type) -> TextOrSecret:
        if isinstance(value, dict):
            return secret(value, Secret)
        text = strict_str(value, str)
        if scrub(text) != text:
            raise ValueError('this looks like a credential: write it { env = "VARIABLE" }, never as a literal')
        return text

    converter.register_structure_hook(TextOrSecret, text_or_secret)
    converter.register_structure_hook(str, strict_str)
    converter.register_structure_hook(bool, strict_bool)
    converter.register_structure_hook(int, strict_int)
    converter.register_structure_hook(float, strict_float)
    return converter


_CONVERTER = _converter()


def _format(exc: BaseException, type_: Any) -> str:
    if isinstance(exc, cattrs.errors.ForbiddenExtraKeysError):
        return "unknown key " + ", ".join(repr(k) for k in sorted(exc.extra_fields))
    if isinstance(exc, (TypeError, ValueError, cattrs.errors.CattrsError)) and not isinstance(
        exc, cattrs.BaseValidationError
    ):
        return str(exc).replace("not in literal typing.Literal", "is not one of ")
    return cattrs.v.format_exception(exc, type_)


def structure_config(data: Any, cls: type[T], table: str) -> T:
    """*data* (a parsed TOML table) as *cls*; raises `ConfigError` naming each bad key."""
    if not isinstance(data, dict):
        raise ConfigError(f"{table}: expected a table, got {data!r}")
    try:
        return _CONVERTER.structure(data, cls)
    except cattrs.BaseValidationError as exc:
        messages = cattrs.transform_error(exc, path=table, format_exception=_format)
    except (TypeError, ValueError) as exc:
        messages = [f"{exc} @ {table}"]
    problems = []
    for message in messages:
        what, _, where = message.rpartition(" @ ")
        problems.append(_KEY_INDEX.sub(r".\1", where) + f": {what}")
    raise ConfigError("; ".join(problems))
