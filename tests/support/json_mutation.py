"""Bodies one mistake away from a valid one: for the tests that send bad input to the gateway."""

from __future__ import annotations

import json
from typing import Any, Final

#: As the bad value: the key is left out.
DROP: Final = object()


def paths(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every place in *value* (a JSON tree) where a value sits, the root last."""
    children: list[tuple[Any, ...]] = []
    if isinstance(value, dict):
        for key, child in value.items():
            children += paths(child, (*path, key))
    elif isinstance(value, list):
        for index, child in enumerate(value):
            children += paths(child, (*path, index))
    return [*children, path]


def mutated(valid: Any, choice: int, bad: Any) -> Any:
    """*valid* (copied) with the value at one of its paths replaced by *bad*, or dropped (`DROP`)."""
    value = json.loads(json.dumps(valid))
    path = paths(value)[choice % len(paths(value))]
    if not path:
        return {} if bad is DROP else bad
    parent = value
    for step in path[:-1]:
        parent = parent[step]
    if bad is DROP:
        del parent[path[-1]]
    else:
        parent[path[-1]] = bad
    return value
