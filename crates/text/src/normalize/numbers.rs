//! Numbers: cardinals with separators, signs, decimals, ordinals, decades, fractions, versions,
//! phone-like digit strings, and years by context. Units, money and dates that follow a
//! number are delegated to their modules.

use super::ctx::Ctx;
use super::lexer::Kind;
use super::words::{self, cardinal, decimal, digit_by_digit, ordinal};
use super::{money, time_date, units};

/// A parsed number literal starting at a `Num` token.
#[derive(Debug, Clone)]
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
    pub fn is_one(&self) -> bool {
        self.frac.is_none() && self.int.trim_start_matches('0') == "1"
    }

    /// The plain reading: cardinal or decimal; long or zero-led integers digit by digit.
    pub fn words(&self) -> String {
        match &self.frac {
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
fn sign_ok(cx: &Ctx, i: usize) -> bool {
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

fn reads_as_year(cx: &Ctx, i: usize, lit: &Lit, negative: bool) -> Option<String> {
    if negative || lit.frac.is_some() || lit.grouped || lit.int.len() != 4 {
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
    words::year(n)
}

/// Readings for a run like "1.5.2" (version) or "192.168.0.1" (address).
fn try_dotted(cx: &mut Ctx, i: usize) -> Option<usize> {
    if !(cx.is_sym(i + 1, '.') && cx.num(i + 2).is_some() && cx.is_sym(i + 3, '.')) {
        return None;
    }
    let mut parts = vec![cx.text(i).to_string()];
    let mut j = i + 1;
    while cx.is_sym(j, '.') && cx.num(j + 1).is_some() {
        parts.push(cx.text(j + 1).to_string());
        j += 2;
    }
    if parts.len() < 3 {
        return None;
    }
    let address = parts.len() == 4
        && parts
            .iter()
            .all(|p| p.parse::<u32>().is_ok_and(|v| v <= 255));
    let joiner = if address { " dot " } else { " point " };
    let words: Vec<String> = parts.iter().map(|p| cardinal(p)).collect();
    cx.emit(&words.join(joiner), i, j);
    Some(j)
}

/// Phone-like digit groups: "+1 555 123 4567", "(555) 123-4567", "555-123-4567", "555-1234",
/// "020 7946 0958". Read digit by digit, a pause between groups.
fn try_phone(cx: &mut Ctx, i: usize) -> Option<usize> {
    let mut groups: Vec<String> = Vec::new();
    let mut j = i;
    let plus = cx.is_sym(j, '+');
    if plus {
        j += 1;
    }
    if cx.is_sym(j, '(') {
        let d = cx.num(j + 1)?;
        if !cx.is_sym(j + 2, ')') || d.len() > 4 {
            return None;
        }
        groups.push(d.to_string());
        j += 3;
        j = cx.skip_gap(j);
    }
    let first = j;
    let mut seps = Vec::new();
    loop {
        let d = cx.num(j)?;
        groups.push(d.to_string());
        j += 1;
        let sep = if cx.gap(j) && cx.text(j) == " " {
            ' '
        } else {
            match cx.sym(j) {
                Some(c @ ('-' | '.')) => c,
                _ => break,
            }
        };
        if cx.num(j + 1).is_none() {
            break;
        }
        seps.push(sep);
        j += 1;
    }
    let lens: Vec<usize> = groups.iter().map(String::len).collect();
    let total: usize = lens.iter().sum();
    let paren = first != i + usize::from(plus);
    let same_sep = seps.windows(2).all(|w| w[0] == w[1]);
    let spaced = seps.first() == Some(&' ');
    let is_phone = if plus {
        total >= 7 && groups.len() >= 2 || total >= 9
    } else if paren {
        total >= 7
    } else if !same_sep || groups.len() < 2 {
        false
    } else if spaced {
        // Spaces also separate thousands ("1 200 000"): only zero-led groups of 3–5 count.
        groups[0].starts_with('0') && total >= 9 && lens.iter().skip(1).all(|&l| l >= 3)
    } else if groups.len() == 2 {
        lens == [3, 4] && seps[0] == '-'
    } else {
        total >= 7
            && lens.iter().all(|&l| (1..=4).contains(&l))
            && !(lens == [4, 2, 2] && seps[0] == '-')
            && !(seps[0] == '.' && lens.len() <= 4)
    };
    if !is_phone {
        return None;
    }
    let read: Vec<String> = groups.iter().map(|g| digit_by_digit(g)).collect();
    let mut text = read.join(", ");
    if plus {
        text = format!("plus {text}");
    }
    cx.emit(&text, i, j);
    cx.num_end = usize::MAX;
    Some(j)
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

/// "and a half" after a whole number.
fn mixed_tail(num: &str, den: &str) -> String {
    if num == "1" && den == "2" {
        "and a half".into()
    } else {
        format!("and {}", words::fraction(num, den))
    }
}

/// A standalone vulgar fraction character.
pub fn try_fraction_char(cx: &mut Ctx, i: usize) -> Option<usize> {
    let (n, d) = fraction_char(cx.sym(i)?)?;
    cx.emit(&words::fraction(n, d), i, i + 1);
    cx.num_end = i + 1;
    Some(i + 1)
}

/// Whether `a/b` reads as a fraction rather than a date or a ratio.
fn fraction_like(a: &str, b: &str) -> bool {
    let (Ok(x), Ok(y)) = (a.parse::<u64>(), b.parse::<u64>()) else {
        return false;
    };
    x < y && y >= 2 && (y <= 10 || [12, 16, 32, 64, 100].contains(&y))
}

pub fn try_number(cx: &mut Ctx, i: usize) -> Option<usize> {
    // ".5"
    if cx.is_sym(i, '.') && cx.num(i + 1).is_some() && sign_ok(cx, i) {
        let f = cx.text(i + 1).to_string();
        cx.emit(&format!("point {}", digit_by_digit(&f)), i, i + 2);
        cx.num_end = i + 2;
        return Some(i + 2);
    }
    if (matches!(cx.sym(i), Some('+' | '(')) || cx.num(i).is_some())
        && let Some(j) = try_phone(cx, i)
    {
        return Some(j);
    }
    let negative = matches!(cx.sym(i), Some('-')) && sign_ok(cx, i);
    let plus = cx.is_sym(i, '+') && sign_ok(cx, i);
    let j = if negative || plus { i + 1 } else { i };
    cx.num(j)?;
    if !negative
        && !plus
        && let Some(k) = try_dotted(cx, j)
    {
        return Some(k);
    }
    // "'90s"
    let lit = parse(cx, j)?;
    let sign = if negative {
        "minus "
    } else if plus {
        "plus "
    } else {
        ""
    };
    let mut e = lit.end;

    // Suffixes that change the reading.
    if lit.frac.is_none()
        && let Some(suf) = cx.word(e)
        && matches!(suf, "st" | "nd" | "rd" | "th" | "ST" | "ND" | "RD" | "TH")
    {
        let day = ordinal(&lit.int);
        if let Some(k) = time_date::try_day_month(cx, i, e + 1, &lit.int) {
            return Some(k);
        }
        cx.emit(&format!("{sign}{day}"), i, e + 1);
        cx.num_end = e + 1;
        return Some(e + 1);
    }
    if let Some(k) = time_date::try_day_month(cx, i, e, &lit.int)
        .filter(|_| sign.is_empty() && lit.frac.is_none())
    {
        return Some(k);
    }
    // Decades: "1990s", "80s", "1990's".
    let s_at = if cx.is_sym(e, '\'') { e + 1 } else { e };
    if sign.is_empty() && lit.frac.is_none() && !lit.grouped && cx.is_word(s_at, "s") {
        let base = match lit.int.len() {
            4 => lit.int.parse().ok().and_then(words::year),
            2 if lit.int.ends_with('0') => Some(cardinal(&lit.int)),
            _ => None,
        };
        if let Some(b) = base.filter(|_| lit.int.ends_with('0')) {
            cx.emit(&words::plural_words(&b), i, s_at + 1);
            cx.num_end = s_at + 1;
            return Some(s_at + 1);
        }
    }
    if let Some(c) = cx.sym(e)
        && let Some((n, d)) = fraction_char(c)
    {
        let text = format!("{sign}{} {}", lit.words(), mixed_tail(n, d));
        cx.emit(&text, i, e + 1);
        return Some(units::after_quantity(cx, e + 1, false));
    }
    // "3/4", "29/11", "24/7"
    if lit.frac.is_none() && cx.is_sym(e, '/') && cx.num(e + 1).is_some() && !cx.is_sym(e + 2, '/')
    {
        let b = cx.text(e + 1).to_string();
        let idiom = matches!((lit.int.as_str(), b.as_str()), ("24", "7") | ("50", "50"));
        let text = if idiom {
            format!("{} {}", cardinal(&lit.int), cardinal(&b))
        } else if fraction_like(&lit.int, &b) {
            format!("{sign}{}", words::fraction(&lit.int, &b))
        } else if let Some(d) = time_date::day_month_words(cx.opts.date_order, &lit.int, &b, None) {
            d
        } else {
            format!("{sign}{} {}", cardinal(&lit.int), cardinal(&b))
        };
        cx.emit(&text, i, e + 2);
        return Some(units::after_quantity(cx, e + 2, true));
    }
    // "2 1/2"
    if lit.frac.is_none()
        && cx.gap(e)
        && let (Some(a), Some(b)) = (cx.num(e + 1), cx.num(e + 3))
        && cx.is_sym(e + 2, '/')
        && fraction_like(a, b)
    {
        let text = format!("{sign}{} {}", cardinal(&lit.int), mixed_tail(a, b));
        cx.emit(&text, i, e + 4);
        return Some(units::after_quantity(cx, e + 4, true));
    }
    // "1920x1080", "4x4"
    if lit.frac.is_none()
        && matches!(cx.word(e), Some("x"))
        && let Some(b) = cx.num(e + 1)
    {
        let text = format!("{} by {}", cardinal(&lit.int), cardinal(b));
        cx.emit(&text, i, e + 2);
        cx.num_end = e + 2;
        return Some(e + 2);
    }
    if let Some(k) = money::after_number(cx, i, &lit, sign) {
        return Some(k);
    }
    let text = match reads_as_year(cx, i, &lit, negative || plus) {
        Some(y) if units::lookup(cx, e).is_none() && !cx.is_sym(e, '%') => y,
        _ => format!("{sign}{}", lit.words()),
    };
    cx.emit(&text, i, e);
    e = units::after_quantity(cx, e, lit.is_one());
    Some(e)
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
