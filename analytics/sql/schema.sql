-- The warehouse: every table is a projection of the event log, rebuilt from it at will.
-- Loaded through Python; no extension is needed. Every table and column carries a COMMENT
-- (see the end of this file): `DESCRIBE t` and `duckdb_columns()` show them, in the sandbox
-- too. The payload of each event type (events.data) and the milestone names are documented
-- in docs/events.md, generated from the code (`python -m companyos.analytics.docs`).

CREATE TABLE IF NOT EXISTS events (
    position       BIGINT  NOT NULL,
    episode_id     VARCHAR NOT NULL,
    seq            INTEGER NOT NULL,
    type           VARCHAR NOT NULL,
    schema_version INTEGER NOT NULL,
    data           JSON    NOT NULL,
    hash           VARCHAR NOT NULL,
    recorded_at    TIMESTAMP NOT NULL
);

CREATE TABLE IF NOT EXISTS steps (
    episode_id     VARCHAR NOT NULL,
    step           INTEGER NOT NULL,
    app            VARCHAR NOT NULL,
    method         VARCHAR NOT NULL,
    tool           VARCHAR NOT NULL,
    params         JSON,
    outcome        VARCHAR NOT NULL,
    error_code     VARCHAR,
    fault          VARCHAR,
    chaos          VARCHAR[] NOT NULL,
    reward         DOUBLE  NOT NULL,
    return_so_far  DOUBLE  NOT NULL,
    gained         VARCHAR[] NOT NULL,
    lost           VARCHAR[] NOT NULL,
    clock_minutes  INTEGER NOT NULL
);

CREATE TABLE IF NOT EXISTS episodes (
    episode_id       VARCHAR NOT NULL,
    scenario         VARCHAR NOT NULL,
    family           VARCHAR NOT NULL,
    instance_id      VARCHAR NOT NULL,
    seed             BIGINT  NOT NULL,
    difficulty       INTEGER NOT NULL,
    agent            VARCHAR,
    outcome          VARCHAR,
    success          BOOLEAN NOT NULL,
    total_return     DOUBLE  NOT NULL,
    steps            INTEGER NOT NULL,
    max_steps        INTEGER NOT NULL,
    invalid_actions  INTEGER NOT NULL,
    rejected_actions INTEGER NOT NULL,
    faults           INTEGER NOT NULL,
    chaos_kinds      VARCHAR[] NOT NULL,
    forked_from      VARCHAR,
    fork_step        INTEGER,
    started_at       TIMESTAMP NOT NULL,
    updated_at       TIMESTAMP NOT NULL,
    last_position    BIGINT  NOT NULL
);

CREATE TABLE IF NOT EXISTS failures (
    episode_id         VARCHAR NOT NULL,
    label              VARCHAR NOT NULL,
    step               INTEGER,
    detail             VARCHAR NOT NULL,
    point_of_no_return INTEGER,
    no_return_checked  BOOLEAN NOT NULL DEFAULT false
);

CREATE TABLE IF NOT EXISTS mistakes (
    episode_id   VARCHAR NOT NULL,
    step         INTEGER NOT NULL,
    label        VARCHAR NOT NULL,
    evidence     VARCHAR NOT NULL,
    made_good_at INTEGER,
    decisive     BOOLEAN NOT NULL,
    harmless     BOOLEAN NOT NULL
);

CREATE TABLE IF NOT EXISTS approvals (
    episode_id       VARCHAR NOT NULL,
    approval_id      VARCHAR NOT NULL,
    approval_type    VARCHAR NOT NULL,
    approver         VARCHAR NOT NULL,
    ticket_id        VARCHAR,
    data             JSON    NOT NULL,
    requested_step   INTEGER NOT NULL,
    polls            INTEGER NOT NULL,
    last_polled_step INTEGER,
    status           VARCHAR NOT NULL,
    decided_step     INTEGER,
    decision         VARCHAR,
    cause            VARCHAR,
    reason           VARCHAR,
    chance_rejection BOOLEAN NOT NULL,
    escalations      INTEGER NOT NULL,
    expired_step     INTEGER
);

CREATE TABLE IF NOT EXISTS chaos (
    episode_id VARCHAR NOT NULL,
    step       INTEGER NOT NULL,
    phase      VARCHAR NOT NULL,
    kind       VARCHAR NOT NULL,
    target     VARCHAR NOT NULL,
    params     JSON    NOT NULL,
    source     VARCHAR NOT NULL
);

CREATE TABLE IF NOT EXISTS taxonomy (
    label       VARCHAR NOT NULL,
    description VARCHAR NOT NULL
);

CREATE TABLE IF NOT EXISTS checkpoint (
    position BIGINT NOT NULL
);

