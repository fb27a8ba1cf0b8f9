"""A class at once: simulated students on one explorer served for a class, on loopback only, with two clients
that try to take more than their share.

    python -m attnlab.benchmarks.explorer_class                        # 30 students for 120 s, both abusers
    python -m attnlab.benchmarks.explorer_class --students 30 --seconds 90 --models gpt-char --json out.json

Why: a teacher serves one explorer (`attnlab explore --class`) to a class on two cores. What each student feels
is the time of the light answers (an attention map, the logit lens, one ablation, a model's page) while others
run sweeps, and how long a sweep waits. The targets: p95 of the honest students' light answers <= 1 s, no 503
for anyone, an honest heavy job started after at most one job of each other client, every heavy job finished
or cancelled, the server's memory flat.

How: the explorer runs as its own process (`attnlab explore --class --host 127.0.0.1`, so the class token, the
client ids and the fair queues are the ones a class gets) and its resident memory is sampled every second. Each
student is a thread with its own cookies (the class token, its client id) and its own source address
(127.0.0.10 and up: a class's students sit at their own machines), that opens the page with the class address
and then walks the tour's requests with a seeded think time of THINK seconds between them; one in three works on
SmolLM2 (when its package is installed and --models allows), the others on gpt-char. A student starts a head
sweep now and then (HEAVY_SHARE of its actions) and gives up on it after PATIENCE seconds (it closes the
connection: the server stops the sweep or drops it from the queue; counted as cancelled). Beside them, from
addresses of their own: a flooder sends --flood light requests at once, again as soon as they are answered; a
rotator opens the page as --rotated new browsers (fresh cookies each) and queues --sweeps-each head sweeps from
each, again when they are done. Students start no new action after --seconds; the run ends when the last one
returns (bounded by PATIENCE). Which jobs ran before an honest sweep is read from the clients' side: with one
heavy slot, the sweeps that ended after it was sent and before it ended ran before it, less the one already
running when it was sent. Nothing here is a test; the machine's load is printed with the figures.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import socket
import statistics
import subprocess
import sys
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

THINK = (2.0, 8.0)  # seconds a student reads between two requests (uniform, seeded per student)
HEAVY_SHARE = 0.12  # of a student's actions, the share that is a head sweep
PATIENCE = 90.0  # seconds a student waits for a sweep before giving up on it
LIGHT_TIMEOUT = 120.0  # a light request not answered by then counts as failed
TOKEN = "class-benchmark-token-0001"
# each student types its own variant (a name at the end), so the views' caches of a text's forward do not answer
# every request: a class does not all type one sentence
TEXTS = {"gpt-char": "the cat sat on the mat. the cat sat", "smollm2": "The Eiffel Tower is in the city of"}
NAMES = ["Ada", "Ben", "Chloe", "Dev", "Emma", "Femi", "Gus", "Hana", "Ivan", "Jo"]
SHAPES = {"gpt-char": (4, 4), "smollm2": (30, 9)}  # (layers, heads)
FLOODER, ROTATOR = "127.0.0.250", "127.0.0.251"  # the abusers' source addresses; students: 127.0.0.10 and up


def student_address(index: int) -> str:
    return f"127.0.0.{10 + index}"


KEEPALIVE = 4.0  # seconds a client keeps an idle connection: under uvicorn's 5, so it never sends on one being closed


def _client(base: str, address: str, parallel: int = 10):
    """An httpx client from `address` (a loopback address of its own: the server tells clients apart by it)."""
    import httpx

    limits = httpx.Limits(max_connections=parallel, keepalive_expiry=KEEPALIVE)
    transport = httpx.HTTPTransport(local_address=address, limits=limits)
    return httpx.Client(base_url=base, headers={"origin": base}, transport=transport)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _smollm2_installed() -> bool:
    from attnlab.explorer.server.registry import build_registry

    entries = build_registry(shipped=False).list()
    return any(e["id"] == "smollm2" and e["available"] for e in entries)


def start_server(port: int) -> subprocess.Popen:
    """`attnlab explore` for a class, on loopback, as its own process; returns once it answers."""
    import httpx

    cmd = [sys.executable, "-c", "import sys; from attnlab.cli import main; sys.exit(main())", "explore",
           "--class", "--class-token", TOKEN, "--host", "127.0.0.1", "--port", str(port), "--no-browser"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    end = time.monotonic() + 120
    while time.monotonic() < end:
        if proc.poll() is not None:
            raise RuntimeError(f"the explorer did not start: {proc.stderr.read()[-400:]}")
        try:
            httpx.get(f"http://127.0.0.1:{port}/api/models", headers={"x-attnlab-class": TOKEN}, timeout=2)
            return proc
        except httpx.HTTPError:
            time.sleep(0.5)
    proc.kill()
    raise RuntimeError("the explorer did not answer within 120 s")


def stop_server(proc: subprocess.Popen, grace: float = 15.0) -> None:
    """Stop an explorer running as its own process: asked to exit, then killed if it has not after `grace` s."""
    proc.terminate()
    try:
        proc.wait(grace)
    except subprocess.TimeoutExpired:
        proc.kill()


class Student(threading.Thread):
    """One browser: joins with the class address, then walks the tour's requests until `until`."""

    def __init__(self, index: int, base: str, model: str, until: float, seed: int, log: list, lock):
        super().__init__(daemon=True)
        self.index, self.base, self.model, self.until = index, base, model, until
        self.rng = random.Random(seed * 1000 + index)
        self.log, self.lock = log, lock

    def record(self, **row) -> None:
        with self.lock:
            self.log.append({"student": self.index, "model": self.model, **row})

    def text(self) -> str:
        """The tour's sentence with a name of the student's choosing before it (one of ten)."""
        return f"{self.rng.choice(NAMES)} said: {TEXTS[self.model]}"

    def actions(self):
        layers, heads = SHAPES[self.model]
        layer, head = self.rng.randrange(layers), self.rng.randrange(heads)
        text, m = self.text(), self.model
        return [("light", "GET", f"/api/models/{m}", None),
                ("light", "POST", "/api/attention", {"model": m, "text": text, "layer": layer, "head": head}),
                ("light", "POST", "/api/experiments/logit-lens", {"model": m, "text": text}),
                ("light", "POST", "/api/experiments/ablation", {"model": m, "text": text, "heads": [[layer, head]]}),
                ("light", "GET", f"/api/architecture/{m}?n=8", None)]

    def run(self) -> None:
        with _client(self.base, student_address(self.index)) as client:
            client.get(f"/?class={TOKEN}", timeout=LIGHT_TIMEOUT)  # the class address: the cookies from here on
            while time.monotonic() < self.until:
                time.sleep(self.rng.uniform(*THINK))
                if self.rng.random() < HEAVY_SHARE:
                    self.sweep(client)
                else:
                    self.light(client, self.rng.choice(self.actions()))

    def light(self, client, action) -> None:
        import httpx

        _, method, path, body = action
        t0 = time.perf_counter()
        try:
            r = client.request(method, path, json=body, timeout=LIGHT_TIMEOUT)
            status = r.status_code
        except httpx.HTTPError as exc:
            status = type(exc).__name__
        self.record(kind="light", path=path.split("?")[0].rsplit("/", 1)[0] if method == "GET" else path,
                    status=status, seconds=time.perf_counter() - t0)

    def sweep(self, client) -> None:
        body = {"model": self.model, "text": self.text()}
        self.record(kind="heavy", path="/api/experiments/head-sweep", client=f"student {self.index}",
                    address=student_address(self.index), **stream_sweep(client, body))


