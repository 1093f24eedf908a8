-- Tool error rates
--
-- Per tool (app.method, including tools that do not exist but were called): how many calls,
-- and how many came back invalid (not understood: unknown tool, bad parameters), rejected (a
-- rule of the app forbids it) or refused by a fault (transient error, rate limit, outage), with
-- each as a share of the calls. Every call of every episode counts once: a fork's copy of its
-- source's steps is left out.
SELECT
    s.tool,
    any_value(s.app) AS app,
    any_value(s.method) AS method,
    count(*) AS calls,
    count(*) FILTER (WHERE s.outcome = 'invalid') AS invalid,
    count(*) FILTER (WHERE s.outcome = 'rejected') AS rejected,
    count(*) FILTER (WHERE s.outcome = 'fault') AS faults,
    count(*) FILTER (WHERE s.outcome = 'invalid') / count(*) AS invalid_rate,
    count(*) FILTER (WHERE s.outcome = 'rejected') / count(*) AS rejected_rate,
    count(*) FILTER (WHERE s.outcome = 'fault') / count(*) AS fault_rate,
    count(*) FILTER (WHERE s.outcome <> 'ok') / count(*) AS error_rate
FROM steps s
JOIN episodes e USING (episode_id)
WHERE s.step > coalesce(e.fork_step, 0)
GROUP BY s.tool
ORDER BY calls DESC, s.tool
