//! Text that reaches a shell: checked, then quoted, by one function.
//!
//! numalab writes strings it did not choose (plan names, labels, paths,
//! a command's arguments) into scripts: Slurm batch files, the guest's
//! kernel command line, the command line a record keeps. A control
//! character there can end a comment or a quoted word early and run what
//! follows, so such text is refused with the reason ([`check`]), and
//! everything else is quoted for `sh` by [`quote`], the only quoting
//! function in numalab.

/// Why a text cannot go into a script.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{what} {text:?} holds a control character ({ch:?}), which a script cannot carry safely")]
pub struct ControlChar {
    pub what: String,
    pub text: String,
    pub ch: char,
}

/// Refuse `text` if it holds a control character (newline, carriage
/// return, NUL, escape, tab...). `what` names it in the error
/// (`results`, `label "x"`).
pub fn check(what: &str, text: &str) -> Result<(), ControlChar> {
    match text.chars().find(|c| c.is_control()) {
        Some(ch) => Err(ControlChar {
            what: what.to_string(),
            text: text.to_string(),
            ch,
        }),
        None => Ok(()),
    }
}

/// `text` as one `sh` word: unchanged when it holds only
/// `[A-Za-z0-9_./=:,+-]` (a command's case key is written with this
/// function, so the set never changes), else in single quotes with each `'` written as
/// `'\''`. Callers [`check`] for control characters first: quoting keeps
/// a newline inside the word, but a comment line or a log line would not.
pub fn quote(text: &str) -> String {
    let plain = !text.is_empty()
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_./=:,+-".contains(c));
    if plain {
        text.to_string()
    } else {
        format!("'{}'", text.replace('\'', r"'\''"))
    }
}

/// `check` then `quote`.
pub fn checked_quote(what: &str, text: &str) -> Result<String, ControlChar> {
    check(what, text)?;
    Ok(quote(text))
}

/// Words joined as a command line, each quoted as [`quote`] does.
pub fn join<S: AsRef<str>>(words: &[S]) -> String {
    words
        .iter()
        .map(|w| quote(w.as_ref()))
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_words_stay_plain() {
        assert_eq!(quote("numa02"), "numa02");
        assert_eq!(quote("/usr/bin/x"), "/usr/bin/x");
        assert_eq!(quote("a=b,c"), "a=b,c");
    }

    #[test]
    fn everything_else_is_single_quoted() {
        assert_eq!(quote(""), "''");
        assert_eq!(quote("a b"), "'a b'");
        assert_eq!(quote("it's"), r"'it'\''s'");
        assert_eq!(quote("$(touch x)"), "'$(touch x)'");
        assert_eq!(quote("a\nb"), "'a\nb'");
        assert_eq!(join(&["sh", "-c", "echo $x"]), "sh -c 'echo $x'");
    }

    /// The quoted word, given to a real shell, comes back unchanged.
    #[test]
    fn a_shell_reads_the_word_back() {
        for w in [
            "it's", "a b", "$HOME", "`id`", "x;y", "\"q\"", "*", "~", "a\\b", "",
        ] {
            let out = std::process::Command::new("sh")
                .arg("-c")
                .arg(format!("printf %s {}", quote(w)))
                .output()
                .expect("sh runs");
            assert_eq!(String::from_utf8_lossy(&out.stdout), w, "{w:?}");
        }
    }

    #[test]
    fn control_characters_are_refused() {
        assert!(check("results", "inj\ntouch pwned\n#").is_err());
        assert!(check("label", "a\rb").is_err());
        assert!(check("x", "a\0").is_err());
        assert!(check("x", "\u{1b}[2J").is_err());
        let e = checked_quote("results", "inj\ntouch pwned").unwrap_err();
        assert!(e
            .to_string()
            .starts_with("results \"inj\\ntouch pwned\" holds a control"));
        assert_eq!(checked_quote("x", "fine one").unwrap(), "'fine one'");
    }
}
