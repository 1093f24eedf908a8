"""`/analytics/*`: the trajectory warehouse over HTTP. Canned queries by name, user SQL in the
sandbox (a single read-only statement on a snapshot), and the HTML report with its plots.

The warehouse, the snapshot and every limit live in `companyos.analytics`; this only checks
requests and turns refusals into 400s that say what to send instead (never a path: the
warehouse's files are the server's business)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal, TypeVar

import duckdb
from fastapi import APIRouter, HTTPException, Query
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import HTMLResponse, JSONResponse, Response
from pydantic import BaseModel, ConfigDict, Field, model_validator

from companyos.analytics.queries import CANNED
from companyos.analytics.sandbox import (
    MAX_SQL_CHARS,
    QueryFailed,
    QueryRefused,
    SandboxBusy,
    SnapshotError,
)
from companyos.analytics.service import DEFAULT_WAIT_S, LiveAnalytics, UnknownQuery

MAX_ROWS = 10_000
TIMEOUT_S = 10.0
MAX_WAIT_S = 30.0
T = TypeVar("T")


async def _warehouse(work: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """Run ``work`` off the event loop. A warehouse that cannot be read or written right now
    (a snapshot racing a write, a full disk) is a 503 that names no file."""
    try:
        return await run_in_threadpool(work, *args, **kwargs)
    except (SnapshotError, duckdb.IOException, duckdb.InternalException) as exc:
        raise HTTPException(
            503, f"the analytics warehouse is unavailable ({type(exc).__name__}); retry shortly"
        ) from None


class QueryRequest(BaseModel):
    """Either ``sql`` (one read-only statement, run in the sandbox) or ``name`` (a canned
    query from `GET /analytics/queries`)."""

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "examples": [
                {"name": "success_return"},
                {"sql": "SELECT agent, avg(success::INT) FROM episodes GROUP BY agent"},
            ]
        },
    )
    sql: str | None = Field(default=None, max_length=MAX_SQL_CHARS)
    name: str | None = Field(default=None, max_length=100)
    max_rows: int = Field(default=1000, ge=1, le=MAX_ROWS, description="Rows to return at most.")
    wait_s: float = Field(
        default=DEFAULT_WAIT_S,
        ge=0,
        le=MAX_WAIT_S,
        description="Seconds to wait at most for the warehouse to reach the log's end (it is "
        "caught up in the background; the answer says how fresh it is).",
    )

    @model_validator(mode="after")
    def _one_of(self) -> QueryRequest:
        if (self.sql is None) == (self.name is None):
            raise ValueError("send exactly one of `sql` (a SELECT) or `name` (a canned query)")
        return self


class QueryAnswer(BaseModel):
    columns: list[str]
    types: list[str]
    rows: list[list[Any]]
    row_count: int
    truncated: bool
    seconds: float
    as_of_event: int = Field(description="The last global position of the log the answer reflects.")
    lag_events: int | None = Field(
        description="Events the log held beyond as_of_event when the request came (None: the "
        "store cannot say)."
    )
    catching_up: bool = Field(description="The background catch-up was still loading.")


class CannedQuery(BaseModel):
    name: str
    title: str
    description: str
    sql: str


def build_analytics_router(analytics: LiveAnalytics) -> APIRouter:
    router = APIRouter(prefix="/analytics", tags=["Analytics"])

    @router.get(
        "/queries",
        summary="The canned queries (name, title, what each answers, its SQL)",
    )
    def list_queries() -> list[CannedQuery]:
        return [
            CannedQuery(name=q.name, title=q.title, description=q.description, sql=q.sql)
            for q in CANNED.values()
        ]

    @router.post(
        "/query",
        summary="Run a canned query by name, or one read-only SQL statement in the sandbox",
        description=(
            "Tables: events, steps, episodes, failures, approvals, chaos, taxonomy (see "
            "`analytics/sql/schema.sql`; `duckdb_columns()` describes every column). The "
            "warehouse is caught up in the background: a request waits at most `wait_s` for it, "
            "and the answer says how fresh it is (`as_of_event`, `lag_events`). User SQL runs "
            "on a read-only snapshot of the warehouse with external access "
            "off, configuration locked, memory and thread limits and a "
            f"{TIMEOUT_S:.0f} s timeout; anything but a single SELECT is refused (400)."
        ),
    )
    async def query(body: QueryRequest) -> QueryAnswer:
        try:
            if body.name is not None:
                result, fresh = await _warehouse(analytics.canned, body.name, wait_s=body.wait_s)
            else:
                assert body.sql is not None
                result, fresh = await _warehouse(
                    analytics.query,
                    body.sql,
                    timeout_s=TIMEOUT_S,
                    max_rows=body.max_rows,
                    wait_s=body.wait_s,
                )
        except SandboxBusy as exc:  # the server's state, not the request's fault
            raise HTTPException(503, str(exc), headers={"Retry-After": "1"}) from None
        except (QueryRefused, QueryFailed, UnknownQuery) as exc:
            raise HTTPException(400, str(exc)) from None
        answer = result.to_dict()
        if len(answer["rows"]) > body.max_rows:  # canned queries are not truncated by the sandbox
            answer.update(rows=answer["rows"][: body.max_rows], truncated=True)
            answer["row_count"] = body.max_rows
        return QueryAnswer(**answer, **fresh.to_dict())

    @router.get(
        "/report",
        summary="The analytics report: HTML with plots, or its data as JSON",
        response_class=HTMLResponse,
        responses={
            200: {
                "description": "The report (HTML with embedded PNG plots, or JSON).",
                "content": {"text/html": {}, "application/json": {}},
            }
        },
    )
    async def report(
        format: Literal["html", "json"] = Query("html", description="html or json."),
        wait_s: float = Query(
            DEFAULT_WAIT_S,
            ge=0,
            le=MAX_WAIT_S,
            description="Seconds to wait at most for the warehouse to reach the log's end.",
        ),
    ) -> Response:
        if format == "json":
            return JSONResponse(await _warehouse(analytics.report_data, wait_s=wait_s))
        return HTMLResponse(await _warehouse(analytics.report_html, wait_s=wait_s))

    return router
