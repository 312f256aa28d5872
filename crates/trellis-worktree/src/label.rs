//! Worktree labels: the branch is `trellis/<label>`, the directory `<label>`, the record
//! `<label>.json`; so a label is lowercase letters, digits, `-` and `_`, starting with a
//! letter or a digit, at most 48 long. Labels Trellis makes up are adjective-noun pairs
//! with a number.

const ADJECTIVES: &[&str] = &[
    "amber", "brisk", "calm", "deft", "eager", "fair", "glad", "hardy", "keen", "lucid", "merry",
    "nimble", "plucky", "quiet", "rapid", "steady", "tidy", "vivid", "witty", "zesty",
];
const NOUNS: &[&str] = &[
    "otter", "heron", "maple", "falcon", "badger", "cedar", "finch", "lynx", "marten", "osprey",
    "pine", "raven", "sparrow", "thistle", "wren", "willow", "alder", "bison", "crane", "fern",
];

/// A label a user typed, checked (never rewritten into another one).
pub fn check(label: &str) -> Result<String, String> {
    let ok_first = label
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit());
    if label.is_empty()
        || label.len() > 48
        || !ok_first
        || !label
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_')
    {
        return Err(format!(
            "worktree label `{}`: use 1 to 48 lowercase letters, digits, `-` or `_`, starting with a letter or a digit",
            label.escape_debug()
        ));
    }
    if label == "required" {
        return Err("`required` is not a label (it asks for a worktree, made up label)".into());
    }
    Ok(label.to_string())
}

/// A made-up label: `adjective-noun-NNN`, varied by the clock and the process.
pub fn made_up() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0);
    let mut x = nanos
        ^ (u64::from(std::process::id()) << 32)
        ^ COUNTER
            .fetch_add(1, Ordering::Relaxed)
            .wrapping_mul(0x9e37_79b9_7f4a_7c15);
    // splitmix64: spreads close seeds apart.
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^= x >> 31;
    let a = ADJECTIVES[(x % ADJECTIVES.len() as u64) as usize];
    let n = NOUNS[((x >> 16) % NOUNS.len() as u64) as usize];
    format!("{a}-{n}-{}", (x >> 32) % 1000)
}

/// A directory name turned into the part of a path Trellis names repositories by.
pub fn slug(name: &str) -> String {
    let mut s: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect();
    s.truncate(32);
    s.trim_matches('-').to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_are_checked_not_rewritten() {
        assert_eq!(check("fix-tests_2").unwrap(), "fix-tests_2");
        for bad in [
            "",
            "Fix",
            "-x",
            "a/b",
            "a..b",
            "a b",
            "é",
            "required",
            &"x".repeat(49),
        ] {
            assert!(check(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn made_up_labels_pass_the_check_and_vary() {
        let a: std::collections::HashSet<String> = (0..50).map(|_| made_up()).collect();
        assert!(a.len() > 40);
        for l in &a {
            check(l).unwrap();
        }
    }

    #[test]
    fn slugs() {
        assert_eq!(slug("My Repo.git"), "my-repo-git");
        assert_eq!(slug("..."), "");
    }
}
