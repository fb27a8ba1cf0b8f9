"""A class at once: simulated students on one explorer served for a class, on loopback only.

    python -m attnlab.benchmarks.explorer_class                        # 30 students for 120 s
    python -m attnlab.benchmarks.explorer_class --students 30 --seconds 120 --json out.json

Why: a teacher serves one explorer (`attnlab explore --class`) to a class on two cores. What each student feels
is the time of the light answers (an attention map, the logit lens, one ablation, a model's page) while others
run sweeps; the issue's targets: p95 of light answers <= 1 s, no 503 for a light request, every heavy job (a head
sweep) finishes or is cancelled, and the server's memory flat.

How: the explorer runs as its own process (`attnlab explore --class --host 127.0.0.1`, so the class token and
the heavy-job queue are the ones a class gets) and its resident memory is sampled every second. Each student is a
thread with its own cookies (the class token, its client id) that opens the page with the class address and then
walks the tour's requests with a seeded think time of THINK seconds between them; one in three students works on
SmolLM2 (when its package is installed), the others on gpt-char. A student starts a head sweep now and then
(HEAVY_SHARE of its actions) and gives up on it after PATIENCE seconds (it closes the connection: the server
stops the sweep or drops it from the queue; counted as cancelled). Students start no new action after --seconds;
the run ends when the last one returns (bounded by PATIENCE). Nothing here is a test; the machine's load is
printed with the figures.
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
        import httpx

        with httpx.Client(base_url=self.base, headers={"origin": self.base}) as client:
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
        import httpx

        body = {"model": self.model, "text": self.text()}
        t0 = time.perf_counter()
        outcome = "error"
        try:
            with client.stream("POST", "/api/experiments/head-sweep", json=body, timeout=PATIENCE) as r:
                if r.status_code != 200:
                    outcome = f"refused {r.status_code}"
                else:
                    for line in r.iter_lines():
                        if time.perf_counter() - t0 > PATIENCE:
                            outcome = "cancelled"
                            break  # closing the stream: the server stops the sweep
                        if line.startswith('{"result"'):
                            outcome = "finished"
        except httpx.TimeoutException:
            outcome = "cancelled"  # gave up waiting: the connection closes, the server drops the job
        except httpx.HTTPError as exc:
            outcome = type(exc).__name__
        self.record(kind="heavy", path="/api/experiments/head-sweep", status=outcome,
                    seconds=time.perf_counter() - t0)


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
    for r in heavy:
        key = f"{r['model']} {r['status']}"
        out["heavy"][key] = out["heavy"].get(key, 0) + 1
    done = [r["seconds"] for r in heavy if r["status"] == "finished"]
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
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", help="write the figures here too")
    args = ap.parse_args(argv)
    if not 1 <= args.students <= 60 or not 10 <= args.seconds <= 900:
        ap.error("--students: 1..60; --seconds: 10..900 (bounded: this runs on a shared machine)")
    models = ["gpt-char", "smollm2"] if _smollm2_installed() else ["gpt-char"]
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
        t0 = time.monotonic()
        for s in students:
            s.start()
        for s in students:
            s.join(args.seconds + PATIENCE + LIGHT_TIMEOUT)
        wall = time.monotonic() - t0
        stop.set()
        sampler.join(5)
    finally:
        proc.terminate()
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
    figures = summary(log, rss, args.seconds)
    figures.update(students=args.students, seconds=args.seconds, wall_s=wall, models=models,
                   still_running=sum(s.is_alive() for s in students), load_before=load_before,
                   load_after=os.getloadavg(), cpu=platform.processor() or platform.machine(),
                   cores=os.cpu_count())
    print(json.dumps(figures, indent=1, default=str))
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=1, default=str))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