def stream_sweep(client, body: dict) -> dict:
    """One head sweep, read to its end (or given up after PATIENCE): its outcome, when it was sent and when its
    last line came (time.monotonic), and its seconds."""
    import httpx

    sent, ended = time.monotonic(), None
    outcome = "error"
    try:
        with client.stream("POST", "/api/experiments/head-sweep", json=body, timeout=PATIENCE) as r:
            if r.status_code != 200:
                outcome = f"refused {r.status_code}"
            else:
                for line in r.iter_lines():
                    if time.monotonic() - sent > PATIENCE:
                        outcome = "cancelled"
                        break  # closing the stream: the server stops the sweep
                    if line.startswith('{"result"'):
                        outcome, ended = "finished", time.monotonic()
    except httpx.TimeoutException:
        outcome = "cancelled"  # gave up waiting: the connection closes, the server drops the job
    except httpx.HTTPError as exc:
        outcome = type(exc).__name__
    return {"status": outcome, "sent": sent, "ended": ended, "seconds": time.monotonic() - sent}


class Flooder(threading.Thread):
    """One client (one address, one id) sending `parallel` light requests at once, again as soon as they are
    answered, until `until`."""

    def __init__(self, base: str, model: str, parallel: int, until: float, log: list, lock):
        super().__init__(daemon=True)
        self.base, self.model, self.parallel, self.until, self.log, self.lock = base, model, parallel, until, log, lock

    def one(self, client, i: int) -> None:
        import httpx

        body = {"model": self.model, "text": f"flood {i}: {TEXTS[self.model]}", "heads": [[0, i % 4]]}
        t0 = time.perf_counter()
        try:
            status = client.post("/api/experiments/ablation", json=body, timeout=LIGHT_TIMEOUT).status_code
        except httpx.HTTPError as exc:
            status = type(exc).__name__
        with self.lock:
            self.log.append({"kind": "flood", "status": status, "seconds": time.perf_counter() - t0})

    def run(self) -> None:

        with _client(self.base, FLOODER, self.parallel) as client, ThreadPoolExecutor(self.parallel) as pool:
            client.get(f"/?class={TOKEN}", timeout=LIGHT_TIMEOUT)
            n = 0
            while time.monotonic() < self.until:
                list(pool.map(lambda i: self.one(client, i), range(n, n + self.parallel)))
                n += self.parallel


