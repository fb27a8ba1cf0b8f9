"""A class on an offline network: `attnlab explore --class` on a machine whose only network has no default route
(a classroom LAN without internet) prints an address the students can reach, and serves them there.

Two network namespaces joined by a veth pair stand for the teacher's machine and a student's, with addresses on
one IPv4 /24 and one IPv6 /64 and no route anywhere else. The explorer runs in the first (as the command a
teacher types); the test reads the addresses it prints and opens each from the second. Needs root and `ip netns`
(skipped otherwise)."""

from __future__ import annotations

import os
import queue
import re
import shutil
import subprocess
import sys
import threading
import time

import pytest

from attnlab.benchmarks.explorer_class import stop_server
from attnlab.explorer.server import classroom

TOKEN = "offline-class-token-0001"
SERVER_IP, STUDENT_IP, PORT = "10.231.7.1", "10.231.7.2", 8765
SERVER_IP6, STUDENT_IP6 = "fd77:231:7::1", "fd77:231:7::2"  # unique local addresses (no DAD wait: nodad)


def _ip(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["ip", *args], capture_output=True, text=True, timeout=30)


@pytest.fixture
def offline_lan():
    """(the teacher's namespace, the student's): one veth pair between them, no default route in either."""
    if shutil.which("ip") is None or os.geteuid() != 0:
        pytest.skip("needs root and the `ip` command to make network namespaces")
    teacher, student = f"attnlab-t{os.getpid()}", f"attnlab-s{os.getpid()}"
    made = _ip("netns", "add", teacher)
    if made.returncode != 0:
        pytest.skip(f"`ip netns add` is not permitted here: {made.stderr.strip()}")
    try:
        _ip("netns", "add", student).check_returncode()
        t_if, s_if = f"vt{os.getpid() % 100000}", f"vs{os.getpid() % 100000}"
        for step in (["link", "add", t_if, "type", "veth", "peer", "name", s_if],
                     ["link", "set", t_if, "netns", teacher], ["link", "set", s_if, "netns", student],
                     ["-n", teacher, "addr", "add", f"{SERVER_IP}/24", "dev", t_if],
                     ["-n", student, "addr", "add", f"{STUDENT_IP}/24", "dev", s_if],
                     ["-n", teacher, "addr", "add", f"{SERVER_IP6}/64", "dev", t_if, "nodad"],
                     ["-n", student, "addr", "add", f"{STUDENT_IP6}/64", "dev", s_if, "nodad"],
                     ["-n", teacher, "link", "set", t_if, "up"], ["-n", student, "link", "set", s_if, "up"],
                     ["-n", teacher, "link", "set", "lo", "up"], ["-n", student, "link", "set", "lo", "up"]):
            _ip(*step).check_returncode()
        assert _ip("-n", teacher, "route", "show", "default").stdout.strip() == ""  # offline: no default route
        yield teacher, student
    finally:
        _ip("netns", "del", teacher)
        _ip("netns", "del", student)


def _printed_addresses(proc: subprocess.Popen, seconds: float = 120.0) -> list[str]:
    """The http:// addresses the explorer prints before its list of models."""
    lines: queue.Queue = queue.Queue()
    threading.Thread(target=lambda: [lines.put(line) for line in proc.stdout], daemon=True).start()
    found, end = [], time.monotonic() + seconds
    while time.monotonic() < end:
        try:
            line = lines.get(timeout=1.0)
        except queue.Empty:
            assert proc.poll() is None, "the explorer stopped before printing its address"
            continue
        if line.startswith("models served:"):
            return found
        found += re.findall(r"http://\S+", line)
    raise AssertionError(f"no address printed within {seconds:g} s")


def _student_opens(student: str, url: str, seconds: float = 60.0) -> str:
    """Open `url` from the student's namespace (retrying while the server starts): its status, or the error."""
    probe = ("import sys, urllib.request\n"
             "try:\n"
             "    print(urllib.request.urlopen(sys.argv[1], timeout=5).status)\n"
             "except Exception as e:\n"
             "    print(type(e).__name__, e)\n")
    end, got = time.monotonic() + seconds, ""
    while time.monotonic() < end:
        got = subprocess.run(["ip", "netns", "exec", student, sys.executable, "-c", probe, url],
                             capture_output=True, text=True, timeout=30).stdout.strip()
        if got == "200" or "Connection refused" not in got:
            return got
        time.sleep(0.5)
    return got


@pytest.mark.slow
def test_a_student_reaches_the_class_by_a_printed_address_on_a_network_without_a_default_route(offline_lan):
    teacher, student = offline_lan
    cmd = ["ip", "netns", "exec", teacher, sys.executable, "-c",
           "import sys; from attnlab.cli import main; sys.exit(main())",
           "explore", "--class", "--class-token", TOKEN, "--port", str(PORT), "--no-browser"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        urls = _printed_addresses(proc)
        # its network's addresses, not localhost: IPv4 first, and IPv6 where its socket takes both
        assert urls[0] == f"http://{SERVER_IP}:{PORT}/?class={TOKEN}"
        ipv6 = classroom.every_interface() == ""  # this kernel serves IPv6: the explorer listens there too
        assert urls[1:] == ([f"http://[{SERVER_IP6}]:{PORT}/?class={TOKEN}"] if ipv6 else [])
        for url in urls:
            assert _student_opens(student, url) == "200", url
        assert _student_opens(student, f"http://{SERVER_IP}:{PORT}/") == "HTTPError HTTP Error 403: Forbidden"
    finally:
        stop_server(proc)
