"""A DNS-over-QUIC server (RFC 9250) on aioquic and dnspython, independent of ldplayer's QUIC
stack (quinn) and TLS (rustls): the replay's peer in its DoQ tests. Every query for a name under
example. is answered NXDOMAIN, www.example. A with 192.0.2.1; it counts the queries, the
connections, the 0-RTT ones and the resumed ones, and prints them as JSON on SIGINT/SIGTERM.

Usage: doq_server.py ADDRESS PORT CERT KEY READY_FILE
"""
import asyncio
import json
import signal
import sys

import dns.message
import dns.rcode
import dns.rrset
from aioquic.asyncio import QuicConnectionProtocol, serve
from aioquic.quic.configuration import QuicConfiguration
from aioquic.quic.events import HandshakeCompleted, StreamDataReceived
from aioquic.tls import SessionTicket

address, port, cert, key, ready = sys.argv[1:6]
counts = {"queries": 0, "connections": 0, "resumed": 0, "zero_rtt": 0}
tickets = {}


def store_ticket(ticket: SessionTicket) -> None:
    tickets[ticket.ticket] = ticket


def fetch_ticket(label: bytes):
    # Single use, as RFC 8446 §8.1 recommends for 0-RTT.
    return tickets.pop(label, None)


def answer(wire: bytes) -> bytes:
    query = dns.message.from_wire(wire)
    response = dns.message.make_response(query)
    name = query.question[0].name.to_text()
    if name == "www.example.":
        response.answer.append(dns.rrset.from_text(name, 60, "IN", "A", "192.0.2.1"))
    else:
        response.set_rcode(dns.rcode.NXDOMAIN)
    return response.to_wire()


class DoqServer(QuicConnectionProtocol):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.buffers = {}
        counts["connections"] += 1

    def quic_event_received(self, event):
        if isinstance(event, HandshakeCompleted):
            counts["resumed"] += int(event.session_resumed)
            counts["zero_rtt"] += int(event.early_data_accepted)
        elif isinstance(event, StreamDataReceived):
            data = self.buffers.get(event.stream_id, b"") + event.data
            self.buffers[event.stream_id] = data
            if not event.end_stream:
                return
            del self.buffers[event.stream_id]
            length = int.from_bytes(data[:2], "big")
            wire = answer(data[2 : 2 + length])
            counts["queries"] += 1
            self._quic.send_stream_data(
                event.stream_id, len(wire).to_bytes(2, "big") + wire, end_stream=True
            )
            self.transmit()


async def main():
    config = QuicConfiguration(is_client=False, alpn_protocols=["doq"], max_datagram_frame_size=None)
    config.load_cert_chain(cert, key)
    config.idle_timeout = 1.0
    server = await serve(
        address,
        int(port),
        configuration=config,
        create_protocol=DoqServer,
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


asyncio.run(main())