class Rotator(threading.Thread):
    """One address opening the page as `browsers` new browsers (fresh cookies: a new id each, if the server gives
    one) and queuing `each` head sweeps from every one of them at once; again when all are done, until `until`."""

    def __init__(self, base: str, model: str, browsers: int, each: int, until: float, log: list, lock):
        super().__init__(daemon=True)
        self.base, self.model, self.browsers, self.each = base, model, browsers, each
        self.until, self.log, self.lock = until, log, lock

    def browser(self, b: int) -> None:
        with _client(self.base, ROTATOR) as client:
            client.get(f"/?class={TOKEN}", timeout=LIGHT_TIMEOUT)
            cid = client.cookies.get("attnlab_client") or "(none)"

            def sweep(k: int) -> None:
                row = stream_sweep(client, {"model": self.model, "text": f"rotated {b}.{k}: {TEXTS[self.model]}"})
                with self.lock:
                    self.log.append({"kind": "heavy", "client": f"rotator id {cid[:8]}", "address": ROTATOR,
                                     "model": self.model, "path": "/api/experiments/head-sweep", **row})

            with ThreadPoolExecutor(self.each) as pool:
                list(pool.map(sweep, range(self.each)))

    def run(self) -> None:
        while time.monotonic() < self.until:
            with ThreadPoolExecutor(self.browsers) as pool:
                list(pool.map(self.browser, range(self.browsers)))


def ran_before(heavy: list) -> dict:
    """For each honest sweep that finished: the other clients' sweeps that ran between its request and its start,
    counted per client and per address (module docstring: one heavy slot, read from the clients' side)."""
    ended = sorted((r for r in heavy if r["ended"] is not None), key=lambda r: r["ended"])
    per_client, per_address, counts = [], [], []
    for job in (r for r in ended if r["client"].startswith("student")):
        before = [r for r in ended if r is not job and job["sent"] < r["ended"] < job["ended"]][1:]
        by_client = Counter(r["client"] for r in before)
        by_address = Counter(r["address"] for r in before if r["address"] != job["address"])
        per_client.append(max(by_client.values(), default=0))
        per_address.append(max(by_address.values(), default=0))
        counts.append(len(before))
    return {"honest_sweeps": len(counts),
            "most_jobs_of_one_other_client_before_it": max(per_client, default=None),
            "sweeps_with_more_than_one_of_a_client_before_them": sum(n > 1 for n in per_client),
            "most_jobs_of_one_other_address_before_it": max(per_address, default=None),
            "jobs_before_it_p50": statistics.median(counts) if counts else None,
            "jobs_before_it_max": max(counts, default=None)}


def sample_rss(pid: int, stop: threading.Event, samples: list) -> None:
    import psutil

    proc, t0 = psutil.Process(pid), time.monotonic()
    while not stop.is_set():
        try:
            samples.append((time.monotonic() - t0, proc.memory_info().rss / 2**20))
        except psutil.Error:
            return
        stop.wait(1.0)


def warm(base: str, models: list[str]) -> None:
    """Load each model and run one answer before the clock, as the teacher's own first visit would."""
    import httpx

    with httpx.Client(base_url=base, headers={"origin": base, "x-attnlab-class": TOKEN}, timeout=300) as c:
        for m in models:
            c.get(f"/api/models/{m}")
            c.post("/api/experiments/ablation", json={"model": m, "text": TEXTS[m], "heads": [[0, 0]]})
            c.post("/api/experiments/head-sweep", json={"model": m, "text": TEXTS[m]})


def p95(xs: list[float]) -> float:
    return statistics.quantiles(xs, n=20, method="inclusive")[-1] if len(xs) >= 2 else (xs[0] if xs else float("nan"))