COMMENT ON TABLE events IS 'Every stored event of the log, one row each, payload as stored (before upcasting). Payload fields per type: docs/events.md.';
COMMENT ON COLUMN events.position IS 'Global position in the log (commit order, 1, 2, ...).';
COMMENT ON COLUMN events.episode_id IS 'The stream the event belongs to (an episode id, or a session stream).';
COMMENT ON COLUMN events.seq IS 'Position within the stream: 0, 1, 2, ...';
COMMENT ON COLUMN events.type IS 'The event type (EpisodeStarted, ToolCalled, ApprovalDecided, ...; see docs/events.md).';
COMMENT ON COLUMN events.schema_version IS 'Version of the payload shape of this type when it was stored.';
COMMENT ON COLUMN events.data IS 'The payload as stored (JSON); its fields per type are in docs/events.md. Query with data->>''field''.';
COMMENT ON COLUMN events.hash IS 'Hash chain value: covers this event and every earlier one of the stream.';
COMMENT ON COLUMN events.recorded_at IS 'When the event was stored (UTC, wall clock of the server).';

COMMENT ON TABLE steps IS 'One row per tool call of an episode, with what it caused and how it was scored.';
COMMENT ON COLUMN steps.episode_id IS 'The episode (episodes.episode_id).';
COMMENT ON COLUMN steps.step IS 'The tool call number within the episode: 1, 2, ...';
COMMENT ON COLUMN steps.app IS 'The app called (ticketdesk, datahub, approvalflow, ...).';
COMMENT ON COLUMN steps.method IS 'The method called on the app.';
COMMENT ON COLUMN steps.tool IS 'app.method.';
COMMENT ON COLUMN steps.params IS 'The call''s parameters as sent (canonical JSON; NULL: none).';
COMMENT ON COLUMN steps.outcome IS 'ok | invalid (bad call, InvalidAction) | rejected (refused by a rule, ActionRejected) | fault (refused by chaos, FaultInjected).';
COMMENT ON COLUMN steps.error_code IS 'The InvalidAction/ActionRejected code, if any.';
COMMENT ON COLUMN steps.fault IS 'The FaultInjected kind (unavailable, rate_limited, outage), if any.';
COMMENT ON COLUMN steps.chaos IS 'Kinds of chaos injected during the step (a fault as its chaos kind: transient_fault, rate_limit, partial_outage). Details: table chaos.';
COMMENT ON COLUMN steps.reward IS 'The reward of the step.';
COMMENT ON COLUMN steps.return_so_far IS 'The episode''s return after the step.';
COMMENT ON COLUMN steps.gained IS 'Milestones gained by the step (names: docs/events.md).';
COMMENT ON COLUMN steps.lost IS 'Milestones lost by the step.';
COMMENT ON COLUMN steps.clock_minutes IS 'The simulated clock after the step, minutes since the start.';

COMMENT ON TABLE episodes IS 'One row per episode (streams that are not episodes are skipped).';
COMMENT ON COLUMN episodes.episode_id IS 'The episode id (its stream).';
COMMENT ON COLUMN episodes.scenario IS 'The instance''s scenario name.';
COMMENT ON COLUMN episodes.family IS 'The workflow family of the task.';
COMMENT ON COLUMN episodes.instance_id IS 'The instance (family, difficulty, seed): trials of one instance share it.';
COMMENT ON COLUMN episodes.seed IS 'The seed the instance was generated from.';
COMMENT ON COLUMN episodes.difficulty IS 'Chaos level 0-3.';
COMMENT ON COLUMN episodes.agent IS 'EpisodeStarted.agent, the name the client gave (NULL: not said).';
COMMENT ON COLUMN episodes.outcome IS 'success | failure | timeout | abandoned | NULL (still running).';
COMMENT ON COLUMN episodes.success IS 'outcome = success.';
COMMENT ON COLUMN episodes.total_return IS 'The episode''s return (sum of its rewards).';
COMMENT ON COLUMN episodes.steps IS 'Tool calls made.';
COMMENT ON COLUMN episodes.max_steps IS 'The step budget.';
COMMENT ON COLUMN episodes.invalid_actions IS 'Calls answered by InvalidAction.';
COMMENT ON COLUMN episodes.rejected_actions IS 'Calls answered by ActionRejected.';
COMMENT ON COLUMN episodes.faults IS 'Calls refused by chaos (FaultInjected).';
COMMENT ON COLUMN episodes.chaos_kinds IS 'Chaos kinds present, set-up and live (rows: table chaos).';
COMMENT ON COLUMN episodes.forked_from IS 'The episode this one was forked from (NULL: not a fork).';
COMMENT ON COLUMN episodes.fork_step IS 'The step of forked_from it was forked at.';
COMMENT ON COLUMN episodes.started_at IS 'When its first event was stored (UTC).';
COMMENT ON COLUMN episodes.updated_at IS 'When its last loaded event was stored (UTC).';
COMMENT ON COLUMN episodes.last_position IS 'Global position of its last loaded event.';

