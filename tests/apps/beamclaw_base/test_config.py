"""structure_config: a TOML table as a config class, every bad key named with its path."""

from __future__ import annotations

import attrs
import pytest

from beamclaw_base import ConfigError, Secret, TextOrSecret, structure_config


@attrs.frozen
class _Table:
    port: int = 1
    key: Secret | None = None
    names: list[str] = attrs.field(factory=list)
    env: dict[str, TextOrSecret] = attrs.field(factory=dict)


def test_a_good_table_is_structured_with_secrets_as_references() -> None:
    table = {"port": 8080, "key": {"env": "API_KEY"}, "names": ["a"], "env": {"A": "x", "B": {"env": "Y"}}}
    assert structure_config(table, _Table, "app") == _Table(
        8080, Secret("API_KEY"), ["a"], {"A": "x", "B": Secret("Y")}
    )


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ({"port": "x"}, "app.port: expected an integer, got 'x'"),
        ({"port": True}, "app.port: expected an integer, got True"),
        ({"names": "abc"}, "app.names: expected a list, got 'abc'"),
        ({"names": ["a", 2]}, "app.names[1]: expected a string, got int 2"),
        ({"nope": 1}, "app: unknown key 'nope'"),
        ([], "app: expected a table, got []"),
    ],
)
def test_a_bad_value_is_refused_naming_its_key(table: object, message: str) -> None:
    with pytest.raises(ConfigError) as raised:
        structure_config(table, _Table, "app")
    assert str(raised.value) == message


def test_a_secret_written_as_a_literal_is_refused() -> None:
    with pytest.raises(ConfigError, match=r'app\.key: a secret must be written \{ env = "VARIABLE" \}'):
        structure_config({"key": "sk-literal-value"}, _Table, "app")
