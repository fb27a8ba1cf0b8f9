"""`attnlab explore [PATH ...] [--host H] [--port P] [--no-browser] [--device D] [--class [--class-token T]]
[--no-compile]`: start the explorer and open it (--class: for a class on the local network, with a class token;
it prints an address for every network of this machine, offline classroom networks included).

Everything that can be refused is refused before the address is printed: a PATH that does not exist or is not
a model, a port outside 1..65535, a --device this machine lacks, and an address that is already taken (checked by
binding it once).
"""

from __future__ import annotations

import errno
import socket
from pathlib import Path

from attnlab.cli import placement, quantizing
from attnlab.errors import AttnlabError, InputError
from attnlab.extras import require

HELP = "open the Transformer Explorer web app in a browser"
ACCEPTED = ("an attnlab checkpoint or training run folder, a Hugging Face model directory (config.json + "
            "safetensors), or a .gguf file")


def add_arguments(p) -> None:
    p.add_argument("paths", nargs="*", metavar="PATH",
                   help=f"extra models: {ACCEPTED}; or a model's name (`attnlab models`)")
    p.add_argument("--host", default=None, help="address to listen on (default 127.0.0.1: this machine only; with "
                   "--class, every interface: each IPv4 and IPv6 address)")
    p.add_argument("--port", type=int, default=8000, help="port, 1..65535 (default 8000)")
    p.add_argument("--no-browser", action="store_true", help="do not open a browser tab")
    p.add_argument("--class", dest="class_mode", action="store_true",
                   help="serve a class on the local network: listen on every interface (or --host) and require "
                        "the class token; the address to give the students, token included, is printed "
                        "(a --host beyond loopback always requires it)")
    p.add_argument("--no-compile", action="store_true",
                   help="never build the Generation tab's compiled decoding step (by default it is built in the "
                        "background, at low priority, once the explorer has had no request for a few seconds)")
    p.add_argument("--class-token", default="auto",
                   help="the class token: auto (default: a random one each start) or 16 to 64 letters, digits, "
                        "- and _ (the same address for several lessons)")
    placement.add_arguments(p, threads="torch threads per model request",
                            auto_threads="the cores this process may use divided by the requests that may run at "
                                         "once; the same for every request, so an answer never depends on the load",
                            device="where the models generate",
                            named="the other views read a CPU copy; the start-up line names it")
    quantizing.add_argument(p)  # applied to every model served but the hand-set toy


def named_paths(paths: list[str]) -> list[str]:
    """PATHs with model names (`attnlab models`: gpt-char, smollm2, ...) replaced by the files they name, so the
    named model is the one the page opens on; a preset (random weights) is refused: the explorer shows models."""
    from attnlab.loading import named_model

    out = []
    for raw in paths:
        try:
            named = named_model(raw)
        except AttnlabError as exc:  # a known name whose package is not installed
            raise InputError(str(exc)) from None
        if named is not None and named.path is None:
            raise InputError(f"{raw} is a preset (random weights, no tokenizer): nothing to explore; name a trained "
                             "model (`attnlab models`) or a checkpoint PATH")
        out.append(str(named.path) if named is not None else raw)
    return out


def check_paths(paths: list[str]) -> None:
    """Each PATH must be a folder or a .gguf file; what is inside is read when the model is first used."""
    from attnlab.names import all_names
    from attnlab.spelling import did_you_mean

    for raw in paths:
        path = Path(raw).expanduser()
        if not path.exists():
            raise InputError(f"{raw}: no such file or folder, nor a model's name{did_you_mean(raw, all_names())}; "
                             f"a model PATH is {ACCEPTED}, or a name `attnlab models` lists")
        if not (path.is_dir() or (path.is_file() and path.suffix == ".gguf")):
            raise InputError(f"{raw} is neither a folder nor a .gguf file; a model PATH is {ACCEPTED}")


def check_address(host: str, port: int) -> None:
    """Bind host:port once (as uvicorn will, with SO_REUSEADDR) and let go: a port in use or a host that is not
    this machine's is refused here, before the banner, instead of after it inside uvicorn."""
    if not 1 <= port <= 65535:
        raise InputError(f"--port {port}: use a port in 1..65535")
    family = socket.AF_INET6 if ":" in host else socket.AF_INET  # as uvicorn chooses
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except (socket.gaierror, UnicodeError) as exc:
            raise InputError(f"--host {host!r} is not an address of this machine ({exc})") from None
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                raise InputError(f"{host}:{port} is already in use (another explorer?); stop it or pass "
                                 "--port with a free port") from None
            raise InputError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None


