"""`--device` on `attnlab generate` and `attnlab explore`: cpu gives what no flag gives, auto is cpu on a machine
without a GPU, a CUDA device this machine lacks (or a misspelt one) is refused in one line before anything
loads, and with a GPU the tokens match the CPU's. The explorer's generation runs on the device; every other view
keeps reading the CPU model."""

from __future__ import annotations

import importlib.util
import socket
from pathlib import Path

import pytest
import torch
from cli_calls import run_cli

from attnlab.errors import ConfigError, InputError

_spec = importlib.util.spec_from_file_location("explorer_tiny_models",
                                               Path(__file__).parent / "explorer" / "tiny_models.py")
tiny_models = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(tiny_models)

no_cuda = pytest.mark.skipif(torch.cuda.is_available(), reason="checks the refusal on a machine without CUDA")
needs_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
IDS = "1 2 3 4 5"  # the tiny decoder reads token ids (no tokenizer)


@pytest.fixture(scope="module")
def tiny_paths(tmp_path_factory) -> dict[str, Path]:
    return tiny_models.build_all(tmp_path_factory.mktemp("device-models"))


def _generate(path: Path, capsys, *extra: str) -> tuple[str, str]:
    code, out, err = run_cli(["generate", str(path), "--ids", IDS, "--max-new-tokens", "12", "--threads", "1",
                           *extra], capsys)
    assert code == 0, err
    return out, err.strip().splitlines()[-1]  # (the tokens, the summary line)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


# ------------------------------------------------------------------------------------------ generate
def test_generate_on_cpu_gives_the_tokens_of_no_flag_and_says_so(tiny_paths, capsys):
    plain, plain_stats = _generate(tiny_paths["decoder"], capsys)
    on_cpu, stats = _generate(tiny_paths["decoder"], capsys, "--device", "cpu")
    assert on_cpu == plain and len(on_cpu.split()) == 5 + 12
    assert "device cpu," in stats and "device cpu," in plain_stats, stats


@no_cuda
def test_generate_auto_is_cpu_without_a_gpu(tiny_paths, capsys):
    plain, _ = _generate(tiny_paths["decoder"], capsys)
    out, stats = _generate(tiny_paths["decoder"], capsys, "--device", "auto")
    assert out == plain and "device cpu," in stats, stats


@no_cuda
@pytest.mark.parametrize("device", ["cuda", "cuda:1"])
def test_generate_refuses_cuda_without_cuda_in_one_line(device, capsys, monkeypatch):
    monkeypatch.setattr("attnlab.cli.generate._load", lambda spec: pytest.fail("the model must not load"))
    code, out, err = run_cli(["generate", "no-model-needed", "--ids", IDS, "--device", device], capsys)
    assert code == 2 and out == "" and err.count("\n") == 1 and "Traceback" not in err, err
    assert f"--device {device!r} but torch sees no CUDA device" in err and "--device cpu or --device auto" in err
    if torch.version.cuda is None:
        assert "this torch build has no CUDA support" in err, err


@pytest.mark.parametrize("device", ["gpu", "CUDA", "cuda:x", "cuda:", "cpu:0", ""])
def test_generate_refuses_a_misspelt_device_in_one_line(device, capsys, monkeypatch):
    monkeypatch.setattr("attnlab.cli.generate._load", lambda spec: pytest.fail("the model must not load"))
    code, out, err = run_cli(["generate", "no-model-needed", "--ids", IDS, f"--device={device}"], capsys)
    assert code == 2 and out == "" and err.count("\n") == 1, err
    assert f"--device {device!r}: allowed cpu, cuda, cuda:N (N a GPU index) or auto" in err, err


def test_training_and_the_commands_share_the_device_check():
    """device=... of a training run is refused by the same check, in its own key=value words."""
    from attnlab.devices import check_device_name
    from attnlab.training.settings import TrainSettings

    with pytest.raises(ConfigError, match=r"^device='tpu': allowed cpu, cuda, cuda:N \(N a GPU index\) or auto"):
        TrainSettings(device="tpu")
    with pytest.raises(InputError, match=r"^--device 'tpu': allowed cpu, cuda, cuda:N"):
        check_device_name("tpu", "--device")
    assert TrainSettings(device="cuda:3").device == "cuda:3"  # the spelling is fine; the machine is checked later


# ------------------------------------------------------------------------------------------ explore
def _explore(paths: list[Path], device: str, capsys, monkeypatch) -> tuple[int, str, str, dict]:
    seen: dict = {}
    monkeypatch.setattr("uvicorn.run", lambda app, **kw: seen.update(app=app, **kw))
    code, out, err = run_cli(["explore", *map(str, paths), "--port", str(_free_port()), "--no-browser",
                           "--device", device], capsys)
    return code, out, err, seen


