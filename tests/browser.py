"""Open a local HTML file in headless Chromium over the DevTools protocol: console errors, chart state, screenshot.

Chromium is started with ``--remote-debugging-port`` on 127.0.0.1; this module
speaks the protocol through ``websocket-client``. It collects every console
message of level error, every uncaught exception and every browser log error,
records what the page holds at its load event (a listener installed before the
page's own scripts run: ``data-charts``, chart placeholders, and how many of them
hold a drawn plot with drawn traces), waits until the page sets
``document.body.dataset.charts`` (the HTML report sets ``drawn`` or ``failed``),
counts drawn charts, reads the page's visible text and whether a script set
``window.__pwned``, and can capture a PNG. No virtual time: the page runs in real time,
as it does for a plain ``chromium --headless --screenshot``. :class:`Browser` keeps one Chromium
for many pages (a tab each), so a test module starts it once.

As a script: ``python tests/browser.py REPORT.html OUT.png [WIDTH]`` saves a full-page screenshot.
"""

from __future__ import annotations

import base64
import contextlib
import json
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

CANDIDATES = ("chromium", "chromium-browser", "google-chrome", "chrome")


def find_chromium() -> str | None:
    for name in CANDIDATES:
        path = shutil.which(name)
        if path:
            return path
    return None


@dataclass
class PageReport:
    charts: str = ""  # the page's data-charts: drawn, failed or pending (timed out)
    svg_charts: int = 0  # plotly's drawn chart roots (svg.main-svg) in the DOM
    chart_divs: int = 0  # <div class="chart"> placeholders
    errors: list[str] = field(default_factory=list)
    title: str = ""
    screenshot: bytes | None = None
    at_load: dict[str, Any] = field(default_factory=dict)  # charts, divs, drawn: the page at its load event
    pwned: bool = False  # a script of the page's data ran (window.__pwned was set)
    text: str = ""  # document.body.innerText: what a reader sees
    svg_text: list[str] = field(default_factory=list)  # every text the charts drew (ticks, legends, labels)


# Installed before the page's scripts: what the page holds when its load event fires. A chart counts as
# drawn when plotly's root svg holds at least one drawn trace (bars, lines, icicle slices).
AT_LOAD = """
window.addEventListener("load", () => {
  const divs = [...document.querySelectorAll("div.chart")];
  window.__atLoad = {
    charts: document.body.dataset.charts || "",
    divs: divs.length,
    drawn: divs.filter((d) => d.querySelector("svg.main-svg") && d.querySelector("g.trace, g.slice")).length,
  };
});
"""


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class _Session:
    def __init__(self, ws_url: str) -> None:
        import websocket

        self.ws = websocket.create_connection(ws_url, timeout=60, suppress_origin=True)
        self.next_id = 0
        self.events: list[dict[str, Any]] = []

    def call(self, method: str, **params: Any) -> dict[str, Any]:
        self.next_id += 1
        self.ws.send(json.dumps({"id": self.next_id, "method": method, "params": params}))
        while True:
            message = json.loads(self.ws.recv())
            if message.get("id") == self.next_id:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                result: dict[str, Any] = message.get("result", {})
                return result
            self.events.append(message)

    def evaluate(self, expression: str) -> Any:
        result = self.call("Runtime.evaluate", expression=expression, returnByValue=True)
        return result.get("result", {}).get("value")


def _errors(events: list[dict[str, Any]]) -> list[str]:
    found = []
    for event in events:
        method, params = event.get("method"), event.get("params", {})
        if method == "Runtime.exceptionThrown":
            details = params.get("exceptionDetails", {})
            found.append(f"exception: {details.get('exception', {}).get('description') or details.get('text')}")
        elif method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
            found.append(
                "console.error: " + " ".join(str(a.get("value", a.get("description"))) for a in params["args"])
            )
        elif method == "Log.entryAdded" and params.get("entry", {}).get("level") == "error":
            entry = params["entry"]
            found.append(f"log: {entry.get('text')} ({entry.get('url', '')})")
    return found


