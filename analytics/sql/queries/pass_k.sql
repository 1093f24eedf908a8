-- pass^k for k = 1..4 by agent and family
--
-- tau-bench's pass^k: the chance that k trials of the same instance all succeed. An instance is
-- one instance id (family, difficulty, seed) played by one agent; with n trials and c successes
-- its pass^k is C(c,k) / C(n,k), and pass^k is the mean of that over the instances with at
-- least k trials (NULL when there are none). One row per agent and family, then one per agent
-- over every family (family '(all)'). Ended episodes, forks left out.
WITH trials AS (
    SELECT
        coalesce(agent, '(unlabelled)') AS agent,
        family,
        instance_id,
        difficulty,
        count(*) AS n,
        count(*) FILTER (WHERE success) AS c
    FROM episodes
    WHERE outcome IS NOT NULL AND forked_from IS NULL
    GROUP BY ALL
),
per_instance AS (
    -- C(c,k)/C(n,k) = prod_{i<k} (c-i)/(n-i): a factor is 0 as soon as c < k.
    SELECT
        agent,
        family,
        n,
        c / n AS p1,
        CASE WHEN n >= 2 THEN (c * (c - 1)) / (n * (n - 1)) END AS p2,
        CASE WHEN n >= 3 THEN (c * (c - 1) * (c - 2)) / (n * (n - 1) * (n - 2)) END AS p3,
        CASE
            WHEN n >= 4 THEN (c * (c - 1) * (c - 2) * (c - 3)) / (n * (n - 1) * (n - 2) * (n - 3))
        END AS p4
    FROM trials
)
SELECT
    agent,
    coalesce(family, '(all)') AS family,
    count(*) AS instances,
    sum(n) AS trials,
    min(n) AS min_trials,
    avg(p1) AS pass_1,
    avg(p2) AS pass_2,
    avg(p3) AS pass_3,
    avg(p4) AS pass_4
FROM per_instance
GROUP BY GROUPING SETS ((agent, family), (agent))
ORDER BY agent, grouping(family), family
