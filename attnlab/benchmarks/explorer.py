"""Bounded load test of the explorer on loopback: N concurrent clients x M requests, mixing valid, malformed and
oversized requests. Reports 5xx answers, valid requests that were not answered correctly, and latency.

A valid request's answer must equal the answer the same server gave to it when idle (computed first, one at a
time), so "lost" covers dropped connections, timeouts, errors and wrong bodies alike.

    python -m attnlab.benchmarks.explorer     # 32 clients x 50 requests, tiny models, 127.0.0.1
    python -m attnlab.benchmarks.explorer --clients 8 --requests 10 --json out.json
    python -m attnlab.benchmarks.explorer --concurrent 1   # model requests one at a time (the old setting)

Traffic goes to 127.0.0.1 only; the server runs in this process (uvicorn in a thread) on a free port.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextlib
import json
import os
import platform
import random
import socket
import statistics
import struct
import tempfile
import threading
import time
import zlib
from pathlib import Path

TEXTS = ["hello world", "the cat sat on the mat", "attention is all you need", "a b c d e f g", "numbers 12345"]


def small_png(size: int = 28) -> bytes:
    """A grey size x size PNG with a diagonal stripe, written by hand (no PIL needed to build the request)."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    rows = b"".join(b"\x00" + bytes(255 if abs(x - y) < 3 else 0 for x in range(size)) for y in range(size))
    ihdr = struct.pack(">IIBBBBB", size, size, 8, 0, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b"")


def request_mix(text_models: list[str], decoder_models: list[str], vision_model: str | None
                ) -> dict[str, list[tuple]]:
    """(method, path, body) by kind. Bodies are dicts (sent as JSON) or bytes (sent raw)."""
    valid: list[tuple] = [("GET", "/api/models", None), ("GET", "/api/famous", None),
                          ("GET", "/api/params?V=1000&d=64&N=2&h=4&L=128", None)]
    for m in text_models:
        valid += [("GET", f"/api/architecture/{m}", None)]
        valid += [("POST", "/api/attention", {"model": m, "text": t, "layer": 0, "head": 1}) for t in TEXTS[:3]]
        valid += [("POST", "/api/attention/grid", {"model": m, "text": TEXTS[1]})]
    for m in decoder_models:
        valid += [("POST", "/api/causal", {"model": m, "text": t}) for t in TEXTS]
    if vision_model:
        upload = base64.b64encode(small_png()).decode()
        valid += [("POST", "/api/vision", {"model": vision_model, "image": {"upload": upload}, "patch": 3})]
    m = decoder_models[0]
    malformed = [
        ("POST", "/api/causal", b"{not json"),
        ("POST", "/api/causal", {"model": m}),
        ("POST", "/api/causal", {"model": "no-such-model", "text": "hi"}),
        ("POST", "/api/attention", {"model": m, "text": "hi", "layer": -1, "head": 0}),
        ("POST", "/api/attention", {"model": m, "text": "hi", "layer": "one"}),
        ("POST", "/api/attention", {"model": m, "text": "hi", "head": 10**20}),
        ("GET", "/api/models/..%2f..%2fetc%2fpasswd", None),
        ("GET", "/static/../../etc/passwd", None),
        ("POST", "/api/vision", {"model": vision_model or m, "image": {"upload": "bm90IGFuIGltYWdl"}}),
        ("POST", "/api/generate/step", {"model": m, "prompt": "hi", "temperature": "hot"}),
    ]
    oversized = [
        ("POST", "/api/causal", {"model": m, "text": "x" * (5 * 1024 * 1024)}),  # body over 4 MiB -> 413
        ("POST", "/api/causal", {"model": m, "text": "y" * 25_000}),  # text over the character limit -> 422
        ("POST", "/api/causal", {"model": m, "text": "z " * 400}),  # more tokens than the model's positions -> 400
    ]
    return {"valid": valid, "malformed": malformed, "oversized": oversized}


def _key(req: tuple) -> str:
    method, path, body = req
    return f"{method} {path} {body if isinstance(body, bytes) else json.dumps(body, sort_keys=True)}"


async def _send(client, req: tuple):
    method, path, body = req
    if body is None:
        return await client.request(method, path)
    content = body if isinstance(body, bytes) else json.dumps(body).encode()
    return await client.request(method, path, content=content, headers={"content-type": "application/json"})


