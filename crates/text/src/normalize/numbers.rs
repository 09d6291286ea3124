//! Numbers: cardinals with separators, signs, decimals, ordinals, decades, fractions,
//! versions, dimensions and years by context. A unit after a number makes it a measure, a
//! currency a price, a month a date (their modules read them).

use super::classify::{Class, Fraction, Item, Sign};
use super::ctx::Ctx;
use super::lexer::Kind;
use super::words::{self, cardinal, decimal, digit_by_digit};
use super::{address, money, time_date, units};

/// A parsed number literal starting at a `Num` token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lit {
    /// Integer digits without separators.
    pub int: String,
    /// Digits after the decimal point, if any.
    pub frac: Option<String>,
    /// Written with thousands separators.
    pub grouped: bool,
    /// Token index just after the literal.
    pub end: usize,
}

impl Lit {
    /// A whole number without separators.
    pub fn whole(digits: &str) -> Self {
        Self {
            int: digits.to_string(),
            frac: None,
            grouped: false,
            end: 0,
        }
    }

    pub fn is_one(&self) -> bool {
        self.frac.is_none() && self.int.trim_start_matches('0') == "1"
    }

    /// The plain reading: cardinal or decimal; long or zero-led integers digit by digit.
    pub fn words(&self) -> String {
        match &self.frac {
            Some(f) if self.int.is_empty() => format!("point {}", digit_by_digit(f)),
            Some(f) => decimal(&self.int, f),
            None if !self.grouped && is_digit_string(&self.int) => digit_by_digit(&self.int),
            None => cardinal(&self.int),
        }
    }
}

/// Zero-led ("007") or ten-plus digits without separators: an identifier or phone number,
/// not a quantity.
fn is_digit_string(d: &str) -> bool {
    (d.len() >= 2 && d.starts_with('0')) || d.len() >= 10
}

/// Parse `1,200,000.50`, `1 200` or `3.14` at token `i`. A dotted run with two or more dots
/// (a version) is not a decimal; the caller handles it first.
pub fn parse(cx: &Ctx, i: usize) -> Option<Lit> {
    let first = cx.num(i)?;
    let mut int = first.to_string();
    let mut end = i + 1;
    let mut grouped = false;
    if first.len() <= 3 {
        // "1,200,000" or "1 200" (one separator kind per number).
        for sep in [Some(','), None] {
            let is_sep = |k: usize| match sep {
                Some(c) => cx.is_sym(k, c),
                None => cx.gap(k) && cx.text(k).chars().count() == 1,
            };
            while is_sep(end)
                && cx.num(end + 1).is_some_and(|g| g.len() == 3)
                && !cx.is_sym(end + 2, ':')
                && !(sep.is_none() && cx.is_sym(end + 2, '/'))
            {
                int.push_str(cx.text(end + 1));
                end += 2;
                grouped = true;
            }
            if grouped {
                break;
            }
        }
    }
    let mut frac = None;
    if cx.is_sym(end, '.') && cx.num(end + 1).is_some() && !cx.is_sym(end + 2, '.')
        || (cx.is_sym(end, '.')
            && cx.num(end + 1).is_some()
            && cx.is_sym(end + 2, '.')
            && cx.num(end + 3).is_none())
    {
        frac = Some(cx.text(end + 1).to_string());
        end += 2;
    }
    Some(Lit {
        int,
        frac,
        grouped,
        end,
    })
}

/// A sign may start a number here: nothing, whitespace or an opening bracket before it.
pub fn sign_ok(cx: &Ctx, i: usize) -> bool {
    i == 0 || cx.boundary(i - 1) || matches!(cx.sym(i - 1), Some('(' | '[' | '=' | '"' | ':'))
}

/// Words that make a following four-digit number a quantity or an identifier, not a year.
const NOT_YEAR_BEFORE: &[&str] = &[
    "page",
    "pages",
    "p",
    "pp",
    "no",
    "number",
    "room",
    "flight",
    "route",
    "code",
    "pin",
    "model",
    "item",
    "id",
    "line",
    "lines",
    "step",
    "about",
    "over",
    "under",
    "nearly",
    "almost",
    "exactly",
    "approximately",
    "than",
    "of",
];

