//! SSML in: a document of runs (text with prosody, IPA, breaks, marks) for the engine, as
//! speech-dispatcher sends it (`<speak>` around the text, `<mark name="…"/>` index marks).
//!
//! Supported: `speak`, `s`, `p`, `mark`, `break` (time, strength), `prosody` (rate, pitch,
//! volume: keywords, percentages, multiples, semitones, Hz, dB), `say-as` (characters,
//! spell-out, letters, verbatim, digits, cardinal, number, ordinal, telephone, date), `sub`,
//! `emphasis`, `phoneme` (IPA). Other elements are read as their text (`desc` and `metadata`
//! are skipped). The XML is read with quick-xml; a document it rejects is an error that
//! [`parse_lenient`] turns into the text without its tags. Error messages never contain the
//! document's text.

use crate::normalize::{self, NormalizeOptions, PunctuationVerbosity};
use quick_xml::events::{BytesStart, Event};

/// How a run is said, relative to the engine's settings.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Prosody {
    /// Speed multiple (2 is twice as fast).
    pub rate: f32,
    /// Pitch shift in semitones.
    pub pitch: f32,
    /// Gain multiple (0 is silent).
    pub volume: f32,
}

impl Default for Prosody {
    fn default() -> Self {
        Self::NEUTRAL
    }
}

impl Prosody {
    pub const NEUTRAL: Prosody = Prosody {
        rate: 1.0,
        pitch: 0.0,
        volume: 1.0,
    };
    /// The limits every run is kept within (an SSML document cannot make speech unusable).
    pub const MIN_RATE: f32 = 0.25;
    pub const MAX_RATE: f32 = 4.0;
    pub const MAX_PITCH: f32 = 12.0;
    pub const MAX_VOLUME: f32 = 2.0;

    fn clamped(self) -> Self {
        Self {
            rate: clamp_or(self.rate, Self::MIN_RATE, Self::MAX_RATE, 1.0),
            pitch: clamp_or(self.pitch, -Self::MAX_PITCH, Self::MAX_PITCH, 0.0),
            volume: clamp_or(self.volume, 0.0, Self::MAX_VOLUME, 1.0),
        }
    }
}

fn clamp_or(v: f32, lo: f32, hi: f32, default: f32) -> f32 {
    if v.is_finite() {
        v.clamp(lo, hi)
    } else {
        default
    }
}

/// One piece of a document, in reading order.
#[derive(Clone, Debug, PartialEq)]
pub enum Item {
    /// Text for the normaliser and espeak-ng.
    Text { text: String, prosody: Prosody },
    /// IPA phonemes, mapped straight to the voice's ids (no espeak-ng).
    Ipa { ipa: String, prosody: Prosody },
    /// Silence.
    Break { ms: u32 },
    /// An index mark: reported when the audio reaches it.
    Mark { name: String },
}

/// A parsed SSML document.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Document {
    pub items: Vec<Item>,
}

impl Document {
    /// A document of plain text.
    pub fn plain(text: &str) -> Self {
        let mut d = Document::default();
        d.push_text(text, Prosody::NEUTRAL);
        d
    }

    /// True when there is nothing to say and no mark to report.
    pub fn is_empty(&self) -> bool {
        self.items.iter().all(|i| match i {
            Item::Text { text, .. } => text.trim().is_empty(),
            Item::Ipa { ipa, .. } => ipa.trim().is_empty(),
            Item::Break { .. } => true,
            Item::Mark { .. } => false,
        })
    }

    /// All text of the document (IPA runs left out), as read.
    pub fn text(&self) -> String {
        let mut s = String::new();
        for i in &self.items {
            if let Item::Text { text, .. } = i {
                s.push_str(text);
            }
        }
        s
    }

    /// Text is merged into the run before it when that has the same prosody.
    fn push_text(&mut self, text: &str, prosody: Prosody) {
        if text.is_empty() {
            return;
        }
        if let Some(Item::Text {
            text: last,
            prosody: p,
        }) = self.items.last_mut()
            && *p == prosody
        {
            last.push_str(text);
            return;
        }
        self.items.push(Item::Text {
            text: text.to_string(),
            prosody,
        });
    }

