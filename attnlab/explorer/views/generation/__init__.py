"""Generation tab: one decoding step at a time with the KV cache, streamed steps."""