class Browser:
    """One headless Chromium for many pages: each page opens in a fresh tab (its own document and listeners)."""

    def __init__(self, *, width: int = 1280, timeout_s: float = 60.0) -> None:
        chromium = find_chromium()
        if chromium is None:
            raise FileNotFoundError("no chromium on PATH")
        self.port = _free_port()
        self.width = width
        self._profile = tempfile.TemporaryDirectory(ignore_cleanup_errors=True)
        self.process = subprocess.Popen(
            [
                chromium,
                "--headless",
                "--disable-gpu",
                "--no-sandbox",
                "--no-first-run",
                "--no-default-browser-check",
                "--disable-extensions",
                "--disable-background-networking",
                "--remote-debugging-address=127.0.0.1",
                f"--remote-debugging-port={self.port}",
                f"--user-data-dir={self._profile.name}",
                f"--window-size={width},1000",
                "about:blank",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            _page_ws(self.port, time.monotonic() + timeout_s)  # the DevTools port answers
        except BaseException:
            self.close()
            raise

    def open(self, path: Path, *, timeout_s: float = 90.0, screenshot: bool = False) -> PageReport:
        """Load ``path`` in a new tab, in real time, and report what it holds; the tab is closed after."""
        base = f"http://127.0.0.1:{self.port}/json"
        request = urllib.request.Request(f"{base}/new?about:blank", method="PUT")
        with urllib.request.urlopen(request, timeout=10) as response:
            target = json.loads(response.read())
        try:
            return _drive(target["webSocketDebuggerUrl"], path, timeout_s, screenshot, self.width)
        finally:
            with contextlib.suppress(OSError):
                urllib.request.urlopen(f"{base}/close/{target['id']}", timeout=10).close()

    def close(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self._profile.cleanup()

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def open_page(path: Path, *, timeout_s: float = 90.0, screenshot: bool = False, width: int = 1280) -> PageReport:
    """``path`` in a Chromium of its own (see :class:`Browser` to open many pages in one)."""
    with Browser(width=width) as browser:
        return browser.open(path, timeout_s=timeout_s, screenshot=screenshot)


def _page_ws(port: int, deadline: float) -> str:
    while True:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=5) as response:
                targets = json.loads(response.read())
            for target in targets:
                if target.get("type") == "page":
                    url: str = target["webSocketDebuggerUrl"]
                    return url
        except OSError:
            pass
        if time.monotonic() > deadline:
            raise TimeoutError("chromium did not open its DevTools port")
        time.sleep(0.2)


def _drive(ws_url: str, path: Path, timeout_s: float, screenshot: bool, width: int) -> PageReport:
    deadline = time.monotonic() + timeout_s
    session = _Session(ws_url)
    report = PageReport()
    try:
        for domain in ("Runtime", "Log", "Page"):
            session.call(f"{domain}.enable")
        session.call("Page.addScriptToEvaluateOnNewDocument", source=AT_LOAD)
        session.call("Page.navigate", url=path.resolve().as_uri())
        while time.monotonic() < deadline:
            state = session.evaluate("document.body ? document.body.dataset.charts || '' : ''")
            loaded = session.evaluate("window.__atLoad !== undefined")
            if state in ("drawn", "failed") and loaded:
                break
            time.sleep(0.25)
        report.at_load = session.evaluate("window.__atLoad || {}") or {}
        report.pwned = bool(session.evaluate("window.__pwned !== undefined"))
        report.text = str(session.evaluate("document.body.innerText") or "")
        report.svg_text = list(
            session.evaluate("[...document.querySelectorAll('svg text')].map((t) => t.textContent)") or []
        )
        report.charts = session.evaluate("document.body.dataset.charts || ''") or "pending"
        report.svg_charts = int(session.evaluate("document.querySelectorAll('svg.main-svg').length") or 0)
        report.chart_divs = int(session.evaluate("document.querySelectorAll('div.chart').length") or 0)
        report.title = str(session.evaluate("document.title") or "")
        if screenshot:
            height = int(session.evaluate("document.documentElement.scrollHeight") or 1000)
            session.call(
                "Emulation.setDeviceMetricsOverride",
                width=width,
                height=min(height, 16000),
                deviceScaleFactor=1,
                mobile=False,
            )
            # Re-lay out every chart at the new size and wait for it, so the capture is not mid-resize.
            session.call(
                "Runtime.evaluate",
                expression="Promise.all([...document.querySelectorAll('div.chart')].map(Plotly.Plots.resize))",
                awaitPromise=True,
            )
            time.sleep(0.5)
            shot = session.call("Page.captureScreenshot", format="png", captureBeyondViewport=True)
            report.screenshot = base64.b64decode(shot["data"])
        session.call("Runtime.evaluate", expression="0")  # drain events that arrived meanwhile
        report.errors = _errors(session.events)
    finally:
        session.ws.close()
    return report


if __name__ == "__main__":
    html_path, png_path = Path(sys.argv[1]), Path(sys.argv[2])
    shot_width = int(sys.argv[3]) if len(sys.argv) > 3 else 1280
    page = open_page(html_path, screenshot=True, width=shot_width)
    if page.errors or page.charts != "drawn":
        sys.exit(f"{html_path}: charts {page.charts}, errors: {page.errors}")
    assert page.screenshot is not None
    png_path.write_bytes(page.screenshot)
    print(f"{png_path}: {len(page.screenshot):,} bytes, {page.svg_charts} charts")
