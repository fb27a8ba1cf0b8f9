"""Self-supervised tab: the masked-LM draw (15% and 80/10/10) and its predictions, causal LM predictions."""
