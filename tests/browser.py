"""A headless Chromium driven over the DevTools protocol through a pipe (``--remote-debugging-pipe``).

No websocket library and no downloaded browser: the system's ``chromium`` reads commands from fd 3 and
answers on fd 4, NUL-separated JSON. Enough for the report tests and the screenshots in docs/: open a
page, evaluate JavaScript, click, set the viewport width, take a PNG.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--hide-scrollbars", "--remote-debugging-pipe"]


def chromium_path() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")


def _pipe_fds(read_end: int, write_end: int) -> None:
    """In the child: move the ends out of the way first, so that neither dup2 clobbers the other."""
    import fcntl

    high_read, high_write = fcntl.fcntl(read_end, fcntl.F_DUPFD, 10), fcntl.fcntl(write_end, fcntl.F_DUPFD, 10)
    os.dup2(high_read, 3)
    os.dup2(high_write, 4)
    os.close(high_read)
    os.close(high_write)


class Browser:
    """One tab; every method blocks until Chromium answers (``timeout_s`` each)."""

    def __init__(self, executable: str | None = None, timeout_s: float = 30.0):
        executable = executable or chromium_path()
        if executable is None:
            raise RuntimeError("chromium is not installed")
        self.timeout_s = timeout_s
        self._profile = tempfile.TemporaryDirectory(prefix="evalsuite-chromium-")
        to_browser_r, self._to_browser = os.pipe()
        self._from_browser, from_browser_w = os.pipe()
        # Chromium's pipe is fd 3 (commands in) and fd 4 (answers out). close_fds=False is safe: Python makes
        # every other fd close-on-exec; only the two dup2'ed in the child are inherited.
        self._proc = subprocess.Popen(
            [executable, *FLAGS, f"--user-data-dir={self._profile.name}", "about:blank"], close_fds=False,
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            preexec_fn=lambda: _pipe_fds(to_browser_r, from_browser_w))
        os.close(to_browser_r)
        os.close(from_browser_w)
        self._buffer = b""
        self._next_id = 0
        targets = self._call("Target.getTargets")["targetInfos"]
        page = next(t for t in targets if t["type"] == "page")
        self._session = self._call("Target.attachToTarget", targetId=page["targetId"], flatten=True)["sessionId"]
        self.send("Page.enable")
        self.send("Runtime.enable")

    # -- protocol ------------------------------------------------------------------------------------
    def _call(self, method: str, session: str | None = None, **params: Any) -> dict[str, Any]:
        self._next_id += 1
        message: dict[str, Any] = {"id": self._next_id, "method": method, "params": params}
        if session:
            message["sessionId"] = session
        os.write(self._to_browser, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + self.timeout_s
        while True:
            reply = self._read(deadline)
            if reply.get("id") == self._next_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})

    def _read(self, deadline: float) -> dict[str, Any]:
        import select

        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self._from_browser], [], [], left)[0]:
                raise TimeoutError("chromium did not answer in time")
            chunk = os.read(self._from_browser, 1 << 20)
            if not chunk:
                raise RuntimeError("chromium exited")
            self._buffer += chunk
        raw, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(raw)

    def send(self, method: str, **params: Any) -> dict[str, Any]:
        return self._call(method, self._session, **params)

    # -- what the tests use --------------------------------------------------------------------------
    def set_width(self, width: int, height: int = 900) -> None:
        self.send("Emulation.setDeviceMetricsOverride", width=width, height=height, deviceScaleFactor=1,
                  mobile=width < 600)

    def open(self, url: str) -> None:
        self.send("Page.navigate", url=url)
        self.wait_for("document.readyState === 'complete' && document.body && "
                      "document.body.getAttribute('data-ready') !== null || "
                      "document.readyState === 'complete' && !!document.getElementById('board')")

    def js(self, expression: str) -> Any:
        result = self.send("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in result:
            raise RuntimeError(f"{expression}: {result['exceptionDetails'].get('text')}")
        return result["result"].get("value")

    def wait_for(self, expression: str) -> None:
        deadline = time.monotonic() + self.timeout_s
        while not self._true(expression):
            if time.monotonic() > deadline:
                raise TimeoutError(f"waited for {expression}")
            time.sleep(0.05)

    def _true(self, expression: str) -> bool:
        """False, not an error, while a navigation swaps the document (no body yet, no context)."""
        try:
            return bool(self.js(f"(function(){{try{{return !!({expression});}}catch(e){{return false;}}}})()"))
        except RuntimeError:
            return False

    def click(self, selector: str) -> None:
        """A real mouse click at the centre of the element's first box (a wrapped link's first line), so a
        covered or hidden element fails the test."""
        box = self.js(f"(function(){{var e=document.querySelector({json.dumps(selector)}); if(!e) return null;"
                      "e.scrollIntoView({block:'center'}); var r=e.getClientRects()[0] || e.getBoundingClientRect();"
                      "return [r.left + r.width/2, r.top + r.height/2, r.width, r.height];})()")
        if not box or box[2] == 0 or box[3] == 0:
            raise AssertionError(f"nothing visible to click at {selector}")
        for kind in ("mousePressed", "mouseReleased"):
            self.send("Input.dispatchMouseEvent", type=kind, x=box[0], y=box[1], button="left", clickCount=1)

    def screenshot(self, path: Path, full_page: bool = True, max_height: int | None = None) -> Path:
        """A PNG of the page from its top: all of it, or its first ``max_height`` pixels."""
        params: dict[str, Any] = {"format": "png", "captureBeyondViewport": full_page}
        if full_page:
            self.js("window.scrollTo(0, 0)")
            width, height = self.js("[document.documentElement.clientWidth, document.documentElement.scrollHeight]")
            params["clip"] = {"x": 0, "y": 0, "width": width, "height": min(height, max_height or height), "scale": 1}
        data = self.send("Page.captureScreenshot", **params)["data"]
        path.write_bytes(base64.b64decode(data))
        return path

    def close(self) -> None:
        try:
            self._call("Browser.close")
        except Exception:  # noqa: BLE001 - closing anyway
            pass
        try:
            self._proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()
        for fd in (self._to_browser, self._from_browser):
            try:
                os.close(fd)
            except OSError:
                pass
        self._profile.cleanup()

    def __enter__(self) -> "Browser":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
