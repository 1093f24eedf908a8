-- Failure taxonomy
--
-- Why episodes failed: each ended, failed episode is labelled with its decisive mistake
-- (projections.mistakes). Per label, how many failures and their share of the agent's
-- failures, the mean step of the mistake, and the mean point of no return (the last step from
-- which the honest solver could still have won; over the failures where it is computed),
-- with the label's definition. First over every agent (agent '(all)'), then per agent; forks
-- are left out.
WITH failed AS (
    SELECT f.label, f.step, f.point_of_no_return, coalesce(e.agent, '(unlabelled)') AS agent
    FROM failures f
    JOIN episodes e USING (episode_id)
    WHERE e.forked_from IS NULL
),
counts AS (
    SELECT
        agent,
        label,
        count(*) AS failures,
        avg(step) AS mean_mistake_step,
        count(point_of_no_return) AS with_point_of_no_return,
        avg(point_of_no_return) AS mean_point_of_no_return
    FROM failed
    GROUP BY GROUPING SETS ((label), (agent, label))
)
SELECT
    coalesce(c.agent, '(all)') AS agent,
    c.label,
    c.failures,
    c.failures / sum(c.failures) OVER (PARTITION BY c.agent) AS share,
    c.mean_mistake_step,
    c.with_point_of_no_return,
    c.mean_point_of_no_return,
    t.description
FROM counts c
LEFT JOIN taxonomy t USING (label)
ORDER BY c.agent IS NOT NULL, c.agent, c.failures DESC, c.label
