"""OpenEnv's conventional entry point: `uvicorn server.app:app` and the `server` script.

The application is `companyos.api.server`; this module only exposes it where OpenEnv's tooling
(`openenv validate`, `openenv serve`, Spaces) looks. Settings come from `COMPANYOS_*`
environment variables; `companyos serve --help` lists them.
"""

from __future__ import annotations

import sys
from typing import Any


def main() -> None:
    """Run the server: `server [--host H] [--port P] [--store URL] ...` (as `companyos serve`)."""
    from companyos.cli import main as cli

    sys.exit(cli(["serve", *sys.argv[1:]]))


def __getattr__(name: str) -> Any:
    # Built on first access, not at import: building opens the store.
    if name == "app":
        from companyos.api.server import build_app
        from companyos.api.settings import Settings

        app = build_app(Settings.from_env())
        globals()["app"] = app
        return app
    raise AttributeError(name)


if __name__ == "__main__":
    main()
