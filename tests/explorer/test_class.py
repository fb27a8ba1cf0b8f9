"""Serving a class: the class token beyond loopback, the Host and Origin rules, and the heavy-job queue (one
running job per client, light requests beside it). No timing thresholds: blocking fakes and events."""

import threading
import time

import pytest
from fastapi.testclient import TestClient

from attnlab.explorer.server import addresses, classroom
from attnlab.explorer.server.app import create_app
from attnlab.explorer.server.clients import CLIENT_COOKIE
from attnlab.explorer.server.fair_queue import MAX_HEAVY_WAITING
from attnlab.explorer.views.experiments.sweeps import compute as experiments

TOKEN = "Zx4-class_token-0123"
LAN = "192.168.1.20"
SWEEP = {"model": "toy", "text": "the cat sat"}
ATTENTION = {"model": "toy", "text": "the cat sat", "layer": 0, "head": 0}


_IDS: dict = {}


def _client_cookie(app, letter: str) -> dict:
    """The cookie of browser `letter` on `app`: an id the app issued to the test client's address."""
    key = (id(app), letter)
    if key not in _IDS:
        _IDS[key] = app.state.runner.ids.issue("testclient")
    return {"cookie": f"{CLIENT_COOKIE}={_IDS[key]}"}


def _wait_for(predicate, what: str, seconds: float = 20.0) -> None:
    """Poll until predicate() holds (the bound only catches a hang; nothing is timed)."""
    end = time.monotonic() + seconds
    while not predicate():
        assert time.monotonic() < end, f"timed out waiting for {what}"
        time.sleep(0.01)


@pytest.fixture()
def classroom_app(registry):
    return create_app(registry, host=LAN, class_token=TOKEN)


def test_beyond_loopback_a_request_without_the_class_token_is_refused(classroom_app):
    with TestClient(classroom_app, base_url=f"http://{LAN}:8000") as c:
        for path in ("/", "/api/models", "/static/app.js"):
            r = c.get(path)
            assert r.status_code == 403, path
            assert "class token" in r.json()["detail"] and "?class=" in r.json()["detail"]
        r = c.get("/api/models", params={"class": "Wrong-token-but-long-enough"})
        assert r.status_code == 403 and "Wrong-token" not in r.text  # a guess is never echoed
        r = c.post("/api/attention", json=ATTENTION, headers={"origin": f"http://{LAN}:8000"})
        assert r.status_code == 403


def test_the_class_address_admits_the_browser_and_keeps_the_token_in_a_cookie(classroom_app):
    with TestClient(classroom_app, base_url=f"http://{LAN}:8000") as c:
        r = c.get("/", params={"class": TOKEN})
        assert r.status_code == 200
        cookies = r.headers.get_list("set-cookie")
        assert any(s.startswith(f"{classroom.CLASS_COOKIE}={TOKEN};") and "HttpOnly" in s for s in cookies)
        assert any(s.startswith(f"{CLIENT_COOKIE}=") for s in cookies)
        assert c.get("/api/models").status_code == 200  # the cookie from here on
        r = c.post("/api/attention", json=ATTENTION, headers={"origin": f"http://{LAN}:8000"})
        assert r.status_code == 200
    with TestClient(classroom_app, base_url=f"http://{LAN}:8000") as c:  # a script: the header
        assert c.get("/api/models", headers={classroom.CLASS_HEADER: TOKEN}).status_code == 200


@pytest.mark.parametrize("host, status", [(f"{LAN}:8000", 200), ("localhost:8000", 200), ("127.0.0.1", 200),
                                          ("192.168.1.21:8000", 403), ("10.0.0.5", 403),
                                          ("lab.attacker.example:8000", 403)])
def test_a_class_serves_its_own_address_and_loopback_and_no_other_host(classroom_app, host, status):
    with TestClient(classroom_app, base_url=f"http://{LAN}:8000") as c:
        r = c.get("/api/models", headers={"host": host, classroom.CLASS_HEADER: TOKEN})
        assert r.status_code == status, host


@pytest.mark.parametrize("origin, status", [(f"http://{LAN}:8000", 200), ("http://evil.example", 403),
                                            (f"http://{LAN}:9000", 403), ("null", 403)])
def test_a_class_takes_posts_from_its_own_page_only(classroom_app, origin, status):
    with TestClient(classroom_app, base_url=f"http://{LAN}:8000") as c:
        r = c.post("/api/attention", json=ATTENTION,
                   headers={"origin": origin, classroom.CLASS_HEADER: TOKEN})
        assert r.status_code == status, origin


