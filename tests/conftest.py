"""Shared fixtures: stores of every backend, environments, helpers."""

from __future__ import annotations

import os
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

from companyos.events import EventStore, InMemoryEventStore
from companyos.events.sql import SQLEventStore, sqlite_url

from . import ledger

settings.register_profile(
    "default", deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
settings.load_profile("default")

POSTGRES_URL = os.environ.get("COMPANYOS_TEST_POSTGRES_URL")


# ---------------------------------------------------------------------------- the reliability table


def pytest_configure(config: pytest.Config) -> None:
    # The controller (or a run without xdist) makes the directory; xdist workers, started
    # after this, inherit the variable.
    if not hasattr(config, "workerinput") and not os.environ.get(ledger.LEDGER_DIR):
        os.environ[ledger.LEDGER_DIR] = tempfile.mkdtemp(prefix="companyos-ledger-")


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    if hasattr(config, "workerinput") or not os.environ.get(ledger.LEDGER_DIR):
        return
    text = ledger.table(ledger.read(Path(os.environ[ledger.LEDGER_DIR])))
    if not text:
        return
    scale = "full scale" if ledger.full_scale() else "quick scale (make reliability: full)"
    terminalreporter.section(f"reliability ({scale})")
    terminalreporter.write_line(text)
    out = os.environ.get("COMPANYOS_LEDGER_OUT")
    if out:
        Path(out).parent.mkdir(parents=True, exist_ok=True)
        Path(out).write_text(text + "\n")


def postgres_schema_url(base: str, schema: str) -> str:
    sep = "&" if "?" in base else "?"
    return f"{base}{sep}options=-csearch_path%3D{schema}"


def make_postgres_store(base: str) -> tuple[SQLEventStore, str]:
    """A store in a fresh schema of the test database (dropped by the caller)."""
    from sqlalchemy import create_engine, text

    schema = f"t_{uuid.uuid4().hex[:12]}"
    admin = create_engine(base)
    with admin.begin() as conn:
        conn.execute(text(f"CREATE SCHEMA {schema}"))
    admin.dispose()
    return SQLEventStore(postgres_schema_url(base, schema)), schema


def drop_postgres_schema(base: str, schema: str) -> None:
    from sqlalchemy import create_engine, text

    admin = create_engine(base)
    with admin.begin() as conn:
        conn.execute(text(f"DROP SCHEMA IF EXISTS {schema} CASCADE"))
    admin.dispose()


@pytest.fixture
def memory_store() -> InMemoryEventStore:
    return InMemoryEventStore()


@pytest.fixture
def sqlite_store(tmp_path) -> Iterator[SQLEventStore]:
    store = SQLEventStore(sqlite_url(tmp_path / "events.db"))
    yield store
    store.close()


@pytest.fixture(params=["memory", "sqlite"])
def any_store(request, tmp_path) -> Iterator[EventStore]:
    if request.param == "memory":
        yield InMemoryEventStore()
    else:
        store = SQLEventStore(sqlite_url(tmp_path / "events.db"))
        yield store
        store.close()
