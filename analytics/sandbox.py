"""The sandbox for user SQL (`companyos analyze --sql`, HTTP `POST /analytics/query`).

User SQL never touches the live warehouse. It runs on a *snapshot*: a byte copy of the
warehouse file taken right after a CHECKPOINT (so the copy holds everything committed), kept in
a directory of its own and refreshed when the warehouse has moved on. Each query opens that
file directly, read-only, on a fresh connection configured so that nothing outside the file can
be reached or changed:

- ``access_mode='READ_ONLY'``: no write to the snapshot (and so no WAL file next to it);
- ``enable_external_access=false``: no file, URL or environment outside the database file
  (``read_csv('/etc/passwd')``, ``glob``, ``COPY ... TO``, ``ATTACH 'new.db'`` all fail);
- ``autoinstall_known_extensions`` / ``autoload_known_extensions`` /
  ``allow_community_extensions`` false: no extension is fetched or loaded behind the scenes;
- ``allow_persistent_secrets=false``: the user's ``~/.duckdb`` secrets are not read;
- ``temp_directory=''``: nothing spills to disk, so the memory limit is a hard limit and no
  temporary file appears next to the snapshot;
- ``memory_limit`` and ``threads``: one query cannot starve the server;
- ``lock_configuration=true``, set last: ``SET``/``RESET`` cannot undo any of the above.

An in-memory database with the warehouse ATTACHed read-only would not do: ``DETACH`` and a
read-write ``ATTACH`` of the same file escapes it. Here the read-only database *is* the default
database, which cannot be detached, and a second ATTACH is refused twice over (by the statement
policy below, and by DuckDB, which keeps one handle per file).

Statement policy, checked with DuckDB's own parser (``duckdb.extract_statements``) before the
snapshot is opened: exactly one statement, of type SELECT. DuckDB classifies as SELECT the plain
``SELECT``, ``WITH ... SELECT``, ``FROM t`` (FROM-first), ``VALUES``, set operations, and the
read-only introspection forms ``DESCRIBE``, ``SHOW`` and ``SUMMARIZE``. ``EXPLAIN`` (and
``EXPLAIN ANALYZE``) is accepted when what it explains is itself a single SELECT. Everything
else (SET, RESET, PRAGMA, CALL, COPY, EXPORT, ATTACH, DETACH, USE, INSTALL, LOAD, CREATE,
INSERT, UPDATE, DELETE, DROP, ALTER, CHECKPOINT, PIVOT statements, transactions, prepared
statements) is refused. Table functions and ``current_setting`` stay usable: they read, and
what could reach outside the file is stopped by the configuration.

Names, checked with DuckDB's own tokenizer (so string literals and comments do not count):
functions that describe the database's surroundings or read files are not callable
(``duckdb_databases()``, ``duckdb_settings()``, ``duckdb_extensions()``, ``pragma_*``,
``read_*``, ``glob``, ``getenv``, ...; `HIDDEN`, `HIDDEN_PREFIXES`), nor ``query()``, which
would run a string as SQL past every check; ``current_setting`` reads only the sandbox's own
limits (`READABLE_SETTINGS`). The catalogue of the warehouse's own tables stays readable
(``duckdb_tables()``, ``duckdb_columns()``, ``DESCRIBE``, ``SHOW TABLES``): no answer names a
file, a directory or a setting of the server.

Each query runs in a process of its own, forked from a forkserver, whose address space is
capped at ``memory_limit`` plus `HEADROOM` (``RLIMIT_AS``): DuckDB's ``memory_limit`` counts only
its buffer manager, and a string built by ``repeat`` or ``string_agg`` is not in it. At the
timeout the process is killed, so no query outlives its answer. At most `MAX_CONCURRENT` run at
once (the rest wait up to their timeout, then get `SandboxBusy`), which bounds the memory of
all of them together. At most ``max_rows`` rows are returned (the result is streamed, so a huge
result is never materialised), with ``truncated`` set when there were more. Values are
converted to JSON-ready Python values.
"""

