//! Read-aloud text normalisation: raw text (prices, dates, URLs, code, lists…) → words that
//! espeak-ng reads the way a careful human reader would.
//!
//! Pure Rust and deterministic: tokenise → classify → verbalise. The input is split into
//! tokens ([`lexer`]). At the cursor, structure (Markdown, URLs) is handled first; then a
//! number-like stretch of tokens is classified into a semiotic class that knows its context
//! ([`classify`]: a range, a date order, a unit after a number, a digit string, an address),
//! joined with its neighbour where they form one reading, and verbalised; other words and
//! symbols have their own rules. Every piece is emitted with the input range it came from
//! ([`Normalized::spans`]), so a player can highlight progress in the original text. Every
//! look-ahead is bounded, so the time is linear in the input.
//!
//! Memory is bounded too: the input is normalised in blocks of at most [`BLOCK_BYTES`] (cut at
//! paragraph, line, sentence or word boundaries), and a run without whitespace longer than
//! [`MAX_RUN_CHARS`] is announced ("two hundred characters skipped") instead of read.
//!
//! The output holds only letters, combining marks, spaces and `. , ? ! ; : ' -`.

mod abbrev;
mod acronyms;
mod address;
mod classify;
mod ctx;
mod dictionary;
mod digits;
mod emoji;
mod lexer;
mod markdown;
mod money;
mod numbers;
mod out;
mod roman;
mod runs;
mod symbols;
mod time_date;
mod units;
mod urls;
mod words;

use std::ops::Range;

use serde::{Deserialize, Serialize};

use ctx::{Ctx, Line};
use lexer::Kind;

pub use dictionary::DictEntry;
pub use out::{Span, is_speakable};
pub(crate) use runs::{Block, next_block};

/// A run of characters without whitespace longer than this is not read but announced, "N
/// characters skipped": no word is that long, and such a run is a blob (base64, a data URI,
/// minified code, a digit dump) that nobody wants read out character by character. Web and
/// e-mail addresses and codes are still read briefly (the host, "a long code").
pub const MAX_RUN_CHARS: usize = 100;

/// The normaliser works on blocks of at most this many bytes of input, so its tokens and
/// output for one block stay bounded whatever the size of the text.
pub const BLOCK_BYTES: usize = 64 * 1024;

/// How much punctuation is spoken, as in NVDA and Orca. Prosody marks are kept at every level.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PunctuationVerbosity {
    /// No symbols spoken.
    None,
    /// Symbols that carry meaning in prose: & @ # + = / % ° © and the like.
    #[default]
    Some,
    /// Also brackets, quotes, dashes, * _ | \ ~ ^.
    Most,
    /// Every character, sentence punctuation included.
    All,
}

impl PunctuationVerbosity {
    pub const ALL: [PunctuationVerbosity; 4] = [Self::None, Self::Some, Self::Most, Self::All];
}

/// How web addresses and e-mail addresses are read.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum UrlMode {
    /// The host only: "example dot com"; e-mail in full: "jane at example dot com".
    #[default]
    Compact,
    /// "link" (and "e-mail address").
    Link,
}

impl UrlMode {
    pub const ALL: [UrlMode; 2] = [Self::Compact, Self::Link];
}

/// Emoji: by name, or skipped.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EmojiMode {
    /// By name ("thumbs up"), as NVDA, JAWS and VoiceOver do by default.
    #[default]
    Name,
    Skip,
}

impl EmojiMode {
    pub const ALL: [EmojiMode; 2] = [Self::Name, Self::Skip];
}

/// The order of ambiguous numeric dates such as 03/04/2026 ("day-month", "month-day").
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DateOrder {
    /// 29/11/2026 (most of the world); read "the twenty-ninth of November".
    #[default]
    DayMonth,
    /// 11/29/2026 (US); read "November twenty-ninth".
    MonthDay,
}

impl DateOrder {
    pub const ALL: [DateOrder; 2] = [Self::DayMonth, Self::MonthDay];

