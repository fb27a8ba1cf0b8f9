"""The explorer's machinery, shared by every view: the app (app.py: create_app), the guard in front of every
request, the runner's model slots and fair queue, streamed jobs, error handlers, the request schemas the main tabs
share, generation sessions, the class mode, the registry of models, and the helpers every view uses to turn
tokens and tensors into JSON (common.py, tokens.py). Nothing here imports a view."""
