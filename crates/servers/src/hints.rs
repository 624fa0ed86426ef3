//! Root hints, the starting point of a resolver: made from the root zone of an emulated
//! hierarchy, and turned into the Lua table Knot Resolver takes.

use std::path::Path;

use crate::ServerError;

pub(crate) use ldplayer_zone::hints::root_hints;

/// Root hints (`named.root` format) as a Lua table for Knot Resolver's `hints.root`:
/// `['name.'] = { 'addr', ... }`.
pub(crate) fn hints_to_lua(hints: &Path) -> Result<String, ServerError> {
    let text = std::fs::read_to_string(hints).map_err(ServerError::io("cannot read", hints))?;
    Ok(ldplayer_zone::hints::hints_as_lua(&text))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hints_become_a_lua_table_of_names_and_addresses() {
        let dir = tempfile::tempdir().expect("scratch directory");
        let path = dir.path().join("root.hints");
        std::fs::write(
            &path,
            "; hints\n.\t3600000\tNS\ta.root.\na.root.\t3600000\tA\t127.0.0.2\n\
             a.root. 3600000 IN AAAA ::2\n",
        )
        .expect("write");
        assert_eq!(
            hints_to_lua(&path).expect("read"),
            "['a.root.'] = { '127.0.0.2', '::2' }"
        );
    }
}
