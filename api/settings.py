"""Server settings: command-line flags, with `COMPANYOS_*` environment variables as defaults
(the container image sets those)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from companyos.domain import DEFAULT_LIMITS, ORIGINAL_DIFFICULTY, Limits

DEFAULT_STORE = "sqlite:///data/companyos.db"


def _env(name: str, default: str) -> str:
    return os.environ.get(f"COMPANYOS_{name}", default)


@dataclass(frozen=True, slots=True)
class Settings:
    host: str = "127.0.0.1"
    port: int = 8000
    store: str = DEFAULT_STORE
    difficulty: int = ORIGINAL_DIFFICULTY
    reward_profile: str = "default"
    max_sessions: int = 64
    """Concurrent WebSocket (and MCP) sessions; one more gets a clear capacity error."""
    session_timeout: float | None = 600.0
    """Seconds of inactivity after which a session is closed (its episode stays stored)."""
    max_body_bytes: int = 1 << 20
    """HTTP request bodies beyond this get 413; WebSocket frames beyond it close the socket."""
    cache_episodes: int = 4096
    limits: Limits = field(default_factory=lambda: DEFAULT_LIMITS)
    log_level: str = "warning"

    @classmethod
    def from_env(cls) -> Settings:
        timeout = _env("SESSION_TIMEOUT", "600")
        return cls(
            host=_env("HOST", "127.0.0.1"),
            port=int(_env("PORT", "8000")),
            store=_env("STORE", DEFAULT_STORE),
            difficulty=int(_env("DIFFICULTY", str(ORIGINAL_DIFFICULTY))),
            reward_profile=_env("REWARD_PROFILE", "default"),
            max_sessions=int(_env("MAX_SESSIONS", "64")),
            session_timeout=float(timeout) if float(timeout) > 0 else None,
            max_body_bytes=int(_env("MAX_BODY_BYTES", str(1 << 20))),
            log_level=_env("LOG_LEVEL", "warning"),
        )
