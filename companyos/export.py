"""`companyos export --parquet DIR`: the warehouse's tables as partitioned Parquet, for
DuckDB, pandas, Spark or anything else that reads Parquet."""

from __future__ import annotations

import argparse
from typing import Any

from .analyze import _console, add_warehouse_args, caught_up

DESCRIPTION = """\
Catch the DuckDB warehouse up with the event log (as `companyos analyze` does), then write every
table under DIR, one directory per table, one sub-directory per partition value:

  events/type-.../                        every stored event
  steps/family-.../difficulty-.../        one row per tool call
  episodes/family-.../difficulty-.../     one row per episode
  failures/label-.../                     failed episodes: label, step, detail, no return
  approvals/family-.../, chaos/family-.../  approval requests, chaos injected
  taxonomy/, checkpoint/                  one file each

Every file holds every column of its table, in the same order and with the same types (the
partition columns too), so any set of files reads back as one table. DuckDB: SELECT * FROM
read_parquet('DIR/episodes/**/*.parquet'); pandas: pandas.read_parquet('DIR/episodes')."""

EPILOG = """\
examples:
  companyos export --parquet data/parquet
  companyos export --parquet data/parquet --overwrite --store postgresql+psycopg://u@h/db
"""


def run(args: argparse.Namespace) -> int:
    from companyos.analytics.export import export_parquet

    with caught_up(args, args.quiet) as wh:
        try:
            written = export_parquet(wh, args.parquet, overwrite=args.overwrite)
        except FileExistsError as exc:
            raise ValueError(f"{exc} (or pass --overwrite)") from None
    if not args.quiet:
        for table, path in written.items():
            files = sum(1 for _ in path.rglob("*.parquet"))
            _console().print(f"{table:<10} {files:>4} file(s)  {path}")
    return 0


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "export",
        help="write the warehouse as partitioned Parquet (DuckDB, pandas)",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--parquet", required=True, metavar="DIR", help="the directory to write")
    p.add_argument("--overwrite", action="store_true", help="replace an earlier export in DIR")
    add_warehouse_args(p)
    p.set_defaults(run=run)
