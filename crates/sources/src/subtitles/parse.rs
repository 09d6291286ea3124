//! WebVTT and SubRip, read line by line: a line with `-->` that parses as a timing starts a
//! cue, its text runs to the next blank line. What both formats put around cues (the `WEBVTT`
//! header, `NOTE`, `STYLE` and `REGION` blocks, cue identifiers, SubRip's counters) is passed
//! over, so one reader takes both.

use super::{Cue, MAX_CUE_BYTES, MAX_CUES};
use std::time::Duration;

/// Cues starting this close together are shown together (WebVTT allows several at once, two
/// speakers say): they are spoken as one.
const SAME_TIME: Duration = Duration::from_millis(20);

/// The cues of a WebVTT or SubRip text, in time order, with their text cleaned for speech;
/// blocks that do not parse and cues with no words are left out.
pub fn parse(text: &str) -> Vec<Cue> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut cues: Vec<Cue> = Vec::new();
    // The cue being read: its times and raw text lines.
    let mut open: Option<(Duration, Duration, Vec<&str>)> = None;
    // Inside a NOTE, STYLE or REGION block (until a blank line).
    let mut skipping = false;
    let mut after_blank = true;
    let finish = |open: &mut Option<(Duration, Duration, Vec<&str>)>, cues: &mut Vec<Cue>| {
        if let Some((start, end, lines)) = open.take() {
            let text = clean_text(&lines);
            if !text.is_empty() && cues.len() < MAX_CUES {
                cues.push(Cue {
                    start,
                    end: end.max(start),
                    text,
                });
            }
        }
    };
    for line in text.split('\n') {
        let line = line.strip_suffix('\r').unwrap_or(line);
        let trimmed = line.trim();
        if trimmed.is_empty() {
            finish(&mut open, &mut cues);
            skipping = false;
            after_blank = true;
            continue;
        }
        let first_of_block = after_blank;
        after_blank = false;
        if skipping {
            continue;
        }
        if first_of_block && open.is_none() && is_vtt_block(trimmed) {
            skipping = true;
            continue;
        }
        if let Some((start, end)) = timing(trimmed) {
            // A SubRip file without blank lines between cues: the counter line before this
            // timing belongs to the new cue, not the old one's text.
            if let Some((_, _, lines)) = &mut open
                && lines.last().is_some_and(|l| is_counter(l))
            {
                lines.pop();
            }
            finish(&mut open, &mut cues);
            open = Some((start, end, Vec::new()));
            continue;
        }
        if let Some((_, _, lines)) = &mut open {
            lines.push(line);
        }
    }
    finish(&mut open, &mut cues);
    cues.sort_by_key(|c| c.start);
    merge_simultaneous(cues)
}

fn is_vtt_block(line: &str) -> bool {
    ["NOTE", "STYLE", "REGION", "WEBVTT"].iter().any(|k| {
        line == *k || line.starts_with(&format!("{k} ")) || line.starts_with(&format!("{k}\t"))
    })
}

fn is_counter(line: &str) -> bool {
    let t = line.trim();
    !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit())
}

/// `START --> END` followed by anything (WebVTT's cue settings: `align:start line:0`).
fn timing(line: &str) -> Option<(Duration, Duration)> {
    let (a, rest) = line.split_once("-->")?;
    let b = rest.split_whitespace().next()?;
    Some((parse_timestamp(a.trim())?, parse_timestamp(b)?))
}

/// `hh:mm:ss.ttt`, `mm:ss.ttt` (WebVTT) or `hh:mm:ss,ttt` (SubRip); one to three digits of
/// fraction are taken as what they say (`.5` is half a second).
pub fn parse_timestamp(s: &str) -> Option<Duration> {
    let (whole, frac) = match s.rfind(['.', ',']) {
        Some(i) => (&s[..i], &s[i + 1..]),
        None => (s, ""),
    };
    let mut parts = whole.split(':').rev();
    let secs: u64 = number(parts.next()?, 2)?;
    let mins: u64 = match parts.next() {
        Some(p) => number(p, 2)?,
        None => return None,
    };
    let hours: u64 = match parts.next() {
        Some(p) => number(p, 6)?,
        None => 0,
    };
    if parts.next().is_some() || secs > 59 || mins > 59 {
        return None;
    }
    let millis = match frac.len() {
        0 => 0,
        1..=3 => number(frac, 3)? * 10u64.pow(3 - frac.len() as u32),
        _ => return None,
    };
    Some(Duration::from_millis(
        ((hours * 60 + mins) * 60 + secs) * 1000 + millis,
    ))
}

