"""A DNS-over-HTTPS server on HTTP/3 (RFC 8484 over RFC 9114) on aioquic and dnspython,
independent of ldplayer's QUIC, HTTP/3 and TLS code: the replay's peer in its DoH-over-HTTP/3
tests. www.example. A is 192.0.2.1 and other names under example. are NXDOMAIN; a query for
a name under status503.example. gets HTTP status 503, and one under text.example. a 200 whose
content type is text/plain. It counts the requests (by method), the connections, and the
resumed and 0-RTT ones, and prints them as JSON on SIGINT/SIGTERM.

Usage: doh3_server.py ADDRESS PORT CERT KEY READY_FILE
"""
import asyncio
import base64
import sys

import dns.message
from aioquic.asyncio import QuicConnectionProtocol
from aioquic.h3.connection import H3_ALPN, H3Connection
from aioquic.h3.events import DataReceived, HeadersReceived
from aioquic.quic.events import HandshakeCompleted

from aioquic_common import answer, run

counts = {"queries": 0, "get": 0, "post": 0, "connections": 0, "resumed": 0, "zero_rtt": 0}


class Doh3Server(QuicConnectionProtocol):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.http = H3Connection(self._quic)
        self.requests = {}
        counts["connections"] += 1

    def quic_event_received(self, event):
        if isinstance(event, HandshakeCompleted):
            counts["resumed"] += int(event.session_resumed)
            counts["zero_rtt"] += int(event.early_data_accepted)
        for h3_event in self.http.handle_event(event):
            self.http_event(h3_event)

    def http_event(self, event):
        if isinstance(event, HeadersReceived):
            self.requests[event.stream_id] = [dict(event.headers), b""]
        elif isinstance(event, DataReceived) and event.stream_id in self.requests:
            self.requests[event.stream_id][1] += event.data
        else:
            return
        if event.stream_ended:
            headers, body = self.requests.pop(event.stream_id)
            self.respond(event.stream_id, headers, body)

    def respond(self, stream_id, headers, body):
        method = headers.get(b":method", b"")
        path = headers.get(b":path", b"")
        if method == b"GET":
            query = path.split(b"?dns=", 1)[1]
            wire = base64.urlsafe_b64decode(query + b"=" * (-len(query) % 4))
            counts["get"] += 1
        else:
            wire = body
            counts["post"] += 1
        counts["queries"] += 1
        name = dns.message.from_wire(wire).question[0].name.to_text()
        out = answer(wire)
        status, content_type = b"200", b"application/dns-message"
        if name.endswith("status503.example."):
            status, out = b"503", b"busy"
        elif name.endswith("text.example."):
            content_type = b"text/plain"
        self.http.send_headers(
            stream_id,
            [
                (b":status", status),
                (b"content-type", content_type),
                (b"content-length", str(len(out)).encode()),
            ],
        )
        self.http.send_data(stream_id, out, end_stream=True)
        self.transmit()


asyncio.run(run(sys.argv, H3_ALPN, Doh3Server, counts))
