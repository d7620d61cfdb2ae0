"""``python -m beamclaw``: the same as the ``beamclaw`` command."""

from beamclaw_cli import main

raise SystemExit(main())
