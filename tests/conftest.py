import os

import pytest
import torch

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
# measured machine figures (matmul peak, best decode threads) go to a folder of this run, not the user's cache
if "ATTNLAB_CACHE_DIR" not in os.environ:
    import tempfile

    os.environ["ATTNLAB_CACHE_DIR"] = tempfile.mkdtemp(prefix="attnlab-test-cache-")
torch.set_num_threads(max(1, min(2, os.cpu_count() or 1)))


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)
