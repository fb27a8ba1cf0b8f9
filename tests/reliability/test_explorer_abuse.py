"""The explorer under abuse: hostile payloads, path traversal, decompression bombs, the bind address, concurrency.

Requests go through FastAPI's TestClient (in-process, no socket) except the load and disconnect tests, which talk
to a real uvicorn server on 127.0.0.1 only.
"""

from __future__ import annotations

import base64
import importlib.util
import json
import re
import socket
import struct
import sys
import threading
import time
import zlib
from pathlib import Path
from urllib.parse import quote

import pytest
import torch
from _cases import cases, tally
from fastapi.testclient import TestClient
from hypothesis import given
from hypothesis import strategies as st

import attnlab
from attnlab.explorer import api, images
from attnlab.explorer.registry import build_registry
from attnlab.explorer.server import create_app
from attnlab.presets import get as preset

pytestmark = pytest.mark.timeout(180)
ROOT = Path(__file__).resolve().parents[2]
SECRET = "attnlab-secret-4f1c9"


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """Tiny decoder + ViT checkpoints named on the 'command line', a secret file beside them that nothing names."""
    root = tmp_path_factory.mktemp("explorer-abuse")
    torch.manual_seed(0)
    dec = attnlab.build_model(preset("tiny-decoder", vocab_size=256, d_model=32, d_ff=64)).save(
        root / "dec")
    vit = attnlab.build_model(preset("tiny-vit", d_model=32, d_ff=64)).save(root / "vit")
    (root / "secret.txt").write_text(SECRET)
    (root / "dec" / "secret.txt").write_text(SECRET)
    registry = build_registry([dec, vit], shipped=False, pretrained=False)
    return root, registry, create_app(registry)


@pytest.fixture(scope="module")
def client(served):
    with TestClient(served[2], base_url="http://localhost") as c:  # raise_server_exceptions: an uncaught error fails the test
        yield c


# ------------------------------------------------------------------------------------------- bind address
def test_explore_binds_loopback_unless_told(monkeypatch):
    from attnlab.cli import build_parser
    from attnlab.explorer import cli as explorer_cli

    seen = {}
    monkeypatch.setattr("uvicorn.run", lambda app, **kw: seen.update(kw))
    args = build_parser().parse_args(["explore", "--no-browser"])
    explorer_cli.run(args)
    assert seen["host"] == "127.0.0.1"
    args = build_parser().parse_args(["explore", "--no-browser", "--host", "0.0.0.0", "--port", "9"])
    explorer_cli.run(args)
    assert seen["host"] == "0.0.0.0" and seen["port"] == 9


# ------------------------------------------------------------------------------------------- images
def _png(width: int, height: int, bit_depth: int = 1, colour: int = 0, rows: int | None = None) -> bytes:
    """A PNG of zeros, written by hand so a 20000 x 20000 picture costs ~40 KB of zlib, not its pixels.
    rows < height writes only a header's worth of image data (a bomb that only has to get past the header)."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    row = b"\x00" + bytes((width * bit_depth + 7) // 8)
    compressor = zlib.compressobj(9)
    body = b"".join(compressor.compress(row) for _ in range(height if rows is None else rows)) + compressor.flush()
    ihdr = struct.pack(">IIBBBBB", width, height, bit_depth, colour, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", body) + chunk(b"IEND", b"")


@pytest.mark.parametrize("width, height", [(20000, 20000), (5000, 5000), (1, 2 * 10**7), (65535, 65535)])
def test_decompression_bombs_are_refused_before_decoding(client, width, height):
    """Pixel counts over the explorer's limit (4096^2) are refused from the header; only 20000^2 carries its data."""
    data = _png(width, height, rows=None if width == 20000 else 4)
    assert len(data) < images.MAX_UPLOAD_BYTES
    r = client.post("/api/vision", json={"model": "path2", "image": {"upload": base64.b64encode(data).decode()}})
    assert r.status_code == 400, r.text
    assert "pixels" in r.json()["detail"] or "decoded" in r.json()["detail"]


def test_small_png_is_still_accepted(client):
    r = client.post("/api/vision", json={"model": "path2",
                                         "image": {"upload": base64.b64encode(_png(28, 28, 8)).decode()}})
    assert r.status_code == 200, r.text


# ------------------------------------------------------------------------------------------- path traversal
TRAVERSALS = ["../secret.txt", "../../secret.txt", "..%2fsecret.txt", "..%252fsecret.txt", "%2e%2e/secret.txt",
              "....//secret.txt", "..\\secret.txt", "secret.txt", "dec/secret.txt", "/etc/passwd", "file:///etc/passwd",
              "secret.txt\x00.png", "~/secret.txt", "static/../../secret.txt"]


