"""Cost tab: parameters, FLOPs, bytes and KV-cache memory of the model in view, and measured times."""
