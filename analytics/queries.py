"""The canned queries: one SELECT per ``sql/queries/*.sql`` file, for reports, the CLI and HTTP.

Each file opens with a comment header: its first line is the title, the comment lines after it
(up to the SQL) say what the query answers. The name of a query is its file name without
``.sql``. Every query reads only the warehouse's tables, so it runs on the warehouse itself or
on a read-only snapshot of it.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources
from typing import Any

import duckdb


@dataclass(frozen=True, slots=True)
class Query:
    name: str
    title: str
    description: str
    sql: str


class UnknownQuery(KeyError):
    """No canned query has that name."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.name = name

    def __str__(self) -> str:
        return f"no canned query {self.name!r}; known: {', '.join(CANNED)}"


def parse(name: str, text: str) -> Query:
    """A query from a file's text: the header's first comment line is the title, the next
    comment lines (blank ones dropped) the description."""
    header: list[str] = []
    for line in text.splitlines():
        if not line.startswith("--"):
            break
        header.append(line[2:].strip())
    if not header or not header[0]:
        raise ValueError(f"canned query {name!r} has no title comment on its first line")
    description = " ".join(line for line in header[1:] if line)
    return Query(name, header[0], description, text)


def _load() -> dict[str, Query]:
    folder = resources.files("companyos.analytics.sql").joinpath("queries")
    files = sorted((f for f in folder.iterdir() if f.name.endswith(".sql")), key=lambda f: f.name)
    return {f.name[:-4]: parse(f.name[:-4], f.read_text()) for f in files}


CANNED: dict[str, Query] = _load()
"""Every canned query by name."""


def run(con: duckdb.DuckDBPyConnection, name: str) -> tuple[list[str], list[tuple[Any, ...]]]:
    """Run the canned query ``name``: its column names and its rows."""
    query = CANNED.get(name)
    if query is None:
        raise UnknownQuery(name)
    cursor = con.execute(query.sql)
    columns = [d[0] for d in cursor.description]
    return columns, cursor.fetchall()
