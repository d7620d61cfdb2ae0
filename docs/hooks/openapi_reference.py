"""The HTTP API page's route reference, generated at build time from the gateway's OpenAPI document.

The gateway serves that document at ``/openapi.json`` and its tests check it against
the routes the app really has (and schemathesis against their behaviour), so it is the
one description of the API: this hook renders it as tables, and ships the document
itself beside the page (``openapi.json``), with no viewer to fetch from a CDN.
"""

from __future__ import annotations

import json
from typing import Any, Final

from mkdocs.structure.files import File, Files

from beamclaw_control import blueprints
from beamclaw_gateway import openapi_document

#: The line of docs/http-api.md that the generated reference replaces.
MARKER: Final = "<!-- openapi-reference -->"


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def _public(operation: dict[str, Any]) -> bool:
    """Whether the route needs no token (an empty ``security`` list overrides the document's)."""
    return operation.get("security") == []


def _request_schema(operation: dict[str, Any]) -> dict[str, Any] | None:
    body = operation.get("requestBody")
    if not body:
        return None
    schema: dict[str, Any] = body["content"]["application/json"]["schema"]
    return schema


def render(document: dict[str, Any]) -> str:
    """The routes of *document* as Markdown: an overview table, then each route's body and answers."""
    operations = [
        (method.upper(), path, operation)
        for path, methods in document["paths"].items()
        for method, operation in methods.items()
    ]
    out = ["| route | what | token |", "|---|---|---|"]
    out += [
        f"| [`{method} {path}`](#{_anchor(method, path)}) | {_cell(op.get('summary', ''))} | "
        f"{'none' if _public(op) else 'needed when configured'} |"
        for method, path, op in operations
    ]
    out.append("")
    for method, path, op in operations:
        out += [f"### `{method} {path}` {{ #{_anchor(method, path)} }}", "", op.get("summary", ""), ""]
        if op.get("description"):
            out += [op["description"], ""]
        schema = _request_schema(op)
        if schema is not None:
            out += ["Request body (`application/json`):", "", "```json", json.dumps(schema, indent=2), "```", ""]
        out += ["| status | meaning |", "|---|---|"]
        out += [f"| {code} | {_cell(answer.get('description', ''))} |" for code, answer in op["responses"].items()]
        out.append("")
    return "\n".join(out)


def _anchor(method: str, path: str) -> str:
    slug = "".join(char if char.isalnum() else "-" for char in path.lower()).strip("-")
    return f"route-{method.lower()}-{slug}"


def on_page_markdown(markdown: str, **_: Any) -> str:
    """mkdocs' hook: the page holding `MARKER` gets the route reference in its place."""
    if MARKER not in markdown:
        return markdown
    return markdown.replace(MARKER, render(openapi_document(blueprints())))


def on_files(files: Files, config: Any, **_: Any) -> Files:
    """mkdocs' hook: the document itself is published as ``openapi.json`` beside the pages."""
    files.append(File.generated(config, "openapi.json", content=json.dumps(openapi_document(blueprints()), indent=2)))
    return files