def _has_desktop() -> bool:
    """Whether a graphical browser can open: on Linux without a display, webbrowser would start a text browser
    (lynx, w3m) inside this terminal, on top of the server's output, so the address alone is printed."""
    import os
    import sys

    if sys.platform.startswith("linux"):
        return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))
    return True


def served(entries: list[dict]) -> list[str]:
    """The start-up lines naming the models on offer (id and label; no absolute paths)."""
    ready = [e for e in entries if e["available"]]
    width = max((len(e["id"]) for e in ready), default=0)
    lines = [f"  {e['id']:<{width}}  {e['label']}" for e in ready]
    missing = [e["id"] for e in entries if not e["available"]]
    if missing:
        lines.append(f"  (not available here: {', '.join(missing)}; the page says how to get them)")
    return lines


def where(device) -> str:
    """The banner's words for --device: on a GPU only generation runs there (the other views read CPU tensors)."""
    if device.type == "cpu":
        return "device cpu"
    return f"generation on {device}, the other views on cpu"


LOOPBACK = ("127.0.0.1", "localhost", "::1")


def class_setup(args) -> tuple[str, str, str | None]:
    """(address to listen on, address the pages must name, class token or None). Listening beyond loopback,
    whether asked with --class or with --host, always takes a class token: without one anybody on the network
    could run the models. --class without --host listens on every interface, and the pages may then name any
    address of this machine (the guard reads them)."""
    from attnlab.explorer.server import classroom

    host = args.host or (classroom.every_interface() if args.class_mode else "127.0.0.1")
    if not args.class_mode and host in LOOPBACK:
        return host, host, None
    try:
        token = classroom.new_token() if args.class_token == "auto" else classroom.check_token(args.class_token)
    except ValueError as exc:
        raise InputError(f"--class-token: {exc}") from None
    return host, host, token


def run(args) -> int:
    from attnlab.threads import check_threads

    require("fastapi", "explorer", "attnlab explore")  # before any other check: without it nothing else matters
    uvicorn = require("uvicorn", "explorer", "attnlab explore")
    threads = check_threads(args.threads, "--threads")  # N, or None for auto / 0
    args.paths = named_paths(args.paths)
    check_paths(args.paths)
    quantizing.check(args.quantize)
    from attnlab.devices import resolve_device

    device = resolve_device(args.device, "--device")  # cuda without CUDA is refused before the banner
    bind, named, class_token = class_setup(args)
    check_address(bind, args.port)
    import threading
    import webbrowser

    from attnlab.explorer.server import classroom
    from attnlab.explorer.server.app import create_app
    from attnlab.explorer.server.registry import build_registry

    registry = build_registry(args.paths, quantize=args.quantize, device=device)
    # requests must name this host (or localhost): no DNS rebinding
    app = create_app(registry, host=named, threads=threads, class_token=class_token,
                     compile_steps=not args.no_compile)
    urls = [f"http://{f'[{h}]' if ':' in h else h}:{args.port}/" + (f"?class={class_token}" if class_token else "")
            for h in classroom.hosts_to_print(named)]  # an IPv6 address in brackets
    url = urls[0]
    print(f"attnlab explorer: {url}  ({where(device)}; Ctrl-C stops it)", flush=True)
    for other in urls[1:]:
        print(f"  also: {other}", flush=True)
    if class_token:
        which = " (or the one of those on their network)" if len(urls) > 1 else ""
        on = "every interface" if bind in classroom.WILDCARDS else bind
        print(f"serving a class on {on}: students open the address above{which} (its class token is required; "
              "anyone with it can use this explorer)", flush=True)
    print("models served:", flush=True)
    print("\n".join(served(registry.list())), flush=True)
    if not args.no_browser and not _has_desktop():
        print("no graphical display found: open the address above in a browser", flush=True)
    if not args.no_browser and _has_desktop():
        threading.Timer(1.0, lambda: webbrowser.open(url)).start()
    uvicorn.run(app, host=bind, port=args.port, log_level="warning")
    return 0
