"""Building blocks, one concept per file. Layers never import models."""
