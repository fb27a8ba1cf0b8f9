"""One sub-package per view of the page, each holding its router (routes.py: HTTP in, JSON out) and its
computation (compute.py: plain functions of a loaded model, shared with the notebook and the tests through
explorer/api.py). The page's own files are laid out the same way (static/<tab>/). A router imports its own view,
the machinery (explorer/server) and the library, never another router."""
