"""attnlab's benchmarks, side by side with their peers (Hugging Face, nanoGPT, torch.nn.TransformerEncoder).

One module per benchmark, each runnable as `python -m attnlab.benchmarks.NAME`; `attnlab bench` (run_all)
runs them (the heavy ones when named with --only; `attnlab bench --help` lists them all).
They ship inside the package so that they run from any install; the peer libraries are
imported only where a benchmark uses them. bench/RESULTS.md in the repository cites their runs.
"""
