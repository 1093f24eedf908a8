-- Every mistake
--
-- All the mistakes agents made, not only the one that lost each failure (the mistakes table,
-- projections.mistakes). Per label: how many mistakes, in how many episodes, how many were
-- decisive (the earliest after which the honest solver, taking over, could no longer succeed),
-- how many were made good later and how many were harmless (a failed read corrected at once),
-- with the label's definition. First over every agent (agent '(all)'), then per agent; forks
-- are left out.
WITH rows AS (
    SELECT m.*, coalesce(e.agent, '(unlabelled)') AS agent
    FROM mistakes m
    JOIN episodes e USING (episode_id)
    WHERE e.forked_from IS NULL
),
counts AS (
    SELECT
        agent,
        label,
        count(*) AS mistakes,
        count(DISTINCT episode_id) AS episodes,
        count(*) FILTER (WHERE decisive) AS decisive,
        count(made_good_at) AS made_good,
        count(*) FILTER (WHERE harmless) AS harmless
    FROM rows
    GROUP BY GROUPING SETS ((label), (agent, label))
)
SELECT
    coalesce(c.agent, '(all)') AS agent,
    c.label,
    c.mistakes,
    c.episodes,
    c.decisive,
    c.made_good,
    c.harmless,
    t.description
FROM counts c
LEFT JOIN taxonomy t USING (label)
ORDER BY c.agent IS NOT NULL, c.agent, c.mistakes DESC, c.label
