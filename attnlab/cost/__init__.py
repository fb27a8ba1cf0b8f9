"""What a transformer costs: parameters, FLOPs, memory traffic, KV cache; predicted and measured.

- analytic: the seeds' per-operation table (FLOPs, bytes read/written, arithmetic intensity) from a config;
- peak: the machine's measured matmul peak (cached) and model FLOPs utilisation (MFU);
- measure: times the real model over a sweep of sequence lengths and fits the growth exponents.
"""

from attnlab.cost.analytic import (
    MODES,
    CostRow,
    CostTable,
    closed_form_training_flops_per_token,
    cost_table,
    forward_flops,
    kv_cache_bytes,
    matmul_parameters,
    training_flops,
    training_flops_per_token,
)
from attnlab.cost.peak import measured_peak_flops, mfu

__all__ = [
    "MODES", "CostRow", "CostTable", "cost_table", "forward_flops", "training_flops", "training_flops_per_token",
    "closed_form_training_flops_per_token", "matmul_parameters", "kv_cache_bytes", "measured_peak_flops", "mfu",
]