def test_default_loopback_use_needs_no_token(registry):
    with TestClient(create_app(registry), base_url="http://localhost") as c:
        r = c.get("/api/models")
        assert r.status_code == 200 and "set-cookie" not in r.headers
        r = c.get("/")
        assert r.status_code == 200
        assert not any(s.startswith(classroom.CLASS_COOKIE) for s in r.headers.get_list("set-cookie"))
        assert c.get("/api/models", headers={"host": LAN}).status_code == 403  # as before: loopback only


def test_create_app_refuses_a_token_that_cannot_be_a_cookie_and_a_bad_heavy_slot_count(registry):
    from attnlab.errors import InputError

    with pytest.raises(InputError, match="class_token: a class token is 16 to 64"):
        create_app(registry, class_token="x; Path=/evil-cookie-1")
    with pytest.raises(InputError, match="heavy_concurrent=0: allowed a positive integer"):
        create_app(registry, heavy_concurrent=0)


def test_class_tokens_are_random_and_checked():
    assert classroom.new_token() != classroom.new_token() and len(classroom.new_token()) >= 16
    assert classroom.check_token("a" * 16) == "a" * 16
    for bad in ("short", "has space in it here", "x" * 65, "semi;colon;token;x"):
        with pytest.raises(ValueError, match="16 to 64"):
            classroom.check_token(bad)


class _BlockingSweep:
    """A head sweep that runs until released, counting how many run at once."""

    def __init__(self):
        self.lock = threading.Lock()
        self.running = self.peak = self.calls = 0
        self.started = threading.Event()
        self.release = threading.Event()

    def __call__(self, lm, text, **kw):
        with self.lock:
            self.running += 1
            self.calls += 1
            self.peak = max(self.peak, self.running)
        self.started.set()
        try:
            assert self.release.wait(30)
            return {"grid": [[0.0]], "cancelled": False}
        finally:
            with self.lock:
                self.running -= 1


def _post_in_thread(c, path, body, headers, answers):
    t = threading.Thread(target=lambda: answers.append(c.post(path, json=body, headers=headers)))
    t.start()
    return t


def test_one_clients_second_heavy_job_waits_and_another_client_goes_first(registry, monkeypatch):
    sweep = _BlockingSweep()
    monkeypatch.setattr(experiments, "head_sweep_grid", sweep)
    app = create_app(registry, heavy_concurrent=2)
    answers: list = []
    with TestClient(app, base_url="http://localhost") as c:
        a, b = _client_cookie(app, "a"), _client_cookie(app, "b")
        first = _post_in_thread(c, "/api/experiments/head-sweep", SWEEP, a, answers)
        assert sweep.started.wait(20)
        second = _post_in_thread(c, "/api/experiments/head-sweep", SWEEP, a, answers)
        _wait_for(lambda: c.get("/api/queue", headers=a).json()["mine_waiting"] == [1], "a's second job to queue")
        status = c.get("/api/queue", headers=a).json()
        assert status["mine_running"] and status["running"] == 1  # a free slot, yet a's second job waits
        other = _post_in_thread(c, "/api/experiments/head-sweep", SWEEP, b, answers)  # b is not a
        _wait_for(lambda: sweep.running == 2, "b's job to start beside a's first")
        assert c.get("/api/queue", headers=a).json()["mine_waiting"] == [1]
        assert c.get("/api/queue", headers=b).json() == {"running": 2, "slots": 2, "waiting": 1,
                                                          "mine_running": True, "mine_waiting": []}
        sweep.release.set()
        for t in (first, second, other):
            t.join(30)
    assert [r.status_code for r in answers] == [200, 200, 200]
    assert sweep.calls == 3 and sweep.peak == 2  # a's two jobs never ran at once


def test_a_client_with_too_many_queued_heavy_jobs_is_told_its_place(registry, monkeypatch):
    sweep = _BlockingSweep()
    monkeypatch.setattr(experiments, "head_sweep_grid", sweep)
    answers: list = []
    app = create_app(registry)
    with TestClient(app, base_url="http://localhost") as c:
        a = _client_cookie(app, "a")
        threads = [_post_in_thread(c, "/api/experiments/head-sweep", SWEEP, a, answers)]
        assert sweep.started.wait(20)
        for _ in range(MAX_HEAVY_WAITING):
            threads.append(_post_in_thread(c, "/api/experiments/head-sweep", SWEEP, a, answers))
        _wait_for(lambda: len(c.get("/api/queue", headers=a).json()["mine_waiting"]) == 2, "two queued")
        r = c.post("/api/experiments/head-sweep", json=SWEEP, headers=a)
        assert r.status_code == 429 and "2 heavy jobs (sweeps, patching grids, streams) waiting" in r.json()["detail"]
        assert "places 1, 2 of 2" in r.json()["detail"]
        sweep.release.set()
        for t in threads:
            t.join(30)
    assert sorted(r.status_code for r in answers) == [200] * 3 and sweep.peak == 1