/// Words that make a following four-digit number a year even where it could be a quantity.
const YEAR_BEFORE: &[&str] = &[
    "in",
    "since",
    "from",
    "until",
    "till",
    "by",
    "during",
    "year",
    "circa",
    "c",
    "ca",
    "before",
    "after",
    "around",
    "early",
    "late",
    "mid",
    "summer",
    "winter",
    "spring",
    "autumn",
    "fall",
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
    "of",
];

fn reads_as_year(cx: &Ctx, i: usize, lit: &Lit, sign: Sign) -> Option<u32> {
    if sign != Sign::None || lit.frac.is_some() || lit.grouped || lit.int.len() != 4 {
        return None;
    }
    let n: u32 = lit.int.parse().ok()?;
    if !(1000..=2099).contains(&n) {
        return None;
    }
    let prev = cx.prev_word(i).map(str::to_lowercase);
    let cue = prev.as_deref().is_some_and(|p| YEAR_BEFORE.contains(&p));
    let anti = prev
        .as_deref()
        .is_some_and(|p| NOT_YEAR_BEFORE.contains(&p));
    if anti && !cue {
        return None;
    }
    // A following quantity word ("1500 people") is left to the default (year) reading:
    // "fifteen hundred people" is still correct English.
    words::year(n).map(|_| n)
}

/// A version: "1.5.2" (three or more dotted parts; four small ones are an IP address, read
/// by `digits`).
fn version(cx: &Ctx, i: usize) -> Option<Item> {
    if !(cx.is_sym(i + 1, '.') && cx.num(i + 2).is_some() && cx.is_sym(i + 3, '.')) {
        return None;
    }
    let mut parts = vec![cx.text(i).to_string()];
    let mut j = i + 1;
    while cx.is_sym(j, '.') && cx.num(j + 1).is_some() {
        parts.push(cx.text(j + 1).to_string());
        j += 2;
    }
    (parts.len() >= 3).then(|| Item::new(i, j, Class::Version(parts)))
}

pub fn fraction_char(c: char) -> Option<(&'static str, &'static str)> {
    Some(match c {
        '½' => ("1", "2"),
        '⅓' => ("1", "3"),
        '⅔' => ("2", "3"),
        '¼' => ("1", "4"),
        '¾' => ("3", "4"),
        '⅕' => ("1", "5"),
        '⅖' => ("2", "5"),
        '⅗' => ("3", "5"),
        '⅘' => ("4", "5"),
        '⅙' => ("1", "6"),
        '⅚' => ("5", "6"),
        '⅐' => ("1", "7"),
        '⅛' => ("1", "8"),
        '⅜' => ("3", "8"),
        '⅝' => ("5", "8"),
        '⅞' => ("7", "8"),
        '⅑' => ("1", "9"),
        '⅒' => ("1", "10"),
        _ => return None,
    })
}

/// Whether `a/b` reads as a proper fraction rather than a date or a ratio.
fn fraction_like(a: &str, b: &str) -> bool {
    let (Ok(x), Ok(y)) = (a.parse::<u64>(), b.parse::<u64>()) else {
        return false;
    };
    x < y && y >= 2 && (y <= 10 || [12, 16, 32, 64, 100].contains(&y))
}

/// An improper fraction over halves, quarters, eighths…: "23/4", "7/2". These denominators
/// are rare months in a date without a year, and a date is read where context says so.
fn improper_like(a: &str, b: &str) -> bool {
    let (Ok(x), Ok(y)) = (a.parse::<u64>(), b.parse::<u64>()) else {
        return false;
    };
    x > y && x < 100 && [2, 4, 8, 16, 32, 64].contains(&y)
}

/// An ordinal suffix ("th", "ST", "th's"): `Some(possessive)`.
fn ordinal_suffix(w: &str) -> Option<bool> {
    let (base, poss) = match w.strip_suffix("'s") {
        Some(b) => (b, true),
        None => (w, false),
    };
    matches!(base, "st" | "nd" | "rd" | "th" | "ST" | "ND" | "RD" | "TH").then_some(poss)
}

