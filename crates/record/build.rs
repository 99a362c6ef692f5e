//! The commit numalab is built from, for `--version` and every record's
//! `numalab_version`: `abc1234` or `abc1234-dirty` (uncommitted changes),
//! `unknown` outside a git checkout (a source tarball).
//!
//! The stamp is made again only when HEAD moves (a commit, checkout,
//! reset, pull), never because git touched its index: a new stamp
//! rebuilds this crate and every crate that depends on it, a dozen. The
//! dirty flag is therefore as current as the last time HEAD moved (or
//! this target directory was first built): an edit after that, left
//! uncommitted, is not seen until the next commit or checkout.

use std::path::{Path, PathBuf};
use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// A path inside the git directory (`git rev-parse --git-path`, which
/// knows where a worktree keeps its HEAD and where its refs are shared),
/// absolute.
fn git_path(name: &str) -> Option<PathBuf> {
    let p = PathBuf::from(git(&["rev-parse", "--git-path", name])?);
    Some(if p.is_absolute() {
        p
    } else {
        std::env::current_dir().ok()?.join(p)
    })
}

fn main() {
    let commit = git(&["rev-parse", "--short=12", "HEAD"]);
    // --no-optional-locks: `git status` would otherwise refresh and
    // rewrite .git/index.
    let dirty = git(&[
        "--no-optional-locks",
        "status",
        "--porcelain",
        "--untracked-files=no",
    ])
    .map(|s| !s.is_empty())
    .unwrap_or(false);
    let id = match commit {
        Some(c) if dirty => format!("{c}-dirty"),
        Some(c) => c,
        None => "unknown".into(),
    };
    println!("cargo:rustc-env=NUMALAB_COMMIT={id}");
    // Made again when HEAD moves: HEAD itself (a checkout), its reflog
    // (every move of HEAD, a commit included), the branch it names, loose
    // or packed. Only files that exist: cargo runs a script that watches
    // a missing file on every build.
    let mut watch = vec!["HEAD".to_string(), "logs/HEAD".into(), "packed-refs".into()];
    if let Some(r) = git(&["symbolic-ref", "-q", "HEAD"]) {
        watch.push(r);
    }
    for name in &watch {
        if let Some(p) = git_path(name).filter(|p| Path::new(p).is_file()) {
            println!("cargo:rerun-if-changed={}", p.display());
        }
    }
    println!("cargo:rerun-if-changed=build.rs");
}
