//! `--set KEY=VALUE`: changes to a plan given on the command line (a quicker run of a shipped
//! example, a value tried once), applied to the plan's text so that every other line keeps its
//! number in error messages.

use crate::error::ExperimentError;
use toml_edit::{DocumentMut, Item, Value};

/// Applies each `dotted.key=value` to the plan text. The value is TOML (`200`, `"tcp"`,
/// `[5, 10]`, `{ workload = "root", rate = 100 }`); a bare word that is not TOML is taken as a
/// string. Missing tables on the way are created.
pub fn apply(text: &str, sets: &[String]) -> Result<String, ExperimentError> {
    if sets.is_empty() {
        return Ok(text.to_string());
    }
    let mut doc: DocumentMut = text
        .parse()
        .map_err(|e| ExperimentError::Input(format!("the plan is not TOML: {e}")))?;
    for set in sets {
        let (key, raw) = set
            .split_once('=')
            .ok_or_else(|| ExperimentError::Input(format!("--set {set:?}: expected KEY=VALUE")))?;
        let value = parse_value(raw.trim());
        let path: Vec<&str> = key.trim().split('.').collect();
        if path.iter().any(|p| p.is_empty()) {
            return Err(ExperimentError::Input(format!("--set {set:?}: bad key")));
        }
        let (last, tables) = path.split_last().expect("split of a non-empty key");
        let mut item: &mut Item = doc.as_item_mut();
        for name in tables {
            let table = item.as_table_like_mut().ok_or_else(|| {
                ExperimentError::Input(format!(
                    "--set {set:?}: `{name}` is inside a value, not a table"
                ))
            })?;
            if table.get(name).is_none() {
                table.insert(name, Item::Table(toml_edit::Table::new()));
            }
            item = table.get_mut(name).expect("just inserted");
        }
        let table = item.as_table_like_mut().ok_or_else(|| {
            ExperimentError::Input(format!("--set {set:?}: the key's parent is not a table"))
        })?;
        table.insert(last, Item::Value(value));
    }
    Ok(doc.to_string())
}

fn parse_value(raw: &str) -> Value {
    raw.parse::<Value>()
        .unwrap_or_else(|_| Value::from(raw.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sets_values_in_tables_and_inline_tables() {
        let text =
            "[trace]\nsynth = { workload = \"root\", rate = 2000 }\n[vary]\nproto = [\"udp\"]\n";
        let out = apply(
            text,
            &[
                "trace.synth.rate=100".into(),
                "vary.proto=[\"tcp\", \"tls\"]".into(),
                "run.repeat=2".into(),
                "server.kind=nsd".into(),
            ],
        )
        .unwrap();
        let doc: toml::Table = toml::from_str(&out).unwrap();
        assert_eq!(doc["trace"]["synth"]["rate"].as_integer(), Some(100));
        assert_eq!(doc["trace"]["synth"]["workload"].as_str(), Some("root"));
        assert_eq!(doc["vary"]["proto"].as_array().map(|a| a.len()), Some(2));
        assert_eq!(doc["run"]["repeat"].as_integer(), Some(2));
        assert_eq!(doc["server"]["kind"].as_str(), Some("nsd"));
    }

    #[test]
    fn refuses_what_is_not_key_value() {
        assert!(apply("[a]\n", &["nothing".into()]).is_err());
        assert!(apply("[a]\nb = 1\n", &["a.b.c=1".into()]).is_err());
    }
}
