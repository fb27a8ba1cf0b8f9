"""Reading and writing other libraries' checkpoints: Hugging Face directories (hf.py) and GGUF files (gguf.py).

Each Hugging Face family is one mapping table (families.py) read by one engine (mapping.py), in both directions.
"""

from attnlab.interop.hf import (
    config_from_hf,
    from_hf_model,
    from_hf_state,
    hf_config_from,
    load_hf,
    save_hf,
    to_hf_state,
)

__all__ = ["config_from_hf", "hf_config_from", "from_hf_state", "to_hf_state", "from_hf_model", "load_hf",
           "save_hf"]