/// `class` (a quantity ending at token `e`), with the unit after it if there is one.
fn with_unit(cx: &Ctx, start: usize, e: usize, class: Class) -> Item {
    // "conv1d", "f16x": a number inside a word takes no one-letter unit.
    let in_word = start > 0 && cx.word(start - 1).is_some();
    if in_word && cx.word(e).is_some_and(|w| w.chars().count() == 1) {
        // "ResBlock2s", "P99s": the plural of the number.
        if cx.is_word(e, "s")
            && let Class::Number {
                sign: Sign::None,
                lit,
            } = &class
            && lit.frac.is_none()
            && cx.word(e + 1).is_none()
        {
            let w = words::plural_words(&lit.words());
            return Item::new(start, e + 1, Class::Words(w));
        }
        return Item::new(start, e, class);
    }
    // 14" is inches, but not the closing quote after "x85" or "utf-8".
    let quote = cx.is_sym(cx.skip_gap(e), '"');
    match units::lookup(cx, e).filter(|_| !quote || cx.starts_chunk(start)) {
        Some((end, unit)) => {
            // "a 14\" laptop", "a 5 km run": the unit is an adjective.
            let article = cx
                .words_before(start, 1)
                .first()
                .is_some_and(|w| w == "a" || w == "an");
            let noun_after = cx.gap(end)
                && cx.word(end + 1).is_some_and(|w| {
                    w.starts_with(char::is_lowercase) && !matches!(w, "of" | "or" | "and" | "to")
                });
            let attributive = article && noun_after && matches!(class, Class::Number { .. });
            Item::new(
                start,
                end,
                Class::Measure {
                    qty: Box::new(class),
                    unit,
                    attributive,
                },
            )
        }
        None => Item::new(start, e, class),
    }
}

fn fraction(sign: Sign, whole: Option<&str>, num: &str, den: &str) -> Class {
    Class::Fraction(Fraction {
        sign,
        whole: whole.map(str::to_string),
        num: num.to_string(),
        den: den.to_string(),
    })
}

/// "a/b" at `i` (numerator digits `a`, slash at `e`): a fraction, a date, an idiom or a ratio.
fn slash(cx: &Ctx, i: usize, sign: Sign, a: &str, e: usize) -> Item {
    let b = cx.text(e + 1);
    let end = e + 2;
    // "3/4th", "2/3rd": the suffix only repeats the fraction.
    if cx.word(end).and_then(ordinal_suffix) == Some(false)
        && (fraction_like(a, b) || improper_like(a, b))
    {
        return with_unit(cx, i, end + 1, fraction(sign, None, a, b));
    }
    if sign == Sign::None && matches!((a, b), ("24", "7") | ("50", "50") | ("9", "11")) {
        let w = format!("{} {}", cardinal(a), cardinal(b));
        return Item::new(i, end, Class::Words(w));
    }
    let date = (sign == Sign::None)
        .then(|| time_date::slash_date(cx.date_order, a, b))
        .flatten();
    let cue = time_date::date_cue(cx, i, !fraction_like(a, b));
    if let Some(d) = date.clone().filter(|_| cue) {
        return Item::new(i, end, Class::Date(d));
    }
    if fraction_like(a, b) || improper_like(a, b) {
        return with_unit(cx, i, end, fraction(sign, None, a, b));
    }
    if let Some(d) = date {
        return Item::new(i, end, Class::Date(d));
    }
    let w = format!("{}{} {}", sign.words(), cardinal(a), cardinal(b));
    Item::new(i, end, Class::Words(w))
}

