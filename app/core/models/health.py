"""Is a model endpoint up? One GET /models, short timeout: `cafbot doctor` and the app's staff
settings page ask the same question the same way. And waiting for a server that is starting."""

from __future__ import annotations

import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass

ENDPOINT_TIMEOUT_S = 3.0


@dataclass(frozen=True)
class Health:
    ok: bool
    detail: str
    fix: str = ""


def endpoint_health(base_url: str, api_key: str | None) -> Health:
    base_url = (base_url or "https://api.openai.com/v1").rstrip("/")
    request = urllib.request.Request(f"{base_url}/models")
    if api_key:
        request.add_header("Authorization", f"Bearer {api_key}")
    try:
        with urllib.request.urlopen(request, timeout=ENDPOINT_TIMEOUT_S) as response:
            return Health(True, f"{base_url}: GET /models answered {response.status}")
    except urllib.error.HTTPError as error:
        fix = "check the API key" if error.code in (401, 403) else "check base_url"
        return Health(False, f"{base_url}: GET /models answered {error.code} {error.reason}", fix)
    except (OSError, ValueError) as error:
        reason = getattr(error, "reason", None) or error
        return Health(False, f"{base_url}: unreachable ({reason})",
                      "start the server, or correct base_url (`cafbot config show`)")


def wait_until_ok(url: str, timeout_s: float, *, while_waiting: Callable[[], None] = lambda: None,
                  interval_s: float = 0.25, request_timeout_s: float = 1.0) -> bool:
    """Poll `GET url` until it answers 200 (True) or `timeout_s` passes (False). `while_waiting`
    runs before each try: it may raise, e.g. when the server's process has exited."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        while_waiting()
        try:
            with urllib.request.urlopen(url, timeout=request_timeout_s) as response:
                if response.status == 200:
                    return True
        except OSError:
            pass
        time.sleep(interval_s)
    return False
