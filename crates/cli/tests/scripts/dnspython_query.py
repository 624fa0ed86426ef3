"""One DNS query with dnspython, over UDP, DNS over QUIC (aioquic) or DNS over HTTPS (httpx
with h2, HTTP/2 only), as an independent client: prints the response code, then the answer
section, one record per line.

Usage: dnspython_query.py udp|quic|https ADDRESS PORT CA_FILE QNAME QTYPE [PATH]
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
elif mode == "https":
    path = sys.argv[7] if len(sys.argv) > 7 else "/dns-query"
    response = dns.query.https(
        query,
        address,
        port=int(port),
        path=path,
        timeout=5,
        verify=ca,
        http_version=dns.query.HTTPVersion.H2,
    )
else:
    response = dns.query.udp(query, address, port=int(port), timeout=5)
print(dns.rcode.to_text(response.rcode()))
for rrset in response.answer:
    for line in rrset.to_text().splitlines():
        print(line)