/// "0x200c", "0xFF": a hexadecimal literal, read "hex" and then character by character.
fn hex(cx: &Ctx, i: usize, lit: &Lit) -> Option<Item> {
    if lit.int != "0" || lit.frac.is_some() {
        return None;
    }
    let x = cx.word(lit.end)?;
    let rest = x.strip_prefix(['x', 'X'])?;
    let mut chars: String = rest.to_string();
    let mut j = lit.end + 1;
    while j < cx.len() && (cx.num(j).is_some() || cx.word(j).is_some()) && chars.len() <= 16 {
        chars.push_str(cx.text(j));
        j += 1;
    }
    if chars.is_empty() || chars.len() > 16 || !chars.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    let read: Vec<String> = chars
        .chars()
        .map(|c| match c.to_digit(10) {
            Some(d) => words::below_100(d),
            None => c.to_ascii_uppercase().to_string(),
        })
        .collect();
    Some(Item::new(
        i,
        j,
        Class::Words(format!("hex {}", read.join(" "))),
    ))
}

/// "FY2024", "FY 24": a fiscal year.
pub fn fiscal_year(cx: &Ctx, i: usize) -> Option<Item> {
    if cx.word(i)? != "FY" {
        return None;
    }
    let at = cx.skip_gap(i + 1);
    let y = cx.num(at).filter(|y| matches!(y.len(), 2 | 4))?;
    if cx.word(at + 1).is_some() || cx.num(at + 1).is_some() {
        return None;
    }
    let y = if y.len() == 2 {
        format!("20{y}")
    } else {
        y.to_string()
    };
    let w = format!("fiscal year {}", time_date::year_words(&y));
    Some(Item::new(i, at + 1, Class::Words(w)))
}

