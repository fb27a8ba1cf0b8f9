"""A class shared fairly: the queues take turns round robin by address, then by client; client ids are issued by
the server, bound to their address and few per address; a job is cancelled only by its own client; the class
page sends no referrer. The queues are driven directly (their grants are plain data on one event loop) and the
app through blocking fakes: nothing here is timed."""

import asyncio
import threading
import time

import pytest
from fastapi.testclient import TestClient

from attnlab.explorer import api
from attnlab.explorer.server.app import create_app
from attnlab.explorer.server.clients import CLIENT_COOKIE, ID_LIMIT, Client, ClientIds
from attnlab.explorer.server.fair_queue import MAX_HEAVY_WAITING, FairQueue, QueueFull
from attnlab.explorer.views.experiments.sweeps import compute as experiments

TOKEN = "Zx4-class_token-0123"
ATTENTION = {"model": "toy", "layer": 0, "head": 0}
SWEEP = {"model": "toy", "text": "the cat sat"}


def _wait_for(predicate, what: str, seconds: float = 20.0) -> None:
    """Poll until predicate() holds (the bound only catches a hang; nothing is timed)."""
    end = time.monotonic() + seconds
    while not predicate():
        assert time.monotonic() < end, f"timed out waiting for {what}"
        time.sleep(0.01)


def _grants(queue: FairQueue, tickets: list) -> list:
    """Finish the running jobs one at a time and return the names of the tickets in the order they were granted
    (`tickets`: (name, ticket) pairs)."""
    order = [name for name, t in tickets if t in queue.running]
    while queue.running:
        queue.leave(queue.running[0])
        order += [name for name, t in tickets if t in queue.running and name not in order]
    return order


def _gated_attention(monkeypatch) -> tuple:
    """Replace api.attention by a fake that records each request's text, in the order they run, and holds the
    request "a0" until the returned gate is set; returns (gate, order)."""
    gate, order = threading.Event(), []

    def attention(lm, text, layer, head, *args, **kw):
        order.append(text)
        if text == "a0":
            assert gate.wait(30)
        return {"text": text}

    monkeypatch.setattr(api, "attention", attention)
    return gate, order


def test_light_turns_go_round_robin_across_addresses_not_first_come_first_served():
    async def scenario():
        queue = FairQueue(2, "requests")
        flood, honest = Client("10.0.0.9", "f"), Client("10.0.0.5", "h")
        tickets = [(f"flood{i}", queue.join(flood)) for i in range(20)]  # twenty at once, before anyone else
        tickets += [("honest", queue.join(honest))]
        return _grants(queue, tickets)

    order = asyncio.run(scenario())
    assert order[:2] == ["flood0", "flood1"]  # both slots were free
    assert order.index("honest") == 2  # the next slot that frees is the honest client's, not the flood's third


def test_a_heavy_job_starts_after_at_most_one_job_of_each_other_client():
    async def scenario():
        queue = FairQueue(1, "heavy jobs", max_running=1, max_waiting=MAX_HEAVY_WAITING)
        a, b, honest = Client("10.0.0.1", "a"), Client("10.0.0.2", "b"), Client("10.0.0.3", "h")
        tickets = [("a0", queue.join(a)), ("a1", queue.join(a)), ("a2", queue.join(a)),
                   ("b0", queue.join(b)), ("b1", queue.join(b)), ("honest", queue.join(honest))]
        with pytest.raises(QueueFull, match="you already have 2 heavy jobs waiting .* allowed 2 at once"):
            queue.join(a)
        places = queue.places(honest)
        return _grants(queue, tickets), places

    order, places = asyncio.run(scenario())
    assert order == ["a0", "b0", "honest", "a1", "b1", "a2"]
    assert places == [2]  # what the page shows while a0 runs: b0, then this job


def test_many_ids_from_one_address_share_that_address_turn():
    async def scenario():
        queue = FairQueue(1, "heavy jobs", max_running=1, max_waiting=MAX_HEAVY_WAITING)
        rotated = [Client("10.0.0.66", str(i)) for i in range(ID_LIMIT)]
        tickets = [(f"r{i}", queue.join(c)) for i, c in enumerate(rotated) for _ in range(2)]
        tickets += [("other", queue.join(Client("10.0.0.7", "o")))]
        return _grants(queue, tickets)

    order = asyncio.run(scenario())
    assert order.index("other") == 1  # one job of the rotating address, then the other student's


def test_client_ids_are_issued_bound_to_their_address_and_few_per_address():
    now = [0.0]
    ids = ClientIds(clock=lambda: now[0])
    issued = [ids.issue("10.0.0.66") for _ in range(ID_LIMIT)]
    assert None not in issued and len(set(issued)) == ID_LIMIT
    assert ids.issue("10.0.0.66") is None  # the address's quota for the window is spent
    assert ids.issue("10.0.0.7") is not None  # another address has its own
    assert ids.client({CLIENT_COOKIE: issued[0]}, "10.0.0.66") == Client("10.0.0.66", issued[0])
    assert ids.client({CLIENT_COOKIE: issued[0]}, "10.0.0.7") == Client("10.0.0.7")  # copied elsewhere: none
    forged = "0" * 16 + issued[0][16:]
    assert ids.client({CLIENT_COOKIE: forged}, "10.0.0.66") == Client("10.0.0.66")
    now[0] = ids.window
    assert ids.issue("10.0.0.66") is not None  # a new window


