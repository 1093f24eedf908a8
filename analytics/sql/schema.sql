-- The warehouse: every table is a projection of the event log, rebuilt from it at will.
-- Loaded through Python (DuckDB's appender); no extension is needed.

-- Every stored event, as stored (the payload is the stored JSON, before upcasting).
CREATE TABLE IF NOT EXISTS events (
    position       BIGINT  NOT NULL,  -- global position in the log (commit order)
    episode_id     VARCHAR NOT NULL,  -- the stream
    seq            INTEGER NOT NULL,  -- 0, 1, 2, ... within the stream
    type           VARCHAR NOT NULL,  -- the event type (EpisodeStarted, ToolCalled, ...)
    schema_version INTEGER NOT NULL,
    data           JSON    NOT NULL,
    hash           VARCHAR NOT NULL,
    recorded_at    TIMESTAMP NOT NULL
);

-- One row per tool call.
CREATE TABLE IF NOT EXISTS steps (
    episode_id     VARCHAR NOT NULL,
    step           INTEGER NOT NULL,  -- 1, 2, ...
    app            VARCHAR NOT NULL,
    method         VARCHAR NOT NULL,
    tool           VARCHAR NOT NULL,  -- app.method
    params         JSON,
    outcome        VARCHAR NOT NULL,  -- ok | invalid | rejected | fault
    error_code     VARCHAR,           -- the InvalidAction/ActionRejected code, if any
    fault          VARCHAR,           -- the FaultInjected kind (unavailable, rate_limited, outage), if any
    chaos          VARCHAR[] NOT NULL, -- kinds of chaos injected during the step (a fault as its
                                       -- kind: transient_fault, rate_limit, partial_outage)
    reward         DOUBLE  NOT NULL,
    return_so_far  DOUBLE  NOT NULL,
    gained         VARCHAR[] NOT NULL, -- milestones gained by the step
    lost           VARCHAR[] NOT NULL, -- milestones lost by the step
    clock_minutes  INTEGER NOT NULL    -- the simulated clock after the step
);

-- One row per episode (streams that are not episodes are skipped).
CREATE TABLE IF NOT EXISTS episodes (
    episode_id       VARCHAR NOT NULL,
    scenario         VARCHAR NOT NULL,  -- the instance's scenario name
    family           VARCHAR NOT NULL,  -- the workflow family
    instance_id      VARCHAR NOT NULL,
    seed             BIGINT  NOT NULL,
    difficulty       INTEGER NOT NULL,
    agent            VARCHAR,           -- EpisodeStarted.agent (NULL: not said)
    outcome          VARCHAR,           -- success | failure | timeout | abandoned | NULL (running)
    success          BOOLEAN NOT NULL,
    total_return     DOUBLE  NOT NULL,
    steps            INTEGER NOT NULL,
    max_steps        INTEGER NOT NULL,
    invalid_actions  INTEGER NOT NULL,
    rejected_actions INTEGER NOT NULL,
    faults           INTEGER NOT NULL,
    chaos_kinds      VARCHAR[] NOT NULL, -- chaos kinds present (set-up and during play)
    forked_from      VARCHAR,
    fork_step        INTEGER,
    started_at       TIMESTAMP NOT NULL,
    updated_at       TIMESTAMP NOT NULL,
    last_position    BIGINT  NOT NULL    -- global position of the episode's last loaded event
);

-- One row per ended, failed episode: its decisive mistake (projections.mistakes: the earliest
-- after which the honest solver, taking over, can no longer succeed) and the point of no return
-- (analytics.no_return; set by Warehouse.set_points_of_no_return, NULL until then, and after it
-- when there is no such step: no_return_checked tells which).
CREATE TABLE IF NOT EXISTS failures (
    episode_id         VARCHAR NOT NULL,
    label              VARCHAR NOT NULL,  -- a taxonomy label (projections.mistakes.LABELS)
    step               INTEGER,           -- the step of that mistake (0: the instance's label)
    detail             VARCHAR NOT NULL,  -- what happened, in words
    point_of_no_return INTEGER,           -- the last step after which the honest solver,
                                          -- taking over, still succeeds
    no_return_checked  BOOLEAN NOT NULL DEFAULT false  -- point_of_no_return was computed (it may
                                                      -- be NULL even then: no such step)
);

-- Every mistake of every episode, one row each at its step (projections.mistakes; loaded by
-- analytics.mistakes_table). Per failed episode exactly one row is decisive.
CREATE TABLE IF NOT EXISTS mistakes (
    episode_id   VARCHAR NOT NULL,
    step         INTEGER NOT NULL,   -- the step it was made at (0: unsolvable_instance)
    label        VARCHAR NOT NULL,   -- a taxonomy label (docs/failure_taxonomy.md)
    evidence     VARCHAR NOT NULL,   -- what happened, in words, naming the objects involved
    made_good_at INTEGER,            -- the step a later call made it good; NULL: never
    decisive     BOOLEAN NOT NULL,   -- the mistake that lost the failed episode
    harmless     BOOLEAN NOT NULL    -- a failed read corrected later: never decisive
);

-- The taxonomy itself, so SQL can join on the definitions.
CREATE TABLE IF NOT EXISTS taxonomy (
    label       VARCHAR NOT NULL,
    description VARCHAR NOT NULL
);

-- Where the catch-up stopped: the highest global position loaded.
CREATE TABLE IF NOT EXISTS checkpoint (
    position BIGINT NOT NULL
);
