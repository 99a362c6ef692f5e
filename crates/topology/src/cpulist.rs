//! The kernel's CPU and node list format ("0-3,8,10-11"), as found in
//! `cpulist`, `shared_cpu_list`, `/sys/devices/system/node/online` and
//! accepted by `taskset -c` and `numactl -C`.

use std::fmt::Write as _;

/// Why a CPU list did not parse.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum CpuListError {
    #[error("empty item in list {0:?}")]
    EmptyItem(String),
    #[error("{item:?} in list {list:?} is not a number or a range")]
    NotANumber { list: String, item: String },
    #[error("range {item:?} in list {list:?} runs backwards")]
    Backwards { list: String, item: String },
    #[error("range {item:?} in list {list:?} is too large")]
    TooLarge { list: String, item: String },
}

/// Largest id accepted in a list; far above any real machine, low enough
/// that a typo like `0-4000000000` cannot allocate gigabytes.
pub const MAX_ID: u32 = 1 << 20;

/// Parse a list such as `0-3,8,10-11` into sorted, de-duplicated ids.
/// An empty or all-whitespace string is the empty list (a memory-only
/// node's `cpulist` is an empty line).
pub fn parse(list: &str) -> Result<Vec<u32>, CpuListError> {
    let trimmed = list.trim();
    let mut out = Vec::new();
    if trimmed.is_empty() {
        return Ok(out);
    }
    for item in trimmed.split(',') {
        let item = item.trim();
        if item.is_empty() {
            return Err(CpuListError::EmptyItem(trimmed.to_string()));
        }
        let num = |s: &str| -> Result<u32, CpuListError> {
            let v: u32 = s.trim().parse().map_err(|_| CpuListError::NotANumber {
                list: trimmed.to_string(),
                item: item.to_string(),
            })?;
            if v > MAX_ID {
                return Err(CpuListError::TooLarge {
                    list: trimmed.to_string(),
                    item: item.to_string(),
                });
            }
            Ok(v)
        };
        match item.split_once('-') {
            Some((a, b)) => {
                let (a, b) = (num(a)?, num(b)?);
                if b < a {
                    return Err(CpuListError::Backwards {
                        list: trimmed.to_string(),
                        item: item.to_string(),
                    });
                }
                out.extend(a..=b);
            }
            None => out.push(num(item)?),
        }
    }
    out.sort_unstable();
    out.dedup();
    Ok(out)
}

/// Format ids in the kernel's compact form (`0-3,8,10-11`).
pub fn format(ids: &[u32]) -> String {
    let mut sorted = ids.to_vec();
    sorted.sort_unstable();
    sorted.dedup();
    let mut s = String::new();
    let mut i = 0;
    while i < sorted.len() {
        let start = sorted[i];
        let mut end = start;
        while i + 1 < sorted.len() && sorted[i + 1] == end + 1 {
            i += 1;
            end = sorted[i];
        }
        if !s.is_empty() {
            s.push(',');
        }
        if end == start {
            let _ = write!(s, "{start}");
        } else {
            let _ = write!(s, "{start}-{end}");
        }
        i += 1;
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_ranges_and_singles() {
        assert_eq!(parse("0-3,8,10-11\n").unwrap(), vec![0, 1, 2, 3, 8, 10, 11]);
        assert_eq!(parse("5").unwrap(), vec![5]);
        assert_eq!(parse("3,1,1-2").unwrap(), vec![1, 2, 3]);
        assert_eq!(parse("\n").unwrap(), Vec::<u32>::new());
    }

    #[test]
    fn rejects_bad_lists() {
        assert!(matches!(parse("1,,2"), Err(CpuListError::EmptyItem(_))));
        assert!(matches!(parse("a-3"), Err(CpuListError::NotANumber { .. })));
        assert!(matches!(parse("-1"), Err(CpuListError::NotANumber { .. })));
        assert!(matches!(parse("4-2"), Err(CpuListError::Backwards { .. })));
        assert!(matches!(
            parse("0-99999999"),
            Err(CpuListError::TooLarge { .. })
        ));
    }

    #[test]
    fn formats_round_trip() {
        for s in ["0-3,8,10-11", "0", "1,3,5", "0-127"] {
            assert_eq!(format(&parse(s).unwrap()), s);
        }
        assert_eq!(format(&[]), "");
    }
}