/// A number-led item at `i`: a sign, a point or a digit run, or a fraction character.
pub fn classify(cx: &Ctx, i: usize) -> Option<Item> {
    if let Some((n, d)) = cx.sym(i).and_then(fraction_char) {
        return Some(with_unit(cx, i, i + 1, fraction(Sign::None, None, n, d)));
    }
    // ".5"
    if cx.is_sym(i, '.') && cx.num(i + 1).is_some() && sign_ok(cx, i) {
        let lit = Lit {
            int: String::new(),
            frac: Some(cx.text(i + 1).to_string()),
            grouped: false,
            end: i + 2,
        };
        let class = Class::Number {
            sign: Sign::None,
            lit,
        };
        return Some(with_unit(cx, i, i + 2, class));
    }
    let sign = match cx.sym(i) {
        Some('-') if sign_ok(cx, i) => Sign::Minus,
        Some('+') if sign_ok(cx, i) => Sign::Plus,
        _ => Sign::None,
    };
    let j = if sign == Sign::None { i } else { i + 1 };
    cx.num(j)?;
    if sign == Sign::None
        && let Some(item) = version(cx, j)
    {
        return Some(item);
    }
    let lit = parse(cx, j)?;
    if sign == Sign::None
        && let Some(item) = hex(cx, i, &lit)
    {
        return Some(item);
    }
    let e = lit.end;
    let whole = lit.frac.is_none();
    let plain = whole && sign == Sign::None;
    // "21st", "12th's", "29th Nov"
    if whole && let Some(poss) = cx.word(e).and_then(ordinal_suffix) {
        if plain
            && !poss
            && let Some(item) = time_date::day_month(cx, i, e + 1, &lit.int)
        {
            return Some(item);
        }
        let digits = lit.int;
        return Some(Item::new(i, e + 1, Class::Ordinal { sign, digits, poss }));
    }
    if plain && let Some(item) = time_date::day_month(cx, i, e, &lit.int) {
        return Some(item);
    }
    // Decades: "1990s", "80s", "1990's".
    let s_at = if cx.is_sym(e, '\'') { e + 1 } else { e };
    if plain && !lit.grouped && cx.is_word(s_at, "s") && lit.int.ends_with('0') {
        let base = match lit.int.len() {
            4 => lit.int.parse().ok().and_then(words::year),
            2 => Some(cardinal(&lit.int)),
            _ => None,
        };
        if let Some(b) = base {
            return Some(Item::new(
                i,
                s_at + 1,
                Class::Decade(words::plural_words(&b)),
            ));
        }
    }
    // "3½"
    if whole && let Some((n, d)) = cx.sym(e).and_then(fraction_char) {
        return Some(with_unit(
            cx,
            i,
            e + 1,
            fraction(sign, Some(&lit.int), n, d),
        ));
    }
    // "3/4", "29/11", "24/7"
    if whole && cx.is_sym(e, '/') && cx.num(e + 1).is_some() && !cx.is_sym(e + 2, '/') {
        return Some(slash(cx, i, sign, &lit.int, e));
    }
    // "2 1/2", "4 7/2"
    if whole
        && cx.gap(e)
        && let (Some(a), Some(b)) = (cx.num(e + 1), cx.num(e + 3))
        && cx.is_sym(e + 2, '/')
        && !cx.is_sym(e + 4, '/')
        && (fraction_like(a, b) || improper_like(a, b))
    {
        let class = fraction(sign, Some(&lit.int), a, b);
        return Some(with_unit(cx, i, e + 4, class));
    }
    // "1920x1080", "4x4", "3 x 4"
    let x = if cx.gap(e) && cx.gap(e + 2) { e + 1 } else { e };
    if whole
        && cx.is_word(x, "x")
        && let Some(b) = cx
            .num(cx.skip_gap(x + 1))
            .filter(|_| x == e || cx.gap(x + 1))
    {
        let end = cx.skip_gap(x + 1) + 1;
        // "3 x 4 = 12" is a product.
        if cx.is_sym(cx.skip_gap(end), '=') {
            let w = format!("{} times {}", cardinal(&lit.int), cardinal(b));
            return Some(Item::new(i, end, Class::Words(w)));
        }
        let class = Class::Dimensions(lit.int.clone(), b.to_string());
        return Some(with_unit(cx, i, end, class));
    }
    if plain && !lit.grouped {
        // "401(k)", "403(b)"
        if cx.is_sym(e, '(')
            && cx.word(e + 1).is_some_and(|w| w.chars().count() == 1)
            && cx.is_sym(e + 2, ')')
        {
            let w = format!(
                "{} {}",
                address::house_words(&lit.int),
                cx.text(e + 1).to_uppercase()
            );
            return Some(Item::new(i, e + 3, Class::Words(w)));
        }
        // "3Q23": the third quarter of 2023.
        let y_at = if cx.gap(e + 1) { e + 2 } else { e + 1 };
        if let Ok(q @ 1..=4) = lit.int.parse::<u32>()
            && matches!(cx.word(e), Some("Q" | "q"))
            && let Some(y) = cx
                .num(y_at)
                .filter(|y| y.len() == 4 || (y.len() == 2 && y_at == e + 1))
            && cx.word(y_at + 1).is_none()
        {
            let year = if y.len() == 2 {
                format!("20{y}")
            } else {
                y.to_string()
            };
            return Some(Item::new(i, y_at + 1, Class::Quarter { q, year }));
        }
    }
    if let Some(item) = money::after_number(cx, i, &lit, sign) {
        return Some(item);
    }
    if plain
        && !lit.grouped
        && let Some(item) = address::house(cx, i, &lit)
    {
        return Some(item);
    }
    let class = match reads_as_year(cx, i, &lit, sign) {
        Some(y) if units::lookup(cx, e).is_none() => Class::Year(y),
        _ => Class::Number { sign, lit },
    };
    Some(with_unit(cx, i, e, class))
}

/// A digit run glued to letters ("MP3", "COVID19"): read the digits as a number.
pub fn plain_digits(cx: &mut Ctx, i: usize) -> usize {
    let d = cx.text(i).to_string();
    let text = if is_digit_string(&d) {
        digit_by_digit(&d)
    } else {
        cardinal(&d)
    };
    cx.emit(&text, i, i + 1);
    cx.num_end = i + 1;
    i + 1
}

/// True when token `i` starts a number reading (a digit, or a sign/point before one).
pub fn starts_number(cx: &Ctx, i: usize) -> bool {
    match cx.kind(i) {
        Some(Kind::Num) => true,
        Some(Kind::Sym('-' | '+' | '.' | '(')) => {
            cx.num(i + 1).is_some() || cx.sym(i).is_some_and(|c| c == '+' && cx.is_sym(i + 1, '('))
        }
        _ => false,
    }
}
