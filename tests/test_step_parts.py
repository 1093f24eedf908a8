"""`bench/step_parts.py` (in `make bench`): the README's "where a step goes" comes from it, so
its timers must time what they name, every part must be reached, and the environment must be
left as it was found."""

from __future__ import annotations

import json

from tests.helpers import bench_probe

PROBE = """
import json
import step_parts
originals = [owner.__dict__[name] for _, _, owner, name in step_parts.PARTS]
results = step_parts.main(["--steps", "120", "--rounds", "1"])
restored = all(
    owner.__dict__[name] is f
    for (_, _, owner, name), f in zip(step_parts.PARTS, originals, strict=True)
)
tree = [(label, depth) for label, depth, *_ in step_parts.PARTS]
print(json.dumps([results, restored, tree]))
"""


def test_every_part_is_timed_nested_parts_fit_and_the_wrappers_are_removed():
    # A process of its own: the bench wraps the environment's functions while it runs.
    results, restored, tree = json.loads(bench_probe(PROBE))
    assert restored
    assert set(results) == {"scripted", "serving"}
    for r in results.values():
        parts = r["parts_us"]
        assert r["steps"] > 50
        assert all(parts[label] > 0 for label, _ in tree), parts  # every part was reached
        top = [label for label, depth in tree if depth == 0]
        assert abs(sum(parts[t] for t in top) + r["rest_us"] - r["timed_step_us"]) < 1e-6
        assert r["rest_us"] > 0
        for i, (label, depth) in enumerate(tree):  # children fit inside their parent
            if depth:
                continue
            children = []
            for child, d in tree[i + 1 :]:
                if d == 0:
                    break
                children.append(parts[child])
            assert sum(children) <= parts[label] * 1.001, (label, children)