from __future__ import annotations

import atexit
import base64
import contextlib
import datetime as dt
import decimal
import hashlib
import math
import os
import re
import shutil
import threading
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import duckdb

__all__ = [
    "MAX_SQL_CHARS",
    "TABLES",
    "QueryFailed",
    "QueryRefused",
    "QueryResult",
    "SnapshotError",
    "check_statement",
    "jsonable",
    "run_query",
    "snapshot",
]

MAX_SQL_CHARS = 100_000
"""Longer SQL is refused before it reaches the parser (a query is not a data upload)."""

SNAPSHOT_SUFFIX = ".duckdb"
GRACE_S = 2.0
"""How long a query process may take to exit after its answer (or after it is killed)."""


def _schema_tables() -> tuple[str, ...]:
    """The warehouse's tables, read from the contract (sql/schema.sql), for the messages."""
    text = resources.files("companyos.analytics.sql").joinpath("schema.sql").read_text()
    return tuple(re.findall(r"CREATE\s+TABLE\s+(?:IF\s+NOT\s+EXISTS\s+)?(\w+)", text, re.I))


TABLES: tuple[str, ...] = _schema_tables()

_HINT = (
    f"the tables are {', '.join(TABLES)} (SHOW TABLES lists them, DESCRIBE <table> shows the "
    "columns; SELECT table_name, column_name, comment FROM duckdb_columns() says what each means)"
)


class QueryRefused(Exception):
    """The SQL is not allowed by the sandbox's policy (it was not run)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class QueryFailed(Exception):
    """The SQL was allowed but did not produce a result: a SQL error, the memory limit, or the
    timeout."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class SnapshotError(Exception):
    """A snapshot of the warehouse could not be taken."""


