"""The Transformer Explorer: `attnlab explore` (cli), its FastAPI server, the pure view functions (api) the
server, the notebook view and the tests share, the registry of models on offer, and the seed's toy."""
