"""Trajectory analytics: a DuckDB warehouse caught up from the event log, causal failure
analysis (labels and the point of no return), canned SQL, a sandbox for user SQL, Parquet
export and an HTML report with plots.

The warehouse is a projection like any other: rebuilt from the log at will, caught up
incrementally by global position. Its tables are defined in ``sql/schema.sql``.
"""
