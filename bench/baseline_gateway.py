"""The smallest gateway that does BeamClaw's HTTP job: the baseline of ``bench.perf_bench``.

    python -m bench.baseline_gateway --port PORT --model URL

A few dozen lines of quart-trio on hypercorn that take ``POST /v1/chat/completions``,
forward the body to the model's ``/chat/completions`` with httpx, and return its answer;
``GET /health`` answers ``ok``. No sessions, history, tools, auth, scrubbing or
supervision: what is left is the floor the same stack costs, so BeamClaw's figures can be
read as a ratio against it, measured in the same run on the same machine.
"""

from __future__ import annotations

import argparse
from typing import Any

import httpx
import trio
from hypercorn.config import Config
from hypercorn.trio import serve
from quart import request
from quart_trio import QuartTrio


def _app(model_url: str) -> QuartTrio:
    app = QuartTrio(__name__)
    client: dict[str, httpx.AsyncClient] = {}

    @app.before_serving
    async def _open() -> None:
        client["model"] = httpx.AsyncClient(base_url=model_url, timeout=60)

    @app.get("/health")
    async def _health() -> str:
        return "ok"

    @app.post("/v1/chat/completions")
    async def _completions() -> tuple[Any, int]:
        body = await request.get_json()
        answer = await client["model"].post("/chat/completions", json=body)
        return answer.json(), answer.status_code

    return app


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--model", required=True, help="the model's base URL, ending in /v1")
    arguments = parser.parse_args()
    config = Config()
    config.bind = [f"127.0.0.1:{arguments.port}"]
    config.accesslog = None
    trio.run(serve, _app(arguments.model), config)


if __name__ == "__main__":
    main()
