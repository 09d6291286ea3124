//! All-capital words: spelled as letters when unpronounceable ("FBI" → "F.B.I", which espeak
//! reads as letters with natural stress), read as a word when they look pronounceable
//! ("NASA" → "Nasa"), with small exception lists both ways. Shouted text ("DO NOT ENTER")
//! is read as words.

use super::ctx::Ctx;

/// Pronounceable-looking but spelled.
const SPELLED: &[&str] = &[
    "MIT", "GOP", "URL", "LED", "USB", "SOS", "HIV", "ASAP", "UEFA", "UFO", "IOS", "CEO", "NYC",
    // Time zones.
    "EST", "CET", "CEST", "EET", "EEST", "WET", "IST", "AEST", "AEDT", "ACST", "AWST", "NZST",
    "HST", "AKST",
];

/// Read as words although the heuristic would spell them, or read specially.
const WORDS: &[(&str, &str)] = &[
    ("JSON", "Jason"),
    ("GIF", "gif"),
    ("ASCII", "askey"),
    ("GUI", "gooey"),
    ("YAML", "yammel"),
    ("CAPTCHA", "captcha"),
    ("OK", "okay"),
    ("NASDAQ", "nazdack"),
    ("WYSIWYG", "wizzywig"),
    ("NVIDIA", "en-vidia"),
    ("IKEA", "Ikea"),
    ("UNICEF", "Unicef"),
    ("IEEE", "I triple E"),
    ("WWW", "W.W.W"),
];

/// Short words that are ordinary English when a whole phrase is in capitals.
const COMMON: &[&str] = &[
    "A", "AM", "AN", "AS", "AT", "BE", "BY", "DO", "GO", "HE", "IF", "IN", "IS", "IT", "ME", "MY",
    "NO", "OF", "OH", "ON", "OR", "SO", "TO", "UP", "US", "WE", "ALL", "AND", "ANY", "ARE", "BUT",
    "CAN", "DAY", "FOR", "GET", "GOT", "HAD", "HAS", "HER", "HIM", "HIS", "HOW", "ITS", "LET",
    "MAY", "NEW", "NOT", "NOW", "OFF", "OLD", "ONE", "OUR", "OUT", "SEE", "SHE", "THE", "TOO",
    "TWO", "WAS", "WAY", "WHO", "WHY", "YES", "YET", "YOU",
];

const VOWELS: &[u8] = b"aeiou";

fn is_vowel(s: &[u8], k: usize) -> bool {
    VOWELS.contains(&s[k]) || (s[k] == b'y' && k > 0)
}

const ONSETS: &[&str] = &[
    "bl", "br", "ch", "cl", "cr", "dr", "fl", "fr", "gl", "gr", "kl", "kn", "kr", "ph", "pl", "pr",
    "qu", "sc", "sh", "sk", "sl", "sm", "sn", "sp", "st", "sw", "th", "tr", "tw", "wh", "wr",
    "scr", "spl", "spr", "str", "thr", "squ", "sch",
];

const CODAS: &[&str] = &[
    "ck", "ct", "ft", "ld", "lf", "lk", "lm", "lp", "lt", "mp", "nd", "ng", "nk", "nt", "pt", "rb",
    "rd", "rk", "rl", "rm", "rn", "rp", "rs", "rt", "sk", "sp", "st", "th", "sh", "ch", "ts", "ds",
    "ns", "ms", "ls", "ps", "ks", "ws", "gs", "ss", "ll", "ff", "nch", "nth", "rst",
];

/// Does a lower-case ASCII word look like something espeak can say as a word?
pub fn pronounceable(w: &str) -> bool {
    let s = w.as_bytes();
    let n = s.len();
    if n < 3 || !s.iter().all(u8::is_ascii_lowercase) {
        return false;
    }
    let vowel_count = (0..n).filter(|&k| is_vowel(s, k)).count();
    if vowel_count == 0 || (n == 3 && vowel_count != 1) {
        return false;
    }
    let onset = (0..n).take_while(|&k| !is_vowel(s, k)).count();
    let coda = (0..n).rev().take_while(|&k| !is_vowel(s, k)).count();
    let onset_ok = onset <= 1 && !(onset == 1 && s[0] == b'x') || ONSETS.contains(&&w[..onset]);
    let coda_ok = coda == 0
        || (coda == 1 && !matches!(s[n - 1], b'q' | b'j' | b'h' | b'v'))
        || CODAS.contains(&&w[n - coda..]);
    // Inner runs: at most three consonants, at most two vowels.
    let (mut cons, mut vows, mut max_c, mut max_v) = (0, 0, 0, 0);
    for k in onset..n - coda {
        if is_vowel(s, k) {
            vows += 1;
            cons = 0;
        } else {
            cons += 1;
            vows = 0;
        }
        max_c = max_c.max(cons);
        max_v = max_v.max(vows);
    }
    onset_ok && coda_ok && max_c <= 2 && max_v <= 2
}

