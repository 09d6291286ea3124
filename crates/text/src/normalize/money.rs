//! Money: "$45", "€3.50", "£1m", "$2.5 billion", "¥40 b", "5 USD", "USD 5", "US$5", "50¢",
//! "$.05", "$30.5" (thirty dollars and fifty cents), prices per period ("$15/mo").

use super::classify::{Class, Item, Sign};
use super::ctx::{Ctx, Next};
use super::numbers::{self, Lit};
use super::units;
use super::words::{cardinal, decimal};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Currency {
    one: &'static str,
    many: &'static str,
    /// Minor unit (singular, plural), if amounts have cents.
    minor: Option<(&'static str, &'static str)>,
}

const fn cur(
    one: &'static str,
    many: &'static str,
    minor: Option<(&'static str, &'static str)>,
) -> Currency {
    Currency { one, many, minor }
}

const CENTS: Option<(&str, &str)> = Some(("cent", "cents"));

fn by_symbol(c: char) -> Option<Currency> {
    Some(match c {
        '$' => cur("dollar", "dollars", CENTS),
        '€' => cur("euro", "euros", CENTS),
        '£' => cur("pound", "pounds", Some(("penny", "pence"))),
        '¥' => cur("yen", "yen", None),
        '₹' => cur("rupee", "rupees", Some(("paisa", "paise"))),
        '₩' => cur("won", "won", None),
        '₽' => cur("ruble", "rubles", Some(("kopek", "kopeks"))),
        '₺' => cur("lira", "lira", None),
        '₪' => cur("shekel", "shekels", None),
        '₿' => cur("bitcoin", "bitcoin", None),
        '¢' => cur("cent", "cents", None),
        _ => return None,
    })
}

fn by_code(w: &str) -> Option<Currency> {
    Some(match w {
        "USD" => cur("US dollar", "US dollars", CENTS),
        "EUR" => cur("euro", "euros", CENTS),
        "GBP" => cur("pound", "pounds", Some(("penny", "pence"))),
        "JPY" => cur("yen", "yen", None),
        "CNY" | "RMB" => cur("yuan", "yuan", None),
        "INR" => cur("rupee", "rupees", Some(("paisa", "paise"))),
        "CAD" => cur("Canadian dollar", "Canadian dollars", CENTS),
        "AUD" => cur("Australian dollar", "Australian dollars", CENTS),
        "CHF" => cur("Swiss franc", "Swiss francs", None),
        "SEK" | "NOK" | "DKK" => cur("krona", "kronor", None),
        "BTC" => cur("bitcoin", "bitcoin", None),
        _ => return None,
    })
}

/// Dollars of other countries, written before "$": "US$5", "A$20".
fn dollar_country(w: &str) -> Option<Currency> {
    let (one, many) = match w {
        "US" => ("US dollar", "US dollars"),
        "A" | "AU" => ("Australian dollar", "Australian dollars"),
        "C" | "CA" => ("Canadian dollar", "Canadian dollars"),
        "NZ" => ("New Zealand dollar", "New Zealand dollars"),
        "HK" => ("Hong Kong dollar", "Hong Kong dollars"),
        "S" => ("Singapore dollar", "Singapore dollars"),
        _ => return None,
    };
    Some(cur(one, many, CENTS))
}

/// A scale after an amount: "5m", "5 million", "2.5bn"; after a currency symbol also a
/// spaced letter ("¥40 b") that ends the phrase.
fn scale(cx: &Ctx, e: usize, prefixed: bool) -> Option<(usize, &'static str)> {
    let (k, glued) = if cx.gap(e) { (e + 1, false) } else { (e, true) };
    let w = cx.word(k)?;
    let letter = glued
        || (prefixed
            && (cx.boundary(k + 1)
                || matches!(cx.sym(k + 1), Some('.' | ',' | ';' | ')' | '!' | '?'))));
    let s = match w {
        "k" | "K" if letter => "thousand",
        "m" | "M" | "mn" | "mm" if letter => "million",
        "b" | "B" | "bn" | "bln" if letter => "billion",
        "tn" | "T" if letter => "trillion",
        "thousand" => "thousand",
        "million" => "million",
        "billion" => "billion",
        "trillion" => "trillion",
        _ => return None,
    };
    Some((k + 1, s))
}

