"""The HTTP face: each endpoint returns what explorer.api computes, and every bad request gets a 4xx answer
whose message says what was wrong, after which the server keeps serving."""

from __future__ import annotations

import base64
import io

import pytest
from fastapi.testclient import TestClient

from attnlab.explorer import api
from attnlab.explorer.registry import build_registry
from attnlab.explorer.server import MAX_BODY_BYTES, create_app


@pytest.fixture(scope="module")
def client(tiny_paths):
    registry = build_registry([tiny_paths[k] for k in ("decoder", "encoder", "encoder-decoder", "vit")]
                              + ["/nonexistent/checkpoint"])
    app = create_app(registry)
    with TestClient(app, base_url="http://localhost") as c:
        c.registry = registry
        yield c


def _id(client, name):
    return next(e.id for e in client.registry.entries.values() if e.kind == "path" and e.source.name == name)


def _png(size=(28, 28), fmt="PNG", mode="L") -> str:
    from PIL import Image

    buf = io.BytesIO()
    Image.new(mode, size, 128).save(buf, format=fmt)
    return base64.b64encode(buf.getvalue()).decode()


def test_models_list_and_page(client):
    r = client.get("/api/models")
    assert r.status_code == 200
    ids = {m["id"]: m for m in r.json()["models"]}
    assert ids["toy"]["illustration"] and ids["toy"]["available"]
    if not ids["gpt-char"]["available"]:  # a missing shipped checkpoint is listed with the reason
        assert "no checkpoint shipped" in ids["gpt-char"]["reason"]
    page = client.get("/")
    assert page.status_code == 200 and 'src="/static/app.js"' in page.text
    assert client.get("/static/tabs/attention.js").status_code == 200


def test_openapi_documents_every_endpoint(client):
    paths = client.get("/openapi.json").json()["paths"]
    for p in ("/api/models", "/api/attention", "/api/attention/grid", "/api/mlm/predict", "/api/causal",
              "/api/vision", "/api/generate/step", "/api/cost/{model_id}", "/api/params", "/api/famous"):
        assert p in paths


def test_attention_endpoint_matches_api(client):
    body = {"model": "toy", "text": "the cat sat on the mat", "layer": 0, "head": 0}
    r = client.post("/api/attention", json=body)
    assert r.status_code == 200
    assert r.json()["raw_scores"][1][2] == pytest.approx(2.34, abs=1e-5)
    direct = api.attention(client.registry.get("toy"), body["text"], 0, 0)
    assert r.json()["weights"] == direct["weights"]


def test_vision_endpoint_accepts_png_and_jpeg(client):
    vit = _id(client, "vit")
    for fmt in ("PNG", "JPEG"):
        r = client.post("/api/vision", json={"model": vit, "image": {"upload": _png(fmt=fmt)}, "patch": 3})
        assert r.status_code == 200, r.text[:300]
        assert sum(r.json()["rollout"]) == pytest.approx(1.0, abs=1e-5)


@pytest.mark.parametrize("method, path, body, status, words", [
    ("post", "/api/attention", {"model": "nope", "text": "x"}, 404, "unknown model 'nope'"),
    ("get", "/api/models/..%2F..%2Fetc%2Fpasswd", None, 404, ""),
    ("post", "/api/attention", {"model": "toy", "text": "cat", "layer": 3}, 404, "layers 0..0"),
    ("post", "/api/attention", {"model": "toy", "text": "cat", "head": 4}, 404, "heads 0..3"),
    ("post", "/api/attention", {"model": "toy", "text": "cat " * 600}, 400, "at most 512 tokens"),
    ("post", "/api/attention", {"model": "toy"}, 422, "text"),
    ("post", "/api/mlm/predict", {"model": "toy", "text": "cat", "selections": [0]}, 400, "MLM head"),
    ("post", "/api/vision", {"model": "toy", "image": {"mnist": 0}}, 400, "needs a ViT"),
    ("get", "/api/cost/toy?n=0", None, 422, "n=0: allowed 1..32768"),
    ("get", "/api/params?d=10&h=3", None, 400, "divisible"),
])
def test_bad_requests_get_4xx_with_a_message(client, method, path, body, status, words):
    r = getattr(client, method)(path, json=body) if body is not None else getattr(client, method)(path)
    assert r.status_code == status, r.text[:300]
    assert words in r.json()["detail"]
    assert client.get("/api/models").status_code == 200  # still serving


