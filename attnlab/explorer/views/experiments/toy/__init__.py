"""The seed's toy: hand-set W_Q and W_K the learner edits, and the scores they give."""
