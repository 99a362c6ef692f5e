//! Policy names with parameters: `node-affine[dynamic=true,initial=false]`
//! or `node-affine:dynamic=true,initial=false`.

use std::collections::BTreeMap;

/// Why a policy's `NAME[k=v,...]` text did not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SpecError {
    #[error("{0:?}: missing closing ']'")]
    MissingBracket(String),
    #[error("{0:?}: empty policy name")]
    EmptyName(String),
    #[error("{policy}: parameter {item:?} is not key=value")]
    NotKeyValue { policy: String, item: String },
    #[error("{policy}: parameter {key} given twice")]
    Twice { policy: String, key: String },
}

/// Why a policy or one of its parameters was refused.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ParamError {
    /// A name the registry does not have; the names it has.
    #[error("unknown {kind} {name:?} (valid: {})", .valid.join(", "))]
    UnknownPolicy {
        kind: String,
        name: String,
        valid: Vec<&'static str>,
    },
    /// A key the policy does not read; the keys it reads.
    #[error("{policy}: unknown parameter {key:?} (valid: {})", if .valid.is_empty() { "none".to_string() } else { .valid.join(", ") })]
    UnknownKey {
        policy: String,
        key: String,
        valid: Vec<&'static str>,
    },
    #[error("{policy}: parameter {key}={value:?} must be a non-negative number")]
    NotANumber {
        policy: String,
        key: &'static str,
        value: String,
    },
    #[error("{policy}: parameter {key}={value} must be between {lo} and {hi}")]
    OutOfRange {
        policy: String,
        key: &'static str,
        value: f64,
        lo: f64,
        hi: f64,
    },
    #[error("{policy}: parameter {key}={value:?} must be a non-negative integer")]
    NotAnInteger {
        policy: String,
        key: &'static str,
        value: String,
    },
    #[error("{policy}: parameter {key}={value:?} must be true or false")]
    NotABool {
        policy: String,
        key: &'static str,
        value: String,
    },
    /// Values that are each valid but not together (the policy's words).
    #[error("{0}")]
    Inconsistent(String),
}

/// A parsed `NAME[k=v,...]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolicySpec {
    pub name: String,
    pub args: BTreeMap<String, String>,
}

impl PolicySpec {
    pub fn parse(text: &str) -> Result<PolicySpec, SpecError> {
        let t = text.trim();
        let (name, rest) = if let Some(i) = t.find('[') {
            if !t.ends_with(']') {
                return Err(SpecError::MissingBracket(t.to_string()));
            }
            (&t[..i], &t[i + 1..t.len() - 1])
        } else if let Some((n, r)) = t.split_once(':') {
            (n, r)
        } else {
            (t, "")
        };
        if name.is_empty() {
            return Err(SpecError::EmptyName(t.to_string()));
        }
        let mut args = BTreeMap::new();
        for kv in rest.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            let (k, v) = kv.split_once('=').ok_or_else(|| SpecError::NotKeyValue {
                policy: name.to_string(),
                item: kv.to_string(),
            })?;
            if args
                .insert(k.trim().to_string(), v.trim().to_string())
                .is_some()
            {
                return Err(SpecError::Twice {
                    policy: name.to_string(),
                    key: k.trim().to_string(),
                });
            }
        }
        Ok(PolicySpec {
            name: name.to_string(),
            args,
        })
    }

    /// Canonical text, e.g. `node-affine[dynamic=true]` (keys sorted).
    pub fn canonical(&self) -> String {
        if self.args.is_empty() {
            self.name.clone()
        } else {
            let kv: Vec<String> = self.args.iter().map(|(k, v)| format!("{k}={v}")).collect();
            format!("{}[{}]", self.name, kv.join(","))
        }
    }
}

/// Typed access to a policy's parameters; remembers which keys exist so an
/// unknown key is an error listing the valid ones.
pub struct Params {
    policy: String,
    args: BTreeMap<String, String>,
    known: Vec<(&'static str, String, &'static str)>,
}

impl Params {
    pub fn new(policy: &str, args: &BTreeMap<String, String>) -> Params {
        Params {
            policy: policy.to_string(),
            args: args.clone(),
            known: Vec::new(),
        }
    }

    fn raw(&mut self, key: &'static str, default: String, help: &'static str) -> Option<String> {
        self.known.push((key, default, help));
        self.args.get(key).cloned()
    }

    pub fn f64(
        &mut self,
        key: &'static str,
        default: f64,
        help: &'static str,
    ) -> Result<f64, ParamError> {
        match self.raw(key, default.to_string(), help) {
            None => Ok(default),
            Some(v) => v
                .parse::<f64>()
                .ok()
                .filter(|x| x.is_finite() && *x >= 0.0)
                .ok_or_else(|| ParamError::NotANumber {
                    policy: self.policy.clone(),
                    key,
                    value: v.clone(),
                }),
        }
    }