    /// Ends the sentence of the text before (`s`, `p`): a paragraph break for the segmenter.
    fn end_sentence(&mut self) {
        if let Some(Item::Text { text, .. }) = self.items.last_mut()
            && !text.ends_with("\n\n")
        {
            text.push_str("\n\n");
        }
    }
}

/// Why a document was rejected. Never quotes the document.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SsmlError {
    #[error("malformed SSML near byte {at}: {kind}")]
    Malformed { at: u64, kind: &'static str },
    #[error("SSML nested deeper than {MAX_DEPTH} elements")]
    TooDeep,
}

/// Elements open at once, at most.
pub const MAX_DEPTH: usize = 128;
/// The longest break, ms.
pub const MAX_BREAK_MS: u32 = 10_000;
/// Mark names longer than this are cut (speech-dispatcher's are `__spd_N`).
const MAX_MARK_NAME: usize = 256;

/// True when `text` is an SSML document rather than plain text (it starts with `<speak`,
/// after an optional XML declaration and white space).
pub fn looks_like_ssml(text: &str) -> bool {
    let t = text.trim_start_matches('\u{feff}').trim_start();
    let t = match t.strip_prefix("<?xml") {
        Some(rest) => rest.find("?>").map_or("", |i| rest[i + 2..].trim_start()),
        None => t,
    };
    t.starts_with("<speak")
}

/// What an open element does to its content.
#[derive(Clone, Copy)]
struct Frame {
    prosody: Prosody,
    /// Content is not read (`sub`, `phoneme` with IPA, `desc`).
    skip: bool,
    /// Content is transformed (`say-as`).
    say_as: Option<SayAs>,
    /// Ends a sentence when closed (`s`, `p`).
    sentence: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum SayAs {
    Characters,
    Cardinal,
    Ordinal,
    Telephone,
    Date,
}

/// Parses an SSML document. Text outside `<speak>` is read too (speech-dispatcher always
/// wraps it, other clients may not).
pub fn parse(ssml: &str) -> Result<Document, SsmlError> {
    let mut reader = quick_xml::Reader::from_str(ssml);
    reader.config_mut().check_end_names = true;
    let mut doc = Document::default();
    let mut stack: Vec<Frame> = Vec::new();
    // Text of the current say-as element, transformed when it closes.
    let mut say_as_text = String::new();
    let top = |stack: &[Frame]| {
        stack.last().copied().unwrap_or(Frame {
            prosody: Prosody::NEUTRAL,
            skip: false,
            say_as: None,
            sentence: false,
        })
    };
    loop {
        let at = reader.buffer_position();
        let ev = reader.read_event().map_err(|e| SsmlError::Malformed {
            at,
            kind: error_kind(&e),
        })?;
        match ev {
            Event::Start(e) => {
                if stack.len() >= MAX_DEPTH {
                    return Err(SsmlError::TooDeep);
                }
                let parent = top(&stack);
                let frame = open(&e, parent, &mut doc);
                stack.push(frame);
            }
            Event::Empty(e) => {
                let parent = top(&stack);
                if !parent.skip {
                    empty(&e, parent, &mut doc);
                }
            }
            Event::End(_) => {
                let Some(f) = stack.pop() else {
                    return Err(SsmlError::Malformed {
                        at,
                        kind: "a closing tag without its opening tag",
                    });
                };
                if let Some(kind) = f.say_as
                    && top(&stack).say_as.is_none()
                {
                    let said = say_as(kind, &std::mem::take(&mut say_as_text));
                    doc.push_text(&said, f.prosody);
                }
                if f.sentence {
                    doc.end_sentence();
                }
            }
            Event::Text(t) => {
                let f = top(&stack);
                let text = t.xml10_content();
                add_text(&mut doc, &mut say_as_text, f, &text);
            }
            Event::CData(t) => {
                let f = top(&stack);
                let text = t.into_inner();
                add_text(&mut doc, &mut say_as_text, f, &text);
            }
            Event::GeneralRef(r) => {
                let f = top(&stack);
                let c = match r.resolve_char_ref() {
                    Ok(Some(c)) => Some(c),
                    Ok(None) => match &*r.xml_content(quick_xml::XmlVersion::Implicit1_0) {
                        "lt" => Some('<'),
                        "gt" => Some('>'),
                        "amp" => Some('&'),
                        "quot" => Some('"'),
                        "apos" => Some('\''),
                        "nbsp" => Some(' '),
                        _ => None,
                    },
                    Err(_) => None,
                };
                match c {
                    Some(c) => add_text(&mut doc, &mut say_as_text, f, c.encode_utf8(&mut [0; 4])),
                    None => {
                        return Err(SsmlError::Malformed {
                            at,
                            kind: "an unknown entity",
                        });
                    }
                }
            }
            Event::Eof => break,
            // Comments, declarations, processing instructions, doctype: nothing to say.
            _ => {}
        }
    }
    if !stack.is_empty() {
        return Err(SsmlError::Malformed {
            at: ssml.len() as u64,
            kind: "an element is not closed",
        });
    }
    Ok(doc)
}

/// [`parse`], or for a document it rejects, its text without tags (entities decoded) and
/// the error.
pub fn parse_lenient(ssml: &str) -> (Document, Option<SsmlError>) {
    match parse(ssml) {
        Ok(d) => (d, None),
        Err(e) => (Document::plain(&strip_tags(ssml)), Some(e)),
    }
}

/// The text of a document without its tags, for one that does not parse.
pub fn strip_tags(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find('<') {
        out.push_str(&rest[..i]);
        match rest[i..].find('>') {
            Some(j) => rest = &rest[i + j + 1..],
            // An unclosed `<`: drop it alone.
            None => rest = &rest[i + 1..],
        }
    }
    out.push_str(rest);
    out.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&apos;", "'")
        .replace("&amp;", "&")
}

fn error_kind(e: &quick_xml::Error) -> &'static str {
    use quick_xml::Error as E;
    match e {
        E::Syntax(_) => "a syntax error",
        E::IllFormed(_) => "ill-formed XML (mismatched or unclosed tags)",
        E::Encoding(_) => "bad encoding",
        E::Escape(_) => "a bad escape",
        E::InvalidAttr(_) => "a bad attribute",
        _ => "an XML error",
    }
}

