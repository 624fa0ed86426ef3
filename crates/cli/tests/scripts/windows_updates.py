"""Writes a pcap of DNS dynamic updates shaped as Windows clients send them, built with dnspython.

Usage: /usr/bin/python3 windows_updates.py OUT.pcap

The messages are made by dnspython (an encoder independent of ldplayer) and framed by hand
(pcapgen.py) into Ethernet/IPv4/UDP and TCP packets:

- over UDP: an unsigned UPDATE (prerequisite "no CNAME at the name": class NONE, type CNAME,
  empty RDATA; delete the A RRset: class ANY, empty RDATA; add an A) answered REFUSED, then the
  same and a reverse-zone UPDATE (delete the PTR RRset, add a PTR) signed with GSS-TSIG, and an
  UPDATE with every other prerequisite and delete form (name in use, name not in use, RRset
  exists, delete one record, delete all RRsets of a name, delete an SRV RRset);
- over one TCP connection: the GSS-API key exchange (a TKEY query carrying a 2,600-byte token,
  split over several segments, and its TKEY answer), then a signed UPDATE and its answer.

GSS-TSIG needs a GSS-API security context for its MACs; a stand-in gives deterministic bytes
(what is checked is the decoding, not the signature).
"""

import hashlib
import os
import sys

import dns.message
import dns.name
import dns.rdataclass
import dns.rdatatype
import dns.rdtypes.ANY.TKEY
import dns.rcode
import dns.tsig
import dns.update

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pcapgen import T0, Pcap, Tcp  # noqa: E402

CLIENT = bytes([10, 1, 2, 7])
SERVER = bytes([10, 1, 2, 1])
KEY_NAME = dns.name.from_text("1234.sig-dc1.corp.example.")


class StandInGssContext:
    """What dnspython's GSS-TSIG asks of a gssapi.SecurityContext."""

    def get_signature(self, data):
        return hashlib.sha256(data).digest()[:28]

    def verify_signature(self, data, mac):
        return None


KEYRING = {KEY_NAME: dns.tsig.Key(KEY_NAME, StandInGssContext(), dns.tsig.GSS_TSIG)}


def signed(msg):
    msg.use_tsig(KEYRING, KEY_NAME, fudge=36000, algorithm=dns.tsig.GSS_TSIG)
    return msg


def host_update(msg_id, sign):
    u = dns.update.UpdateMessage("corp.example.", id=msg_id)
    u.absent("host7", "CNAME")
    u.delete("host7", "A")
    u.add("host7", 1200, "A", "10.1.2.7")
    return signed(u) if sign else u


def reverse_update(msg_id):
    u = dns.update.UpdateMessage("2.1.10.in-addr.arpa.", id=msg_id)
    u.delete("7", "PTR")
    u.add("7", 1200, "PTR", "host7.corp.example.")
    return signed(u)


def every_form_update(msg_id):
    u = dns.update.UpdateMessage("corp.example.", id=msg_id)
    u.present("host7")
    u.absent("host8")
    u.present("host7", "A")
    u.delete("host7", "A", "10.1.2.6")
    u.delete("old-host")
    u.delete("_ldap._tcp.dc1", "SRV")
    u.add("_ldap._tcp.dc1", 600, "SRV", "0 100 389 dc1.corp.example.")
    return signed(u)


def response(query, rcode=dns.rcode.NOERROR, sign=True):
    r = dns.message.make_response(query)
    r.set_rcode(rcode)
    if sign and query.had_tsig:
        signed(r)
    return r


def tkey_rr(msg, section, token, mode=3):
    rdata = dns.rdtypes.ANY.TKEY.TKEY(
        dns.rdataclass.ANY,
        dns.rdatatype.TKEY,
        dns.name.from_text("gss-tsig."),
        T0,
        T0 + 86400,
        mode,
        0,
        token,
    )
    rrset = msg.find_rrset(
        section, KEY_NAME, dns.rdataclass.ANY, dns.rdatatype.TKEY, create=True
    )
    rrset.add(rdata, 0)


def tkey_exchange():
    q = dns.message.make_query(KEY_NAME, dns.rdatatype.TKEY, dns.rdataclass.ANY, id=0x2001)
    q.flags = 0
    tkey_rr(q, q.additional, bytes((i * 7 + 3) % 256 for i in range(2600)))
    r = dns.message.make_response(q)
    tkey_rr(r, r.answer, bytes((i * 11 + 5) % 256 for i in range(300)))
    signed(r)
    return q, r


def main(path):
    pcap = Pcap()
    exchanges = []
    first = host_update(0x1001, sign=False)
    exchanges.append(("udp", first, response(first, dns.rcode.REFUSED)))
    tkey_q, tkey_r = tkey_exchange()
    tcp_update = host_update(0x1002, sign=True)
    exchanges.append(("tcp", tkey_q, tkey_r))
    exchanges.append(("tcp", tcp_update, response(tcp_update)))
    for u in (host_update(0x1003, sign=True), reverse_update(0x1004), every_form_update(0x1005)):
        exchanges.append(("udp", u, response(u)))

    tcp = None
    for n, (transport, query, answer) in enumerate(exchanges):
        q, a = query.to_wire(), answer.to_wire()
        if transport == "udp":
            pcap.udp(CLIENT, 50000 + n, SERVER, 53, q)
            pcap.udp(SERVER, 53, CLIENT, 50000 + n, a)
        else:
            tcp = tcp or Tcp(pcap, CLIENT, SERVER, 49999, 53)
            tcp.send(True, q)
            tcp.send(False, a)
    tcp.close()
    pcap.write(path)
    print(2 * len(exchanges))


if __name__ == "__main__":
    main(sys.argv[1])
