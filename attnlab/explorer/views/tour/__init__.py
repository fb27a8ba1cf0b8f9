"""The guided tour's story: one model, one sentence, and the head whose removal lowers the answer's probability."""