fn add_text(doc: &mut Document, say_as_text: &mut String, f: Frame, text: &str) {
    if f.skip {
        return;
    }
    if f.say_as.is_some() {
        say_as_text.push_str(text);
    } else {
        doc.push_text(text, f.prosody);
    }
}

fn attr(e: &BytesStart<'_>, name: &str) -> Option<String> {
    e.attributes()
        .with_checks(false)
        .flatten()
        .find(|a| a.key.local_name().as_ref() == name)
        .and_then(|a| {
            a.normalized_value(quick_xml::XmlVersion::Implicit1_0)
                .ok()
                .map(|v| v.trim().to_string())
        })
}

fn local(e: &BytesStart<'_>) -> String {
    e.local_name().as_ref().to_ascii_lowercase()
}

/// An opening tag: the frame its content is read in.
fn open(e: &BytesStart<'_>, parent: Frame, doc: &mut Document) -> Frame {
    let mut f = Frame {
        sentence: false,
        ..parent
    };
    if parent.skip {
        return f;
    }
    match local(e).as_str() {
        "s" | "p" | "paragraph" | "sentence" => {
            doc.end_sentence();
            f.sentence = true;
        }
        "prosody" => {
            let p = &mut f.prosody;
            if let Some(r) = attr(e, "rate") {
                p.rate *= rate_of(&r);
            }
            if let Some(v) = attr(e, "pitch") {
                p.pitch += pitch_of(&v);
            }
            if let Some(v) = attr(e, "volume") {
                p.volume *= volume_of(&v);
            }
            f.prosody = p.clamped();
        }
        "emphasis" => {
            let (rate, volume) = match attr(e, "level").as_deref() {
                Some("strong") => (0.85, 1.3),
                Some("reduced") => (1.1, 0.8),
                Some("none") => (1.0, 1.0),
                _ => (0.92, 1.15),
            };
            f.prosody.rate *= rate;
            f.prosody.volume *= volume;
            f.prosody = f.prosody.clamped();
        }
        "say-as" => {
            let kind = attr(e, "interpret-as").unwrap_or_default();
            f.say_as = match kind.to_ascii_lowercase().as_str() {
                "characters" | "spell-out" | "letters" | "verbatim" | "digits" | "tts:char" => {
                    Some(SayAs::Characters)
                }
                "cardinal" | "number" => Some(SayAs::Cardinal),
                "ordinal" => Some(SayAs::Ordinal),
                "telephone" | "phone" => Some(SayAs::Telephone),
                "date" => Some(SayAs::Date),
                _ => parent.say_as,
            };
        }
        // Their content is what the replacement stands for: not read when there is one.
        tag @ ("sub" | "phoneme") => f.skip |= replace(tag, e, f.prosody, doc),
        "desc" | "metadata" | "lexicon" => f.skip = true,
        "break" => {
            // `<break>…</break>` is unusual but seen: a break, content read.
            empty(e, parent, doc);
        }
        // speak, voice, lang, audio (its content is the fallback text), unknown: read.
        _ => {}
    }
    f
}

