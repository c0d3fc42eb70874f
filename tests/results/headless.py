"""A real headless Chromium, driven over the DevTools protocol on a pipe (--remote-debugging-pipe:
commands in on fd 3, replies and events out on fd 4, each message ended by a NUL byte), so a test
opens a page, runs its scripts, clicks, reads the DOM and takes a screenshot with no port and no
package beyond the browser. As root it runs in a network namespace of its own (`unshare --net`):
the network is off for the page, and every request it tries is recorded besides."""

from __future__ import annotations

import base64
import json
import os
import select
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--disable-extensions", "--hide-scrollbars", "--mute-audio")


def chromium_path() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


class Chromium:
    def __init__(self, profile: Path, width: int = 1280, height: int = 900):
        commands_read, self._commands = os.pipe()
        self._replies, replies_write = os.pipe()
        argv = [chromium_path(), *FLAGS, f"--user-data-dir={profile}", "--remote-debugging-pipe", f"--window-size={width},{height}"]
        wrapper = ["bash", "-c", f'exec "$@" 3<&{commands_read} 4>&{replies_write}', "chromium", *argv]
        self.isolated = os.geteuid() == 0 and shutil.which("unshare") is not None
        self.process = subprocess.Popen((["unshare", "--net", "--"] if self.isolated else []) + wrapper,
                                        pass_fds=(commands_read, replies_write), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.close(commands_read)
        os.close(replies_write)
        self._buffer = b""
        self._next = 0
        self.events: list[dict[str, Any]] = []
        target = self.call("Target.createTarget", url="about:blank")["targetId"]
        self.session = self.call("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
        for domain in ("Page", "Network", "Runtime", "Log"):
            self.call(f"{domain}.enable", session=True)
        self.call("Emulation.setDeviceMetricsOverride", session=True, width=width, height=height, deviceScaleFactor=1, mobile=False)

    def call(self, method: str, session: bool = False, timeout: float = 30.0, **params: Any) -> dict[str, Any]:
        self._next += 1
        message: dict[str, Any] = {"id": self._next, "method": method, "params": params}
        if session:
            message["sessionId"] = self.session
        os.write(self._commands, json.dumps(message).encode() + b"\0")
        while True:
            reply = self._receive(timeout)
            if reply.get("id") == self._next:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            self.events.append(reply)

    def _receive(self, timeout: float) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self._replies], [], [], left)[0]:
                raise TimeoutError("Chromium did not answer in time")
            chunk = os.read(self._replies, 1 << 20)
            if not chunk:
                raise RuntimeError("Chromium closed its pipe")
            self._buffer += chunk
        message, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(message)

    def wait_for(self, method: str, timeout: float = 30.0) -> dict[str, Any]:
        for event in self.events:
            if event.get("method") == method:
                self.events.remove(event)
                return event
        deadline = time.monotonic() + timeout
        while True:
            event = self._receive(max(0.1, deadline - time.monotonic()))
            if event.get("method") == method:
                return event
            self.events.append(event)

    def open(self, url: str) -> None:
        self.events.clear()
        if "loaderId" in self.call("Page.navigate", session=True, url=url):  # none: only the #fragment changed
            self.wait_for("Page.loadEventFired")

    def run(self, expression: str) -> Any:
        """The value of a JavaScript expression in the page (JSON-able values)."""
        result = self.call("Runtime.evaluate", session=True, expression=expression, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in result:
            raise RuntimeError(f"{expression[:80]}: {result['exceptionDetails'].get('exception', {}).get('description')}")
        return result["result"].get("value")

    def screenshot(self, path: Path, whole_page: bool = True) -> Path:
        data = self.call("Page.captureScreenshot", session=True, format="png", captureBeyondViewport=whole_page)["data"]
        path.write_bytes(base64.b64decode(data))
        return path

    def requests(self) -> list[str]:
        """Every URL the page asked for since it was opened."""
        return [event["params"]["request"]["url"] for event in self.events if event.get("method") == "Network.requestWillBeSent"]

    def errors(self) -> list[str]:
        """Script exceptions and errors the console logged (a blocked script, a CSP violation)."""
        found = [event["params"]["exceptionDetails"].get("text", "") for event in self.events if event.get("method") == "Runtime.exceptionThrown"]
        found += [event["params"]["entry"]["text"] for event in self.events
                  if event.get("method") == "Log.entryAdded" and event["params"]["entry"]["level"] == "error"]
        return found

    def close(self) -> None:
        try:
            self.call("Browser.close", timeout=5)
        except (RuntimeError, TimeoutError, OSError):
            pass
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        for fd in (self._commands, self._replies):
            try:
                os.close(fd)
            except OSError:
                pass
