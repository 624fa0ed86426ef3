"""What the aioquic test servers (doq_server.py, doh3_server.py) share: the answers, the
session ticket store (single use, as RFC 8446 §8.1 recommends for 0-RTT), and serving until
SIGINT/SIGTERM, then printing the counts as JSON.
"""
import asyncio
import json
import signal

import dns.message
import dns.rcode
import dns.rrset
from aioquic.asyncio import serve
from aioquic.quic.configuration import QuicConfiguration
from aioquic.tls import SessionTicket

tickets = {}


def store_ticket(ticket: SessionTicket) -> None:
    tickets[ticket.ticket] = ticket


def fetch_ticket(label: bytes):
    return tickets.pop(label, None)


def answer(wire: bytes) -> bytes:
    """www.example. A is 192.0.2.1; any other name is NXDOMAIN."""
    query = dns.message.from_wire(wire)
    response = dns.message.make_response(query)
    name = query.question[0].name.to_text()
    if name == "www.example.":
        response.answer.append(dns.rrset.from_text(name, 60, "IN", "A", "192.0.2.1"))
    else:
        response.set_rcode(dns.rcode.NXDOMAIN)
    return response.to_wire()


async def run(argv, alpn, protocol, counts) -> None:
    """Serves `protocol` on ADDRESS PORT with CERT KEY (argv[1:5]), a 1 s idle timeout and
    session tickets, writes READY_FILE (argv[5]) once listening, and prints `counts` on exit."""
    address, port, cert, key, ready = argv[1:6]
    config = QuicConfiguration(is_client=False, alpn_protocols=alpn, max_datagram_frame_size=None)
    config.load_cert_chain(cert, key)
    config.idle_timeout = 1.0
    server = await serve(
        address,
        int(port),
        configuration=config,
        create_protocol=protocol,
        session_ticket_fetcher=fetch_ticket,
        session_ticket_handler=store_ticket,
        retry=False,
    )
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    with open(ready, "w") as f:
        f.write("ready\n")
    await stop.wait()
    server.close()
    print(json.dumps(counts), flush=True)