/// A self-closing tag.
fn empty(e: &BytesStart<'_>, parent: Frame, doc: &mut Document) {
    match local(e).as_str() {
        "mark" => {
            if let Some(mut name) = attr(e, "name") {
                if name.len() > MAX_MARK_NAME {
                    let mut cut = MAX_MARK_NAME;
                    while !name.is_char_boundary(cut) {
                        cut -= 1;
                    }
                    name.truncate(cut);
                }
                doc.items.push(Item::Mark { name });
            }
        }
        "break" => {
            let ms = attr(e, "time")
                .and_then(|t| duration_ms(&t))
                .or_else(|| attr(e, "strength").map(|s| strength_ms(&s)))
                .unwrap_or(250);
            if ms > 0 {
                doc.items.push(Item::Break {
                    ms: ms.min(MAX_BREAK_MS),
                });
            }
        }
        "s" | "p" => doc.end_sentence(),
        tag @ ("sub" | "phoneme") => {
            replace(tag, e, parent.prosody, doc);
        }
        _ => {}
    }
}

/// What a `sub` (its alias) or a `phoneme` (its IPA) says instead of its content, pushed with
/// `prosody`; `false` when the tag gives none (then its content is read).
fn replace(tag: &str, e: &BytesStart<'_>, prosody: Prosody, doc: &mut Document) -> bool {
    if tag == "sub" {
        return match attr(e, "alias") {
            Some(alias) => {
                doc.push_text(&alias, prosody);
                true
            }
            None => false,
        };
    }
    let alphabet = attr(e, "alphabet").unwrap_or_else(|| "ipa".into());
    match attr(e, "ph") {
        Some(ipa) if alphabet.eq_ignore_ascii_case("ipa") => {
            doc.items.push(Item::Ipa { ipa, prosody });
            true
        }
        _ => false,
    }
}

fn number_prefix(s: &str) -> Option<(f32, &str)> {
    let s = s.trim();
    let end = s
        .char_indices()
        .find(|&(i, c)| !(c.is_ascii_digit() || c == '.' || (i == 0 && (c == '+' || c == '-'))))
        .map_or(s.len(), |(i, _)| i);
    let v: f32 = s[..end].parse().ok()?;
    v.is_finite().then_some((v, s[end..].trim()))
}

/// A `prosody rate` as a speed multiple.
fn rate_of(s: &str) -> f32 {
    match s.to_ascii_lowercase().as_str() {
        "x-slow" => 0.5,
        "slow" => 0.75,
        "medium" | "default" => 1.0,
        "fast" => 1.4,
        "x-fast" => 2.0,
        other => match number_prefix(other) {
            // "+20%", "-20%", "150%": relative; "1.5": a multiple.
            Some((v, "%")) if other.starts_with(['+', '-']) => 1.0 + v / 100.0,
            Some((v, "%")) => v / 100.0,
            Some((v, "")) => v,
            _ => 1.0,
        },
    }
}

/// A `prosody pitch` in semitones.
fn pitch_of(s: &str) -> f32 {
    let st = |ratio: f32| 12.0 * ratio.max(0.01).log2();
    match s.to_ascii_lowercase().as_str() {
        "x-low" => -6.0,
        "low" => -3.0,
        "medium" | "default" => 0.0,
        "high" => 3.0,
        "x-high" => 6.0,
        other => match number_prefix(other) {
            Some((v, "st")) => v,
            Some((v, "%")) => st(1.0 + v / 100.0),
            // Relative Hz against a typical speaking pitch; absolute Hz likewise.
            Some((v, "hz")) if other.starts_with(['+', '-']) => st((120.0 + v) / 120.0),
            Some((v, "hz")) => st(v / 120.0),
            _ => 0.0,
        },
    }
}