class _OpenedFiles:
    """Every file the process opens while `active` (through sys.audit's 'open' event)."""

    def __init__(self):
        self.active, self.paths = False, []
        sys.addaudithook(self._hook)

    def _hook(self, event, args):
        if self.active and event == "open" and isinstance(args[0], (str, bytes, Path)):
            self.paths.append(str(args[0]))


_OPENED = _OpenedFiles()


def _requests_naming(app, name: str, root: Path):
    """Every route of the app that takes a name: path parameters and the model/image fields of POST bodies.
    Read from the app itself, so an endpoint added later is attacked too."""
    from fastapi.routing import APIRoute

    absolute = str(root / "secret.txt")
    for value in (name, absolute):
        url = quote(value, safe="/%:~")  # encoded variants (%2f, %252f) travel as written
        yield "GET", f"/static/{url}", None
        for route in app.routes:
            if not isinstance(route, APIRoute):
                continue
            if "GET" in route.methods and "{" in route.path:
                yield "GET", re.sub(r"\{[^}]+\}", url, route.path), None
            if "POST" in route.methods:
                if route.path == "/api/vision":
                    for kind in ("photo", "upload", "mnist"):
                        yield "POST", route.path, {"model": "path2", "image": {kind: value}}
                yield "POST", route.path, {"model": value, "text": "hi", "prompt": "hi", "image": {"mnist": 0},
                                           "selections": [1]}


def test_no_endpoint_reads_a_file_it_was_not_given(served, client):
    root, registry, _ = served
    client.get("/api/models")
    for model_id in ("path1", "path2"):  # load the named checkpoints first: those reads are allowed
        registry.get(model_id)
    allowed_roots = (str(root / "dec"), str(root / "vit"), str(Path(attnlab.__file__).parent), sys.prefix,
                     sys.base_prefix, "/proc", "/sys", "/dev")
    count = 0
    for name in TRAVERSALS:
        for method, url, body in _requests_naming(served[2], name, root):
            _OPENED.active = True
            try:
                r = client.request(method, url, json=body) if body is not None else client.request(method, url)
            finally:
                _OPENED.active = False
            count += 1
            assert 400 <= r.status_code < 500, (method, url, body, r.status_code, r.text[:200])
            assert SECRET not in r.text and "root:x:" not in r.text
    strays = [p for p in _OPENED.paths if not p.startswith(allowed_roots) or "secret" in p]
    assert not strays, strays
    for _ in range(count):
        tally("HTTP path traversal attempts", "refused 4xx, no stray file opened")
    assert count >= len(TRAVERSALS) * 20


# ------------------------------------------------------------------------------------------- payload fuzz
ENDPOINTS = {
    "/api/attention": ["model", "text", "layer", "head", "part", "target"],
    "/api/attention/grid": ["model", "text", "part", "target"],
    "/api/mask-placement": ["model", "text", "layer", "head"],
    "/api/mlm/draw": ["model", "text", "seed"],
    "/api/mlm/predict": ["model", "text", "selections"],
    "/api/causal": ["model", "text"],
    "/api/vision": ["model", "image", "layer", "head", "patch"],
    "/api/generate/step": ["model", "prompt", "generated", "temperature", "top_k", "top_p", "seed"],
    "/api/walkthrough": ["model", "text"],
}
models = st.sampled_from(["path1", "path1", "path1", "path2", "path2", "toy", "nope", "", "../x", 3])
small_ints = st.one_of(st.integers(-1, 5), st.integers(0, 3), st.integers(0, 3), scalars := st.one_of(
    st.integers(-3, 40), st.sampled_from([10**18, -(10**18), 2**63, 1e308, float("inf"), "1"]), st.none(),
    st.booleans(), st.floats(allow_nan=False, allow_infinity=False)))
unit_floats = st.one_of(st.floats(0, 2), st.floats(0, 2), scalars)
texts = st.one_of(st.text(max_size=40), st.sampled_from(["the cat sat", "hello", "", "a" * 600, "\u202e\ufeff\x00",
                                                         "😀" * 50]))
values = {
    "model": models, "text": texts, "prompt": texts, "target": st.one_of(st.none(), texts),
    "part": st.sampled_from([None, "self", "encoder", "decoder", "cross", "x"]),
    "image": st.one_of(st.fixed_dictionaries({"mnist": scalars}), st.fixed_dictionaries({"photo": texts}),
                       st.fixed_dictionaries({"upload": st.sampled_from(["", "AAAA", "not base64!"])}), scalars,
                       st.just({})),
    "selections": st.one_of(st.lists(st.one_of(scalars, st.fixed_dictionaries(
        {"position": scalars}, optional={"action": st.sampled_from(["mask", "random", "keep", "x"]),
                                         "token_id": scalars})), max_size=4), scalars),
    "generated": st.one_of(st.lists(st.integers(-5, 300), max_size=6), scalars),
    **{k: small_ints for k in ("layer", "head", "patch", "seed", "top_k")},
    **{k: unit_floats for k in ("temperature", "top_p")},
}