def test_malformed_json_and_oversize_bodies(client):
    r = client.post("/api/attention", content=b"{not json", headers={"Content-Type": "application/json"})
    assert r.status_code == 422 and "malformed request" in r.json()["detail"]
    big = b'{"model": "toy", "text": "' + b"a" * (MAX_BODY_BYTES + 10) + b'"}'
    r = client.post("/api/attention", content=big, headers={"Content-Type": "application/json"})
    assert r.status_code == 413 and "allowed up to" in r.json()["detail"]

    def chunked(total):  # no Content-Length: the body is measured as it arrives
        yield b'{"model": "toy", "text": "'
        yield b"a" * total
        yield b'"}'

    r = client.post("/api/attention", content=chunked(MAX_BODY_BYTES), headers={"Content-Type": "application/json"})
    assert r.status_code == 413
    r = client.post("/api/attention", content=chunked(10), headers={"Content-Type": "application/json"})
    assert r.status_code == 200 and r.json()["q_tokens"] == ["[UNK]"]


def test_uploads_that_are_not_png_or_jpeg_or_too_large_are_refused(client):
    vit = _id(client, "vit")
    cases = [
        ({"upload": base64.b64encode(b"just some text").decode()}, "not an image"),
        ({"upload": _png(fmt="GIF", mode="P")}, "GIF"),
        ({"upload": "%%%"}, "base64"),
        ({"upload": _png(size=(5000, 4000))}, "pixels"),
        ({"mnist": 999}, "does not exist"),
        ({"file": "/etc/passwd"}, "allowed mnist, photo, upload"),
    ]
    for image, words in cases:
        r = client.post("/api/vision", json={"model": vit, "image": image})
        assert r.status_code == 400, (str(image)[:80], r.text[:300])
        assert words in r.json()["detail"]


def test_missing_checkpoint_answers_503_and_names_the_path(client):
    missing = next(e.id for e in client.registry.entries.values() if e.kind == "path" and not e.available)
    r = client.post("/api/attention", json={"model": missing, "text": "x"})
    assert r.status_code == 503 and "does not exist" in r.json()["detail"]


def test_static_files_cannot_escape_the_package(client):
    for path in ("/static/../registry.py", "/static/%2e%2e/registry.py", "/static/..%2F..%2Fpyproject.toml"):
        assert client.get(path).status_code == 404


def test_generation_endpoint_steps(client):
    dec = _id(client, "decoder")
    r = client.post("/api/generate/step", json={"model": dec, "prompt": "ab", "temperature": 0})
    assert r.status_code == 200
    first = r.json()
    r2 = client.post("/api/generate/step", json={"model": dec, "prompt": "ab", "generated": first["generated"]})
    assert r2.json()["cache"]["positions"] == 3 and len(r2.json()["generated"]) == 2
    bad = client.post("/api/generate/step", json={"model": dec, "prompt": "ab", "top_p": 0})
    assert bad.status_code == 422 and "top_p" in bad.json()["detail"]


def test_cli_registers_explore_and_prints_the_address(tiny_paths, monkeypatch, capsys):
    import uvicorn

    from attnlab.cli import build_parser

    seen = {}
    monkeypatch.setattr(uvicorn, "run", lambda app, host, port, log_level: seen.update(host=host, port=port))
    args = build_parser().parse_args(["explore", str(tiny_paths["decoder"]), "--port", "8123", "--no-browser"])
    assert args.run(args) == 0
    assert seen == {"host": "127.0.0.1", "port": 8123}
    assert "http://localhost:8123/" in capsys.readouterr().out


def test_concurrent_requests_do_not_mix_their_recordings(client):
    from concurrent.futures import ThreadPoolExecutor

    dec = _id(client, "decoder")
    jobs = [{"model": "toy", "text": "the cat sat on the mat", "layer": 0, "head": h % 4} for h in range(6)]
    jobs += [{"model": dec, "text": "concurrency", "layer": h % 2, "head": h % 4} for h in range(6)]
    with ThreadPoolExecutor(max_workers=6) as pool:
        answers = list(pool.map(lambda body: client.post("/api/attention", json=body).json(), jobs))
    for body, got in zip(jobs, answers, strict=True):
        want = api.attention(client.registry.get(body["model"]), body["text"], body["layer"], body["head"])
        assert got["weights"] == want["weights"]


def test_browser_opens_only_where_there_is_a_display(tiny_paths, monkeypatch, capsys):
    import webbrowser

    import uvicorn

    from attnlab.cli import build_parser

    opened = []
    monkeypatch.setattr(uvicorn, "run", lambda app, host, port, log_level: None)
    monkeypatch.setattr(webbrowser, "open", opened.append)
    monkeypatch.setattr("sys.platform", "linux")
    monkeypatch.delenv("DISPLAY", raising=False)
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    args = build_parser().parse_args(["explore", "--port", "8124"])
    args.run(args)
    assert "open the address above" in capsys.readouterr().out
    monkeypatch.setenv("DISPLAY", ":0")
    monkeypatch.setattr("threading.Timer", lambda delay, fn: type("T", (), {"start": lambda self: fn()})())
    args.run(args)
    assert opened == ["http://localhost:8124/"]
