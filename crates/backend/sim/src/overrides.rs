//! Machine-file keys overridden on the command line or in a campaign:
//! `--machine 'genoa2n[memory.mlp=12,memory.bandwidth_gbs=180]'`, the
//! same `NAME[k=v,...]` form as policies, so a sensitivity sweep over a
//! machine parameter is a campaign `matrix` over one string
//! (`machine = "genoa2n[memory.mlp={m}]"`). Each key is a dotted path
//! into the machine file (`section.key`); its value is read as TOML (a
//! number, `true`, a quoted string, an array) and checked as the file
//! itself is, so a misspelt key or a bad value is the file's one-line
//! error. The machine is named by the whole spec, so records say what
//! was overridden.

use crate::machine::{Machine, MachineError, MachineFile, PRESETS};

/// Overridden keys and their values, as written.
pub type Sets = Vec<(String, String)>;

/// `spec` split into the machine and its overrides, when it has any.
/// Commas inside a value's brackets (an array) do not split.
pub fn split(spec: &str) -> Result<Option<(String, Sets)>, MachineError> {
    let spec_t = spec.trim();
    let (Some(open), true) = (spec_t.find('['), spec_t.ends_with(']')) else {
        return Ok(None);
    };
    let err = |msg: String| MachineError {
        file: spec.to_string(),
        msg,
    };
    let name = spec_t[..open].trim();
    if name.is_empty() {
        return Err(err("no machine before the overrides".into()));
    }
    let inner = &spec_t[open + 1..spec_t.len() - 1];
    let mut items = Vec::new();
    let (mut depth, mut start) = (0i32, 0usize);
    for (i, ch) in inner.char_indices() {
        match ch {
            '[' => depth += 1,
            ']' => depth -= 1,
            ',' if depth == 0 => {
                items.push(&inner[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    items.push(&inner[start..]);
    let mut sets: Sets = Vec::new();
    for item in items.into_iter().map(str::trim).filter(|s| !s.is_empty()) {
        let (k, v) = item
            .split_once('=')
            .ok_or_else(|| err(format!("override {item:?} is not key=value")))?;
        let k = k.trim().to_string();
        if sets.iter().any(|(x, _)| *x == k) {
            return Err(err(format!("override {k} given twice")));
        }
        sets.push((k, v.trim().to_string()));
    }
    Ok(Some((name.to_string(), sets)))
}

/// The machine `base` (a preset or a file) with `sets` applied.
pub fn load(base: &str, sets: &[(String, String)], spec: &str) -> Result<Machine, MachineError> {
    let err = |msg: String| MachineError {
        file: spec.to_string(),
        msg,
    };
    let text = match PRESETS.iter().find(|(n, _)| *n == base) {
        Some((_, t)) => t.to_string(),
        None if base == "host" => {
            return Err(err(
                "host takes no overrides (its parameters are generic): write a machine file".into(),
            ))
        }
        None => std::fs::read_to_string(base).map_err(|e| err(format!("{base}: {e}")))?,
    };
    let mut table: toml::Table = toml::from_str(&text).map_err(|e| err(e.message().into()))?;
    for (key, value) in sets {
        let v = parse_value(value);
        let mut path: Vec<&str> = key.split('.').collect();
        let last = path
            .pop()
            .filter(|s| !s.is_empty())
            .ok_or_else(|| err(format!("override {key:?}: name a key, e.g. memory.mlp")))?;
        let mut t = &mut table;
        for part in path {
            t = t
                .entry(part.to_string())
                .or_insert_with(|| toml::Value::Table(toml::Table::new()))
                .as_table_mut()
                .ok_or_else(|| err(format!("override {key:?}: {part} is not a section")))?;
        }
        t.insert(last.to_string(), v);
    }
    let file: MachineFile = toml::Value::Table(table)
        .try_into()
        .map_err(|e: toml::de::Error| err(e.message().replace('\n', " ")))?;
    let mut m = file.build(spec)?;
    m.name = spec.to_string();
    Ok(m)
}

/// A TOML value, or the text as a string when it is not one.
fn parse_value(text: &str) -> toml::Value {
    toml::from_str::<toml::Table>(&format!("v = {text}"))
        .ok()
        .and_then(|mut t| t.remove("v"))
        .unwrap_or_else(|| toml::Value::String(text.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overrides_change_the_named_keys_and_nothing_else() {
        let base = Machine::load("genoa2n").unwrap();
        let m = Machine::load("genoa2n[memory.mlp=12,cpu.max_ghz=3.5]").unwrap();
        // An array value keeps its commas.
        let d =
            Machine::load("genoa2n[topology.distances=[[10, 21], [21, 10]],memory.mlp=8]").unwrap();
        assert_eq!(d.distances[0][1], 21);
        assert_eq!(d.mlp, 8.0);
        assert_eq!(m.mlp, 12.0);
        assert_eq!(m.max_ghz, 3.5);
        assert_eq!(m.base_ghz, base.base_ghz);
        assert_eq!(m.latency_ns, base.latency_ns);
        assert_eq!(m.name, "genoa2n[memory.mlp=12,cpu.max_ghz=3.5]");
    }

    #[test]
    fn bad_overrides_are_one_line_errors_naming_the_key() {
        for (spec, want) in [
            ("genoa2n[memory.mlpp=12]", "mlpp"),
            ("genoa2n[memory.mlp=fast]", "mlp"),
            ("genoa2n[mlp]", "not key=value"),
            ("host[memory.mlp=2]", "host takes no overrides"),
            ("nosuch[memory.mlp=2]", "nosuch"),
        ] {
            let e = Machine::load(spec).unwrap_err().to_string();
            assert!(e.contains(want), "{spec}: {e}");
            assert!(!e.contains('\n'), "{spec}: {e}");
        }
    }
}
