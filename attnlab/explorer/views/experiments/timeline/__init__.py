"""A head's probed attention over training, beside the loss (run folders with a training probe)."""
