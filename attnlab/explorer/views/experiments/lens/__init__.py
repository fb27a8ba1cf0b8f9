"""The logit lens: the top tokens after the embeddings and after each block."""