    /// The order in which `locale` writes numeric dates. `locale` is an espeak-ng voice
    /// ("en-us", "en-gb-x-rp"), a BCP 47 tag ("en-US") or a Piper voice name
    /// ("en_US-joe-medium"): month-day for US English (and the US territories, the
    /// Philippines, and the year-first languages, which put the month before the day), day-month
    /// everywhere else and when the locale is empty or unknown.
    pub fn for_locale(locale: &str) -> DateOrder {
        let mut parts = locale.split(['-', '_']).map(str::to_ascii_lowercase);
        let lang = parts.next().unwrap_or_default();
        let region = parts.next().unwrap_or_default();
        const MONTH_FIRST_REGIONS: &[&str] = &[
            "us", "um", "as", "gu", "mp", "pr", "vi", "ph", "fm", "mh", "pw",
        ];
        const MONTH_FIRST_LANGUAGES: &[&str] = &["zh", "cmn", "yue", "ja", "ko", "hu"];
        if MONTH_FIRST_REGIONS.contains(&region.as_str())
            || MONTH_FIRST_LANGUAGES.contains(&lang.as_str())
        {
            DateOrder::MonthDay
        } else {
            DateOrder::DayMonth
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct NormalizeOptions {
    pub verbosity: PunctuationVerbosity,
    pub urls: UrlMode,
    pub emoji: EmojiMode,
    /// The order of ambiguous numeric dates; `None` ("auto"): the order of [`Self::locale`].
    pub date_order: Option<DateOrder>,
    /// The reading voice's language and region: its espeak-ng voice ("en-us") or its name
    /// ("en_US-joe-medium"). Decides the automatic date order; empty: day-month.
    pub locale: String,
    /// The user pronunciation dictionary, applied first.
    pub dictionary: Vec<DictEntry>,
}

impl NormalizeOptions {
    /// Default options for a voice of `locale` (see [`DateOrder::for_locale`]).
    pub fn for_locale(locale: &str) -> Self {
        Self {
            locale: locale.to_string(),
            ..Self::default()
        }
    }

    /// Sets the locale to the speaking voice's ([`voice_locale`]) unless the caller chose one.
    pub fn default_voice_locale(&mut self, espeak_voice: &str, voice_name: &str) {
        if self.locale.is_empty() {
            self.locale = voice_locale(espeak_voice, voice_name).to_string();
        }
    }

    /// Whether the normaliser's rules apply: they say numbers, dates, units, symbols and
    /// abbreviations in (US) English words, so they run for an English locale ("en-us",
    /// "en_GB", "en") and an empty one (the default) only. Text for a voice of another
    /// language goes to espeak-ng as written (the segmenter's raw path), which reads numbers
    /// and symbols in that language.
    pub fn english_rules(&self) -> bool {
        let lang = self.locale.split(['-', '_']).next().unwrap_or_default();
        lang.is_empty() || lang.eq_ignore_ascii_case("en")
    }

    /// The date order in effect: the explicit setting, else the locale's.
    pub fn resolved_date_order(&self) -> DateOrder {
        self.date_order
            .unwrap_or_else(|| DateOrder::for_locale(&self.locale))
    }
}

/// A voice's locale: its espeak-ng voice when that names a region ("en-us", "en-gb-x-rp"),
/// else the `xx_YY` prefix of its name when that is of the same language ("en_US-joe-medium"
/// → "en_US"), else the espeak voice (it is what speaks: "de" for a voice named "en_US-…"
/// whose espeak voice is "de").
pub fn voice_locale<'a>(espeak_voice: &'a str, voice_name: &'a str) -> &'a str {
    let has_region = |s: &str| {
        s.split(['-', '_'])
            .nth(1)
            .is_some_and(|r| r.len() == 2 && r.bytes().all(|b| b.is_ascii_alphabetic()))
    };
    let lang = |s: &'a str| s.split(['-', '_']).next().unwrap_or_default();
    let same_language = lang(espeak_voice).eq_ignore_ascii_case(lang(voice_name));
    if has_region(espeak_voice) || !has_region(voice_name) || !same_language {
        espeak_voice
    } else {
        voice_name.split('-').next().unwrap_or(voice_name)
    }
}

/// Normalised text and where each piece came from.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Normalized {
    pub text: String,
    /// Emitted pieces in output order; their input ranges never go backwards.
    pub spans: Vec<Span>,
}

impl Normalized {
    /// The input byte range that produced output bytes `out` (empty when nothing did).
    pub fn source_range(&self, out: Range<usize>) -> Range<usize> {
        let first = self.spans.partition_point(|s| s.out.end <= out.start);
        let last = self.spans.partition_point(|s| s.out.start < out.end);
        if first >= last {
            let at = self.spans.get(first).map_or_else(
                || self.spans.last().map_or(0, |s| s.src.end),
                |s| s.src.start,
            );
            return at..at;
        }
        self.spans[first].src.start..self.spans[last - 1].src.end
    }

    /// Appends `n`, the normalised text of the input starting at byte `src_at`.
    fn append(&mut self, n: Normalized, src_at: usize) {
        if n.text.is_empty() {
            return;
        }
        if !self.text.is_empty() {
            self.text.push(' ');
        }
        let base = self.text.len();
        self.text.push_str(&n.text);
        self.spans.extend(n.spans.into_iter().map(|s| Span {
            out: s.out.start + base..s.out.end + base,
            src: s.src.start + src_at..s.src.end + src_at,
        }));
    }

    /// True when output byte `pos` does not fall strictly inside an emitted piece.
    pub fn is_piece_boundary(&self, pos: usize) -> bool {
        let k = self.spans.partition_point(|s| s.out.end <= pos);
        self.spans.get(k).is_none_or(|s| s.out.start >= pos)
    }
}

/// Normalise `text` for reading aloud. Never panics; deterministic. Text longer than
/// [`BLOCK_BYTES`] is normalised block by block ([`next_block`]) and the results joined.
pub fn normalize(text: &str, opts: &NormalizeOptions) -> Normalized {
    let mut all = Normalized::default();
    let mut at = 0;
    while at < text.len() {
        let block = next_block(text, at, BLOCK_BYTES);
        all.append(normalize_block(text, &block, opts), block.range.start);
        at = block.range.end;
    }
    all
}

/// The normalised text of one block; its spans are relative to the block's start.
pub(crate) fn normalize_block(text: &str, block: &Block, opts: &NormalizeOptions) -> Normalized {
    let len = block.range.len();
    match block.run {
        Some(chars) => {
            let mut out = out::Out::default();
            out.word(&runs::notice(chars), 0..len);
            out.stop(len..len);
            Normalized {
                text: out.text,
                spans: out.spans,
            }
        }
        None => normalize_one(&text[block.range.clone()], opts),
    }
}

fn normalize_one(text: &str, opts: &NormalizeOptions) -> Normalized {
    let dict = dictionary::matches(text, &opts.dictionary);
    let plain = NormalizeOptions {
        dictionary: Vec::new(),
        ..opts.clone()
    };
    let replacements = if dict.is_empty() {
        Vec::new()
    } else {
        opts.dictionary
            .iter()
            .map(|e| run(&e.replacement, &plain, &[], Vec::new(), false).text)
            .collect()
    };
    run(text, opts, &dict, replacements, true)
}

fn run(
    text: &str,
    opts: &NormalizeOptions,
    dict: &[(Range<usize>, usize)],
    replacements: Vec<String>,
    final_stop: bool,
) -> Normalized {
    let toks = lexer::lex(text, dict);
    let mut cx = Ctx::new(toks, opts, replacements);
    let mut i = 0;
    while i < cx.len() {
        let next = step(&mut cx, i);
        // Every rule consumes at least one token; guard anyway so a bug cannot hang.
        i = next.max(i + 1);
    }
    let end = text.len();
    if final_stop && cx.out.ends_with_word() {
        // A final stop gives espeak its sentence-final intonation.
        cx.out.stop(end..end);
    }
    let text = cx.out.text.trim_end().to_string();
    let mut spans = cx.out.spans;
    spans.retain(|s| s.out.start < text.len());
    for s in &mut spans {
        s.out.end = s.out.end.min(text.len());
    }
    Normalized { text, spans }
}

/// Handle the token at `i`; returns the index to continue from.
fn step(cx: &mut Ctx, i: usize) -> usize {
    while let Some(&(at, to)) = cx.skips.first() {
        if at > i {
            break;
        }
        cx.skips.remove(0);
        if at == i {
            return to;
        }
    }
    let Some(kind) = cx.kind(i) else { return i + 1 };
    match kind {
        Kind::Dict(k) => {
            let r = cx.replacements.get(k).cloned().unwrap_or_default();
            cx.emit(&r, i, i + 1);
            return i + 1;
        }
        Kind::Space { newlines } => {
            if newlines > 0 {
                let block = cx.line == Line::Block;
                cx.line = Line::Prose;
                let paragraph = newlines >= 2;
                let next_block = cx
                    .sym(i + 1)
                    .is_some_and(|c| matches!(c, '-' | '*' | '+' | '•' | '#' | '>' | '|' | '`'))
                    || (cx.num(i + 1).is_some() && matches!(cx.sym(i + 2), Some('.' | ')')));
                if block || paragraph || cx.code || next_block {
                    let src = cx.src(i, i + 1);
                    cx.out.stop(src);
                }
            }
            return i + 1;
        }
        _ => {}
    }
    if cx.at_line_start(i) {
        if let Some(j) = markdown::line_start(cx, i) {
            return j;
        }
        if !cx.code
            && let Some(j) = markdown::numbered_item(cx, i)
        {
            return j;
        }
    }
    if let Some(j) = runs::try_long_run(cx, i) {
        return j;
    }
    if let Some(j) = markdown::inline(cx, i) {
        return j;
    }
    if cx.starts_chunk(i)
        && let Some(j) = urls::try_url(cx, i)
    {
        return j;
    }
    if let Some(j) = classify::try_item(cx, i) {
        return j;
    }
    match kind {
        Kind::Num => numbers::plain_digits(cx, i),
        Kind::Word => word(cx, i),
        Kind::Sym(_) => symbols::try_symbol(cx, i).unwrap_or(i + 1),
        _ => i + 1,
    }
}

fn word(cx: &mut Ctx, i: usize) -> usize {
    // "v2.1" → "version two point one"
    if cx.word(i).is_some_and(|w| w == "v" || w == "V")
        && cx.num(i + 1).is_some()
        && (i == 0 || cx.boundary(i - 1))
    {
        cx.emit("version", i, i + 1);
        return i + 1;
    }
    let rules: [fn(&mut Ctx, usize) -> Option<usize>; 6] = [
        digits::try_mask,
        address::try_street_word,
        abbrev::try_abbrev,
        roman::try_roman,
        abbrev::try_initials,
        acronyms::try_acronym,
    ];
    for rule in rules {
        if let Some(j) = rule(cx, i) {
            return j;
        }
    }
    let w = cx.text(i).to_string();
    cx.emit(&w, i, i + 1);
    i + 1
}

#[cfg(test)]
mod tests {
    use super::{DateOrder, NormalizeOptions, voice_locale};

    #[test]
    fn date_order_follows_the_locale() {
        for l in [
            "en-us",
            "en_US",
            "en-US",
            "en_US-joe-medium",
            "en-us-nyc",
            "en_PH",
            "zh_CN",
        ] {
            assert_eq!(DateOrder::for_locale(l), DateOrder::MonthDay, "{l}");
        }
        for l in [
            "",
            "en",
            "en-gb",
            "en-gb-x-rp",
            "en_GB-alan-low",
            "en-029",
            "de_DE",
            "fr",
        ] {
            assert_eq!(DateOrder::for_locale(l), DateOrder::DayMonth, "{l}");
        }
    }

    #[test]
    fn a_voice_locale_comes_from_its_espeak_voice_or_its_name() {
        assert_eq!(voice_locale("en-us", "en_US-joe-medium"), "en-us");
        assert_eq!(voice_locale("en", "en_US-amy-low"), "en_US");
        assert_eq!(voice_locale("en-gb-x-rp", "en_GB-alan-low"), "en-gb-x-rp");
        assert_eq!(voice_locale("de", "thorsten"), "de");
        assert_eq!(voice_locale("de", "de_DE-thorsten-medium"), "de_DE");
        // The espeak voice speaks: its language wins over a name of another language.
        assert_eq!(voice_locale("ar", "en_US-joe-medium"), "ar");
        let mut o = NormalizeOptions::default();
        o.default_voice_locale("en-us", "en_US-joe-medium");
        assert_eq!(o.resolved_date_order(), DateOrder::MonthDay);
        // A locale or an order the caller chose wins.
        let mut o = NormalizeOptions::for_locale("en-gb");
        o.default_voice_locale("en-us", "en_US-joe-medium");
        assert_eq!(o.resolved_date_order(), DateOrder::DayMonth);
        o.date_order = Some(DateOrder::MonthDay);
        assert_eq!(o.resolved_date_order(), DateOrder::MonthDay);
    }

    #[test]
    fn english_rules_only_for_english_or_unset_locales() {
        for l in ["", "en", "en-us", "en_GB", "EN-gb-x-rp", "en-029"] {
            assert!(NormalizeOptions::for_locale(l).english_rules(), "{l}");
        }
        for l in [
            "de", "de_DE", "fr", "es", "ru", "ar", "hi", "cmn", "zh_CN", "eo",
        ] {
            assert!(!NormalizeOptions::for_locale(l).english_rules(), "{l}");
        }
    }
}
