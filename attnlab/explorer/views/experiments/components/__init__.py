"""Components: patching by attention output, MLP output and head; direct logit attribution."""
