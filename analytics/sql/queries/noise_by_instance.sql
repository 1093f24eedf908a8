-- Noise across repeated trials, per instance
--
-- For every instance an agent played more than once (same instance id: family, difficulty,
-- seed): how many trials, the share that succeeded, and the mean and the standard deviation
-- (sample) of the return. What varies here is the agent's own chance and the chance drawn
-- during play, not the task. Ended episodes, forks left out.
SELECT
    coalesce(agent, '(unlabelled)') AS agent,
    family,
    difficulty,
    instance_id,
    count(*) AS trials,
    avg(success::INTEGER) AS success_rate,
    avg(total_return) AS mean_return,
    stddev_samp(total_return) AS return_stddev
FROM episodes
WHERE outcome IS NOT NULL AND forked_from IS NULL
GROUP BY ALL
HAVING count(*) >= 2
ORDER BY agent, difficulty, instance_id