@dataclass(frozen=True, slots=True)
class QueryResult:
    columns: list[str]
    rows: list[list[Any]]
    """JSON-ready values (see `jsonable`)."""
    truncated: bool
    """More rows existed than ``max_rows``; only the first ``max_rows`` are in ``rows``."""
    seconds: float
    types: list[str] = field(default_factory=list)
    """DuckDB's type of each column (``BIGINT``, ``VARCHAR[]``, ``JSON``, ...)."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "columns": self.columns,
            "types": self.types,
            "rows": self.rows,
            "row_count": len(self.rows),
            "truncated": self.truncated,
            "seconds": self.seconds,
        }


# --- the statement policy ---------------------------------------------------------------------

_EXPLAIN = re.compile(r"^\s*EXPLAIN\s+(?:ANALYZE\s+|ANALYSE\s+)?(?:\([^()]*\)\s*)?", re.I)


def check_statement(sql: str) -> str:
    """The single read-only statement in ``sql`` (its text); `QueryRefused` when the policy
    forbids it, `QueryFailed` when DuckDB cannot parse it."""
    if not isinstance(sql, str) or not sql.strip():
        raise QueryRefused(f"the query is empty: send a single SELECT; {_HINT}")
    if len(sql) > MAX_SQL_CHARS:
        raise QueryRefused(
            f"the query is {len(sql):,} characters long; at most {MAX_SQL_CHARS:,} are accepted"
        )
    statements = _parse(sql)
    if len(statements) != 1:
        raise QueryRefused(
            f"only a single SELECT is allowed, and this is {len(statements)} statements "
            f"(remove everything after the first ';'); {_HINT}"
        )
    (statement,) = statements
    kind = statement.type
    if kind == duckdb.StatementType.SELECT:
        _check_names(sql)
        return statement.query
    if kind == duckdb.StatementType.EXPLAIN:
        # EXPLAIN ANALYZE runs what it explains: it is only as safe as its inner statement.
        inner = _EXPLAIN.sub("", statement.query, count=1)
        if inner != statement.query:
            explained = _parse(inner)
            if len(explained) == 1 and explained[0].type == duckdb.StatementType.SELECT:
                _check_names(sql)
                return statement.query
        raise QueryRefused("EXPLAIN is allowed only in front of a single SELECT")
    name = str(kind).rsplit(".", 1)[-1]
    raise QueryRefused(
        f"only a single SELECT is allowed (also WITH ... SELECT, FROM-first, VALUES, DESCRIBE, "
        f"SHOW, SUMMARIZE, EXPLAIN SELECT); this is a {name} statement, which could change or "
        f"reach outside the snapshot; {_HINT}"
    )


HIDDEN_PREFIXES = ("duckdb_", "pragma_", "read_", "parquet_", "sniff_", "iceberg_", "delta_")
"""Functions that describe the database's surroundings (its file, its settings, directories,
extensions, secrets, temporary files, memory) or read files: not callable from the sandbox,
whatever the configuration would let them show."""
VISIBLE = frozenset(
    {
        "duckdb_tables",
        "duckdb_columns",
        "duckdb_views",
        "duckdb_schemas",
        "duckdb_types",
        "duckdb_keywords",
        "duckdb_functions",
        "duckdb_constraints",
        "duckdb_indexes",
        "duckdb_sequences",
        "duckdb_dependencies",
    }
)
"""The catalogue functions that show only the warehouse's own tables and DuckDB's types."""
HIDDEN = frozenset(
    {
        "query",  # runs a string as SQL: would get round every check on names
        "query_table",
        "getenv",
        "glob",
        "which_secret",
        "sql_auto_complete",
        "getvariable",
        "force_checkpoint",
        "enable_logging",
        "disable_logging",
        "truncate_duckdb_logs",
    }
)
READABLE_SETTINGS = frozenset(
    {
        "threads",
        "memory_limit",
        "access_mode",
        "enable_external_access",
        "lock_configuration",
        "autoload_known_extensions",
        "autoinstall_known_extensions",
        "allow_community_extensions",
        "allow_persistent_secrets",
        "timezone",
        "default_order",
    }
)
"""What ``current_setting('...')`` may read: the sandbox's own limits, no path or directory."""


def _check_names(sql: str) -> None:
    """Refuse a query that names a function of `HIDDEN` (or of `HIDDEN_PREFIXES` but not
    `VISIBLE`), or reads a setting outside `READABLE_SETTINGS`. Names are read from DuckDB's
    own tokenizer, so text in string literals and comments is not mistaken for a call."""
    tokens = duckdb.tokenize(sql)
    words: list[tuple[str, str]] = []
    for i, (at, kind) in enumerate(tokens):
        end = tokens[i + 1][0] if i + 1 < len(tokens) else len(sql)
        words.append((sql[at:end].strip(), str(kind).rsplit(".", 1)[-1]))
    for i, (word, kind) in enumerate(words):
        if kind != "identifier":
            continue
        name = word.strip('"').lower()
        if name == "current_setting":
            following = words[i + 1 : i + 4]
            setting = following[1][0].strip("'").lower() if len(following) == 3 else ""
            if (
                [k for _, k in following] == ["operator", "string_const", "operator"]
                and following[0][0] == "("
                and following[2][0] == ")"
                and setting in READABLE_SETTINGS
            ):
                continue
            raise QueryRefused(
                "current_setting may read only "
                f"{', '.join(sorted(READABLE_SETTINGS))}, named in quotes; {_HINT}"
            )
        if name in HIDDEN or (name.startswith(HIDDEN_PREFIXES) and name not in VISIBLE):
            raise QueryRefused(
                f"{name} is not available in the sandbox (it reveals the server's files, "
                f"settings or environment, or runs other SQL); {_HINT}"
            )


def _parse(sql: str) -> list[Any]:
    try:
        return list(duckdb.extract_statements(sql))
    except duckdb.Error as e:
        raise QueryFailed(f"{_first_line(e)}: fix the SQL syntax; {_HINT}") from None