async def _run(url: str, clients: int, per_client: int, seed: int, mix: dict[str, list[tuple]],
               timeout: float) -> dict:
    import httpx

    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    async with httpx.AsyncClient(base_url=url, timeout=timeout, limits=limits) as client:
        for req in mix["valid"]:  # warm-up: load every model (GET /api/models then reports them loaded)
            await _send(client, req)
        reference = {}
        for req in mix["valid"]:  # the idle server's answers, one at a time
            r = await _send(client, req)
            if r.status_code != 200:
                raise RuntimeError(f"reference request failed: {req[:2]} -> {r.status_code} {r.text[:200]}")
            reference[_key(req)] = r.json()

        rng = random.Random(seed)
        plans = []
        for _ in range(clients):
            plan = []
            for _ in range(per_client):
                kind = rng.choices(["valid", "malformed", "oversized"], weights=[70, 20, 10])[0]
                plan.append((kind, rng.choice(mix[kind])))
            plans.append(plan)

        records: list[dict] = []

        async def worker(plan):
            for kind, req in plan:
                start = time.perf_counter()
                status, ok = None, False
                try:
                    r = await _send(client, req)
                    status = r.status_code
                    if kind == "valid":
                        ok = status == 200 and r.json() == reference[_key(req)]
                    else:
                        ok = 400 <= status < 500 and bool(r.json().get("detail"))
                except Exception as exc:  # a dropped connection or a timeout counts as lost
                    status = type(exc).__name__
                records.append({"kind": kind, "status": status, "ok": ok, "seconds": time.perf_counter() - start,
                                "request": _key(req)[:120]})

        t0 = time.perf_counter()
        await asyncio.gather(*(worker(p) for p in plans))
        wall = time.perf_counter() - t0

    def pct(values: list[float], q: float) -> float:
        if not values:
            return float("nan")
        values = sorted(values)
        return values[min(len(values) - 1, int(round(q * (len(values) - 1))))]

    lat = [r["seconds"] for r in records]
    lat_valid = [r["seconds"] for r in records if r["kind"] == "valid"]
    statuses: dict[str, int] = {}
    for r in records:
        statuses[str(r["status"])] = statuses.get(str(r["status"]), 0) + 1
    return {
        "clients": clients, "requests_per_client": per_client, "requests": len(records),
        "valid": sum(r["kind"] == "valid" for r in records),
        "invalid": sum(r["kind"] != "valid" for r in records),
        "server_errors": sum(isinstance(r["status"], int) and r["status"] >= 500 for r in records),
        "lost_valid": sum(r["kind"] == "valid" and not r["ok"] for r in records),
        "invalid_without_clear_4xx": sum(r["kind"] != "valid" and not r["ok"] for r in records),
        "statuses": dict(sorted(statuses.items())),
        "p50_ms": round(1000 * pct(lat, 0.50), 1), "p95_ms": round(1000 * pct(lat, 0.95), 1),
        "valid_p50_ms": round(1000 * pct(lat_valid, 0.50), 1), "valid_p95_ms": round(1000 * pct(lat_valid, 0.95), 1),
        "mean_ms": round(1000 * statistics.fmean(lat), 1) if lat else None,
        "lost_examples": [f"{r['status']} {r['request']}" for r in records if not r["ok"]][:5],
        "wall_s": round(wall, 2), "requests_per_s": round(len(records) / wall, 1) if wall else None,
    }


def run_load(url: str, clients: int = 32, requests_per_client: int = 50, seed: int = 0, *,
             text_models: list[str], decoder_models: list[str], vision_model: str | None = None,
             timeout: float = 120.0) -> dict:
    """decoder_models get next-token requests too; the first one also carries the malformed and oversized ones."""
    mix = request_mix(text_models, decoder_models, vision_model)
    return asyncio.run(_run(url, clients, requests_per_client, seed, mix, timeout))


@contextlib.contextmanager
def serve(app, host: str = "127.0.0.1"):
    """Run `app` with uvicorn in a background thread on a free loopback port; yield its base URL."""
    import uvicorn

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, log_level="error", lifespan="off"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.time() + 30
    while not server.started and time.time() < deadline:
        time.sleep(0.02)
    if not server.started:
        raise RuntimeError("uvicorn did not start within 30 s")
    try:
        yield f"http://{host}:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()


def tiny_app(root: Path, max_concurrent: int | None = None):
    """The explorer over the toy plus a tiny decoder and a tiny ViT saved under `root` (named as on a command line).
    `max_concurrent`: model requests at once (None: the server's default, MAX_CONCURRENT)."""
    import torch

    import attnlab
    from attnlab.explorer.server.app import create_app
    from attnlab.explorer.server.registry import build_registry
    from attnlab.presets import get as preset

    torch.manual_seed(0)
    dec = attnlab.build_model(preset("tiny-decoder", vocab_size=256)).save(root / "dec")
    vit = attnlab.build_model(preset("tiny-vit")).save(root / "vit")
    return create_app(build_registry([dec, vit], shipped=False, pretrained=False), max_concurrent=max_concurrent)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=32)
    parser.add_argument("--requests", type=int, default=50, help="requests per client")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--concurrent", type=int, default=None,
                        help="model requests at once (default: the server's MAX_CONCURRENT)")
    parser.add_argument("--json", help="also write the report here")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        app = tiny_app(Path(tmp), args.concurrent)
        with serve(app) as url:
            report = run_load(url, args.clients, args.requests, args.seed, text_models=["toy", "path1"],
                              decoder_models=["path1"], vision_model="path2")
    import torch

    report["machine"] = {"platform": platform.platform(), "python": platform.python_version(),
                         "cpus": os.cpu_count(), "torch": torch.__version__, "torch_threads": torch.get_num_threads()}
    report["max_concurrent"] = app.state.max_concurrent
    print(json.dumps(report, indent=2))
    print(f"\n{report['requests']} requests ({args.clients} clients x {args.requests}): "
          f"{report['server_errors']} 5xx, {report['lost_valid']} lost valid answers, "
          f"p50 {report['p50_ms']} ms, p95 {report['p95_ms']} ms, {report['requests_per_s']} req/s")
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
