"""A Docker engine's API on loopback, for the sandbox routes without Docker: the few calls
the SDK makes to list and remove containers (version, ping, list with label filters,
remove), answered from a dict of containers, as the engine would."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

import attrs

_API = "1.44"


@attrs.define
class Engine:
    url: str
    #: name -> {"labels": {...}, "state": "running", "created": seconds}
    containers: dict[str, dict[str, Any]]
    removed: list[str] = attrs.field(factory=list)


def _handler(engine: Engine) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
            pass

        def _answer(self, status: int, value: Any = None) -> None:
            body = b"" if value is None else json.dumps(value).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_HEAD(self) -> None:
            self._answer(200)

        def do_GET(self) -> None:
            url = urlsplit(self.path)
            path = url.path.removeprefix(f"/v{_API}")
            if path == "/version":
                self._answer(200, {"ApiVersion": _API, "Version": "27.0-test"})
            elif path == "/_ping":
                self.send_response(200)
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"OK")
            elif path == "/containers/json":
                wanted = json.loads(parse_qs(url.query).get("filters", ["{}"])[0]).get("label", [])
                found = [
                    {"Id": name * 2, "Names": [f"/{name}"], "State": c["state"], "Labels": c["labels"],
                     "Created": c["created"]}
                    for name, c in engine.containers.items()
                    if all(tuple(label.split("=", 1)) in c["labels"].items() for label in wanted)
                ]  # fmt: skip
                self._answer(200, found)
            else:
                self._answer(404, {"message": f"page not found: {path}"})

        def do_DELETE(self) -> None:
            name = urlsplit(self.path).path.removeprefix(f"/v{_API}").removeprefix("/containers/")
            if engine.containers.pop(name, None) is None:
                self._answer(404, {"message": f"No such container: {name}"})
                return
            engine.removed.append(name)
            self._answer(204)

    return Handler


@contextmanager
def docker_engine(containers: dict[str, dict[str, Any]]) -> Iterator[Engine]:
    """An engine holding *containers*, served on 127.0.0.1 until the block ends."""
    engine = Engine("", containers)
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(engine))
    engine.url = f"tcp://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield engine
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