# --- snapshots ---------------------------------------------------------------------------------


def snapshot(
    source: duckdb.DuckDBPyConnection | str | os.PathLike[str], dest_dir: str | os.PathLike[str]
) -> Path:
    """A snapshot file of the warehouse in ``dest_dir``, taken now unless the one already
    there is of the same warehouse state; returns its path.

    ``source`` is either the warehouse's live connection (it is CHECKPOINTed first, on a cursor
    of its own so that the caller's connection is not used from this thread) or the path of a
    warehouse file that no process is writing (its WAL, if any, is copied too and folded into
    the copy, never into the original). The copy is written under a temporary name, checked by
    opening it read-only, and renamed into place, so a reader never sees a half-written
    snapshot. Older snapshots of the same warehouse are deleted, except the previous one (a
    query that was handed its path a moment ago may still be about to open it).
    """
    dest = Path(dest_dir)
    dest.mkdir(parents=True, exist_ok=True)
    if isinstance(source, duckdb.DuckDBPyConnection):
        path = _checkpoint(source)
        with_wal = False  # everything committed is in the file now: the WAL is not needed
    else:
        path = Path(source)
        if not path.is_file():
            raise SnapshotError(f"no warehouse file at {path}: build the warehouse first")
        with_wal = True
    path = path.resolve()
    wal = Path(f"{path}.wal")
    for _attempt in range(5):
        key = _state_key(path, wal if with_wal else None)
        final = dest / f"{path.stem}.snapshot-{key}{SNAPSHOT_SUFFIX}"
        if final.is_file():
            return final
        tmp = dest / f".{final.name}.{uuid.uuid4().hex}.tmp"
        try:
            shutil.copyfile(path, tmp)
            if with_wal and wal.is_file():
                shutil.copyfile(wal, f"{tmp}.wal")
            if _state_key(path, wal if with_wal else None) != key:
                continue  # the warehouse was written while being copied: copy again
            _seal(tmp, fold_wal=with_wal)
            os.replace(tmp, final)
        finally:
            for leftover in (tmp, Path(f"{tmp}.wal")):
                leftover.unlink(missing_ok=True)
        _prune(dest, path.stem, keep=final)
        return final
    raise SnapshotError(f"{path} kept changing while it was being copied; try again")


def _checkpoint(con: duckdb.DuckDBPyConnection) -> Path:
    cur = con.cursor()
    try:
        # fetchall, not fetchone: DuckDB 2 keeps a connection busy until its result is drained.
        rows = cur.execute(
            "SELECT path FROM duckdb_databases() WHERE database_name = current_database()"
        ).fetchall()
        if not rows or not rows[0][0]:
            raise SnapshotError("the warehouse is an in-memory database: a snapshot needs a file")
        for attempt in range(20):
            try:
                cur.execute("CHECKPOINT")
                break
            except duckdb.TransactionException:
                # Another write transaction is open; it ends soon (loads are short).
                if attempt == 19:
                    raise SnapshotError(
                        "the warehouse is being written and could not be checkpointed; "
                        "try again once the catch-up has finished"
                    ) from None
                time.sleep(0.05)
        return Path(rows[0][0])
    finally:
        cur.close()


def _state_key(path: Path, wal: Path | None) -> str:
    """Identifies the warehouse's state cheaply: a checkpoint rewrites the file (size or
    modification time change), and so does any later write, which at worst costs a copy."""
    parts = [str(path)]
    for p in (path, wal):
        if p is not None and p.exists():
            st = p.stat()
            parts.append(f"{p.name}:{st.st_size}:{st.st_mtime_ns}")
    return hashlib.sha256("|".join(parts).encode()).hexdigest()[:16]


