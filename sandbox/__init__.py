"""Sandboxed execution of untrusted code samples. Importable without evalsuite or torch.

    from sandbox import Executor, Job
    with Executor(workers=2, timeout_s=3.0) as executor:
        for outcome in executor.run(jobs):
            ...

See docs/sandbox.md for the isolation modes and the rule that decides a pass.
"""

from sandbox.executor import Executor, Job, Outcome, UnsandboxedWarning
from sandbox.isolation import SandboxUnavailable, detect_isolation

__all__ = ["Executor", "Job", "Outcome", "SandboxUnavailable", "UnsandboxedWarning", "detect_isolation"]