def test_rotating_cookies_gets_a_few_ids_at_most(registry):
    with TestClient(create_app(registry), base_url="http://localhost") as c:
        given = set()
        for _ in range(3 * ID_LIMIT):
            c.cookies.clear()  # a new browser each time, from the same address
            r = c.get("/")
            assert r.status_code == 200
            given |= {v for k, v in r.cookies.items() if k == CLIENT_COOKIE}
    assert len(given) == ID_LIMIT


def test_one_clients_parallel_light_requests_wait_behind_another_clients(registry, monkeypatch):
    gate, order = _gated_attention(monkeypatch)
    app = create_app(registry, max_concurrent=1)
    ids = app.state.runner.ids
    a, b = ({"cookie": f"{CLIENT_COOKIE}={ids.issue('testclient')}"} for _ in range(2))
    threads = []
    with TestClient(app, base_url="http://localhost") as c:
        def post(text, headers):
            t = threading.Thread(target=lambda: c.post("/api/attention", json={**ATTENTION, "text": text},
                                                       headers=headers))
            t.start()
            threads.append(t)

        post("a0", a)
        _wait_for(lambda: order == ["a0"], "a's first request to run")
        for i in range(1, 5):
            post(f"a{i}", a)
        _wait_for(lambda: app.state.runner.waiting() == 4, "a's four others to queue")
        post("b0", b)
        _wait_for(lambda: app.state.runner.waiting() == 5, "b's request to queue")
        gate.set()
        for t in threads:
            t.join(30)
    assert order[:2] == ["a0", "b0"]  # b's request goes before a's four that were waiting first
    assert sorted(order[2:]) == ["a1", "a2", "a3", "a4"]


class _BlockingSweep:
    def __init__(self):
        self.started, self.release = threading.Event(), threading.Event()

    def __call__(self, lm, text, *, cancelled=None, **kw):
        self.started.set()
        while not self.release.wait(0.01):
            if cancelled is not None and cancelled():
                return {"grid": [[0.0]], "cancelled": True}
        return {"grid": [[0.0]], "cancelled": False}


def test_only_the_client_that_started_a_job_can_cancel_it(registry, monkeypatch):
    sweep = _BlockingSweep()
    monkeypatch.setattr(experiments, "head_sweep_grid", sweep)
    app = create_app(registry)
    ids = app.state.runner.ids
    owner, other = ({"cookie": f"{CLIENT_COOKIE}={ids.issue('testclient')}"} for _ in range(2))
    answers = []
    with TestClient(app, base_url="http://localhost") as c:
        t = threading.Thread(target=lambda: answers.append(
            c.post("/api/experiments/head-sweep", json={**SWEEP, "job": "job-1"}, headers=owner)))
        t.start()
        assert sweep.started.wait(20)
        r = c.post("/api/experiments/cancel", json={"job": "job-1"}, headers=other)
        assert r.status_code == 200 and r.json()["cancelled"] is False
        assert "no running job of yours" in r.json()["detail"]
        r = c.post("/api/experiments/cancel", json={"job": "job-1"}, headers=owner)
        assert r.json()["cancelled"] is True
        t.join(30)
        sweep.release.set()
    assert answers[0].status_code == 200 and '"cancelled":true' in answers[0].text


def test_the_class_page_sends_no_referrer(registry):
    with TestClient(create_app(registry, host="192.168.1.20", class_token=TOKEN),
                    base_url="http://192.168.1.20:8000") as c:
        page = c.get("/", params={"class": TOKEN})
        assert page.status_code == 200 and page.headers["referrer-policy"] == "no-referrer"
        assert c.get("/static/app.js").headers["referrer-policy"] == "no-referrer"
        assert c.get("/api/models").headers["referrer-policy"] == "no-referrer"


def test_in_a_class_one_client_runs_one_light_request_at_a_time_leaving_a_slot_for_others(registry, monkeypatch):
    gate, order = _gated_attention(monkeypatch)
    lan = "192.168.1.20"
    app = create_app(registry, host=lan, class_token=TOKEN, max_concurrent=2)
    ids = app.state.runner.ids
    a, b = ({"cookie": f"{CLIENT_COOKIE}={ids.issue('testclient')}", "x-attnlab-class": TOKEN,
             "origin": f"http://{lan}:8000"} for _ in range(2))
    answers: list = []
    with TestClient(app, base_url=f"http://{lan}:8000") as c:
        def post(text, headers):
            t = threading.Thread(target=lambda: answers.append(
                c.post("/api/attention", json={**ATTENTION, "text": text}, headers=headers)))
            t.start()
            return t

        threads = [post("a0", a)]
        _wait_for(lambda: order == ["a0"], "a's first request to run")
        threads.append(post("a1", a))
        _wait_for(lambda: app.state.runner.waiting() == 1, "a's second to wait, though a slot is free")
        threads.append(post("b0", b))
        _wait_for(lambda: order == ["a0", "b0"], "b's request to run in the free slot")
        assert app.state.runner.waiting() == 1  # a1 still waits for a0
        gate.set()
        for t in threads:
            t.join(30)
    assert order == ["a0", "b0", "a1"] and [r.status_code for r in answers] == [200, 200, 200]
