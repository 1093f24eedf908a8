-- Noise floor by agent and difficulty
--
-- How far apart repeated trials of one instance land, summarised per agent and difficulty: the
-- mean and the largest per-instance standard deviation of the return, the mean success rate,
-- and how many instances were flaky (succeeded in some trials, failed in others). A difference
-- between two agents smaller than this floor is noise. Instances with at least two ended,
-- unforked trials.
WITH per_instance AS (
    SELECT
        coalesce(agent, '(unlabelled)') AS agent,
        difficulty,
        instance_id,
        count(*) AS trials,
        avg(success::INTEGER) AS success_rate,
        stddev_samp(total_return) AS return_stddev
    FROM episodes
    WHERE outcome IS NOT NULL AND forked_from IS NULL
    GROUP BY ALL
    HAVING count(*) >= 2
)
SELECT
    agent,
    difficulty,
    count(*) AS instances,
    sum(trials) AS trials,
    avg(return_stddev) AS mean_return_stddev,
    max(return_stddev) AS max_return_stddev,
    avg(success_rate) AS mean_success_rate,
    count(*) FILTER (WHERE success_rate > 0 AND success_rate < 1) AS flaky_instances
FROM per_instance
GROUP BY agent, difficulty
ORDER BY agent, difficulty
