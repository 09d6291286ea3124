//! Money: "$45", "€3.50", "£1m", "$2.5 billion", "5 USD", "USD 5", "50¢".

use super::ctx::Ctx;
use super::numbers::{self, Lit};
use super::words::{cardinal, decimal};

struct Currency {
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

/// A scale after an amount: "5m", "5 million", "2.5bn".
fn scale(cx: &Ctx, e: usize) -> Option<(usize, &'static str)> {
    let (k, glued) = if cx.gap(e) { (e + 1, false) } else { (e, true) };
    let w = cx.word(k)?;
    let s = match w {
        "k" | "K" if glued => "thousand",
        "m" | "M" | "mn" | "mm" if glued => "million",
        "b" | "B" | "bn" if glued => "billion",
        "tn" | "T" if glued => "trillion",
        "thousand" => "thousand",
        "million" => "million",
        "billion" => "billion",
        "trillion" => "trillion",
        _ => return None,
    };
    Some((k + 1, s))
}

fn amount(lit: &Lit, scale: Option<&str>, c: &Currency) -> String {
    if let Some(s) = scale {
        let n = decimal(&lit.int, lit.frac.as_deref().unwrap_or(""));
        return format!("{n} {s} {}", c.many);
    }
    let whole = cardinal(&lit.int);
    let unit = if lit.int.trim_start_matches('0') == "1" {
        c.one
    } else {
        c.many
    };
    match (&lit.frac, c.minor) {
        (None, _) => format!("{whole} {unit}"),
        (Some(f), Some((m1, mn))) if f.len() == 2 => {
            let cents = f.trim_start_matches('0');
            let minor = if cents == "1" { m1 } else { mn };
            match (lit.int.trim_start_matches('0').is_empty(), cents.is_empty()) {
                (_, true) => format!("{whole} {unit}"),
                (true, false) => format!("{} {minor}", cardinal(cents)),
                (false, false) => format!("{whole} {unit} and {} {minor}", cardinal(cents)),
            }
        }
        (Some(f), _) => format!("{} {}", decimal(&lit.int, f), c.many),
    }
}

/// A currency symbol (or code) before a number, with an optional minus: "-$5", "USD 5".
pub fn try_prefix(cx: &mut Ctx, i: usize) -> Option<usize> {
    let neg = cx.is_sym(i, '-');
    let s = if neg { i + 1 } else { i };
    let (c, j) = if let Some(c) = cx.sym(s).and_then(by_symbol) {
        (c, s + 1)
    } else if let Some(c) = cx.word(s).and_then(by_code) {
        if !cx.gap(s + 1) {
            return None;
        }
        (c, s + 2)
    } else if cx
        .word(s)
        .is_some_and(|w| matches!(w, "US" | "A" | "C" | "NZ" | "HK"))
        && cx.is_sym(s + 1, '$')
    {
        (by_symbol('$')?, s + 2)
    } else {
        return None;
    };
    cx.num(j)?;
    let lit = numbers::parse(cx, j)?;
    let sc = scale(cx, lit.end);
    let end = sc.map_or(lit.end, |(e, _)| e);
    let mut text = amount(&lit, sc.map(|(_, s)| s), &c);
    if neg {
        text = format!("minus {text}");
    }
    cx.emit(&text, i, end);
    cx.num_end = end;
    Some(end)
}

/// A currency after a number: "5 USD", "5€", "50¢".
pub fn after_number(cx: &mut Ctx, i: usize, lit: &Lit, sign: &str) -> Option<usize> {
    let e = lit.end;
    let sc = scale(cx, e);
    let after = sc.map_or(e, |(k, _)| k);
    let k = cx.skip_gap(after);
    let (c, end) = if let Some(c) = cx.sym(k).and_then(by_symbol) {
        (c, k + 1)
    } else if let Some(c) = cx.word(k).and_then(by_code) {
        (c, k + 1)
    } else {
        return None;
    };
    let text = format!("{sign}{}", amount(lit, sc.map(|(_, s)| s), &c));
    cx.emit(&text, i, end);
    cx.num_end = end;
    Some(end)
}
