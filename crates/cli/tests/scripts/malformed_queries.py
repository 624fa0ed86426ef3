"""Writes a pcap of DNS queries of which some are malformed, as root servers receive them.

Usage: /usr/bin/python3 malformed_queries.py OUT.pcap

Well-formed queries come from dnspython; the malformed ones are dnspython queries damaged by
hand, one per kind of damage, each with a readable 12-byte header. Over UDP:

- absurd-counts: a good question, but the header announces 40000 answers;
- bad-label: a label with the reserved 0x40 type in the question;
- bad-pointer: a question name that is a compression pointer to itself;
- truncated: cut in the middle of the question's class;
- name-too-long: a question name of 320 bytes;
- bad-opt: two OPT records;
- short: 11 bytes, not even a header (never a message).

Over one TCP connection: a good query, an absurd-counts query, another good query. Each query
gets an answer from dnspython (the malformed ones an empty FORMERR). Prints, as JSON, the
malformed queries' kinds in capture order.
"""

import json
import os
import struct
import sys

import dns.message
import dns.rcode

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pcapgen import Pcap, Tcp  # noqa: E402

CLIENT = bytes([192, 0, 2, 10])
SERVER = bytes([198, 41, 0, 4])


def query(name, rdtype="A", msg_id=1, edns=0):
    q = dns.message.make_query(name, rdtype, id=msg_id, use_edns=edns, want_dnssec=edns is not None)
    q.flags = 0
    return q.to_wire()


def with_counts(wire, qd=None, an=None, ns=None, ar=None):
    counts = list(struct.unpack("!4H", wire[4:12]))
    for i, c in enumerate((qd, an, ns, ar)):
        if c is not None:
            counts[i] = c
    return wire[:4] + struct.pack("!4H", *counts) + wire[12:]


def malformed():
    """(kind, wire) of each malformed query."""
    long_name = b"".join(b"\x3f" + b"x" * 63 for _ in range(5)) + b"\x00"
    opt = b"\x00\x00\x29\x04\xd0\x00\x00\x80\x00\x00\x00"
    plain = query("www.example.com.", msg_id=0x3004, edns=None)
    return [
        ("dns-absurd-counts", with_counts(query("absurd.example.", "AAAA", 0x3001), an=40000)),
        ("dns-bad-label", struct.pack("!6H", 0x3002, 0, 1, 0, 0, 0) + b"\x41xy\x00\x00\x01\x00\x01"),
        ("dns-bad-pointer", struct.pack("!6H", 0x3003, 0, 1, 0, 0, 0) + b"\xc0\x0c\x00\x01\x00\x01"),
        ("dns-truncated", plain[:-1]),
        ("dns-name-too-long", struct.pack("!6H", 0x3005, 0, 1, 0, 0, 0) + long_name + b"\x00\x01\x00\x01"),
        ("dns-bad-opt", with_counts(query("twice.example.", "MX", 0x3006, edns=None), ar=2) + opt + opt),
    ]


def main(path):
    pcap = Pcap()
    kinds = []
    port = 40000

    def exchange(q, answer):
        nonlocal port
        port += 1
        pcap.udp(CLIENT, port, SERVER, 53, q)
        pcap.udp(SERVER, 53, CLIENT, port, answer)

    for i, name in enumerate(["a.example.", "b.example.", "c.example."]):
        q = query(name, msg_id=0x1000 + i)
        exchange(q, dns.message.make_response(dns.message.from_wire(q)).to_wire())
    for kind, wire in malformed():
        formerr = struct.pack("!6H", struct.unpack("!H", wire[:2])[0], 0x8001, 0, 0, 0, 0)
        exchange(wire, formerr)
        kinds.append(kind)
    short = struct.pack("!6H", 0x3007, 0, 1, 0, 0, 0)[:11]
    pcap.udp(CLIENT, port + 1, SERVER, 53, short)

    tcp = Tcp(pcap, CLIENT, SERVER, 39999, 53)
    for q in (
        query("first.example.", msg_id=0x2001),
        with_counts(query("tcp-absurd.example.", msg_id=0x2002), an=999),
        query("second.example.", msg_id=0x2003),
    ):
        tcp.send(True, q)
    kinds.append("dns-absurd-counts")
    tcp.close()
    pcap.write(path)
    print(json.dumps(kinds))


if __name__ == "__main__":
    main(sys.argv[1])
