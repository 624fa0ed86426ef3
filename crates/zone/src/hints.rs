//! Root hints, where a resolver starts: made from the root zone of an emulated hierarchy (the
//! lab's and the experiments' resolvers), and turned into the Lua table Knot Resolver takes.

use std::fmt::Write as _;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use ldplayer_dns::Rtype;

use crate::Views;

/// Root hints (`named.root` format) for the hierarchy of `views`: the NS set of the root zone
/// and the addresses its zone data gives for those names; `None` when no view has the root.
pub fn root_hints(views: &Views) -> Option<String> {
    let root = views.zones().into_iter().find(|z| *z.origin == [0u8])?;
    let ns = root.apex().rrset(Rtype::NS)?;
    let mut out = String::from("; root hints of the emulated hierarchy (ldplayer)\n");
    let mut addrs = String::new();
    for rdata in ns.rdatas() {
        let mut name = String::new();
        ldplayer_dns::name_to_presentation(rdata, &mut name);
        let _ = writeln!(out, ".\t3600000\tNS\t{name}");
        let Some(node) = root.node(&crate::name::lowercase(rdata)) else {
            continue;
        };
        for t in [Rtype::A, Rtype::AAAA] {
            for a in node.rrset(t).into_iter().flat_map(|s| s.rdatas()) {
                let ip: Option<IpAddr> = match a.len() {
                    4 => Some(Ipv4Addr::new(a[0], a[1], a[2], a[3]).into()),
                    16 => <[u8; 16]>::try_from(a)
                        .ok()
                        .map(|b| Ipv6Addr::from(b).into()),
                    _ => None,
                };
                if let Some(ip) = ip {
                    let _ = writeln!(addrs, "{name}\t3600000\t{t}\t{ip}");
                }
            }
        }
    }
    out.push_str(&addrs);
    Some(out)
}

/// Root hints text (`named.root` format) as a Lua table for Knot Resolver's `hints.root`:
/// `['name.'] = { 'addr', ... }`; lines that are not an address record are left out.
pub fn hints_as_lua(hints: &str) -> String {
    let mut by_name: Vec<(String, Vec<String>)> = Vec::new();
    for line in hints.lines() {
        let fields: Vec<&str> = line.split_whitespace().collect();
        if line.starts_with(';') || fields.len() < 4 {
            continue;
        }
        let (name, rtype, addr) = (
            fields[0],
            fields[fields.len() - 2],
            fields[fields.len() - 1],
        );
        if matches!(rtype.parse(), Ok(Rtype::A | Rtype::AAAA)) && addr.parse::<IpAddr>().is_ok() {
            match by_name.iter_mut().find(|(n, _)| n == name) {
                Some((_, v)) => v.push(addr.to_string()),
                None => by_name.push((name.to_string(), vec![addr.to_string()])),
            }
        }
    }
    by_name
        .iter()
        .map(|(n, a)| {
            let list: Vec<String> = a.iter().map(|x| format!("'{x}'")).collect();
            format!("['{n}'] = {{ {} }}", list.join(", "))
        })
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hints_become_a_lua_table_of_names_and_addresses() {
        let hints = "; hints\n.\t3600000\tNS\ta.root.\na.root.\t3600000\tA\t127.0.0.2\n\
             a.root. 3600000 IN AAAA ::2\nb.root. 3600000 A not-an-address\n";
        assert_eq!(hints_as_lua(hints), "['a.root.'] = { '127.0.0.2', '::2' }");
    }
}
