"""Whether the Hugging Face hub can be reached: one probe, shared by dataset loading and model loading.

Why: without network the hub libraries retry for about 25 s before failing; one TCP connect (2 s at most,
once per process and endpoint) decides at once whether to go offline (datasets) or refuse in one line (a
model that is not cached). With a proxy configured a direct connect proves nothing, so the hub is assumed
reachable and the libraries decide.
"""

from __future__ import annotations

import os
import socket
from urllib.parse import urlparse

PROBE_TIMEOUT_S = 2.0
PROXY_VARIABLES = ("HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy")
_probed: dict[str, str | None] = {}  # endpoint -> None (reachable) or why not


def hub_endpoint() -> str:
    from huggingface_hub import constants

    return constants.ENDPOINT


def hub_host(endpoint: str | None = None) -> str:
    return urlparse(endpoint or hub_endpoint()).hostname or "huggingface.co"


def hub_unreachable_reason(endpoint: str | None = None) -> str | None:
    """None when a TCP connection to the hub opens (or a proxy is configured), else the connection error."""
    if any(os.environ.get(name) for name in PROXY_VARIABLES):
        return None
    endpoint = endpoint or hub_endpoint()
    if endpoint not in _probed:
        parsed = urlparse(endpoint)
        port = parsed.port or (443 if parsed.scheme == "https" else 80)
        try:
            socket.create_connection((hub_host(endpoint), port), timeout=PROBE_TIMEOUT_S).close()
            _probed[endpoint] = None
        except OSError as exc:
            _probed[endpoint] = str(exc) or type(exc).__name__
    return _probed[endpoint]


def hub_reachable(endpoint: str | None = None) -> bool:
    return hub_unreachable_reason(endpoint) is None
