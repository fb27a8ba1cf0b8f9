"""`--threads` and `--device`, shared by the commands that run a model (generate, explore): where it runs.

Why one place: both commands take the same values (a thread count or auto; auto, cpu, cuda or cuda:N), checked
by the same functions (attnlab.threads.check_threads, attnlab.devices.resolve_device); only what auto means and
what the command does with the device differ, and each command says that in its own words.
"""

from __future__ import annotations


def add_arguments(p, *, threads: str, auto_threads: str, device: str, named: str) -> None:
    """--threads (`threads`: what is threaded, `auto_threads`: what auto picks) and --device (`device`: what runs
    there, `named`: where the command reports the device it chose)."""
    p.add_argument("--threads", default="auto",
                   help=f"{threads}: a positive integer, or auto (default: {auto_threads})")
    p.add_argument("--device", default="auto",
                   help=f"{device}: auto (default: cuda when torch sees a GPU, else cpu), cpu, cuda or cuda:N; "
                        f"{named}")
