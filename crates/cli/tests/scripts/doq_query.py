"""One DNS query with dnspython, over UDP or DNS over QUIC (aioquic), as an independent client:
prints the response code, then the answer section, one record per line.

Usage: doq_query.py udp|quic ADDRESS PORT CA_FILE QNAME QTYPE
"""
import sys

import dns.message
import dns.query
import dns.rcode

mode, address, port, ca, qname, qtype = sys.argv[1:7]
query = dns.message.make_query(qname, qtype)
if mode == "quic":
    # RFC 9250: dnspython sends message ID 0 over QUIC.
    response = dns.query.quic(query, address, port=int(port), timeout=5, verify=ca)
else:
    response = dns.query.udp(query, address, port=int(port), timeout=5)
print(dns.rcode.to_text(response.rcode()))
for rrset in response.answer:
    for line in rrset.to_text().splitlines():
        print(line)
