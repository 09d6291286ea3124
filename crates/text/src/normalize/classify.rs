//! Semiotic classes: tokenise → **classify** → verbalise.
//!
//! A stretch of tokens that is read as one thing (a quantity, a price, a date, a time, a code)
//! is first classified into an [`Item`]: its class and the parsed parts, decided from the
//! tokens and their context (the words before it, the unit or currency after it, the voice's
//! date order). Then neighbouring items are joined where context makes them one reading: a
//! range ("$350-$400", "5:00 am - 9:15 pm", "pages 10-20" → "to") or arithmetic ("7-3=4" →
//! "minus"). Only then is the item verbalised ([`Class::words`]), as one emitted piece.
//!
//! Each class's recogniser lives with its readings: numbers, ordinals, fractions and
//! measures in `numbers` and `units`, prices in `money`, dates and times in `time_date`,
//! digit strings (phones, codes, addresses on the wire) in `digits`, house and route numbers in
//! `address`.

use super::DateOrder;
use super::address;
use super::ctx::Ctx;
use super::digits::{self, Digits};
use super::money::{self, Money};
use super::numbers::{self, Lit};
use super::time_date::{self, Date, Time};
use super::units::{self, Unit};
use super::words::{cardinal, ordinal};

/// A sign written before a number.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Sign {
    #[default]
    None,
    Minus,
    Plus,
}

impl Sign {
    pub fn words(self) -> &'static str {
        match self {
            Sign::None => "",
            Sign::Minus => "minus ",
            Sign::Plus => "plus ",
        }
    }
}

/// A fraction, possibly after a whole number: "3/4", "2 1/2", "3½".
#[derive(Debug, Clone)]
pub struct Fraction {
    pub sign: Sign,
    pub whole: Option<String>,
    pub num: String,
    pub den: String,
}

impl Fraction {
    /// Less than one: "3/4" (but not "2 1/2" or "7/2").
    pub fn proper(&self) -> bool {
        self.whole.is_none()
            && matches!(
                (self.num.parse::<u64>(), self.den.parse::<u64>()),
                (Ok(n), Ok(d)) if n < d
            )
    }

    pub fn words(&self) -> String {
        let frac = super::words::fraction(&self.num, &self.den);
        match &self.whole {
            None => format!("{}{frac}", self.sign.words()),
            Some(w) if self.num == "1" && self.den == "2" => {
                format!("{}{} and a half", self.sign.words(), cardinal(w))
            }
            Some(w) => format!("{}{} and {frac}", self.sign.words(), cardinal(w)),
        }
    }
}

/// What a stretch of tokens is, with the parts its reading needs.
#[derive(Debug, Clone)]
pub enum Class {
    /// A cardinal or decimal: "1,200", "-4.5", ".5", "007".
    Number {
        sign: Sign,
        lit: Lit,
    },
    /// A year: "1945" (by context).
    Year(u32),
    /// "21st", "12th's".
    Ordinal {
        sign: Sign,
        digits: String,
        poss: bool,
    },
    /// "the 1990s", "'80s" (already read).
    Decade(String),
    Fraction(Fraction),
    /// A quantity with a unit: "5 km", "50%", "2 1/2 lb", "14\"".
    Measure {
        qty: Box<Class>,
        unit: Unit,
        /// Before a noun after "a": "a 14\" laptop" → "a fourteen-inch laptop".
        attributive: bool,
    },
    Money(Money),
    Time(Time),
    Date(Date),
    /// Digits read one by one in groups: phone numbers, codes, card endings, ZIP codes, IPs.
    Digits(Digits),
    /// "1.5.2".
    Version(Vec<String>),
    /// "1920x1080".
    Dimensions(String, String),
    /// "3Q23": the third quarter of 2023.
    Quarter {
        q: u32,
        year: String,
    },
    /// A house, route or plan number read in pairs: "3142" → "thirty-one forty-two".
    House(String),
    /// Already read ("24/7", "401(k)").
    Words(String),
    /// Two items joined by "to" (a range) or "minus" (arithmetic).
    Range(Box<Class>, &'static str, Box<Class>),
}

/// A classified stretch of tokens `start..end`.
#[derive(Debug, Clone)]
pub struct Item {
    pub start: usize,
    pub end: usize,
    pub class: Class,
}

impl Item {
    pub fn new(start: usize, end: usize, class: Class) -> Self {
        Self { start, end, class }
    }
}

impl Class {
    /// The words a careful reader says for this item.
    pub fn words(&self) -> String {
        match self {
            Class::Number { sign, lit } => format!("{}{}", sign.words(), lit.words()),
            Class::Year(y) => super::words::year(*y).unwrap_or_else(|| cardinal(&y.to_string())),
            Class::Ordinal { sign, digits, poss } => {
                format!(
                    "{}{}{}",
                    sign.words(),
                    ordinal(digits),
                    if *poss { "'s" } else { "" }
                )
            }
            Class::Decade(w) | Class::Words(w) => w.clone(),
            Class::Fraction(f) => f.words(),
            Class::Measure {
                qty,
                unit,
                attributive,
            } => units::measure_words(qty, unit, *attributive),
            Class::Money(m) => m.words(),
            Class::Time(t) => t.words(),
            Class::Date(d) => d.words(),
            Class::Digits(d) => d.words(),
            Class::Version(parts) => parts
                .iter()
                .map(|p| cardinal(p))
                .collect::<Vec<_>>()
                .join(" point "),
            Class::Dimensions(a, b) => format!("{} by {}", cardinal(a), cardinal(b)),
            Class::Quarter { q, year } => format!(
                "the {} quarter of {}",
                ordinal(&q.to_string()),
                time_date::year_words(year)
            ),
            Class::House(d) => address::house_words(d),
            Class::Range(a, op, b) => range_words(a, op, b),
        }
    }

