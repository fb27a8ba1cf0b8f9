import os
from contextlib import contextmanager

import pytest
import torch

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
# measured machine figures (matmul peak, best decode threads) go to a folder of this run, not the user's cache
if "ATTNLAB_CACHE_DIR" not in os.environ:
    import tempfile

    os.environ["ATTNLAB_CACHE_DIR"] = tempfile.mkdtemp(prefix="attnlab-test-cache-")
# generate compiles a quantized model's decoding step by default (generation/compiled.py), a compile for every new
# model, row count and thread count the tests use: off here; the tests of that path ask for it (compile=True, or
# a subprocess without this variable)
os.environ.setdefault("ATTNLAB_COMPILE", "0")
torch.set_num_threads(max(1, min(2, os.cpu_count() or 1)))


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)


@contextmanager
def _torch_threads(n: int):
    """torch's thread count set to n, and the caller's count given back afterwards."""
    before = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(before)


@pytest.fixture
def one_thread():
    """One torch thread for this test: tiny models run fastest on one, and on a shared 2-core machine a second
    thread mostly waits for a core."""
    with _torch_threads(1):
        yield


@pytest.fixture(scope="module")
def one_thread_per_module():
    """One torch thread for a whole file (`pytestmark = pytest.mark.usefixtures("one_thread_per_module")`), for
    the reason `one_thread` gives; the count is given back after the file's last test."""
    with _torch_threads(1):
        yield


def pytest_terminal_summary(terminalreporter):
    """The experiments trace's mutation count and the docs mutation table, when their tests ran."""
    import sys

    for line in getattr(sys.modules.get("test_experiments_trace"), "MUTATION_SUMMARY", []):
        terminalreporter.write_line(line)
    for line in getattr(sys.modules.get("test_docs_mutation"), "MUTATION_TABLE", []):  # per kind and page
        terminalreporter.write_line(line)