def test_explore_on_cpu_serves_its_models_from_the_cpu(tiny_paths, capsys, monkeypatch):
    from fastapi.testclient import TestClient

    from attnlab.explorer import api
    from attnlab.explorer.server.registry import build_registry

    paths = [tiny_paths["decoder"], tiny_paths["encoder-decoder"]]
    code, out, err, seen = _explore(paths, "cpu", capsys, monkeypatch)
    assert code == 0, err
    assert out.splitlines()[0].endswith("(device cpu; Ctrl-C stops it)"), out
    registry = seen["app"].state.registry
    with TestClient(seen["app"], base_url="http://localhost") as client:
        for model_id in ("path1", "path2"):  # the decoder, the encoder-decoder
            step = client.post("/api/generate/step", json={"model": model_id, "prompt": "ab", "temperature": 0})
            assert step.status_code == 200, step.text
            lm = registry.get(model_id)
            assert lm.device_model is lm.model and {p.device.type for p in lm.model.parameters()} == {"cpu"}
            alone = api.generation_step(build_registry(paths, shipped=False, pretrained=False).get(model_id), "ab",
                                        [], temperature=0.0)
            assert step.json()["token_id"] == alone["token_id"]
        view = client.post("/api/attention", json={"model": "path1", "text": "ab", "layer": 0, "head": 0})
        assert view.status_code == 200, view.text


@no_cuda
def test_explore_auto_is_cpu_without_a_gpu(tiny_paths, capsys, monkeypatch):
    code, out, err, seen = _explore([tiny_paths["decoder"]], "auto", capsys, monkeypatch)
    assert code == 0 and "(device cpu; Ctrl-C stops it)" in out.splitlines()[0], err
    assert seen["app"].state.registry.device == torch.device("cpu")


@no_cuda
def test_explore_refuses_cuda_without_cuda_before_its_banner(tiny_paths, capsys, monkeypatch):
    code, out, err, seen = _explore([tiny_paths["decoder"]], "cuda", capsys, monkeypatch)
    assert code == 2 and out == "" and not seen and err.count("\n") == 1, err
    assert "--device 'cuda' but torch sees no CUDA device" in err, err


def test_a_device_copy_is_for_generation_and_leaves_the_cpu_model(tiny_paths):
    """Off the CPU, a model that generates gets a copy on the device; the views' CPU model is left as it was (the
    meta device stands in for a GPU: the copy and the move are what is checked here, not arithmetic)."""
    from attnlab.explorer.server.registry import build_registry

    registry = build_registry([tiny_paths["decoder"], tiny_paths["encoder"]], shipped=False, pretrained=False,
                              device=torch.device("meta"))
    decoder, encoder = registry.get("path1"), registry.get("path2")
    assert decoder.device_model is not decoder.model
    assert {p.device.type for p in decoder.device_model.parameters()} == {"meta"}
    assert {p.device.type for p in decoder.model.parameters()} == {"cpu"}
    assert encoder.device_model is encoder.model  # an encoder cannot generate: no copy


# ------------------------------------------------------------------------------------------ a real GPU
@needs_cuda
def test_cuda_generates_the_tokens_of_the_cpu(tiny_paths, capsys):
    on_cpu, _ = _generate(tiny_paths["decoder"], capsys, "--device", "cpu")
    on_gpu, stats = _generate(tiny_paths["decoder"], capsys, "--device", "cuda")
    assert on_gpu == on_cpu and "device cuda" in stats, stats


@needs_cuda
@pytest.mark.parametrize("model_id", ["path1", "path2"])
def test_explorer_generation_on_cuda_matches_the_cpu(tiny_paths, model_id):
    from attnlab.explorer import api
    from attnlab.explorer.server.registry import build_registry

    paths = [tiny_paths["decoder"], tiny_paths["encoder-decoder"]]
    gpu = build_registry(paths, shipped=False, pretrained=False, device=torch.device("cuda")).get(model_id)
    cpu = build_registry(paths, shipped=False, pretrained=False).get(model_id)
    assert next(gpu.device_model.parameters()).is_cuda and not next(gpu.model.parameters()).is_cuda
    generated_gpu, generated_cpu = [], []
    for _ in range(4):
        a = api.generation_step(gpu, "ab", generated_gpu, temperature=0.0, compare=True)
        b = api.generation_step(cpu, "ab", generated_cpu, temperature=0.0, compare=True)
        generated_gpu, generated_cpu = a["generated"], b["generated"]
        assert a["cache_matches"] and a["token_id"] == b["token_id"]
        assert a["bars"][0]["prob"] == pytest.approx(b["bars"][0]["prob"], abs=1e-4)
