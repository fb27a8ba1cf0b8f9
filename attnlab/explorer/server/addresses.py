"""The addresses students can type to reach this machine, for the address `attnlab explore --class` prints and
for the Host rule of a class served on every interface (explorer/server/guard.py).

Why not only the address the kernel would route a private address through: a classroom LAN is often offline,
without a default route (or a route to 10.0.0.0/8), and then that trick finds nothing; the students still reach
the machine by any of its interfaces' addresses, so every one is listed and admitted.
"""

from __future__ import annotations

import ipaddress
import socket


def lan_address() -> str:
    """This machine's address on its local network: the source address the kernel would use to reach a private
    address (a UDP socket's connect sends nothing); on a network without a route to it (an offline classroom LAN
    without a default route) the first of machine_addresses(); 127.0.0.1 when there is no network at all."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        try:
            sock.connect(("10.255.255.255", 1))
            address = sock.getsockname()[0]
        except OSError:
            address = "0.0.0.0"
    if not ipaddress.ip_address(address).is_unspecified:
        return address
    return next(iter(interface_addresses()), "127.0.0.1")


def machine_addresses() -> list[str]:
    """Every address a student can type to reach this machine: lan_address() first when it is routed, then every
    other non-loopback IPv4 and IPv6 address of its interfaces (IPv6 link-local ones left out: a browser cannot
    open them without a zone). Why all of them: a classroom LAN may have no default route, or several networks."""
    found = interface_addresses()
    routed = lan_address()
    return [routed, *(a for a in found if a != routed)] if routed in found else found


def interface_addresses() -> list[str]:
    """The interfaces' non-loopback addresses, IPv4 before IPv6 (psutil when installed, else the kernel's tables:
    an ioctl per interface for IPv4, /proc/net/if_inet6 for IPv6)."""
    try:
        import psutil
    except ImportError:
        raw = _kernel_addresses()
    else:
        raw = [a.address.split("%")[0] for addrs in psutil.net_if_addrs().values() for a in addrs
               if a.family in (socket.AF_INET, socket.AF_INET6)]
    kept = []
    for text in raw:
        try:
            address = ipaddress.ip_address(text)
        except ValueError:
            continue
        if address.is_loopback or address.is_unspecified or (address.version == 6 and address.is_link_local):
            continue
        if str(address) not in kept:
            kept.append(str(address))
    return sorted(kept, key=lambda a: ipaddress.ip_address(a).version)


def _kernel_addresses() -> list[str]:
    """Interface addresses without psutil (Linux): each interface's IPv4 address and /proc/net/if_inet6."""
    found = []
    try:
        import fcntl
        import struct

        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
            for _, name in socket.if_nameindex():
                try:
                    packed = fcntl.ioctl(sock.fileno(), 0x8915, struct.pack("256s", name[:15].encode()))  # SIOCGIFADDR
                except OSError:
                    continue  # no IPv4 address on this interface
                found.append(socket.inet_ntoa(packed[20:24]))
    except (ImportError, OSError):
        pass
    try:
        lines = open("/proc/net/if_inet6").read().splitlines()
    except OSError:
        lines = []
    for line in lines:
        hexa = line.split()[0] if line.split() else ""
        if len(hexa) == 32:
            found.append(str(ipaddress.IPv6Address(bytes.fromhex(hexa))))
    return found
