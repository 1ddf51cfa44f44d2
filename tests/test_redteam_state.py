"""Red-team suite, kernel state: what one sample can leave in the kernel for a later one (class 1),
what it can take from other workers' samples (class 3) and what it can learn of the host (class 5). One file a
kind of attack, sharing tests/redteam_state_kit.py:

* tests/test_redteam_kernel_state.py: writer/reader pairs over kernel facilities (network namespace, page cache,
  file times, mount ids, scheduler settings, kernel counters...) and the shared inode counter carry no bit;
* tests/test_redteam_learners.py: learners that keep what they learned in kernel state pass nothing;
* tests/test_redteam_denial.py: CPU and memory attackers leave honest samples beside them their verdicts;
* tests/test_redteam_host_info.py: nothing a sample can read names the checkout, the host's name or its counters;
* tests/test_redteam_residual_channels.py: what cannot be closed (page-cache timing, the clock, the dentry cache)
  is measured, and documented in docs/sandbox.md.

This file checks that each kind has enough attacks.
"""

from __future__ import annotations

from test_redteam_denial import CPU_ATTACKS, MEMORY_ATTACKS
from test_redteam_host_info import HOST_ATTACKS
from test_redteam_kernel_state import FACILITIES
from test_redteam_learners import LEARNERS


def test_attack_count_per_class():
    assert len(FACILITIES) + 1 >= 10 and len(LEARNERS) >= 5 and len(HOST_ATTACKS) >= 5
    assert len(CPU_ATTACKS) >= 3 and len(MEMORY_ATTACKS) >= 2