def _seal(tmp: Path, *, fold_wal: bool) -> None:
    """Fold a copied WAL into the private copy (so that read-only opens never need it), and
    check the copy is a readable database."""
    if fold_wal and Path(f"{tmp}.wal").exists():
        con = duckdb.connect(str(tmp), config={"enable_external_access": False})
        try:
            con.execute("CHECKPOINT")
        finally:
            con.close()
    try:
        con = duckdb.connect(str(tmp), read_only=True, config={"enable_external_access": False})
    except duckdb.Error as e:
        raise SnapshotError(f"the copied warehouse does not open: {_first_line(e)}") from None
    try:
        con.execute("SELECT count(*) FROM duckdb_tables()").fetchall()
    finally:
        con.close()


def _prune(dest: Path, stem: str, *, keep: Path) -> None:
    """Delete this warehouse's older snapshots but the newest of them (``dest_dir`` is meant
    to be the warehouse's own: snapshots are recognised by the warehouse file's name)."""
    others: list[tuple[int, Path]] = []
    for p in dest.glob(f"{stem}.snapshot-*{SNAPSHOT_SUFFIX}"):
        if p != keep:
            with contextlib.suppress(OSError):  # another thread's prune may get there first
                others.append((p.stat().st_mtime_ns, p))
    for _, old in sorted(others, reverse=True)[1:]:
        # A query may still have it open: on POSIX it reads on from the unlinked file.
        with contextlib.suppress(OSError):
            old.unlink()


# --- running a query ---------------------------------------------------------------------------

MAX_CONCURRENT = max(1, int(os.environ.get("COMPANYOS_SANDBOX_QUERIES", "2")))
"""Sandboxed queries running at once in this process; more wait (up to their timeout), then
get `SandboxBusy`. Each may use its memory limit plus `HEADROOM`, so this bounds the total."""
HEADROOM = 512 * 2**20
"""Address space a query's process may use beyond DuckDB's ``memory_limit``: the interpreter,
DuckDB's code and what DuckDB allocates outside its buffer manager, which ``memory_limit``
does not count (a string built by ``repeat``, say). It caps the whole process."""

_SLOTS = threading.BoundedSemaphore(MAX_CONCURRENT)
_LIVE_LOCK = threading.Lock()
_LIVE: set[Any] = set()
"""Query processes still running, so that exit can stop them first."""
_PEAK = {"kib": 0, "queries": 0}
"""The largest peak resident size of any query process so far (kiB), and queries run."""
_CTX: Any = None


class SandboxBusy(QueryFailed):
    """Every sandbox slot stayed taken for the whole timeout."""


def high_water_kib() -> int:
    """The largest peak resident memory (VmHWM, kiB) of any query process this process ran."""
    return _PEAK["kib"]


def address_space_limit(memory_limit: str) -> int:
    """Bytes of address space a query process may map: ``memory_limit`` plus `HEADROOM`."""
    return parse_size(memory_limit) + HEADROOM


