"""Issue 12, item 3 (SPEC X9): the local server answers loopback names only, and takes
state-changing requests only from its own origin.

Without a token in loopback mode, a page using DNS rebinding (``Host:
rebind.attacker.test`` resolving to 127.0.0.1) could read every session, and a
cross-site ``text/plain`` POST could change the runtime overlay.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import httpx

from helpers import service, write_session
from live_server import free_port, serving, wait_for

EVIL = "rebind.attacker.test"


def test_dns_rebinding_and_cross_site_posts_are_refused(root: Path, cache_dir: Path) -> None:
    write_session(root, "secret", [{"role": "user", "content": "walrus password"}])
    history = service(cache_dir, [root.resolve()])
    with serving(history) as client:
        wait_for(lambda: client.get("/status").json()["state"] == "complete", timeout=30)
        port = client.base_url.port
        assert port is not None
        for path in ("/", "/status", "/search?q=walrus", "/tree", "/sessions/secret"):
            refused = client.get(path, headers={"Host": f"{EVIL}:{port}"})
            assert refused.status_code == 403, path
            assert refused.json() == {"ok": False, "error": "host not allowed", "status": 403}
            assert "walrus" not in refused.text
        for host in (f"127.0.0.1:{port}", f"localhost:{port}", f"[::1]:{port}", "localhost"):
            allowed = client.get("/search?q=walrus", headers={"Host": host})
            assert allowed.status_code == 200 and allowed.json()["hits"], host

        # A cross-site form post (text/plain needs no CORS preflight) changes nothing.
        body = '{"open": ["secret"], "running": ["secret"], "current": "secret"}'
        for origin in (f"http://{EVIL}:{port}", "null", f"http://127.0.0.1:{port + 1}"):
            post = client.post(
                "/runtime",
                content=body,
                headers={"Content-Type": "text/plain", "Origin": origin},
            )
            assert post.status_code == 403, origin
            assert post.json()["error"] == "cross-origin request refused"
        assert history.runtime.open == frozenset()
        hit = client.get("/search?q=walrus").json()["hits"][0]
        assert (hit["open"], hit["running"], hit["current"]) == (False, False, False)

        # The page's own requests (same origin) and agent hosts (no Origin) still work.
        own = client.post("/runtime", content=body, headers={"Origin": f"http://127.0.0.1:{port}"})
        assert own.status_code == 200
        assert client.post("/runtime", json={"open": ["secret"]}).status_code == 200
        assert history.runtime.open == frozenset({"secret"})


def test_allow_remote_accepts_the_configured_names(tmp_path: Path, root: Path) -> None:
    write_session(root, "secret", [{"role": "user", "content": "walrus password"}])
    port = free_port()
    command = [
        sys.executable,
        "-m",
        "convodex",
        "serve",
        "--root",
        str(root),
        "--cache-dir",
        str(tmp_path / "cache"),
        "--port",
        str(port),
        "--allow-remote",
        "--token",
        "t0ken",
        "--allowed-host",
        "history.home.arpa",
    ]
    proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=10) as client:
            deadline = time.monotonic() + 30
            while True:
                try:
                    client.get("/status", headers={"Authorization": "Bearer t0ken"})
                    break
                except httpx.TransportError:
                    assert proc.poll() is None, proc.communicate()[1]
                    assert time.monotonic() < deadline, "serve did not start"
                    time.sleep(0.05)
            auth = {"Authorization": "Bearer t0ken"}
            named = client.get("/status", headers={**auth, "Host": f"history.home.arpa:{port}"})
            assert named.status_code == 200
            assert client.get("/status", headers={**auth, "Host": EVIL}).status_code == 403
            assert client.get("/status", headers={**auth, "Host": "localhost"}).status_code == 200
    finally:
        proc.terminate()
        proc.communicate(timeout=15)
