"""`bench/step_throughput.py` (in `make bench`): its caches-cold rows time each step after the
eviction, and only the step; the README's cold figures come from them."""

from __future__ import annotations

from tests.helpers import bench_probe

PROBE = """
import step_throughput as bench

now = [0.0]
bench.clock = lambda: now[0]
order = []

def evict():
    order.append("evict")
    now[0] += 100.0  # an eviction that took long: it must not be counted

def step(call):
    order.append(call)
    now[0] += 1.0

cold = bench._timed(step, ["a", "b", "c"], evict)
warm = bench._timed(step, ["a", "b"], None)
reads = bench.evictor(4)
print(cold, warm, order == ["evict", "a", "evict", "b", "evict", "c", "a", "b"], len(reads()))
"""


def test_the_cold_rows_evict_before_each_step_and_time_only_the_steps():
    cold, warm, ordered, digest = bench_probe(PROBE).split()
    assert float(cold) == 3.0
    assert float(warm) == 2.0
    assert ordered == "True"
    assert digest == "32"  # the eviction reads its buffer through SHA-256
