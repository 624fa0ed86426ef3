"""A DNS-over-QUIC server (RFC 9250) on aioquic and dnspython, independent of ldplayer's QUIC
and TLS code: the peer of the replay's DoQ tests and of the lean QUIC client's own
(crates/stacks/tests/doq_against_aioquic.rs), started by ldplayer_testbed::aioquic.
www.example. A is 192.0.2.1 and other names NXDOMAIN; it counts the queries, the
connections, the 0-RTT ones and the resumed ones, and prints them as JSON on SIGINT/SIGTERM.
With KEY_UPDATE_EVERY, it starts a QUIC key update (RFC 9001 §6) on a connection after every
KEY_UPDATE_EVERY answers on it, and counts them.

Usage: doq_server.py ADDRESS PORT CERT KEY READY_FILE [KEY_UPDATE_EVERY]
"""
import asyncio
import sys

from aioquic.asyncio import QuicConnectionProtocol
from aioquic.quic.events import HandshakeCompleted, StreamDataReceived

from aioquic_common import answer, run

counts = {"queries": 0, "connections": 0, "resumed": 0, "zero_rtt": 0, "key_updates": 0}
key_update_every = int(sys.argv[6]) if len(sys.argv) > 6 else 0


class DoqServer(QuicConnectionProtocol):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.buffers = {}
        self.answered = 0
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
            self.answered += 1
            if key_update_every and self.answered % key_update_every == 0:
                # The answer just queued goes out under the new keys.
                self._quic.request_key_update()
                counts["key_updates"] += 1
            self.transmit()


asyncio.run(run(sys.argv, ["doq"], DoqServer, counts))