def test_a_light_request_is_answered_while_heavy_jobs_hold_every_heavy_slot(registry, monkeypatch):
    sweep = _BlockingSweep()
    monkeypatch.setattr(experiments, "head_sweep_grid", sweep)
    answers: list = []
    app = create_app(registry, max_concurrent=1)
    with TestClient(app, base_url="http://localhost") as c:
        holder = _post_in_thread(c, "/api/experiments/head-sweep", SWEEP, _client_cookie(app, "a"), answers)
        assert sweep.started.wait(20)
        try:
            assert c.post("/api/attention", json=ATTENTION, headers=_client_cookie(app, "b")).status_code == 200
            assert c.get("/api/architecture/toy", headers=_client_cookie(app, "b")).status_code == 200
            assert c.post("/api/attention", json=ATTENTION,  # the sweep's own client too
                          headers=_client_cookie(app, "a")).status_code == 200
        finally:
            sweep.release.set()
            holder.join(30)
    assert answers[0].status_code == 200


def test_heavy_paths_are_the_sweeps_streams_and_measurements():
    assert classroom.is_heavy("/api/experiments/head-sweep", "")
    assert classroom.is_heavy("/api/cost/toy", "n=8&measure=true")
    assert classroom.is_heavy("/api/cost/toy", "measure=1") and classroom.is_heavy("/api/cost/toy", "measure=ON")
    assert not classroom.is_heavy("/api/cost/toy", "n=8") and not classroom.is_heavy("/api/cost/toy", "measure=0")
    assert not classroom.is_heavy("/api/experiments/ablation", "")


def _start(argv, monkeypatch):
    """Run `attnlab explore ARGV` with uvicorn replaced: (what uvicorn was asked, the app)."""
    import uvicorn

    from attnlab.cli import build_parser

    seen = {}
    monkeypatch.setattr(uvicorn, "run", lambda app, host, port, log_level: seen.update(app=app, host=host, port=port))
    monkeypatch.setattr(addresses, "machine_addresses", lambda: [LAN])
    args = build_parser().parse_args(["explore", "--no-browser", *argv])
    assert args.run(args) == 0
    return seen


def test_explore_class_listens_beyond_loopback_and_prints_the_address_with_its_token(monkeypatch, capsys):
    seen = _start(["--class", "--port", "8123"], monkeypatch)
    out = capsys.readouterr().out
    assert seen["host"] == classroom.every_interface() and seen["host"] in ("", "0.0.0.0")  # IPv4 and IPv6, or IPv4
    url = next(w for w in out.split() if w.startswith("http://"))
    assert url.startswith(f"http://{LAN}:8123/?class=")
    token = url.split("?class=")[1]
    assert len(token) >= 16 and "class token is required" in out
    with TestClient(seen["app"], base_url=f"http://{LAN}:8123") as c:
        assert c.get("/api/models").status_code == 403
        assert c.get(f"/?class={token}").status_code == 200 and c.get("/api/models").status_code == 200


def test_a_host_beyond_loopback_always_takes_a_token_and_loopback_takes_none(monkeypatch, capsys):
    seen = _start(["--host", "0.0.0.0", "--class-token", TOKEN], monkeypatch)
    assert f"http://{LAN}:8000/?class={TOKEN}" in capsys.readouterr().out
    with TestClient(seen["app"], base_url=f"http://{LAN}:8000") as c:
        assert c.get("/api/models").status_code == 403
    seen = _start([], monkeypatch)
    out = capsys.readouterr().out
    assert seen["host"] == "127.0.0.1" and "http://localhost:8000/ " in out and "class" not in out
    with TestClient(seen["app"], base_url="http://localhost:8000") as c:
        assert c.get("/api/models").status_code == 200


def test_a_class_on_loopback_listens_on_loopback_only_and_still_takes_the_token(monkeypatch, capsys):
    seen = _start(["--class", "--host", "127.0.0.1", "--class-token", TOKEN], monkeypatch)
    assert seen["host"] == "127.0.0.1" and f"http://localhost:8000/?class={TOKEN}" in capsys.readouterr().out
    with TestClient(seen["app"], base_url="http://localhost:8000") as c:
        assert c.get("/api/models").status_code == 403
        assert c.get("/api/models", headers={classroom.CLASS_HEADER: TOKEN}).status_code == 200


def test_a_bad_class_token_is_one_line_naming_what_is_allowed(monkeypatch):
    from attnlab.cli import build_parser
    from attnlab.errors import InputError

    args = build_parser().parse_args(["explore", "--no-browser", "--class", "--class-token", "abc"])
    with pytest.raises(InputError, match="--class-token: a class token is 16 to 64 characters"):
        args.run(args)