@st.composite
def payloads(draw):
    url = draw(st.sampled_from(sorted(ENDPOINTS)))
    fields = ENDPOINTS[url]
    chosen = draw(st.lists(st.sampled_from(fields + ["extra"]), unique=True, max_size=len(fields) + 1))
    if draw(st.integers(0, 3)):  # mostly a model and its text are there
        chosen = list(dict.fromkeys(["model"] + [f for f in ("text", "prompt", "image") if f in fields] + chosen))
    body = {k: draw(values.get(k, scalars)) for k in chosen}
    if draw(st.integers(0, 9)) == 0:
        return url, draw(st.sampled_from([b"{", b"[]", b"null", b"\xff\xfe", b'{"model": }', b"1" * 100]))
    return url, body


@cases(150)
@given(payloads())
def test_http_payloads_get_a_clear_answer(client, payload):
    url, body = payload
    if isinstance(body, bytes):
        r = client.post(url, content=body, headers={"content-type": "application/json"})
    else:
        r = client.post(url, content=json.dumps(body, allow_nan=True), headers={"content-type": "application/json"})
    assert r.status_code in (200, 400, 404, 413, 422, 503), (url, body, r.status_code, r.text[:300])
    if r.status_code != 200:
        detail = r.json().get("detail")
        assert isinstance(detail, str) and detail, r.text
    tally("HTTP API payloads", "ok" if r.status_code == 200 else f"{r.status_code}")


def test_oversized_bodies_and_token_counts(client):
    big = {"model": "path1", "text": "x" * (5 * 1024 * 1024)}
    r = client.post("/api/causal", json=big)
    assert r.status_code == 413 and "allowed" in r.json()["detail"]
    r = client.post("/api/causal", json={"model": "path1", "text": "x" * (api.MAX_TEXT_CHARS + 1)})
    assert r.status_code == 422
    r = client.post("/api/causal", json={"model": "path1", "text": "x" * 400})  # 400 characters > max_len 128
    assert r.status_code == 400 and "128" in r.json()["detail"]


# ------------------------------------------------------------------------------------------- concurrency
def test_concurrent_heavy_work_is_limited(served, monkeypatch):
    """Twelve slow requests at once: at most MAX_CONCURRENT run api code together, and all twelve are answered."""
    from attnlab.explorer import server

    running, peak, lock = [0], [0], threading.Lock()
    original = api.causal_predictions

    def slow(lm, text):
        with lock:
            running[0] += 1
            peak[0] = max(peak[0], running[0])
        time.sleep(0.2)
        with lock:
            running[0] -= 1
        return original(lm, text)

    monkeypatch.setattr(api, "causal_predictions", slow)
    results = []
    with TestClient(create_app(served[1]), base_url="http://localhost") as c:
        threads = [threading.Thread(target=lambda: results.append(
            c.post("/api/causal", json={"model": "path1", "text": "hello"}).status_code)) for _ in range(12)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert results == [200] * 12
    assert 1 <= peak[0] <= server.MAX_CONCURRENT, peak[0]


# ------------------------------------------------------------------------------------------- real server
def _load_module():
    spec = importlib.util.spec_from_file_location("load_explorer", ROOT / "bench" / "load_explorer.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
def test_small_load_over_loopback_loses_nothing(served):
    """8 clients x 12 requests mixing valid, malformed and oversized: no 5xx, every valid answer correct."""
    load = _load_module()
    with load.serve(served[2]) as url:
        report = load.run_load(url, clients=8, requests_per_client=12, seed=0,
                               text_models=["path1"], decoder_models=["path1"],
                               vision_model="path2")
    assert report["server_errors"] == 0, report
    assert report["lost_valid"] == 0, report
    assert report["valid"] > 0 and report["invalid"] > 0
    for _ in range(report["requests"]):
        tally("HTTP requests under load (loopback)", "answered")


def test_client_disconnecting_mid_request_leaves_the_server_answering(served):
    load = _load_module()
    with load.serve(served[2]) as url:
        host, port = url.split("//")[1].split(":")
        for partial in (b"POST /api/causal HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                        b"Content-Length: 1000\r\n\r\n{\"model\": \"path1\", \"te",
                        b"POST /api/causal HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                        b"Content-Length: 41\r\n\r\n{\"model\": \"path1\", \"text\": \"hello there\"}",
                        b"GET /api/mod"):
            with socket.create_connection((host, int(port)), timeout=5) as s:
                s.sendall(partial)
            # the socket is closed before any answer is read
        import httpx

        r = httpx.get(f"{url}/api/models", timeout=30)
        assert r.status_code == 200 and r.json()["models"]
        r = httpx.post(f"{url}/api/causal", json={"model": "path1", "text": "hello"}, timeout=60)
        assert r.status_code == 200
