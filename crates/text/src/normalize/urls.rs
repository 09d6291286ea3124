//! URLs, e-mail addresses and long codes. Compact mode reads the host ("example dot com");
//! link mode says "link". Hashes, UUIDs and long hex strings become "a long code".

use super::UrlMode;
use super::ctx::Ctx;
use super::words::{cardinal, digit_by_digit};

/// Top-level domains that make a bare "name.tld" a web address. Short on purpose: "readme.md"
/// or "Node.js" are not addresses.
const TLDS: &[&str] = &[
    "com", "org", "net", "edu", "gov", "io", "dev", "app", "ai", "co", "uk", "de", "fr", "nl",
    "eu", "ca", "au", "us", "info", "biz", "me", "tv", "ly", "gg", "xyz", "ch", "se", "no", "es",
    "it", "jp", "in", "nz", "ie", "be", "at", "fm", "int", "mil",
];

/// The chunk of input starting at token `i`: tokens up to whitespace, minus trailing
/// punctuation. Returns (end token, text).
fn chunk(cx: &Ctx, i: usize) -> (usize, String) {
    let mut j = i;
    while j < cx.len() && !cx.boundary(j) {
        j += 1;
    }
    while j > i
        && matches!(
            cx.sym(j - 1),
            Some('.' | ',' | ';' | ':' | '!' | '?' | ')' | ']' | '}' | '"' | '\'' | '>')
        )
    {
        // Keep a closing bracket that has its opener inside the URL.
        let c = cx.sym(j - 1);
        if c == Some(')') && (i..j - 1).any(|k| cx.is_sym(k, '(')) {
            break;
        }
        j -= 1;
    }
    let text: String = (i..j).map(|k| cx.text(k)).collect();
    (j, text)
}

fn label_words(label: &str) -> String {
    let mut out = Vec::new();
    for part in label.split(['-', '_']) {
        if part.is_empty() {
            continue;
        }
        // Digits inside a name are read as numbers ("web3" → "web three").
        let mut cur = String::new();
        let mut digits = String::new();
        for c in part.chars() {
            if c.is_ascii_digit() {
                if !cur.is_empty() {
                    out.push(std::mem::take(&mut cur));
                }
                digits.push(c);
            } else {
                if !digits.is_empty() {
                    out.push(num_words(&std::mem::take(&mut digits)));
                }
                cur.push(c);
            }
        }
        if !cur.is_empty() {
            out.push(cur);
        }
        if !digits.is_empty() {
            out.push(num_words(&digits));
        }
    }
    out.join(" ")
}

fn num_words(d: &str) -> String {
    if d.len() > 4 || d.starts_with('0') {
        digit_by_digit(d)
    } else {
        cardinal(d)
    }
}

fn host_words(host: &str) -> String {
    let host = host.strip_prefix("www.").unwrap_or(host);
    host.split('.')
        .filter(|l| !l.is_empty())
        .map(label_words)
        .collect::<Vec<_>>()
        .join(" dot ")
}

fn is_host(h: &str) -> bool {
    let labels: Vec<&str> = h.split('.').collect();
    labels.len() >= 2
        && labels
            .iter()
            .all(|l| !l.is_empty() && l.chars().all(|c| c.is_alphanumeric() || c == '-'))
}

fn email_words(local: &str, host: &str) -> String {
    let mut out = Vec::new();
    let mut cur = String::new();
    for c in local.chars() {
        let name = match c {
            '.' => "dot",
            '_' => "underscore",
            '-' => "dash",
            '+' => "plus",
            _ => {
                cur.push(c);
                continue;
            }
        };
        if !cur.is_empty() {
            out.push(label_words(&std::mem::take(&mut cur)));
        }
        out.push(name.to_string());
    }
    if !cur.is_empty() {
        out.push(label_words(&cur));
    }
    format!("{} at {}", out.join(" "), host_words(host))
}

/// Hex digests, UUIDs, API-key-like strings.
fn is_long_code(s: &str) -> bool {
    let body = s.strip_prefix("0x").unwrap_or(s);
    let hex: usize = body.chars().filter(char::is_ascii_hexdigit).count();
    let dashes = body.chars().filter(|&c| c == '-').count();
    let digits = body.chars().filter(char::is_ascii_digit).count();
    let letters = body.chars().filter(char::is_ascii_alphabetic).count();
    if hex + dashes == body.len()
        && hex >= 12
        && digits >= 2
        && letters >= 1
        && (dashes == 0 || dashes == 4)
    {
        return true;
    }
    // Long random-looking tokens: many switches between letters and digits.
    let switches = body
        .as_bytes()
        .windows(2)
        .filter(|w| w[0].is_ascii_digit() != w[1].is_ascii_digit())
        .count();
    body.len() >= 20
        && body
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_-+/=".contains(c))
        && switches >= 6
}

pub fn try_url(cx: &mut Ctx, i: usize) -> Option<usize> {
    // Cheap first test: the chunk must start with a letter, digit or "0x".
    if cx.word(i).is_none() && cx.num(i).is_none() {
        return None;
    }
    let (j, s) = chunk(cx, i);
    if j <= i + 1 && s.len() < 12 {
        return None;
    }
    let lower = s.to_ascii_lowercase();
    let link = cx.opts.urls == UrlMode::Link;
    // E-mail.
    if let Some(at) = s.find('@') {
        let (local, host) = (&s[..at], &s[at + 1..]);
        let local = local.strip_prefix("mailto:").unwrap_or(local);
        if !local.is_empty()
            && local
                .chars()
                .all(|c| c.is_alphanumeric() || "._%+-".contains(c))
            && is_host(host)
        {
            let text = if link {
                "e-mail address".to_string()
            } else {
                email_words(local, host)
            };
            cx.emit(&text, i, j);
            return Some(j);
        }
    }
    let rest = ["https://", "http://", "ftp://", "file://"]
        .iter()
        .find_map(|p| lower.strip_prefix(p).map(|r| (p, r)));
    let host_and_path = match rest {
        Some((p, _)) => &s[p.len()..],
        None if lower.starts_with("www.") => &s[..],
        None => {
            // A bare domain: "example.com", "docs.rs/regex".
            let h = s.split('/').next().unwrap_or("");
            let tld = h.rsplit('.').next().unwrap_or("").to_ascii_lowercase();
            if !(is_host(h)
                && TLDS.contains(&tld.as_str())
                && h.starts_with(|c: char| c.is_alphanumeric()))
            {
                if is_long_code(&s) {
                    cx.emit("a long code", i, j);
                    return Some(j);
                }
                return None;
            }
            &s[..]
        }
    };
    let host = host_and_path
        .split(['/', '?', '#'])
        .next()
        .unwrap_or("")
        .split('@')
        .next_back()
        .unwrap_or("");
    let host = host.split(':').next().unwrap_or("");
    let text = if link || host.is_empty() {
        "link".to_string()
    } else {
        host_words(host)
    };
    cx.emit(&text, i, j);
    Some(j)
}
