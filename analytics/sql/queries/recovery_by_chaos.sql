-- Recovery rate per chaos kind
--
-- Of the ended episodes in which a kind of chaos occurred (set up or drawn during play), how
-- many still succeeded (recovery_rate); and for the kinds that refuse calls (transient_fault,
-- rate_limit, partial_outage), how many refused calls the agent later made again, same tool
-- and same parameters, with success (retry_rate). One row per chaos kind over every agent
-- (agent '(all)'), then one per agent. Forks are left out.
WITH ended AS (
    SELECT episode_id, coalesce(agent, '(unlabelled)') AS agent, success, chaos_kinds
    FROM episodes
    WHERE outcome IS NOT NULL AND forked_from IS NULL
),
episode_rates AS (
    SELECT
        chaos_kind,
        agent,
        count(*) AS episodes,
        count(*) FILTER (WHERE success) AS succeeded
    FROM (SELECT unnest(chaos_kinds) AS chaos_kind, agent, success FROM ended)
    GROUP BY GROUPING SETS ((chaos_kind), (chaos_kind, agent))
),
faulted AS (
    -- A refused call has no effect, so the only chaos of its step is the fault's own kind.
    SELECT
        s.chaos[1] AS chaos_kind,
        e.agent,
        EXISTS (
            SELECT 1
            FROM steps r
            WHERE r.episode_id = s.episode_id
              AND r.step > s.step
              AND r.tool = s.tool
              AND r.params::VARCHAR IS NOT DISTINCT FROM s.params::VARCHAR
              AND r.outcome = 'ok'
        ) AS retried
    FROM steps s
    JOIN ended e USING (episode_id)
    WHERE s.outcome = 'fault'
),
retry_rates AS (
    SELECT
        chaos_kind,
        agent,
        count(*) AS faulted_calls,
        count(*) FILTER (WHERE retried) AS retried_ok
    FROM faulted
    GROUP BY GROUPING SETS ((chaos_kind), (chaos_kind, agent))
)
SELECT
    e.chaos_kind,
    coalesce(e.agent, '(all)') AS agent,
    e.episodes,
    e.succeeded,
    e.succeeded / e.episodes AS recovery_rate,
    coalesce(r.faulted_calls, 0) AS faulted_calls,
    coalesce(r.retried_ok, 0) AS retried_ok,
    r.retried_ok / r.faulted_calls AS retry_rate
FROM episode_rates e
LEFT JOIN retry_rates r
    ON r.chaos_kind = e.chaos_kind AND r.agent IS NOT DISTINCT FROM e.agent
ORDER BY e.chaos_kind, e.agent IS NOT NULL, e.agent
