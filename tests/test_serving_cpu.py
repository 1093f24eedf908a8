"""The benchmarks' CPU readers: `--workers N` serves from child processes, and a server's CPU
a step must count them (`bench/serve_workers.py` reads it with `tree_cpu`)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

from .serving import process_cpu, tree_cpu

SPIN = "import time\nt = time.process_time()\nwhile time.process_time() - t < 3: pass\n"
PARENT = f"import subprocess, sys\nsubprocess.run([sys.executable, '-c', {SPIN!r}])\n"


def test_tree_cpu_counts_a_live_child_that_process_cpu_leaves_out():
    parent = subprocess.Popen([sys.executable, "-c", PARENT], start_new_session=True)
    try:
        whole, own = tree_cpu(parent.pid), process_cpu(parent.pid)
        time.sleep(1.5)  # the child spins all the while; the parent only waits for it
        assert whole() >= 0.8
        assert own() < 0.5
    finally:
        os.killpg(parent.pid, signal.SIGKILL)  # the child too
        parent.wait()
    assert whole() == 0.0  # gone: nothing left to read, and no error
