"""`attnlab explore [PATH ...] [--host H] [--port P] [--no-browser]`: start the explorer and open it."""

from __future__ import annotations

from attnlab.cli import register


def _add_arguments(p) -> None:
    p.add_argument("paths", nargs="*", metavar="PATH",
                   help="extra models: attnlab or Hugging Face checkpoint directories, or .gguf files")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1: this machine only)")
    p.add_argument("--port", type=int, default=8000, help="port (default 8000)")
    p.add_argument("--no-browser", action="store_true", help="do not open a browser tab")


def _has_desktop() -> bool:
    """Whether a graphical browser can open: on Linux without a display, webbrowser would start a text browser
    (lynx, w3m) inside this terminal, on top of the server's output, so the address alone is printed."""
    import os
    import sys

    if sys.platform.startswith("linux"):
        return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))
    return True


def run(args) -> int:
    import threading
    import webbrowser

    import uvicorn

    from attnlab.explorer.registry import build_registry
    from attnlab.explorer.server import create_app

    registry = build_registry(args.paths)
    app = create_app(registry, host=args.host)  # requests must name this host (or localhost): no DNS rebinding
    host = "localhost" if args.host in ("127.0.0.1", "0.0.0.0", "::") else args.host
    url = f"http://{host}:{args.port}/"
    print(f"attnlab explorer: {url}  (models: {', '.join(e['id'] for e in registry.list() if e['available'])}; "
          "Ctrl-C stops it)", flush=True)
    if not args.no_browser and not _has_desktop():
        print("no graphical display found: open the address above in a browser", flush=True)
    if not args.no_browser and _has_desktop():
        threading.Timer(1.0, lambda: webbrowser.open(url)).start()
    uvicorn.run(app, host=args.host, port=args.port, log_level="warning")
    return 0


register("explore", "open the Transformer Explorer web app in a browser", _add_arguments, run)
