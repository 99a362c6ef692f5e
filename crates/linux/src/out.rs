//! Output that a closed pipe cannot stop.
//!
//! `println!` panics when stdout is a pipe whose reader has gone
//! (`numalab run ... | head -1`): Rust ignores SIGPIPE, so the write fails
//! with EPIPE and the macro turns that into a panic, which unwinds out of
//! the runner and loses every run not yet recorded. numalab's output is a
//! report on work whose records are the result: when nobody reads it any
//! more, it is dropped and the work goes on. These macros write like
//! `println!`/`eprintln!` and ignore write errors; the binary and every
//! library that prints use them instead of the std macros. Status lines
//! are [`wrap`]ped within 80 columns first.

/// `println!` that drops its line when stdout is closed or broken.
#[macro_export]
macro_rules! outln {
    () => { $crate::out::line(&mut ::std::io::stdout(), ::std::format_args!("")) };
    ($($arg:tt)*) => { $crate::out::line(&mut ::std::io::stdout(), ::std::format_args!($($arg)*)) };
}

/// `print!` that drops its text when stdout is closed or broken.
#[macro_export]
macro_rules! out {
    ($($arg:tt)*) => { $crate::out::text(&mut ::std::io::stdout(), ::std::format_args!($($arg)*)) };
}

/// `eprintln!` that drops its line when stderr is closed or broken.
#[macro_export]
macro_rules! errln {
    () => { $crate::out::line(&mut ::std::io::stderr(), ::std::format_args!("")) };
    ($($arg:tt)*) => { $crate::out::line(&mut ::std::io::stderr(), ::std::format_args!($($arg)*)) };
}

/// `eprintln!` of a status line, [`wrap`]ped within 80 columns, each
/// line dropped when stderr is closed or broken.
#[macro_export]
macro_rules! statusln {
    ($($arg:tt)*) => { $crate::out::status(::std::format_args!($($arg)*)) };
}

/// Write a status line to stderr, wrapped within 80 columns.
pub fn status(args: std::fmt::Arguments<'_>) {
    for l in wrap(&args.to_string(), 80) {
        line(&mut std::io::stderr(), format_args!("{l}"));
    }
}

/// Write `args` and a newline to `w` in one call, ignoring errors.
pub fn line(w: &mut dyn std::io::Write, args: std::fmt::Arguments<'_>) {
    // One buffer, one write: a line is not split by another thread's.
    let mut s = args.to_string();
    s.push('\n');
    let _ = w.write_all(s.as_bytes());
}

/// Write `args` to `w` and flush, ignoring errors.
pub fn text(w: &mut dyn std::io::Write, args: std::fmt::Arguments<'_>) {
    let _ = w.write_fmt(args);
    let _ = w.flush();
}

/// `text` wrapped at `width` columns, greedily at spaces, with a hanging
/// indent: continuation lines are indented past the text's own leading
/// spaces, and then past a footnote marker like `[12] ` (at most 8), else
/// by 2. Runs of spaces inside a line are kept (they align columns). A
/// word longer than the line (a path, a URL) is never broken: it gets a
/// line of its own, however long.
pub fn wrap(text: &str, width: usize) -> Vec<String> {
    if text.is_empty() {
        return Vec::new();
    }
    if text.chars().count() <= width {
        return vec![text.to_string()];
    }
    let lead = text.len() - text.trim_start_matches(' ').len();
    let body = &text[lead..];
    let hang = if body.starts_with('[') {
        body.find(']').map(|i| i + 2).unwrap_or(2).min(8)
    } else {
        2
    };
    let first = " ".repeat(lead);
    let rest = " ".repeat(lead + hang);
    let options = textwrap::Options::new(width)
        .initial_indent(&first)
        .subsequent_indent(&rest)
        .break_words(false)
        .word_separator(textwrap::WordSeparator::AsciiSpace)
        .word_splitter(textwrap::WordSplitter::NoHyphenation)
        .wrap_algorithm(textwrap::WrapAlgorithm::FirstFit);
    textwrap::wrap(body, options)
        .into_iter()
        .map(|l| l.into_owned())
        .collect()
}

/// Run `f` with standard output going to standard error (file descriptor
/// 1 pointed at 2, restored after): a command whose own output is a
/// document (`validate --format json`) keeps what it runs from writing
/// into it.
pub fn stdout_to_stderr<T>(f: impl FnOnce() -> T) -> std::io::Result<T> {
    use std::io::Write;
    let _ = std::io::stdout().flush();
    // SAFETY: dup and dup2 on the process's own standard descriptors.
    let saved = unsafe { libc::dup(1) };
    // SAFETY: dup2 of the process's own standard error onto its output.
    if saved < 0 || unsafe { libc::dup2(2, 1) } < 0 {
        return Err(std::io::Error::last_os_error());
    }
    let r = f();
    let _ = std::io::stdout().flush();
    // SAFETY: as above; `saved` is ours and closed once.
    unsafe {
        libc::dup2(saved, 1);
        libc::close(saved);
    }
    Ok(r)
}

#[cfg(test)]
mod tests {
    use std::io::{self, Write};

    /// A writer whose reader has gone.
    struct Broken;
    impl Write for Broken {
        fn write(&mut self, _: &[u8]) -> io::Result<usize> {
            Err(io::Error::from(io::ErrorKind::BrokenPipe))
        }
        fn flush(&mut self) -> io::Result<()> {
            Err(io::Error::from(io::ErrorKind::BrokenPipe))
        }
    }

    #[test]
    fn a_broken_writer_is_ignored() {
        super::line(&mut Broken, format_args!("lost {}", 1));
        super::text(&mut Broken, format_args!("lost"));
    }

    #[test]
    fn a_line_is_written_whole() {
        let mut v = Vec::new();
        super::line(&mut v, format_args!("a {}", 2));
        assert_eq!(v, b"a 2\n");
    }
}
