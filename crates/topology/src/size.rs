//! Sizes in bytes as people and the kernel write them: `512M`, `3G`,
//! `2048K`, `1GiB`, `32768K`. This is the one size parser of numalab:
//! every size flag (`--bytes` of `run` and `sim`, `--mem-per-node` of
//! `vm`) and the cache sizes of sysfs go through [`parse`], so a size means
//! the same everywhere and a bad one is refused with the same words.
//!
//! A size is a number, optionally followed by a unit: `K`, `M`, `G` or
//! `T`, any case, with or without `B`, `i` or `iB` after it. Units are
//! binary multiples whatever the spelling, as numactl and the kernel's
//! `memparse` read them: `512MB` and `512MiB` are both 512 × 2^20 bytes.
//! A decimal fraction is allowed when the size comes to whole bytes
//! (`1.5G` is 1536M; `1.5` bytes is refused). Whether a number without a unit is bytes or refused is the
//! caller's choice ([`Bare`]): QEMU reads `--mem-per-node 512` as MiB,
//! most people as bytes, so `vm` refuses it.

/// What a number without a unit means.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bare {
    /// Bytes: `65536`.
    Bytes,
    /// Refused, naming the units to write.
    Refused,
}

/// Why a text is not a size; each says what is wrong, quoting the text,
/// e.g. `"99999999999G" is too large (more than 2^64 bytes)`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SizeError {
    /// Not a number with a unit.
    #[error("{0:?} is not a size (e.g. 512M or 3G)")]
    NotASize(String),
    /// A minus sign.
    #[error("{0:?} is not a size: a size cannot be negative (e.g. 512M or 3G)")]
    Negative(String),
    /// A decimal comma.
    #[error("{0:?} is not a size: write a decimal point, not a comma (e.g. 1.5G)")]
    Comma(String),
    /// A bare number where [`Bare::Refused`].
    #[error("{text:?} has no unit (write e.g. {number}M or {number}G)")]
    NoUnit { text: String, number: String },
    /// More than 2^64 bytes.
    #[error("{0:?} is too large (more than 2^64 bytes)")]
    TooLarge(String),
    /// A fraction that does not come to whole bytes.
    #[error("{0:?} is not a whole number of bytes (e.g. 1.5G or 1536M)")]
    NotWholeBytes(String),
}

/// Parse a size; the error says what is wrong with the text.
pub fn parse(text: &str, bare: Bare) -> Result<u64, SizeError> {
    let t = text.trim();
    let not_a_size = || SizeError::NotASize(text.to_string());
    if t.starts_with('-') {
        return Err(SizeError::Negative(text.to_string()));
    }
    let digits_end = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (num, rest) = t.split_at(digits_end);
    if num.is_empty() {
        return Err(not_a_size());
    }
    // A decimal fraction: its digits, kept to be checked for whole bytes.
    let (frac, rest) = match rest.strip_prefix('.') {
        Some(r) => {
            let end = r.find(|c: char| !c.is_ascii_digit()).unwrap_or(r.len());
            if end == 0 || end > 18 {
                return Err(not_a_size());
            }
            r.split_at(end)
        }
        None => ("", rest),
    };
    if rest.starts_with(',') {
        return Err(SizeError::Comma(text.to_string()));
    }
    let unit = rest.trim().to_ascii_uppercase();
    let shift = match unit.as_str() {
        "" => match bare {
            Bare::Bytes => 0,
            Bare::Refused => {
                return Err(SizeError::NoUnit {
                    text: text.to_string(),
                    number: num.to_string(),
                })
            }
        },
        u => {
            let (letter, suffix) = u.split_at(1);
            if !matches!(suffix, "" | "B" | "I" | "IB") {
                return Err(not_a_size());
            }
            match letter {
                "K" => 10,
                "M" => 20,
                "G" => 30,
                "T" => 40,
                _ => return Err(not_a_size()),
            }
        }
    };
    let too_large = || SizeError::TooLarge(text.to_string());
    let n: u64 = num.parse().map_err(|_| too_large())?;
    let whole = n.checked_mul(1u64 << shift).ok_or_else(too_large)?;
    if frac.is_empty() {
        return Ok(whole);
    }
    // frac / 10^digits of a unit, exactly, in whole bytes.
    let f: u128 = frac.parse().expect("digits");
    let scaled = f << shift;
    let den = 10u128.pow(frac.len() as u32);
    if !scaled.is_multiple_of(den) {
        return Err(SizeError::NotWholeBytes(text.to_string()));
    }
    let part = u64::try_from(scaled / den).map_err(|_| too_large())?;
    whole.checked_add(part).ok_or_else(too_large)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_and_spellings() {
        for (text, bytes) in [
            ("512M", 512u64 << 20),
            ("1G", 1 << 30),
            ("2048K", 2 << 20),
            ("1GiB", 1 << 30),
            ("64mb", 64 << 20),
            ("3 G", 3 << 30),
            ("1Ti", 1 << 40),
            (" 32768K\n", 32 << 20),
            ("0M", 0),
        ] {
            assert_eq!(parse(text, Bare::Refused), Ok(bytes), "{text}");
            assert_eq!(parse(text, Bare::Bytes), Ok(bytes), "{text}");
        }
        assert_eq!(parse("65536", Bare::Bytes), Ok(65536));
    }

    #[test]
    fn every_refusal_says_what_is_wrong() {
        let e = |t: &str, bare| parse(t, bare).unwrap_err().to_string();
        assert_eq!(
            e("512", Bare::Refused),
            "\"512\" has no unit (write e.g. 512M or 512G)"
        );
        assert!(e("-1G", Bare::Bytes).contains("cannot be negative"));
        assert!(e("-1", Bare::Bytes).contains("cannot be negative"));
        assert_eq!(parse("1.5G", Bare::Refused), Ok(3 << 29));
        assert_eq!(parse("0.25k", Bare::Bytes), Ok(256));
        assert_eq!(parse("512MB", Bare::Refused), Ok(512 << 20));
        assert!(e("1.5", Bare::Bytes).contains("not a whole number of bytes"));
        assert!(e("0.1K", Bare::Bytes).contains("not a whole number of bytes"));
        assert!(e("1,5G", Bare::Bytes).contains("decimal point"));
        assert!(e("1.G", Bare::Bytes).contains("not a size"));
        for bad in ["", "M", "12Q", "1GG", "1Gx", "G1", "1 2G"] {
            assert_eq!(
                e(bad, Bare::Bytes),
                format!("{bad:?} is not a size (e.g. 512M or 3G)"),
                "{bad}"
            );
        }
        // Too large: one wording, whether the number or the product
        // overflows, whatever the caller.
        for big in ["99999999999G", "18000000000000T", "99999999999999999999"] {
            for bare in [Bare::Bytes, Bare::Refused] {
                if big.ends_with('9') && bare == Bare::Refused {
                    continue; // refused for its missing unit first
                }
                assert_eq!(
                    e(big, bare),
                    format!("{big:?} is too large (more than 2^64 bytes)")
                );
            }
        }
        assert!(e("99999999999999999999K", Bare::Refused).contains("too large"));
    }
}
