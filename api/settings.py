"""Server settings: command-line flags, with `COMPANYOS_*` environment variables as defaults
(the container image sets those). Every limit the server enforces is one of these."""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from companyos.domain import DEFAULT_LIMITS, ORIGINAL_DIFFICULTY, Limits

DEFAULT_STORE = "sqlite:///data/companyos.db"
DEFAULT_MAX_EPISODE_STEPS = 1000
DEFAULT_MAX_PAGE = 200
DEFAULT_MAX_EVENTS_PAGE = 2000


def _env(name: str, default: str) -> str:
    return os.environ.get(f"COMPANYOS_{name}", default)


def _int(name: str, default: int) -> int:
    raw = _env(name, str(default))
    try:
        return int(raw)
    except ValueError:
        raise ValueError(f"COMPANYOS_{name} must be an integer, not {raw!r}") from None


def _seconds(name: str, default: float) -> float | None:
    raw = _env(name, str(default))
    try:
        value = float(raw)
    except ValueError:
        raise ValueError(f"COMPANYOS_{name} must be a number of seconds, not {raw!r}") from None
    return value if value > 0 else None


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
    """Seconds a WebSocket session may wait for its client's next frame before the server
    closes it (its episode stays stored); None: never."""
    request_timeout: float = 15.0
    """Seconds an HTTP request (headers and body) may take to arrive; a slower client gets
    408 and its connection closed (`api.slowclients`)."""
    max_body_bytes: int = 1 << 20
    """HTTP request bodies beyond this get 413; WebSocket frames beyond it close the socket."""
    cache_episodes: int = 4096
    """Folded episodes kept in memory (least recently used evicted)."""
    max_episode_steps: int = DEFAULT_MAX_EPISODE_STEPS
    """The largest ``max_steps`` a reset may ask for (a scenario's own budget is far below)."""
    max_page: int = DEFAULT_MAX_PAGE
    """The largest ``limit`` of one `GET /episodes` page."""
    max_events_page: int = DEFAULT_MAX_EVENTS_PAGE
    """The largest ``limit`` of one `GET /episodes/{id}/events` page."""
    api_key: str | None = None
    """When set, every route but `/health` needs it (header, or query parameter on sockets)."""
    agent_key: str | None = None
    """A second key for the agent: it reaches only what an agent acts through (`api.roles`).
    Needs ``api_key`` (without a trainer's key every other route would be open)."""
    limits: Limits = field(default_factory=lambda: DEFAULT_LIMITS)
    """What one tool call may carry (string length, serialised size, ...)."""
    log_level: str = "warning"

    def __post_init__(self) -> None:
        for name in (
            "max_sessions",
            "max_body_bytes",
            "cache_episodes",
            "max_episode_steps",
            "max_page",
            "max_events_page",
        ):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1, not {getattr(self, name)}")
        if not 0 < self.request_timeout <= 3600:
            raise ValueError(
                f"request_timeout must be from 0 to 3600 seconds, not {self.request_timeout}"
            )
        if self.api_key is not None and not self.api_key.strip():
            raise ValueError("the API key must not be empty: leave it unset to serve without one")
        if self.agent_key is not None:
            if not self.agent_key.strip():
                raise ValueError("the agent key must not be empty: leave it unset")
            if self.api_key is None:
                raise ValueError(
                    "an agent key needs a trainer key (--api-key or COMPANYOS_API_KEY): "
                    "without one, every route the agent's key does not reach would be open"
                )
            if self.agent_key == self.api_key:
                raise ValueError("the agent key must differ from the trainer's API key")

    @classmethod
    def from_env(cls) -> Settings:
        return cls(
            host=_env("HOST", "127.0.0.1"),
            port=_int("PORT", 8000),
            store=_env("STORE", DEFAULT_STORE),
            difficulty=_int("DIFFICULTY", ORIGINAL_DIFFICULTY),
            reward_profile=_env("REWARD_PROFILE", "default"),
            max_sessions=_int("MAX_SESSIONS", 64),
            session_timeout=_seconds("SESSION_TIMEOUT", 600.0),
            request_timeout=_seconds("REQUEST_TIMEOUT", 15.0) or 15.0,
            max_body_bytes=_int("MAX_BODY_BYTES", 1 << 20),
            cache_episodes=_int("CACHE_EPISODES", 4096),
            max_episode_steps=_int("MAX_EPISODE_STEPS", DEFAULT_MAX_EPISODE_STEPS),
            max_page=_int("MAX_PAGE", DEFAULT_MAX_PAGE),
            max_events_page=_int("MAX_EVENTS_PAGE", DEFAULT_MAX_EVENTS_PAGE),
            api_key=os.environ.get("COMPANYOS_API_KEY") or None,
            agent_key=os.environ.get("COMPANYOS_AGENT_KEY") or None,
            limits=Limits(
                max_string=_int("MAX_VALUE_CHARS", DEFAULT_LIMITS.max_string),
                max_params_chars=_int("MAX_PARAMS_CHARS", DEFAULT_LIMITS.max_params_chars),
            ),
            log_level=_env("LOG_LEVEL", "warning"),
        )