/// A scale word or letter after a number ending at `e` ("2 million", "2m"): (end, scale).
pub fn scale_after(cx: &Ctx, e: usize) -> Option<(usize, &'static str)> {
    scale(cx, e, true)
}

/// A price: an amount in a currency, maybe scaled and per period.
#[derive(Debug, Clone)]
pub struct Money {
    pub sign: Sign,
    pub lit: Lit,
    pub cur: Currency,
    pub scale: Option<&'static str>,
    /// "month" of "$15/mo" (read "per month"), or "a month" of "$15 a mo".
    pub per: Option<String>,
}

impl Money {
    pub fn words(&self) -> String {
        let mut s = format!("{}{}", self.sign.words(), self.amount());
        if let Some(p) = &self.per {
            if !p.contains(' ') {
                s.push_str(" per");
            }
            s.push(' ');
            s.push_str(p);
        }
        s
    }

    /// The number alone ("three hundred fifty" of "$350"), for the first end of a range
    /// whose second end names the currency.
    pub fn bare(&self) -> String {
        let n = match self.scale {
            Some(s) => format!(
                "{} {s}",
                decimal(&self.lit.int, self.lit.frac.as_deref().unwrap_or(""))
            ),
            None => self.lit.words(),
        };
        format!("{}{n}", self.sign.words())
    }

    fn amount(&self) -> String {
        let (lit, c) = (&self.lit, &self.cur);
        if let Some(s) = self.scale {
            let n = decimal(&lit.int, lit.frac.as_deref().unwrap_or(""));
            return format!("{n} {s} {}", c.many);
        }
        let whole = cardinal(&lit.int);
        let unit = if lit.int.trim_start_matches('0') == "1" {
            c.one
        } else {
            c.many
        };
        // Cents: "$30.5" is 30.50 and "$30.500" is 30.50 too; "$20.506" is a decimal.
        let cents = lit.frac.as_deref().and_then(|f| match f.len() {
            1 => Some(format!("{f}0")),
            2 => Some(f.to_string()),
            _ if f[2..].bytes().all(|b| b == b'0') => Some(f[..2].to_string()),
            _ => None,
        });
        match (&lit.frac, c.minor, cents) {
            (None, _, _) => format!("{whole} {unit}"),
            (Some(_), Some((m1, mn)), Some(f)) => {
                let cents = f.trim_start_matches('0');
                let minor = if cents == "1" { m1 } else { mn };
                match (lit.int.trim_start_matches('0').is_empty(), cents.is_empty()) {
                    (_, true) => format!("{whole} {unit}"),
                    (true, false) => format!("{} {minor}", cardinal(cents)),
                    (false, false) => format!("{whole} {unit} and {} {minor}", cardinal(cents)),
                }
            }
            (Some(f), _, _) => {
                let n = if lit.int.is_empty() {
                    format!("point {}", super::words::digit_by_digit(f))
                } else {
                    decimal(&lit.int, f)
                };
                format!("{n} {}", c.many)
            }
        }
    }
}

/// Periods after a price: "/mo", "/yr", "per wk".
fn period(w: &str) -> Option<&'static str> {
    Some(match w.to_ascii_lowercase().as_str() {
        "mo" | "mon" | "month" => "month",
        "yr" | "year" | "y" | "annum" => "year",
        "wk" | "week" | "w" => "week",
        "hr" | "hour" | "h" => "hour",
        "d" | "day" | "dy" => "day",
        "night" | "nt" => "night",
        "min" | "minute" => "minute",
        "person" | "pp" | "head" => "person",
        "ea" | "each" => "item",
        "user" => "user",
        "seat" => "seat",
        "unit" => "unit",
        _ => return None,
    })
}

