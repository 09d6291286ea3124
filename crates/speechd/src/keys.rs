//! What CHAR and KEY messages say: the characters and key names of the clip cache, and the
//! text each is spoken as. Key names are speech-dispatcher's (SSIP's `KEY`): `space`,
//! `enter`, `kp-5`, `f12`, …, with modifiers joined by `_` (`shift_a`, `control_alt_delete`).

use hark_text::normalize::{self, NormalizeOptions, PunctuationVerbosity};

/// Named keys and how they are said.
const KEY_NAMES: &[(&str, &str)] = &[
    ("space", "space"),
    ("underscore", "underscore"),
    ("double-quote", "double quote"),
    ("alt", "alt"),
    ("control", "control"),
    ("hyper", "hyper"),
    ("meta", "meta"),
    ("shift", "shift"),
    ("super", "super"),
    ("backspace", "backspace"),
    ("break", "break"),
    ("delete", "delete"),
    ("down", "down"),
    ("end", "end"),
    ("enter", "enter"),
    ("escape", "escape"),
    ("home", "home"),
    ("insert", "insert"),
    ("kp-*", "keypad star"),
    ("kp-+", "keypad plus"),
    ("kp--", "keypad minus"),
    ("kp-.", "keypad dot"),
    ("kp-/", "keypad slash"),
    ("kp-enter", "keypad enter"),
    ("left", "left"),
    ("menu", "menu"),
    ("next", "page down"),
    ("num-lock", "num lock"),
    ("pause", "pause"),
    ("print", "print screen"),
    ("prior", "page up"),
    ("return", "return"),
    ("right", "right"),
    ("scroll-lock", "scroll lock"),
    ("tab", "tab"),
    ("up", "up"),
    ("window", "windows"),
    ("caps-lock", "caps lock"),
    ("page-up", "page up"),
    ("page-down", "page down"),
];

/// The characters CHAR has clips for (letters are cached once, lower case).
pub fn cached_chars() -> Vec<char> {
    let mut v: Vec<char> = ('a'..='z').chain('0'..='9').collect();
    v.extend("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~ ".chars());
    v
}

/// Every key of the clip cache: `char:<c>` for characters, `key:<name>` for named keys,
/// with the text spoken for it.
pub fn cache_entries() -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = cached_chars()
        .into_iter()
        .filter_map(|c| Some((char_key(c), char_text(c)?)))
        .collect();
    for (name, said) in KEY_NAMES {
        out.push((format!("key:{name}"), said.to_string()));
    }
    for n in 1..=24 {
        out.push((format!("key:f{n}"), format!("F {n}")));
    }
    for d in 0..=9 {
        out.push((format!("key:kp-{d}"), format!("keypad {d}")));
    }
    out.push(("word:capital".into(), "capital".into()));
    out
}

/// The cache key of the clip that says `words` (lower case, as [`cache_entries`] says
/// them): speech-dispatcher sends punctuation typed as a CHAR as a SPEAK of its name
/// ("question"), which then plays from the cache too.
pub fn key_for_words(words: &str) -> Option<&'static str> {
    use std::collections::HashMap;
    use std::sync::OnceLock;
    static BY_TEXT: OnceLock<HashMap<String, &'static str>> = OnceLock::new();
    let map = BY_TEXT.get_or_init(|| {
        let mut m = HashMap::new();
        for (key, text) in cache_entries() {
            // Characters first: the entries list them before the named keys.
            m.entry(text)
                .or_insert_with(|| &*Box::leak(key.into_boxed_str()));
        }
        m
    });
    let words = words.trim();
    if words.len() > 32 {
        return None;
    }
    map.get(&words.to_lowercase()).copied()
}

/// The cache key of a character (letters by their lower case).
pub fn char_key(c: char) -> String {
    let lower: String = c.to_lowercase().collect();
    format!("char:{lower}")
}

