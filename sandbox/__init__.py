"""Sandboxed execution of untrusted code samples. Importable without evalsuite or torch.

    from sandbox import Executor, Job
    with Executor(workers=2, timeout_s=3.0) as executor:
        for outcome in executor.run(jobs):
            ...

One job per module: :mod:`~sandbox.isolation` (what a jail is, and the registry that picks one by the ``isolation``
option), :mod:`~sandbox.jail` (the allow-list bubblewrap jail), :mod:`~sandbox.nojail` (no jail, opt-in only),
:mod:`~sandbox.cgroups` (memory and process limits across a worker), :mod:`~sandbox.pool` (the workers, harness
side), :mod:`~sandbox.checker` (the trusted test and the verdict, outside the jail), :mod:`~sandbox.sample_server`
(runs candidates, inside the jail), :mod:`~sandbox.channel` (the call channel between the two) and
:mod:`~sandbox.wire` (its plain-value format); :mod:`~sandbox.framing` carries the control frames;
:mod:`~sandbox.differential` checks a candidate EvalPlus's way (inputs and expected outputs, in the checker) and
:mod:`~sandbox.groundtruth` computes those outputs from a problem's ground truth (trusted code, a process apart).
See docs/sandbox.md for the threat model and the rule that decides a pass.

The public API (what evalsuite uses; nothing else of the package is): the names below.
"""

from sandbox.differential import DEFAULT_TIMEOUT_PER_TASK_S, InputSet
from sandbox.groundtruth import compute as compute_ground_truth
from sandbox.isolation import (
    Jail,
    SandboxUnavailable,
    ServerProfile,
    detect_isolation,
    isolation_names,
    isolation_problem,
    register,
    unregister,
)
from sandbox.jail import cache_root
from sandbox.pool import DEFAULT_TIMEOUT_S, Executor, Job, Outcome, UnsandboxedWarning

__all__ = ["DEFAULT_TIMEOUT_PER_TASK_S", "InputSet", "compute_ground_truth", "DEFAULT_TIMEOUT_S", "Executor", "Job",
           "Outcome", "SandboxUnavailable", "UnsandboxedWarning", "detect_isolation", "isolation_names",
           "isolation_problem", "cache_root", "Jail", "ServerProfile", "register", "unregister"]
