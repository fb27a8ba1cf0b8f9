"""Show the code: the attnlab Python that gives a view's numbers for its request."""