fn number(s: &str, max_digits: usize) -> Option<u64> {
    if s.is_empty() || s.len() > max_digits || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

/// A cue's lines as one line of speech: tags (`<i>`, `<v Bob>`, `<c.yellow>`, `<00:01.000>`,
/// `<font …>`) and SubRip's `{\an8}` overrides dropped, entities decoded, a dialogue dash at a
/// line's start dropped (the line still ends its sentence), spaces collapsed, and at most
/// [`MAX_CUE_BYTES`], cut at a word.
pub fn clean_text(lines: &[&str]) -> String {
    let mut out = String::new();
    for line in lines {
        let plain = decode_entities(&strip_markup(line));
        let mut plain = plain.trim();
        for dash in ["- ", "– ", "— ", "-", "–", "—"] {
            if let Some(rest) = plain.strip_prefix(dash) {
                plain = rest.trim_start();
                // A new speaker: close the last one's sentence, so it is not run on.
                if !out.is_empty() && !out.ends_with(['.', '!', '?', '…', ',', ';', ':']) {
                    out.push('.');
                }
                break;
            }
        }
        for word in plain.split_whitespace() {
            if out.len() + 1 + word.len() > MAX_CUE_BYTES {
                return out;
            }
            if !out.is_empty() {
                out.push(' ');
            }
            out.push_str(word);
        }
    }
    out
}

fn strip_markup(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        let close = match c {
            '<' => '>',
            '{' if chars.peek() == Some(&'\\') => '}',
            _ => {
                out.push(c);
                continue;
            }
        };
        // A tag without its end is text ("a < b").
        let rest: String = chars.clone().collect();
        match rest.find(close) {
            Some(n) if c == '{' || looks_like_tag(&rest[..n]) => {
                for _ in 0..rest[..n].chars().count() + 1 {
                    chars.next();
                }
            }
            _ => out.push(c),
        }
    }
    out
}

/// What follows `<` up to `>` is a tag: `i`, `/i`, `v Bob`, `c.yellow`, `00:01.000`, `font …`.
fn looks_like_tag(inner: &str) -> bool {
    let named = matches!(inner.chars().next(), Some(c) if c.is_ascii_alphabetic() || c == '/');
    (named || parse_timestamp(inner).is_some()) && !inner.contains('<') && inner.len() <= 200
}

fn decode_entities(s: &str) -> String {
    if !s.contains('&') {
        return s.to_string();
    }
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find('&') {
        out.push_str(&rest[..i]);
        rest = &rest[i..];
        let end = rest.bytes().take(12).position(|b| b == b';');
        let decoded = end.and_then(|e| entity(&rest[1..e]).map(|c| (c, e)));
        match decoded {
            Some((c, e)) => {
                if let Some(c) = c {
                    out.push(c);
                }
                rest = &rest[e + 1..];
            }
            None => {
                out.push('&');
                rest = &rest[1..];
            }
        }
    }
    out.push_str(rest);
    out
}

/// An entity's character (`None`: one that says nothing, the direction marks).
fn entity(name: &str) -> Option<Option<char>> {
    Some(Some(match name {
        "amp" => '&',
        "lt" => '<',
        "gt" => '>',
        "quot" => '"',
        "apos" => '\'',
        "nbsp" => ' ',
        "lrm" | "rlm" => return Some(None),
        _ => {
            let code = name.strip_prefix('#')?;
            let n = match code.strip_prefix(['x', 'X']) {
                Some(hex) => u32::from_str_radix(hex, 16).ok()?,
                None => code.parse().ok()?,
            };
            char::from_u32(n).filter(|c| !c.is_control())?
        }
    }))
}

