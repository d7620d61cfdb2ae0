"""The `web_search` tool: the Brave Search API, its key from the environment.

The model asks for up to ``max_results`` results; the schema bounds it by the
configured ``max_results`` (at most Brave's own limit, 20), so one call can never fill
the context window with results.
"""

from __future__ import annotations

from typing import Any, Final

import attrs
import httpx

from beamclaw_base import MissingSecret, Secret

from ._tool import Autonomy, ToolContext, ToolDefinition, ToolError, ToolSession, object_schema

#: The most results the Brave Search API returns for one query.
BRAVE_MAX_RESULTS: Final = 20
#: Results returned when the model does not say (fewer when the configured bound is lower).
_DEFAULT_RESULTS: Final = 5


@attrs.define
class WebSearchTool:
    api_key: Secret = Secret("BRAVE_API_KEY")
    base_url: str = "https://api.search.brave.com/res/v1/web/search"
    timeout: float = 15.0
    #: The most results one call may ask for (1 to `BRAVE_MAX_RESULTS`).
    max_results: int = 10
    requires_approval: bool = False
    min_autonomy: Autonomy = Autonomy.READ_ONLY

    @property
    def definition(self) -> ToolDefinition:
        return ToolDefinition(
            "web_search",
            "Search the web and return the top results (title, URL, snippet).",
            object_schema(
                {
                    "query": {"type": "string", "minLength": 1},
                    "max_results": {
                        "type": "integer",
                        "minimum": 1,
                        "maximum": self.max_results,
                        "default": self._default_results,
                        "description": f"How many results to return (at most {self.max_results}).",
                    },
                },
                ("query",),
            ),
        )

    @property
    def _default_results(self) -> int:
        return min(_DEFAULT_RESULTS, self.max_results)

    async def execute(self, args: dict[str, Any], session: ToolSession, context: ToolContext) -> str:
        try:
            key = self.api_key.get("web_search (Brave Search API)")
        except MissingSecret as exc:
            raise ToolError(str(exc)) from None
        count = min(args.get("max_results", self._default_results), self.max_results)
        params = {"q": args["query"], "count": count}
        headers = {"X-Subscription-Token": key, "Accept": "application/json"}
        try:
            async with httpx.AsyncClient(timeout=self.timeout, trust_env=False) as client:
                response = await client.get(self.base_url, params=params, headers=headers)
        except httpx.HTTPError as exc:
            raise ToolError(f"web search failed: {type(exc).__name__}: {exc}") from None
        if response.status_code != 200:
            raise ToolError(f"web search failed: HTTP {response.status_code} {response.text[:200]}")
        try:
            results = response.json().get("web", {}).get("results", [])
        except ValueError:
            raise ToolError("web search answered with something that is not JSON") from None
        if not results:
            return f"no results for {args['query']!r}"
        return "\n\n".join(
            f"{i}. {r.get('title', '')}\n{r.get('url', '')}\n{r.get('description', '')}"
            for i, r in enumerate(results[:count], 1)
        )