def summary(log: list, rss: list, seconds: float) -> dict:
    light = [r for r in log if r["kind"] == "light"]
    heavy = [r for r in log if r["kind"] == "heavy"]
    out: dict = {"light": {}, "heavy": {}, "rss_mib": {}}
    for model in sorted({r["model"] for r in light}):
        times = [r["seconds"] for r in light if r["model"] == model and r["status"] == 200]
        out["light"][model] = {"answers": len(times), "p50_s": statistics.median(times) if times else None,
                               "p95_s": p95(times), "max_s": max(times, default=None)}
    times = [r["seconds"] for r in light if r["status"] == 200]
    out["light"]["all"] = {"answers": len(times), "p50_s": statistics.median(times) if times else None,
                           "p95_s": p95(times), "max_s": max(times, default=None)}
    out["light"]["not_200"] = sorted(f"{r['path']} {r['status']}" for r in light if r["status"] != 200)
    out["light"]["503"] = sum(r["status"] == 503 for r in light)
    flood = [r for r in log if r["kind"] == "flood"]
    times = [r["seconds"] for r in flood if r["status"] == 200]
    out["flood"] = {"answers": len(times), "p50_s": statistics.median(times) if times else None,
                    "statuses": dict(Counter(str(r["status"]) for r in flood))}
    for r in heavy:
        key = f"{'rotator' if r['address'] == ROTATOR else 'students'} {r['model']} {r['status']}"
        out["heavy"][key] = out["heavy"].get(key, 0) + 1
    out["heavy"]["rotator_ids"] = len({r["client"] for r in heavy if r["address"] == ROTATOR})
    out["heavy"]["ran_before_an_honest_sweep"] = ran_before(heavy)
    out["503_anyone"] = sum(r["status"] in (503, "refused 503") for r in log)
    done = [r["seconds"] for r in heavy if r["status"] == "finished" and r["address"] != ROTATOR]
    out["heavy"]["finished_p50_s"] = statistics.median(done) if done else None
    out["heavy"]["finished_max_s"] = max(done, default=None)
    if rss:
        values = [v for _, v in rss]
        out["rss_series_mib"] = [(round(t), round(v, 1)) for t, v in rss[::10]]
        quarter = max(1, len(values) // 4)
        out["rss_mib"] = {"start": values[0], "first_quarter_mean": statistics.fmean(values[:quarter]),
                          "last_quarter_mean": statistics.fmean(values[-quarter:]), "peak": max(values),
                          "end": values[-1]}
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--students", type=int, default=30, help="simulated students, 1..60 (default 30)")
    ap.add_argument("--seconds", type=float, default=120.0, help="how long they start new actions, 10..900")
    ap.add_argument("--models", default="auto", help="auto (gpt-char, and SmolLM2 when installed) or gpt-char")
    ap.add_argument("--flood", type=int, default=20, help="light requests the flooder sends at once, 0..40 (0: none)")
    ap.add_argument("--rotated", type=int, default=10, help="new browsers the rotator opens, 0..20 (0: none)")
    ap.add_argument("--sweeps-each", type=int, default=4, help="head sweeps each rotated browser queues, 1..8")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", help="write the figures here too")
    args = ap.parse_args(argv)
    if not 1 <= args.students <= 60 or not 10 <= args.seconds <= 900:
        ap.error("--students: 1..60; --seconds: 10..900 (bounded: this runs on a shared machine)")
    if not 0 <= args.flood <= 40 or not 0 <= args.rotated <= 20 or not 1 <= args.sweeps_each <= 8:
        ap.error("--flood: 0..40; --rotated: 0..20; --sweeps-each: 1..8")
    if args.models not in ("auto", "gpt-char"):
        ap.error(f"--models {args.models!r}: allowed auto or gpt-char")
    models = ["gpt-char", "smollm2"] if args.models == "auto" and _smollm2_installed() else ["gpt-char"]
    port = _free_port()
    base = f"http://127.0.0.1:{port}"
    load_before = os.getloadavg()
    proc = start_server(port)
    try:
        warm(base, models)
        stop, rss = threading.Event(), []
        sampler = threading.Thread(target=sample_rss, args=(proc.pid, stop, rss), daemon=True)
        sampler.start()
        log: list = []
        lock = threading.Lock()
        until = time.monotonic() + args.seconds
        students = [Student(i, base, models[1] if len(models) > 1 and i % 3 == 0 else models[0], until, args.seed,
                            log, lock) for i in range(args.students)]
        abusers = ([Flooder(base, models[0], args.flood, until, log, lock)] if args.flood else []) + (
            [Rotator(base, models[0], args.rotated, args.sweeps_each, until, log, lock)] if args.rotated else [])
        t0 = time.monotonic()
        for s in [*students, *abusers]:
            s.start()
        for s in [*students, *abusers]:
            s.join(max(1.0, until + PATIENCE + LIGHT_TIMEOUT - time.monotonic()))
        wall = time.monotonic() - t0
        stop.set()
        sampler.join(5)
    finally:
        stop_server(proc)
    figures = summary(log, rss, args.seconds)
    figures.update(students=args.students, seconds=args.seconds, wall_s=wall, models=models,
                   flood_parallel=args.flood, rotated=args.rotated, sweeps_each=args.sweeps_each,
                   still_running=sum(s.is_alive() for s in [*students, *abusers]), load_before=load_before,
                   load_after=os.getloadavg(), cpu=platform.processor() or platform.machine(),
                   cores=os.cpu_count())
    print(json.dumps(figures, indent=1, default=str))
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=1, default=str))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
