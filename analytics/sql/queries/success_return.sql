-- Success and return by agent, family and difficulty
--
-- How often each agent succeeds, what it earns and how many steps it takes, per workflow family
-- and difficulty. Ended episodes only (a running episode has no outcome yet); forks are left
-- out, because a fork replays another episode's prefix and is not an attempt of its own.
SELECT
    coalesce(agent, '(unlabelled)') AS agent,
    family,
    difficulty,
    count(*) AS episodes,
    count(*) FILTER (WHERE success) AS successes,
    avg(success::INTEGER) AS success_rate,
    avg(total_return) AS mean_return,
    stddev_samp(total_return) AS return_stddev,
    avg(steps) AS mean_steps
FROM episodes
WHERE outcome IS NOT NULL AND forked_from IS NULL
GROUP BY ALL
ORDER BY agent, family, difficulty