    /// A number within `lo..=hi`, for parameters whose extremes would make
    /// a run meaningless or endless.
    pub fn f64_in(
        &mut self,
        key: &'static str,
        default: f64,
        (lo, hi): (f64, f64),
        help: &'static str,
    ) -> Result<f64, ParamError> {
        let v = self.f64(key, default, help)?;
        if v < lo || v > hi {
            return Err(ParamError::OutOfRange {
                policy: self.policy.clone(),
                key,
                value: v,
                lo,
                hi,
            });
        }
        Ok(v)
    }

    pub fn u64(
        &mut self,
        key: &'static str,
        default: u64,
        help: &'static str,
    ) -> Result<u64, ParamError> {
        match self.raw(key, default.to_string(), help) {
            None => Ok(default),
            Some(v) => v.parse::<u64>().map_err(|_| ParamError::NotAnInteger {
                policy: self.policy.clone(),
                key,
                value: v.clone(),
            }),
        }
    }

    pub fn bool(
        &mut self,
        key: &'static str,
        default: bool,
        help: &'static str,
    ) -> Result<bool, ParamError> {
        match self.raw(key, default.to_string(), help) {
            None => Ok(default),
            Some(v) => match v.as_str() {
                "true" | "1" | "yes" | "on" => Ok(true),
                "false" | "0" | "no" | "off" => Ok(false),
                _ => Err(ParamError::NotABool {
                    policy: self.policy.clone(),
                    key,
                    value: v,
                }),
            },
        }
    }

    /// Fail on keys no getter asked for.
    pub fn finish(self) -> Result<(), ParamError> {
        for k in self.args.keys() {
            if !self.known.iter().any(|(n, _, _)| n == k) {
                return Err(ParamError::UnknownKey {
                    policy: self.policy.clone(),
                    key: k.clone(),
                    valid: self.known.iter().map(|(n, _, _)| *n).collect(),
                });
            }
        }
        Ok(())
    }

    /// `key=default` list, for `--list`.
    pub fn describe(&self) -> String {
        self.known
            .iter()
            .map(|(k, d, _)| format!("{k}={d}"))
            .collect::<Vec<_>>()
            .join(",")
    }
}

/// One policy in a registry: its name, a one-line summary, and how to
/// build it from parameters. Schedulers and balancers each keep a
/// `REGISTRY` of these; adding a policy is one module and one entry.
pub struct Entry<P: ?Sized> {
    pub name: &'static str,
    pub summary: &'static str,
    pub build: fn(&mut Params, &crate::machine::Machine) -> Result<Box<P>, ParamError>,
}

/// Build the policy `spec` names from `registry` (`kind` is "scheduler"
/// or "balancer", for the error), rejecting unknown names and parameters.
pub fn build_from<P: ?Sized>(
    kind: &str,
    registry: &[Entry<P>],
    spec: &PolicySpec,
    m: &crate::machine::Machine,
) -> Result<Box<P>, ParamError> {
    let Some(e) = registry.iter().find(|e| e.name == spec.name) else {
        return Err(ParamError::UnknownPolicy {
            kind: kind.to_string(),
            name: spec.name.clone(),
            valid: registry.iter().map(|e| e.name).collect(),
        });
    };
    let mut p = Params::new(e.name, &spec.args);
    let built = (e.build)(&mut p, m)?;
    p.finish()?;
    Ok(built)
}

/// `name`, summary and `k=default,...` of each policy in `registry`.
pub fn describe_all<P: ?Sized>(
    registry: &[Entry<P>],
    m: &crate::machine::Machine,
) -> Vec<(String, String, String)> {
    registry
        .iter()
        .map(|e| {
            let mut p = Params::new(e.name, &Default::default());
            let _ = (e.build)(&mut p, m);
            (e.name.to_string(), e.summary.to_string(), p.describe())
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_syntaxes() {
        let a = PolicySpec::parse("node-affine[dynamic=true,initial=false]").unwrap();
        let b = PolicySpec::parse("node-affine:initial=false,dynamic=true").unwrap();
        assert_eq!(a, b);
        assert_eq!(a.canonical(), "node-affine[dynamic=true,initial=false]");
        assert!(PolicySpec::parse("x[a=1").is_err());
        assert!(PolicySpec::parse("x[a]").is_err());
    }

    #[test]
    fn unknown_key_lists_valid_ones() {
        let spec = PolicySpec::parse("p[zz=1]").unwrap();
        let mut p = Params::new("p", &spec.args);
        p.u64("a", 1, "").unwrap();
        p.bool("b", true, "").unwrap();
        let e = p.finish().unwrap_err().to_string();
        assert!(e.contains("unknown parameter \"zz\" (valid: a, b)"), "{e}");
    }
}
