"""The management API and the web console: every operation on the running daemon, as
routes of the gateway's application, under the server-bound roles.

The same application serves the owner-only Unix socket in the data dir, which the CLI
and the TUI speak to with httpx (a request there is the machine's owner: an admin), and
the gateway's TCP address, where a token or the web console's session cookie decides
who a request is. One API, one set of checks, one set of tests.
"""

from ._blueprints import blueprints

__all__ = ["blueprints"]
