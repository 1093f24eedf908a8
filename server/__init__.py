"""The ASGI entry point OpenEnv's tooling expects (`server.app:app`, the `server` script)."""