/// How a character is said alone: a letter or digit as itself (espeak-ng says a lone
/// letter's name), a symbol by its name, white space as "space".
pub fn char_text(c: char) -> Option<String> {
    if c == ' ' || c == '\u{a0}' {
        return Some("space".into());
    }
    if c == '\t' {
        return Some("tab".into());
    }
    if c == '\n' {
        return Some("new line".into());
    }
    if c.is_alphanumeric() {
        return Some(c.to_lowercase().collect());
    }
    let names = NormalizeOptions {
        verbosity: PunctuationVerbosity::All,
        ..Default::default()
    };
    let n = normalize::normalize(&c.to_string(), &names).text;
    let n = n
        .trim()
        .trim_end_matches(['.', ',', '?', '!', ';', ':'])
        .trim();
    (!n.is_empty()).then(|| n.to_string())
}

/// A KEY message as parts, each a cache key (`shift_a` → `key:shift`, `char:a`).
pub fn key_parts(name: &str) -> Vec<String> {
    let name = name.trim();
    if name.chars().count() == 1 {
        return vec![char_key(name.chars().next().unwrap_or(' '))];
    }
    let lower = name.to_ascii_lowercase();
    if KEY_NAMES.iter().any(|(k, _)| *k == lower) {
        return vec![format!("key:{lower}")];
    }
    // Modifiers and a key, joined by `_` (the key itself may be `_`, "underscore").
    let mut parts = Vec::new();
    for p in lower.split('_').filter(|p| !p.is_empty()) {
        if p.chars().count() == 1 {
            parts.push(char_key(p.chars().next().unwrap_or(' ')));
        } else {
            parts.push(format!("key:{p}"));
        }
    }
    if parts.is_empty() {
        parts.push("key:underscore".into());
    }
    parts
}

/// The text a key part is said as when it has no clip (synthesised instead).
pub fn part_text(key: &str) -> String {
    if let Some(c) = key.strip_prefix("char:") {
        return c
            .chars()
            .next()
            .and_then(char_text)
            .unwrap_or_else(|| c.into());
    }
    let name = key.strip_prefix("key:").unwrap_or(key);
    if let Some((_, said)) = KEY_NAMES.iter().find(|(k, _)| *k == name) {
        return said.to_string();
    }
    if let Some(n) = name.strip_prefix("kp-") {
        return format!("keypad {n}");
    }
    if let Some(n) = name.strip_prefix('f').filter(|n| n.parse::<u32>().is_ok()) {
        return format!("F {n}");
    }
    name.replace('-', " ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_split_into_cached_parts() {
        assert_eq!(key_parts("shift_a"), vec!["key:shift", "char:a"]);
        assert_eq!(key_parts("space"), vec!["key:space"]);
        assert_eq!(
            key_parts("control_alt_delete"),
            vec!["key:control", "key:alt", "key:delete"]
        );
        assert_eq!(key_parts("A"), vec!["char:a"]);
        assert_eq!(key_parts("_"), vec!["char:_"]);
        assert_eq!(key_parts("kp-5"), vec!["key:kp-5"]);
        let keys: Vec<String> = cache_entries().into_iter().map(|e| e.0).collect();
        for k in ["key:shift", "char:a", "key:kp-5", "key:f12", "char:?"] {
            assert!(keys.contains(&k.to_string()), "{k}");
        }
    }

    #[test]
    fn speech_dispatchers_symbol_names_find_their_clips() {
        assert_eq!(key_for_words("question"), Some("char:?"));
        assert_eq!(key_for_words(" Comma "), Some("char:,"));
        assert_eq!(key_for_words("page down"), Some("key:next"));
        assert_eq!(key_for_words("q"), Some("char:q"));
        assert_eq!(key_for_words("a question"), None);
    }

    #[test]
    fn characters_are_said_by_name() {
        assert_eq!(char_text('a').as_deref(), Some("a"));
        assert_eq!(char_text('Q').as_deref(), Some("q"));
        assert_eq!(char_text(' ').as_deref(), Some("space"));
        assert_eq!(char_text(',').as_deref(), Some("comma"));
        assert_eq!(part_text("key:next"), "page down");
        assert_eq!(part_text("key:f7"), "F 7");
    }
}
