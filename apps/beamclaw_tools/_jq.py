"""The `jq` tool: a jq filter over JSON text, through the jq library (no subprocess)."""

from __future__ import annotations

import json
from typing import Any

import attrs
import jq
import trio

from ._tool import Autonomy, ToolContext, ToolDefinition, ToolError, ToolSession, object_schema


def _run(program: str, text: str) -> list[Any]:
    compiled = jq.compile(program)
    return list(compiled.input_text(text).all())


@attrs.define
class JqTool:
    max_input: int = 2_000_000
    requires_approval: bool = False
    min_autonomy: Autonomy = Autonomy.READ_ONLY

    @property
    def definition(self) -> ToolDefinition:
        return ToolDefinition(
            "jq",
            "Apply a jq filter to JSON text and return each output as a line of JSON.",
            object_schema(
                {
                    "filter": {"type": "string", "minLength": 1, "description": "A jq program, e.g. '.items[].name'"},
                    "input": {"type": "string", "description": "The JSON text to filter"},
                },
                ("filter", "input"),
            ),
        )

    async def execute(self, args: dict[str, Any], session: ToolSession, context: ToolContext) -> str:
        text: str = args["input"]
        if len(text) > self.max_input:
            raise ToolError(f"input is {len(text)} characters; the limit is {self.max_input}")
        try:
            outputs = await trio.to_thread.run_sync(_run, args["filter"], text)
        except ValueError as exc:
            raise ToolError(f"jq: {exc}") from None
        return "\n".join(json.dumps(value, ensure_ascii=False) for value in outputs)
