//! The user pronunciation dictionary: whole words or regular expressions → replacement text.
//! Entries are matched on the raw input before any other rule; earlier entries win where
//! matches overlap. The replacement is normalised like any other text (so "version 2" is
//! fine), with the dictionary itself switched off to avoid loops.
//!
//! Replacements are text only: espeak-ng's `[[phonemes]]` input is not honoured by
//! `espeak_TextToPhonemes` (it is a synthesis-time flag), so IPA cannot be passed through.

use std::collections::BTreeMap;
use std::ops::Range;

use regex::{Regex, RegexBuilder};
use serde::{Deserialize, Serialize};

/// One dictionary entry, stored with the settings.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DictEntry {
    /// A word (or phrase), or a regular expression when `regex` is true.
    pub pattern: String,
    /// What to say instead (plain text; spell it the way it sounds).
    pub replacement: String,
    #[serde(default)]
    pub regex: bool,
    #[serde(default)]
    pub case_sensitive: bool,
}

impl DictEntry {
    pub fn word(pattern: &str, replacement: &str) -> Self {
        Self {
            pattern: pattern.into(),
            replacement: replacement.into(),
            regex: false,
            case_sensitive: false,
        }
    }
}

/// Size cap for a compiled pattern: user patterns must not blow up memory.
const SIZE_LIMIT: usize = 1 << 20;

fn compile(e: &DictEntry) -> Option<Regex> {
    if e.pattern.is_empty() {
        return None;
    }
    let src = if e.regex {
        e.pattern.clone()
    } else {
        // Word boundaries only where the pattern starts/ends with a word character, so
        // "C++" and ".NET" still match.
        let word = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_');
        let esc = regex::escape(&e.pattern);
        let pre = if word(e.pattern.chars().next()) {
            r"\b"
        } else {
            ""
        };
        let post = if word(e.pattern.chars().last()) {
            r"\b"
        } else {
            ""
        };
        format!("{pre}{esc}{post}")
    };
    let built = RegexBuilder::new(&src)
        .case_insensitive(!e.case_sensitive)
        .size_limit(SIZE_LIMIT)
        .dfa_size_limit(SIZE_LIMIT)
        .build();
    match built {
        Ok(r) => Some(r),
        Err(_) => {
            // The pattern is configuration, not user text: safe to name the entry's position.
            tracing::warn!("a pronunciation dictionary entry has an invalid pattern; skipped");
            None
        }
    }
}

/// Non-overlapping matches, sorted: (input range, entry index).
pub fn matches(text: &str, entries: &[DictEntry]) -> Vec<(Range<usize>, usize)> {
    let mut taken: BTreeMap<usize, (usize, usize)> = BTreeMap::new();
    for (idx, e) in entries.iter().enumerate() {
        let Some(re) = compile(e) else { continue };
        for m in re.find_iter(text) {
            if m.is_empty() {
                continue;
            }
            let (s, t) = (m.start(), m.end());
            // Overlap with an earlier entry's match?
            let before = taken
                .range(..t)
                .next_back()
                .is_some_and(|(_, &(end, _))| end > s);
            if !before {
                taken.insert(s, (t, idx));
            }
        }
    }
    taken.into_iter().map(|(s, (t, idx))| (s..t, idx)).collect()
}
