import importlib.util
from contextlib import contextmanager
from pathlib import Path

import pytest

_spec = importlib.util.spec_from_file_location("explorer_tiny_models", Path(__file__).with_name("tiny_models.py"))
tiny_models = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(tiny_models)


@pytest.fixture(scope="session")
def tiny_paths(tmp_path_factory):
    return tiny_models.build_all(tmp_path_factory.mktemp("explorer-models"))


@pytest.fixture(scope="session")
def registry(tiny_paths):
    from attnlab.explorer.server.registry import build_registry

    return build_registry([tiny_paths[k] for k in ("decoder", "encoder", "encoder-decoder", "vit")])


@contextmanager
def _app_client(registry, paths):
    """The app on `registry` as a TestClient, with `client.registry` and the tiny models' `client.paths`."""
    from fastapi.testclient import TestClient

    from attnlab.explorer.server.app import create_app

    with TestClient(create_app(registry), base_url="http://localhost") as c:
        c.registry, c.paths = registry, paths
        yield c


@pytest.fixture(scope="module")
def client(tiny_paths):
    """The app serving the tiny decoder alone ("path"); a file that needs other models defines its own `client`
    or uses `shipped_client`."""
    from attnlab.explorer.server.registry import build_registry

    with _app_client(build_registry([tiny_paths["decoder"]], shipped=False, pretrained=False), tiny_paths) as c:
        yield c


@pytest.fixture(scope="module")
def shipped_client(tiny_paths):
    """The app serving the shipped checkpoints (gpt-char, ...) and the tiny encoder, no pretrained packages."""
    from attnlab.explorer.server.registry import build_registry

    with _app_client(build_registry([tiny_paths["encoder"]], shipped=True, pretrained=False), tiny_paths) as c:
        yield c