fn all_caps(w: &str) -> bool {
    w.len() >= 2 && w.bytes().all(|b| b.is_ascii_uppercase())
}

/// Letters read one by one: "F.B.I". A long run is cut into groups of four with spaces
/// ("A.B.C.D E.F.G.H I.J"): espeak-ng 1.51 overflows its stack on a long dotted token.
pub fn spell(w: &str) -> String {
    let letters: Vec<char> = w.chars().collect();
    let group = if letters.len() > 8 { 4 } else { 8 };
    let groups: Vec<String> = letters
        .chunks(group)
        .map(|g| g.iter().map(char::to_string).collect::<Vec<_>>().join("."))
        .collect();
    groups.join(" ")
}

/// Is the word part of a run of capitals (shouting)?
fn shouted(cx: &Ctx, i: usize) -> bool {
    let caps = |k: usize| {
        cx.word(k)
            .is_some_and(|w| w.len() >= 2 && all_caps(w.trim_end_matches("'S")))
    };
    let before = i >= 2 && caps(i - 2) && cx.gap(i - 1);
    let after = cx.gap(i + 1) && caps(i + 2);
    (before && (i < 4 || caps(i - 4) || after)) || (after && (caps(i + 4) || before))
}

pub fn try_acronym(cx: &mut Ctx, i: usize) -> Option<usize> {
    let w = cx.word(i)?;
    // Plural or possessive: "URLs", "FBI's".
    let (base, suffix) = if let Some(b) = w.strip_suffix("'s") {
        (b, "'s")
    } else if let Some(b) = w.strip_suffix('s').filter(|b| b.len() >= 2 && all_caps(b)) {
        (b, "'s")
    } else {
        (w, "")
    };
    if !all_caps(base) {
        return None;
    }
    let lower = base.to_ascii_lowercase();
    let reading = if let Some(&(_, r)) = WORDS.iter().find(|(k, _)| *k == base) {
        r.to_string()
    } else if SPELLED.contains(&base) {
        spell(base)
    } else if shouted(cx, i) && (COMMON.contains(&base) || pronounceable(&lower) || base.len() > 5)
    {
        lower
    } else if base.len() >= 3
        && (pronounceable(&lower) || (base.len() > 5 && lower.bytes().any(|b| VOWELS.contains(&b))))
    {
        // "Nasa": lower case keeps espeak from spelling it.
        let mut c = lower.chars();
        c.next()
            .map(|f| f.to_ascii_uppercase().to_string() + c.as_str())
            .unwrap_or_default()
    } else {
        spell(base)
    };
    cx.emit(&format!("{reading}{suffix}"), i, i + 1);
    Some(i + 1)
}

#[cfg(test)]
mod tests {
    use super::pronounceable;

    #[test]
    fn long_runs_are_spelled_in_groups() {
        assert_eq!(super::spell("FBI"), "F.B.I");
        assert_eq!(super::spell("ABCDEFGH"), "A.B.C.D.E.F.G.H");
        assert_eq!(super::spell("ABCDEFGHIJ"), "A.B.C.D E.F.G.H I.J");
    }

    #[test]
    fn heuristic() {
        for w in [
            "nasa", "nato", "unesco", "opec", "scuba", "laser", "radar", "fifa", "ram",
        ] {
            assert!(pronounceable(w), "{w}");
        }
        for w in [
            "fbi", "html", "cia", "usa", "nba", "cnn", "ibm", "amd", "xml", "sql", "espn",
        ] {
            assert!(!pronounceable(w), "{w}");
        }
    }
}
