"""Ethernet/IPv4/UDP and TCP framing into a pcap file, for the test scripts' captures.

Written by hand (struct) so that the captures do not come from ldplayer's own pcap writer.
"""

import struct

T0 = 1_700_000_000


def checksum(data):
    if len(data) % 2:
        data += b"\0"
    s = sum(struct.unpack("!%dH" % (len(data) // 2), data))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


class Pcap:
    """A little-endian, microsecond pcap of Ethernet frames, one millisecond apart."""

    def __init__(self):
        self.out = bytearray(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 262144, 1))
        self.t = 0
        self.ip_id = 1

    def frame(self, src, dst, proto, transport):
        ip = struct.pack(
            "!BBHHHBBH4s4s", 0x45, 0, 20 + len(transport), self.ip_id, 0x4000, 128, proto, 0, src, dst
        )
        ip = ip[:10] + struct.pack("!H", checksum(ip)) + ip[12:]
        self.ip_id += 1
        eth = b"\x02\x00\x00\x00\x00\x02\x02\x00\x00\x00\x00\x01\x08\x00"
        data = eth + ip + transport
        self.t += 1000
        self.out += struct.pack("<IIII", T0 + self.t // 1_000_000, self.t % 1_000_000, len(data), len(data))
        self.out += data

    def udp(self, src, sport, dst, dport, payload):
        self.frame(src, dst, 17, struct.pack("!HHHH", sport, dport, 8 + len(payload), 0) + payload)

    def write(self, path):
        with open(path, "wb") as f:
            f.write(self.out)


class Tcp:
    """One TCP connection, segments of at most 1460 bytes, every segment acknowledged."""

    SYN, FIN, ACK, PSH = 0x02, 0x01, 0x10, 0x08

    def __init__(self, pcap, client, server, sport, dport):
        self.pcap = pcap
        self.hosts = {True: (client, server), False: (server, client)}
        self.ports = {True: (sport, dport), False: (dport, sport)}
        self.seq = {True: 1000, False: 5000}
        self.seg(True, self.SYN, b"")
        self.seq[True] += 1
        self.seg(False, self.SYN | self.ACK, b"")
        self.seq[False] += 1
        self.seg(True, self.ACK, b"")

    def seg(self, up, flags, data):
        sport, dport = self.ports[up]
        ack = self.seq[not up] if flags & self.ACK else 0
        src, dst = self.hosts[up]
        header = struct.pack("!HHIIBBHHH", sport, dport, self.seq[up], ack, 5 << 4, flags, 64240, 0, 0)
        self.pcap.frame(src, dst, 6, header + data)

    def send(self, up, message):
        """Sends one DNS message with its length prefix, from the client when `up`."""
        data = struct.pack("!H", len(message)) + message
        for i in range(0, len(data), 1460):
            chunk = data[i : i + 1460]
            self.seg(up, self.ACK | self.PSH, chunk)
            self.seq[up] += len(chunk)
            self.seg(not up, self.ACK, b"")

    def close(self):
        for up in (True, False):
            self.seg(up, self.FIN | self.ACK, b"")
            self.seq[up] += 1
        self.seg(True, self.ACK, b"")
