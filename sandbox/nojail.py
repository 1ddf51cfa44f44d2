"""No isolation (``isolation="none"``, ``--allow-unsandboxed``): the sample server runs as a plain process with
rlimits, a scratch folder and a process-tree kill. Chosen only with an explicit opt-in, because a sample can then
read your files and reach the network."""

from __future__ import annotations

import json

from sandbox.isolation import Jail, ServerProfile
from sandbox.jail import SANDBOX_DIR, jail_interpreter


class NoJail(Jail):
    name = "none"
    isolates = False

    @classmethod
    def find(cls) -> tuple[Jail | None, str]:
        return cls(ServerProfile(namespaced=False), "NO ISOLATION: rlimits and a process-tree kill only"), ""

    def command(self, config: dict, code_fds: dict[str, int]) -> list[str]:
        return [jail_interpreter(), "-I", "-S", "-B", str(SANDBOX_DIR / "sample_server.py"), json.dumps(config)]


JAIL = NoJail