    /// A plain quantity (no unit, currency or other reading around it).
    fn is_plain(&self) -> bool {
        matches!(self, Class::Number { .. } | Class::Fraction(_))
    }

    fn joins_ranges(&self) -> bool {
        !matches!(
            self,
            Class::Digits(_)
                | Class::Version(_)
                | Class::Dimensions(..)
                | Class::House(_)
                | Class::Words(_)
                | Class::Range(..)
                | Class::Decade(_)
                | Class::Quarter { .. }
        )
    }
}

/// "$5-10" → "five to ten dollars"; "June 1-5" → "June first to fifth"; else "A to B".
fn range_words(a: &Class, op: &str, b: &Class) -> String {
    match (a, b) {
        (Class::Money(m), Class::Money(n))
            if m.scale.is_none() && n.scale.is_some() && m.cur == n.cur =>
        {
            format!("{} {op} {}", m.bare(), n.words())
        }
        (Class::Money(m), Class::Number { sign, lit }) if op != "minus" && m.lit.frac.is_none() => {
            let mut to = m.clone();
            to.sign = *sign;
            to.lit = lit.clone();
            format!("{} {op} {}", m.bare(), to.words())
        }
        (
            Class::Date(d),
            Class::Number {
                sign: Sign::None,
                lit,
            },
        ) if op != "minus" && d.year.is_none() && lit.frac.is_none() => {
            match lit.int.parse::<u32>() {
                Ok(day @ 1..=31) => {
                    let the = if d.order == DateOrder::DayMonth {
                        "the "
                    } else {
                        ""
                    };
                    format!("{} {op} {the}{}", d.words(), ordinal(&day.to_string()))
                }
                _ => format!("{} {op} {}", d.words(), b.words()),
            }
        }
        // "1-5 June": "the first to the fifth of June".
        (
            Class::Number {
                sign: Sign::None,
                lit,
            },
            Class::Date(d),
        ) if op != "minus" && d.order == DateOrder::DayMonth && lit.frac.is_none() => {
            match lit.int.parse::<u32>() {
                Ok(day @ 1..=31) => format!("the {} {op} {}", ordinal(&day.to_string()), d.words()),
                _ => format!("{} {op} {}", a.words(), b.words()),
            }
        }
        _ => format!("{} {op} {}", a.words(), b.words()),
    }
}

/// Classify the item starting at token `i`, if one does.
pub fn classify(cx: &Ctx, i: usize) -> Option<Item> {
    digits::cued(cx, i)
        .or_else(|| digits::alnum_code(cx, i))
        .or_else(|| time_date::numeric_date(cx, i))
        .or_else(|| digits::pattern(cx, i))
        .or_else(|| money::prefix(cx, i))
        .or_else(|| time_date::time(cx, i))
        .or_else(|| numbers::classify(cx, i))
        .or_else(|| time_date::month_led(cx, i))
        .or_else(|| time_date::weekdays(cx, i))
        .or_else(|| numbers::fiscal_year(cx, i))
}

/// Symbols before or after a number that make a dash between numbers a minus. Comparisons
/// are left out: "≈ 33–39", "< 5-10 ms" are ranges.
fn is_operator(c: Option<char>) -> bool {
    matches!(c, Some('=' | '+' | '×' | '*' | '÷' | '≠'))
}

/// Words before a spaced "10 - 20" that make it a range, not a subtraction.
const RANGE_CUES: &[&str] = &[
    "pages", "pp", "page", "p", "from", "between", "ages", "aged", "chapters", "lines", "verses",
    "items", "rows", "levels", "grades", "years", "nos", "numbers", "sizes", "size", "steps",
];

/// Join `a` with a dash and a following item into a range or a subtraction.
fn join(cx: &Ctx, a: Item) -> Item {
    if !a.class.joins_ranges() {
        return a;
    }
    let d = cx.skip_gap(a.end);
    let Some(dash @ ('-' | '–' | '—' | '―')) = cx.sym(d) else {
        return a;
    };
    let spaced_before = d > a.end;
    let spaced_after = cx.gap(d + 1);
    if spaced_before != spaced_after || cx.sym(d + 1) == Some(dash) {
        return a;
    }
    let k = cx.skip_gap(d + 1);
    let Some(b) = classify(cx, k).filter(|b| b.class.joins_ranges()) else {
        return a;
    };
    let numeric = |c: &Class| c.is_plain() || matches!(c, Class::Year(_) | Class::Ordinal { .. });
    let before = a.start.checked_sub(1).map(|p| cx.skip_gap_back(p));
    // An operator after the second number only counts with an operand after it: "2–4×
    // faster" is a range.
    let op_after = cx.skip_gap(b.end);
    let operator_after = is_operator(cx.sym(op_after))
        && (cx.is_sym(op_after, '=') || numbers::starts_number(cx, cx.skip_gap(op_after + 1)));
    let arithmetic = numeric(&a.class)
        && numeric(&b.class)
        && (operator_after || before.is_some_and(|p| is_operator(cx.sym(p))));
    let before_word = cx.words_before(a.start, 1);
    let cue = before_word
        .first()
        .is_some_and(|w| RANGE_CUES.contains(&w.as_str()));
    let between = before_word.first().is_some_and(|w| w == "between");
    let minus = arithmetic
        || (dash == '-' && spaced_before && a.class.is_plain() && b.class.is_plain() && !cue);
    let op = match (minus, between) {
        (true, _) => "minus",
        (false, true) => "and",
        (false, false) => "to",
    };
    // "$1.5-2 million": the second end's scale belongs to the price.
    let (b_end, b_class) = match (&a.class, b.class) {
        (Class::Money(m), Class::Number { sign, lit }) if !minus => {
            match money::scale_after(cx, b.end) {
                Some((end, scale)) if m.scale.is_none() => {
                    let mut to = m.clone();
                    to.sign = sign;
                    to.lit = lit;
                    to.scale = Some(scale);
                    (end, Class::Money(to))
                }
                _ => (b.end, Class::Number { sign, lit }),
            }
        }
        (_, other) => (b.end, other),
    };
    let b = Item::new(b.start, b_end, b_class);
    let (a_class, b_class) = if minus {
        // Arithmetic reads numbers as numbers, not years.
        (as_number(a.class), as_number(b.class))
    } else {
        (a.class, b.class)
    };
    Item::new(
        a.start,
        b.end,
        Class::Range(Box::new(a_class), op, Box::new(b_class)),
    )
}

fn as_number(c: Class) -> Class {
    match c {
        Class::Year(y) => Class::Number {
            sign: Sign::None,
            lit: Lit::whole(&y.to_string()),
        },
        other => other,
    }
}

/// Classify, join and verbalise the item at `i`; returns where to continue.
pub fn try_item(cx: &mut Ctx, i: usize) -> Option<usize> {
    let item = join(cx, classify(cx, i)?);
    let mut text = item.class.words();
    // "on the 27th June": one "the".
    if let Some(rest) = text.strip_prefix("the ")
        && cx
            .out
            .last_word()
            .is_some_and(|w| w.eq_ignore_ascii_case("the"))
    {
        text = rest.to_string();
    }
    cx.emit(&text, item.start, item.end);
    // A quantity can take "per", "+", a hyphenated word or a range after it; a code or a
    // version cannot ("40.1.1-2" is a package revision).
    let quantity = item.class.joins_ranges() || matches!(item.class, Class::House(_));
    cx.num_end = if quantity { item.end } else { usize::MAX };
    Some(item.end)
}
