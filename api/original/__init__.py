"""The original CompanyOS's HTTP API, served under `/original` for its clients."""

from __future__ import annotations

from .routes import build_original_router

__all__ = ["build_original_router"]