fn merge_simultaneous(cues: Vec<Cue>) -> Vec<Cue> {
    let mut out: Vec<Cue> = Vec::with_capacity(cues.len());
    for cue in cues {
        match out.last_mut() {
            Some(last) if cue.start.saturating_sub(last.start) < SAME_TIME => {
                if last.text.len() + 1 + cue.text.len() <= MAX_CUE_BYTES {
                    last.text.push(' ');
                    last.text.push_str(&cue.text);
                }
                last.end = last.end.max(cue.end);
            }
            _ => out.push(cue),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn timestamps_of_both_formats() {
        assert_eq!(parse_timestamp("00:01:02.500"), Some(ms(62_500)));
        assert_eq!(parse_timestamp("01:02.5"), Some(ms(62_500)));
        assert_eq!(parse_timestamp("1:00:00,001"), Some(ms(3_600_001)));
        assert_eq!(parse_timestamp("00:00:05"), Some(ms(5_000)));
        for bad in [
            "",
            "5",
            "00:61.000",
            "aa:00.000",
            "00:00.0000",
            "1:2:3:4.000",
            "00:00.-1",
        ] {
            assert_eq!(parse_timestamp(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn webvtt_with_a_bom_settings_tags_notes_and_styles() {
        let vtt = "\u{feff}WEBVTT - a film\nKind: captions\n\nSTYLE\n::cue { color: yellow }\n\n\
                   NOTE this is\na comment\n\nintro\n00:00:01.000 --> 00:00:03.500 align:start line:0%\n\
                   <v Roger Bingham><i>We are</i> in\nNew York &amp; <c.loud>live</c>\n\n\
                   00:04.000 --> 00:06.000\n<00:04.500>Two &lt;three&gt;&nbsp;four\n";
        let cues = parse(vtt);
        assert_eq!(
            cues,
            [
                Cue {
                    start: ms(1000),
                    end: ms(3500),
                    text: "We are in New York & live".into()
                },
                Cue {
                    start: ms(4000),
                    end: ms(6000),
                    text: "Two <three> four".into()
                },
            ]
        );
    }

    #[test]
    fn subrip_with_crlf_html_tags_and_overrides() {
        let srt = "1\r\n00:00:01,000 --> 00:00:02,000\r\n<i>Hello,</i> <font color=\"#ff0\">there</font>\r\n\r\n\
                   2\r\n00:00:02,500 --> 00:00:04,000\r\n{\\an8}- Who's that?\r\n- Me.\r\n\r\n";
        let cues = parse(srt);
        assert_eq!(cues.len(), 2);
        assert_eq!(cues[0].text, "Hello, there");
        assert_eq!((cues[1].start, cues[1].end), (ms(2500), ms(4000)));
        assert_eq!(cues[1].text, "Who's that? Me.");
    }

    #[test]
    fn a_bad_block_is_skipped_not_the_file() {
        let srt = "1\n00:00:01,000 -> 00:00:02,000\nlost\n\n2\n00:00:03,000 --> 00:00:04,000\nkept\n\
                   3\n00:00:05,000 --> 00:00:06,000\nno blank line before\n\n4\n00:00:07,000 --> 00:00:08,000\n\n";
        let texts: Vec<_> = parse(srt).into_iter().map(|c| c.text).collect();
        assert_eq!(texts, ["kept", "no blank line before"]);
    }

    #[test]
    fn dialogue_dashes_end_the_speakers_sentence() {
        assert_eq!(clean_text(&["- Ready", "- Go"]), "Ready. Go");
        assert_eq!(clean_text(&["-Yes!", "-No"]), "Yes! No");
        assert_eq!(clean_text(&["well-known a < b"]), "well-known a < b");
    }

    #[test]
    fn simultaneous_cues_are_one_and_order_is_by_time() {
        let vtt = "WEBVTT\n\n00:05.000 --> 00:06.000\nlater\n\n00:01.000 --> 00:02.000\nfirst\n\n\
                   00:01.010 --> 00:03.000\nsecond voice\n";
        let cues = parse(vtt);
        assert_eq!(cues.len(), 2);
        assert_eq!(cues[0].text, "first second voice");
        assert_eq!(cues[0].end, ms(3000));
        assert_eq!(cues[1].text, "later");
    }

    #[test]
    fn a_cue_is_cut_at_a_word_within_its_bound() {
        let long = "word ".repeat(3000);
        let text = clean_text(&[&long]);
        assert!(
            text.len() <= MAX_CUE_BYTES && text.ends_with("word"),
            "{}",
            text.len()
        );
        let one_word = "x".repeat(10_000);
        assert!(clean_text(&[&one_word]).is_empty());
    }

    #[test]
    fn entities_and_text_that_is_not_a_tag() {
        assert_eq!(
            decode_entities("&#65;&#x42;&lrm;c &bogus; & d"),
            "ABc &bogus; & d"
        );
        // Found by the subtitles fuzzer: a character of several bytes after an ampersand.
        assert_eq!(decode_entities("&ééééééé;"), "&ééééééé;");
        assert_eq!(strip_markup("<b>bold</b> <3 and 2>1"), "bold <3 and 2>1");
    }
}