/// "/mo", "/hr", "/kg" after a price ending at `e`: (end, what it is per).
fn per_period(cx: &Ctx, e: usize) -> Option<(usize, String)> {
    // "$15 per mo", "$15 a mo": only the abbreviation needs reading.
    if cx.gap(e)
        && cx.word(e + 1).is_some_and(|w| w == "per" || w == "a")
        && cx.gap(e + 2)
        && let Some(w) = cx.word(e + 3)
        && matches!(w, "mo" | "yr" | "wk" | "hr")
        && cx.word(e + 4).is_none()
    {
        let per = cx.text(e + 1).to_string();
        return Some((e + 4, format!("{per} {}", period(w)?)));
    }
    if !cx.is_sym(e, '/') {
        return None;
    }
    let w = cx.word(e + 1)?;
    if cx.num(e + 2).is_some() || cx.word(e + 2).is_some() {
        return None;
    }
    let name = match period(w) {
        Some(p) => p.to_string(),
        None => units::singular(w)?.to_string(),
    };
    let mut end = e + 2;
    // "$15/mo." inside a sentence: the dot belongs to the abbreviation.
    if cx.is_sym(end, '.')
        && w.len() <= 3
        && matches!(cx.next_start(end + 1), Next::Lower | Next::Attached)
    {
        end += 1;
    }
    Some((end, name))
}

fn price(cx: &Ctx, i: usize, lit: Lit, cur: Currency, sign: Sign, prefixed: bool) -> Item {
    let sc = scale(cx, lit.end, prefixed);
    let mut end = sc.map_or(lit.end, |(e, _)| e);
    let per = per_period(cx, end).map(|(e, p)| {
        end = e;
        p
    });
    let class = Class::Money(Money {
        sign,
        lit,
        cur,
        scale: sc.map(|(_, s)| s),
        per,
    });
    Item::new(i, end, class)
}

/// A currency symbol (or code) before a number, with an optional minus: "-$5", "USD 5",
/// "US$5", "$.05".
pub fn prefix(cx: &Ctx, i: usize) -> Option<Item> {
    let neg = cx.is_sym(i, '-') && numbers::sign_ok(cx, i);
    let s = if neg { i + 1 } else { i };
    let (c, j) = if let Some(c) = cx.sym(s).and_then(by_symbol) {
        (c, s + 1)
    } else if let Some(c) = cx.word(s).and_then(by_code) {
        if !cx.gap(s + 1) {
            return None;
        }
        (c, s + 2)
    } else if let Some(c) = cx.word(s).and_then(dollar_country)
        && cx.is_sym(cx.skip_gap(s + 1), '$')
    {
        (c, cx.skip_gap(s + 1) + 1)
    } else {
        return None;
    };
    let lit = if cx.is_sym(j, '.') && cx.num(j + 1).is_some() {
        // "$.05"
        Lit {
            int: String::new(),
            frac: Some(cx.text(j + 1).to_string()),
            grouped: false,
            end: j + 2,
        }
    } else {
        cx.num(j)?;
        numbers::parse(cx, j)?
    };
    let sign = if neg { Sign::Minus } else { Sign::None };
    Some(price(cx, i, lit, c, sign, true))
}

/// A currency after a number: "5 USD", "5€", "50¢".
pub fn after_number(cx: &Ctx, i: usize, lit: &Lit, sign: Sign) -> Option<Item> {
    let sc = scale(cx, lit.end, false);
    let k = cx.skip_gap(sc.map_or(lit.end, |(k, _)| k));
    let (cur, mut end) = if let Some(c) = cx.sym(k).and_then(by_symbol) {
        (c, k + 1)
    } else if let Some(c) = cx.word(k).and_then(by_code) {
        (c, k + 1)
    } else {
        return None;
    };
    let per = per_period(cx, end).map(|(e, p)| {
        end = e;
        p
    });
    let class = Class::Money(Money {
        sign,
        lit: lit.clone(),
        cur,
        scale: sc.map(|(_, s)| s),
        per,
    });
    Some(Item::new(i, end, class))
}
