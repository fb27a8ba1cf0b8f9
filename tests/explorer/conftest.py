import importlib.util
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
    from attnlab.explorer.registry import build_registry

    return build_registry([tiny_paths[k] for k in ("decoder", "encoder", "encoder-decoder", "vit")])


@pytest.fixture(scope="module")
def client(tiny_paths):
    """The app serving the tiny decoder alone, as a TestClient (`client.registry` beside it); a file that needs
    other models defines its own `client`."""
    from fastapi.testclient import TestClient

    from attnlab.explorer.registry import build_registry
    from attnlab.explorer.server import create_app

    registry = build_registry([tiny_paths["decoder"]], shipped=False, pretrained=False)
    with TestClient(create_app(registry), base_url="http://localhost") as c:
        c.registry = registry
        yield c