/// A `prosody volume` as a gain multiple.
fn volume_of(s: &str) -> f32 {
    match s.to_ascii_lowercase().as_str() {
        "silent" => 0.0,
        "x-soft" => 0.3,
        "soft" => 0.6,
        "medium" | "default" => 1.0,
        "loud" => 1.4,
        "x-loud" => 2.0,
        other => match number_prefix(other) {
            Some((v, "db")) => 10f32.powf(v / 20.0),
            Some((v, "%")) if other.starts_with(['+', '-']) => 1.0 + v / 100.0,
            Some((v, "%")) => v / 100.0,
            // SSML 1.1: 0 (silent) to 100 (loudest); relative numbers are changes on it.
            Some((v, "")) if other.starts_with(['+', '-']) => 1.0 + v / 100.0,
            Some((v, "")) => v / 100.0,
            _ => 1.0,
        },
    }
}

/// "500ms", "2s", "1.5s".
fn duration_ms(s: &str) -> Option<u32> {
    let (v, unit) = number_prefix(s)?;
    let ms = match unit.to_ascii_lowercase().as_str() {
        "ms" | "" => v,
        "s" => v * 1000.0,
        _ => return None,
    };
    (ms >= 0.0).then(|| ms.min(MAX_BREAK_MS as f32) as u32)
}

fn strength_ms(s: &str) -> u32 {
    match s {
        "none" => 0,
        "x-weak" => 50,
        "weak" => 120,
        "strong" => 500,
        "x-strong" => 1000,
        _ => 250,
    }
}

fn say_as(kind: SayAs, text: &str) -> String {
    let t = text.trim();
    match kind {
        SayAs::Characters => spell(t),
        // The normaliser reads numbers; separators inside them are dropped.
        SayAs::Cardinal => {
            let digits: String = t
                .chars()
                .filter(|c| !matches!(c, ',' | '_' | ' '))
                .collect();
            format!(" {digits} ")
        }
        SayAs::Ordinal => {
            let digits: String = t.chars().filter(char::is_ascii_digit).collect();
            if digits.is_empty() {
                return format!(" {t} ");
            }
            let n: u64 = digits.parse().unwrap_or(0);
            let suffix = match (n % 10, n % 100) {
                (_, 11..=13) => "th",
                (1, _) => "st",
                (2, _) => "nd",
                (3, _) => "rd",
                _ => "th",
            };
            format!(" {digits}{suffix} ")
        }
        SayAs::Telephone => {
            // Digit by digit, a pause between groups.
            let groups: Vec<String> = t
                .split(|c: char| !c.is_ascii_alphanumeric() && c != '+')
                .filter(|g| !g.is_empty())
                .map(|g| {
                    g.chars()
                        .map(|c| {
                            if c == '+' {
                                "plus".to_string()
                            } else {
                                c.to_string()
                            }
                        })
                        .collect::<Vec<_>>()
                        .join(" ")
                })
                .collect();
            format!(" {}. ", groups.join(", "))
        }
        SayAs::Date => format!(" {t} "),
    }
}

