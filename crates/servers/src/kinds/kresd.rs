//! Knot Resolver 5.6 as a resolver of the emulated hierarchy: `kresd -n` (no interactive
//! console) with a Lua configuration and the work directory as its run directory (cache,
//! control socket); root hints loaded into the `hints` module, the Internet's root trust anchor
//! removed (replaced by the emulated root's when asked to validate) and the modules that would
//! reach for the real root (priming, trust-anchor signalling, time skew) unloaded. kresd
//! answers any address and has no rate limit unless told to.
//!
//! * resolver options: QNAME minimisation off with the `NO_MINIMIZE` flag; aggressive use of
//!   NSEC is always on (Knot Resolver 5 has no switch for it).
//!
//! * idle timeout: `net.tcp_in_idle` (milliseconds).
//! * connections: no limit of its own beyond the file descriptor limit, which is raised.
//! * threads: one process is single-threaded; Knot Resolver scales by running several
//!   processes (systemd instances), which this crate does not do: more than one thread is
//!   refused.
//! * TLS: `net.tls` with the certificate and key, `net.listen` of kind `tls`.
//! * DoH: the same certificate, `net.listen` of kind `doh2` (`/dns-query`).
//! * zones: Knot Resolver 5 has no authoritative zones; each zone file is read at start with
//!   its own zone file parser into `policy.ANSWER` rules by owner name (wildcards included,
//!   NODATA for the other types of a name), as its RPZ support reads local data, and answered
//!   before resolution. With zones alone (no root hints) kresd answers from them only.

use std::fmt::Write as _;

use super::{args, show, write_config, Launch};
use crate::hints::hints_to_lua;
use crate::setup::Prepared;
use crate::ServerError;

pub(super) fn launch(p: &Prepared) -> Result<Launch, ServerError> {
    let setup = p.setup;
    let hints = match (p.root_hints.as_deref(), p.zones.is_empty()) {
        (Some(h), _) => {
            let hints = hints_to_lua(h)?;
            if hints.is_empty() {
                return Err(p.config_error("the root hints give no address"));
            }
            format!("hints.root({{ {hints} }})\n")
        }
        (None, false) => String::new(),
        (None, true) => return Err(p.config_error("no root hints")),
    };
    let addrs: Vec<String> = setup.listen.iter().map(|ip| format!("'{ip}'")).collect();
    let addrs = addrs.join(", ");
    let mut conf = format!(
        "-- written by ldplayer-servers\n\
         net.listen({{ {addrs} }}, {port}, {{ kind = 'dns' }})\n",
        port = setup.port
    );
    if let Some((_, files)) = p.tls.as_ref().or(p.https.as_ref()) {
        let _ = writeln!(
            conf,
            "net.tls('{}', '{}')",
            show(&files.cert),
            show(&files.key)
        );
    }
    if let Some((port, _)) = &p.tls {
        let _ = writeln!(
            conf,
            "net.listen({{ {addrs} }}, {port}, {{ kind = 'tls' }})"
        );
    }
    // `doh2` serves RFC 8484 at `/dns-query` over HTTP/2.
    if let Some((port, _)) = &p.https {
        let _ = writeln!(
            conf,
            "net.listen({{ {addrs} }}, {port}, {{ kind = 'doh2' }})"
        );
    }
    let _ = write!(
        conf,
        "net.tcp_in_idle({idle})\n\
         modules.unload('ta_signal_query')\nmodules.unload('priming')\n\
         modules.unload('detect_time_skew')\ntrust_anchors.remove('.')\n{anchors}\
         modules.load('hints > iterate')\n{hints}\
         cache.size = 100 * MB\n",
        idle = p.idle_millis(),
        anchors = anchors(p),
    );
    if setup.resolver.qname_minimisation == Some(false) {
        conf.push_str("policy.add(policy.all(policy.FLAGS('NO_MINIMIZE')))\n");
    }
    if !p.zones.is_empty() {
        conf.push_str(LOCAL_ZONE_LUA);
        for zone in &p.zones {
            let _ = writeln!(conf, "policy.add(ldplayer_zone('{}'))", show(&zone.path));
        }
    }
    conf.push_str(&p.extra());
    let config = write_config(p, "kresd.conf", &conf)?;
    Ok(Launch {
        args: args([&"-n", &"-c", &config, &p.dir()]),
        check: None,
        config,
        faketime: None,
    })
}

/// A Lua function that reads a zone file with kresd's own parser and returns a policy rule
/// answering its names: their records (`policy.ANSWER`, NODATA for other types), by exact
/// owner name, else by the closest `*` owner above (as kresd's RPZ reads local data).
const LOCAL_ZONE_LUA: &str = r#"local ffi = require('ffi')
function ldplayer_zone(path)
	local parser = require('zonefile').new()
	local ok, err = parser:open(path)
	if not ok then
		error(string.format('cannot read zone %s: %s', path, err or 'unknown error'))
	end
	local sets = {}
	while true do
		ok, err = parser:parse()
		if err then
			error(string.format('zone %s:%d: %s', path, tonumber(parser.line_counter), err))
		end
		if not ok then break end
		local name = string.lower(ffi.string(parser.r_owner, ffi.C.knot_dname_size(parser.r_owner)))
		local rdata = ffi.string(parser.r_data, parser.r_data_length)
		sets[name] = sets[name] or {}
		local set = sets[name][parser.r_type]
		if set == nil then
			sets[name][parser.r_type] = { ttl = parser.r_ttl, rdata = { rdata } }
		else
			table.insert(set.rdata, rdata)
			set.ttl = math.min(set.ttl, parser.r_ttl)
		end
	end
	local rules = {}
	for name, rrsets in pairs(sets) do
		rules[name] = policy.ANSWER(rrsets, true)
	end
	return function(_, query)
		local label = query:name()
		local rule = rules[label]
		while rule == nil and string.len(label) > 1 do
			label = string.sub(label, string.byte(label) + 2)
			rule = rules['*' .. label]
		end
		return rule
	end
end
"#;

/// The emulated root's trust anchor and the insecure domains, when validating; nothing
/// otherwise (without an anchor kresd does not validate).
fn anchors(p: &Prepared) -> String {
    let (Some(v), Some(anchor)) = (&p.setup.validation, &p.trust_anchor) else {
        return String::new();
    };
    let mut text = format!("trust_anchors.add_file('{}', true)\n", show(anchor));
    if !v.insecure.is_empty() {
        let list: Vec<String> = v.insecure.iter().map(|d| format!("'{d}'")).collect();
        let _ = writeln!(
            text,
            "trust_anchors.set_insecure({{ {} }})",
            list.join(", ")
        );
    }
    text
}