_UNITS = {"": 1, "b": 1, "kb": 1000, "mb": 1000**2, "gb": 1000**3, "tb": 1000**4}
_UNITS |= {"kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40, "k": 2**10}
_UNITS |= {"m": 2**20, "g": 2**30, "t": 2**40}


def parse_size(size: str) -> int:
    """``512MB`` -> bytes (DuckDB's units: KB, MB, GB are powers of 1000, KiB, MiB, GiB of
    1024)."""
    found = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*", size)
    if not found or found.group(2).lower() not in _UNITS:
        raise ValueError(f"not a memory size: {size!r} (say 512MB)")
    return int(float(found.group(1)) * _UNITS[found.group(2).lower()])


def _context() -> Any:
    """Query processes fork from a forkserver: a small, single-threaded process with DuckDB
    already imported (a fork takes milliseconds; forking the server itself, with its threads
    and connections, would not be safe)."""
    global _CTX
    if _CTX is None:
        import multiprocessing

        ctx = multiprocessing.get_context("forkserver")
        ctx.set_forkserver_preload(["companyos.analytics.sandbox"])
        _CTX = ctx
    return _CTX


@atexit.register
def _stop_live_queries() -> None:
    with _LIVE_LOCK:
        live = list(_LIVE)
    for process in live:
        with contextlib.suppress(Exception):
            process.kill()
            process.join(GRACE_S)


def _open(snapshot_path: Path, memory_limit: str, threads: int) -> duckdb.DuckDBPyConnection:
    config: dict[str, Any] = {
        "access_mode": "READ_ONLY",
        "enable_external_access": False,
        "autoinstall_known_extensions": False,
        "autoload_known_extensions": False,
        "allow_community_extensions": False,
        "allow_persistent_secrets": False,
        "temp_directory": "",
        "memory_limit": memory_limit,
        "threads": threads,
    }
    # DuckDB shares one database instance among the connections to a file in a process; the
    # lock makes "open, then lock the configuration" atomic with respect to other queries.
    with _CONNECT_LOCK:
        try:
            con = duckdb.connect(str(snapshot_path), config=config)
        except duckdb.ConnectionException as e:
            raise QueryFailed(
                f"{_first_line(e)}: another query holds this snapshot open with different "
                "limits; retry when it has finished"
            ) from None
        except duckdb.Error as e:
            raise QueryFailed(f"the snapshot could not be opened: {_first_line(e)}") from None
        try:
            [(locked,)] = con.execute("SELECT current_setting('lock_configuration')").fetchall()
            if not locked:
                con.execute("SET lock_configuration = true")  # last: it freezes the rest
        except BaseException:
            con.close()
            raise
    return con


_CONNECT_LOCK = threading.Lock()


def _peak_kib() -> int:
    with contextlib.suppress(OSError, ValueError, IndexError):
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return 0


def _child(conn: Any, path: str, text: str, memory_limit: str, threads: int, max_rows: int) -> None:
    """The query process: caps its own address space, runs the query, sends back the result
    or what went wrong, and its memory high-water mark."""
    import resource

    limit = address_space_limit(memory_limit)
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    try:
        con = _open(Path(path), memory_limit, threads)
        try:
            started = time.perf_counter()
            con.execute(text)
            columns = [d[0] for d in con.description or []]
            types = [str(d[1]) for d in con.description or []]
            # The result streams: only max_rows + 1 rows are ever produced.
            fetched = con.fetchmany(max_rows + 1)
            result = QueryResult(
                columns=columns,
                rows=[[jsonable(v) for v in row] for row in fetched[:max_rows]],
                truncated=len(fetched) > max_rows,
                seconds=round(time.perf_counter() - started, 6),
                types=types,
            )
        finally:
            con.close()
        reply: tuple[Any, ...] = ("ok", result)
    except QueryFailed as e:
        reply = ("failed", e.message)
    except MemoryError:
        reply = ("memory", "")
    except duckdb.Error as e:
        reply = ("duckdb", type(e).__name__, _hide(_first_line(e), path))
    try:
        conn.send((*reply, _peak_kib()))
    except MemoryError:
        conn.send(("memory", "", _peak_kib()))


def _hide(message: str, path: str) -> str:
    """A DuckDB message with the snapshot's path and folder taken out."""
    for where in (path, str(Path(path).parent)):
        message = message.replace(where, "the snapshot")
    return message


def run_query(
    snapshot_path: str | os.PathLike[str],
    sql: str,
    *,
    timeout_s: float = 10.0,
    memory_limit: str = "512MB",
    threads: int = 1,
    max_rows: int = 10_000,
) -> QueryResult:
    """Run one read-only statement on a snapshot file (see `snapshot`) under the sandbox's
    limits. Raises `QueryRefused` (policy) or `QueryFailed` (SQL error, limits, timeout;
    `SandboxBusy` when every slot stayed taken for ``timeout_s``).

    The query runs in a process of its own whose address space is capped (`HEADROOM` above
    ``memory_limit``), so no function, inside DuckDB's buffer manager or not, can take more;
    at the timeout that process is killed, so nothing of the query keeps running."""
    text = check_statement(sql)
    path = Path(snapshot_path)
    if not path.is_file():
        raise QueryFailed(f"no warehouse snapshot at {path}: build the warehouse first")
    address_space_limit(memory_limit)  # a bad size is the caller's error, raised here
    started = time.monotonic()
    if not _SLOTS.acquire(timeout=timeout_s):
        raise SandboxBusy(
            f"{MAX_CONCURRENT} queries are already running, each for up to {timeout_s:g} s: "
            "retry shortly"
        )
    try:
        ctx = _context()
        receiver, sender = ctx.Pipe(duplex=False)
        process = ctx.Process(
            target=_child,
            args=(sender, str(path.resolve()), text, memory_limit, threads, max_rows),
            name="companyos-sql-sandbox",
            daemon=True,
        )
        with _LIVE_LOCK:
            process.start()
            _LIVE.add(process)
        sender.close()
        ready, reply = False, None
        try:
            left = max(0.0, timeout_s - (time.monotonic() - started))
            ready = receiver.poll(left)
            if ready:
                with contextlib.suppress(EOFError, OSError):
                    reply = receiver.recv()
        finally:
            if process.is_alive() and reply is None:
                process.kill()
            process.join(GRACE_S)
            if process.is_alive():
                process.kill()
                process.join()
            receiver.close()
            with _LIVE_LOCK:
                _LIVE.discard(process)
    finally:
        _SLOTS.release()
    if reply is None and not ready:
        raise QueryFailed(
            f"the query was stopped after {timeout_s:g} s (the time limit): add a WHERE or a "
            "LIMIT, aggregate instead of listing, or avoid cross joins"
        )
    _PEAK["queries"] += 1
    if reply is None:  # the process died without a word: only the memory cap does that
        reply = ("memory", "", 0)
    _PEAK["kib"] = max(_PEAK["kib"], int(reply[-1]))
    kind = reply[0]
    if kind == "ok":
        result: QueryResult = reply[1]
        return result
    if kind == "failed":
        raise QueryFailed(reply[1])
    memory = (
        f"the query needs more than the {memory_limit} memory limit: aggregate, filter or "
        "add a LIMIT"
    )
    if kind == "memory":
        raise QueryFailed(memory)
    name, message = reply[1], reply[2]
    if name == "OutOfMemoryException" or "bad_alloc" in message or "Out of Memory" in message:
        raise QueryFailed(memory)
    if name == "InterruptException":
        raise QueryFailed(f"the query was interrupted (time limit {timeout_s:g} s)")
    if name == "PermissionException":
        raise QueryRefused(f"{message}: queries may read only the warehouse's tables; {_HINT}")
    raise QueryFailed(f"{message}; {_HINT}")


def _first_line(e: BaseException) -> str:
    return str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__


# --- JSON-ready values -------------------------------------------------------------------------


def jsonable(value: Any) -> Any:
    """A DuckDB value as a JSON-ready Python value: lists and arrays as lists, structs and maps
    as objects (keys as text), timestamps, dates and times in ISO 8601, intervals in seconds,
    decimals as numbers, UUIDs as text, blobs in base64, and the non-finite floats as the text
    ``NaN``, ``Infinity``, ``-Infinity`` (JSON has no such numbers). JSON columns stay the
    stored JSON text."""
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        if math.isfinite(value):
            return value
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    if isinstance(value, decimal.Decimal):
        return jsonable(float(value))
    if isinstance(value, dt.datetime | dt.date | dt.time):
        return value.isoformat()
    if isinstance(value, dt.timedelta):
        return value.total_seconds()
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, bytes | bytearray | memoryview):
        return base64.b64encode(bytes(value)).decode("ascii")
    if isinstance(value, Mapping):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [jsonable(v) for v in value]
    return str(value)