/// `text` spelled out: one character at a time, symbols by name.
pub fn spell(text: &str) -> String {
    let names = NormalizeOptions {
        verbosity: PunctuationVerbosity::All,
        ..Default::default()
    };
    let mut parts: Vec<String> = Vec::new();
    for c in text.chars() {
        if c.is_whitespace() {
            continue;
        }
        if c.is_alphanumeric() {
            parts.push(c.to_lowercase().collect());
        } else {
            let n = normalize::normalize(&c.to_string(), &names).text;
            let n = n
                .trim()
                .trim_end_matches(['.', ',', '?', '!', ';', ':'])
                .trim();
            if !n.is_empty() {
                parts.push(n.to_string());
            }
        }
    }
    format!(" {}. ", parts.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(t: &str) -> Item {
        Item::Text {
            text: t.into(),
            prosody: Prosody::NEUTRAL,
        }
    }

    #[test]
    fn speech_dispatchers_marks_split_the_text() {
        let d = parse(r#"<speak>Hello world.<mark name="__spd_0"/> How are you?</speak>"#).unwrap();
        assert_eq!(
            d.items,
            vec![
                text("Hello world."),
                Item::Mark {
                    name: "__spd_0".into()
                },
                text(" How are you?"),
            ]
        );
    }

    #[test]
    fn entities_are_decoded_and_comments_skipped() {
        let d = parse("<speak>a &lt; b &amp;&#x41;<!-- no --></speak>").unwrap();
        assert_eq!(d.items, vec![text("a < b &A")]);
    }

    #[test]
    fn prosody_nests_and_is_clamped() {
        let d = parse(
            r#"<speak><prosody rate="200%" volume="+6dB">a<prosody rate="x-fast" pitch="+2st">b</prosody></prosody></speak>"#,
        )
        .unwrap();
        let Item::Text { prosody: p, .. } = &d.items[0] else {
            panic!()
        };
        assert_eq!(p.rate, 2.0);
        assert!((p.volume - 1.995).abs() < 0.01);
        let Item::Text { prosody: q, .. } = &d.items[1] else {
            panic!()
        };
        assert_eq!(q.rate, Prosody::MAX_RATE);
        assert_eq!(q.pitch, 2.0);
    }

    #[test]
    fn breaks_phonemes_and_sub() {
        let d = parse(
            r#"<speak>a<break time="1.5s"/>b<break strength="weak"/><phoneme alphabet="ipa" ph="həˈloʊ">hello</phoneme><sub alias="World Wide Web">WWW</sub><break/></speak>"#,
        )
        .unwrap();
        assert_eq!(
            d.items,
            vec![
                text("a"),
                Item::Break { ms: 1500 },
                text("b"),
                Item::Break { ms: 120 },
                Item::Ipa {
                    ipa: "həˈloʊ".into(),
                    prosody: Prosody::NEUTRAL
                },
                text("World Wide Web"),
                Item::Break { ms: 250 },
            ]
        );
    }

    #[test]
    fn say_as_rewrites_for_the_normaliser() {
        let d = parse(
            r#"<speak><say-as interpret-as="characters">ab?</say-as><say-as interpret-as="ordinal">21</say-as><say-as interpret-as="telephone">555-1234</say-as><say-as interpret-as="cardinal">1,024</say-as></speak>"#,
        )
        .unwrap();
        let t = d.text();
        assert!(t.contains("a, b, question"), "{t}");
        assert!(t.contains("21st"), "{t}");
        assert!(t.contains("5 5 5, 1 2 3 4"), "{t}");
        assert!(t.contains(" 1024 "), "{t}");
    }

    #[test]
    fn sentences_and_paragraphs_end_sentences() {
        let d = parse("<speak><p><s>One</s><s>Two</s></p>Three</speak>").unwrap();
        assert_eq!(d.text(), "One\n\nTwo\n\nThree");
    }

    #[test]
    fn malformed_ssml_is_an_error_without_the_text_and_lenient_reads_it() {
        for bad in [
            "<speak>secret <b>words</speak>",
            "<speak>secret words",
            "<speak>secret &bogus; words</speak>",
            "<speak>secret</speak></x>",
            "<speak <<< secret",
        ] {
            let e = parse(bad).unwrap_err();
            assert!(!e.to_string().contains("secret"), "{e}");
            let (d, err) = parse_lenient(bad);
            assert!(err.is_some());
            assert!(d.text().contains("secret"), "{bad}: {:?}", d);
        }
    }

    #[test]
    fn deep_nesting_is_refused() {
        let deep = "<speak>".to_string() + &"<p>".repeat(MAX_DEPTH + 1);
        assert_eq!(parse(&deep), Err(SsmlError::TooDeep));
    }

    #[test]
    fn ssml_is_recognised() {
        assert!(looks_like_ssml("<speak>x</speak>"));
        assert!(looks_like_ssml("<?xml version=\"1.0\"?>\n<speak>x</speak>"));
        assert!(!looks_like_ssml("a <speak>"));
    }
}