COMMENT ON TABLE failures IS 'One row per ended, failed episode: its decisive mistake (projections.mistakes: the earliest after which the honest solver, taking over, can no longer succeed) and its point of no return.';
COMMENT ON COLUMN failures.episode_id IS 'The failed episode.';
COMMENT ON COLUMN failures.label IS 'A taxonomy label (table taxonomy).';
COMMENT ON COLUMN failures.step IS 'The step of that mistake (0: a label of the instance, unsolvable_instance; NULL: no single step).';
COMMENT ON COLUMN failures.detail IS 'What happened, in words.';
COMMENT ON COLUMN failures.point_of_no_return IS 'The last step after which the honest solver, taking over with the remaining budget, still succeeds (NULL: not computed yet, or none: see no_return_checked).';
COMMENT ON COLUMN failures.no_return_checked IS 'point_of_no_return was computed (it may be NULL even then: no such step).';

COMMENT ON TABLE mistakes IS 'Every mistake of every episode (projections.mistakes), one row each at its step; per failed episode exactly one row is decisive. Labels: docs/failure_taxonomy.md.';
COMMENT ON COLUMN mistakes.episode_id IS 'The episode (events.episode_id).';
COMMENT ON COLUMN mistakes.step IS 'The step the mistake was made at (1 = the first call; 0 for unsolvable_instance, a label of the instance).';
COMMENT ON COLUMN mistakes.label IS 'A taxonomy label (taxonomy.label; docs/failure_taxonomy.md).';
COMMENT ON COLUMN mistakes.evidence IS 'What happened, in words, naming the objects involved.';
COMMENT ON COLUMN mistakes.made_good_at IS 'The step at which a later call made it good; NULL: never.';
COMMENT ON COLUMN mistakes.decisive IS 'The mistake that lost the failed episode: the earliest after which the honest solver, taking over, can no longer succeed.';
COMMENT ON COLUMN mistakes.harmless IS 'A failed read later corrected: listed, never decisive.';

COMMENT ON TABLE approvals IS 'One row per approval request an episode made: its whole lifecycle, from request to decision.';
COMMENT ON COLUMN approvals.episode_id IS 'The episode that made the request.';
COMMENT ON COLUMN approvals.approval_id IS 'The request''s ticket number in ApprovalFlow (unique within the episode).';
COMMENT ON COLUMN approvals.approval_type IS 'The approval type requested.';
COMMENT ON COLUMN approvals.approver IS 'The person id the request was sent to.';
COMMENT ON COLUMN approvals.ticket_id IS 'The ticket the request names (NULL: none).';
COMMENT ON COLUMN approvals.data IS 'The request''s fields as submitted (JSON object).';
COMMENT ON COLUMN approvals.requested_step IS 'The step at which it was submitted.';
COMMENT ON COLUMN approvals.polls IS 'Times its status was checked.';
COMMENT ON COLUMN approvals.last_polled_step IS 'The step of the last status check (NULL: never checked).';
COMMENT ON COLUMN approvals.status IS 'Status at the end of the loaded stream: pending | approved | rejected | expired.';
COMMENT ON COLUMN approvals.decided_step IS 'The step at which the approver decided (NULL: undecided).';
COMMENT ON COLUMN approvals.decision IS 'approved | rejected (NULL: undecided).';
COMMENT ON COLUMN approvals.cause IS 'Why it was decided so: review (on its merits) | chance (a rejection drawn by chaos) | wrong_approver | ticket_unverified | missing_prior_approval | data_mismatch (stale or wrong data).';
COMMENT ON COLUMN approvals.reason IS 'The approver''s words (NULL when approved on review).';
COMMENT ON COLUMN approvals.chance_rejection IS 'It was rejected by chance at least once (chaos, not the agent''s fault).';
COMMENT ON COLUMN approvals.escalations IS 'Times the agent escalated it.';
COMMENT ON COLUMN approvals.expired_step IS 'The step at which it expired undecided (NULL: did not).';

COMMENT ON TABLE chaos IS 'One row per piece of chaos in an episode: set up with the instance or drawn during play, including every call refused by a fault.';
COMMENT ON COLUMN chaos.episode_id IS 'The episode.';
COMMENT ON COLUMN chaos.step IS 'The step it happened in (0: set-up, before the first call).';
COMMENT ON COLUMN chaos.phase IS 'setup (part of the instance) | live (drawn during play).';
COMMENT ON COLUMN chaos.kind IS 'The chaos kind: set-up (stale_metric, missing_field, blocked_ticket, out_of_office) or live (approval_latency, approval_rejection, transient_fault, rate_limit, partial_outage).';
COMMENT ON COLUMN chaos.target IS 'What it hit: a metric, an approval id, a person, or app.method for a refused call.';
COMMENT ON COLUMN chaos.params IS 'Its parameters (JSON object; for a refused call: fault, retry_after_minutes, until_minute).';
COMMENT ON COLUMN chaos.source IS 'The event it comes from: ChaosInjected or FaultInjected.';

COMMENT ON TABLE taxonomy IS 'The failure labels and their definitions, to join on failures.label.';
COMMENT ON COLUMN taxonomy.label IS 'A failure label.';
COMMENT ON COLUMN taxonomy.description IS 'What the label means.';

COMMENT ON TABLE checkpoint IS 'Where the warehouse stands in the log: one row, the highest global position loaded.';
COMMENT ON COLUMN checkpoint.position IS 'The highest global position loaded (0: nothing yet).';
