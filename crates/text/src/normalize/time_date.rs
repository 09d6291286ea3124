//! Times ("7:45", "6:15 pm", "18:30") and dates ("2026-11-29", "29/11/2026", "Nov 29",
//! "29 November 2026").

use super::DateOrder;
use super::ctx::Ctx;
use super::words::{below_100, cardinal, ordinal, year};

const MONTHS: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];

/// A capitalised month name or abbreviation ("Nov", "Sept", "November") → 1..=12.
pub fn month(w: &str) -> Option<u32> {
    if !w.starts_with(|c: char| c.is_ascii_uppercase()) {
        return None;
    }
    let l = w.to_ascii_lowercase();
    if l == "sept" {
        return Some(9);
    }
    MONTHS
        .iter()
        .position(|m| {
            let m = m.to_ascii_lowercase();
            l == m || (l.len() == 3 && m.starts_with(&l))
        })
        .map(|p| p as u32 + 1)
}

fn month_name(m: u32) -> &'static str {
    MONTHS[(m.clamp(1, 12) - 1) as usize]
}

/// A year in a date: four digits as a year, two as "twenty-six" or "oh five".
fn year_words(y: &str) -> String {
    match y.len() {
        4 => y.parse().ok().and_then(year).unwrap_or_else(|| cardinal(y)),
        2 if y.starts_with('0') => format!("oh {}", below_100(u32::from(y.as_bytes()[1] - b'0'))),
        _ => cardinal(y),
    }
}

fn date_words(order: DateOrder, m: u32, d: u32, y: Option<&str>) -> String {
    let day = ordinal(&d.to_string());
    let mut s = match order {
        DateOrder::DayMonth => format!("the {day} of {}", month_name(m)),
        DateOrder::MonthDay => format!("{} {day}", month_name(m)),
    };
    if let Some(y) = y {
        s.push_str(", ");
        s.push_str(&year_words(y));
    }
    s
}

fn valid(m: u32, d: u32) -> bool {
    (1..=12).contains(&m) && (1..=31).contains(&d)
}

/// "29/11" or "11/29" read in the preferred order, or the other when only that is valid.
pub fn day_month_words(order: DateOrder, a: &str, b: &str, y: Option<&str>) -> Option<String> {
    if a.len() > 2 || b.len() > 2 {
        return None;
    }
    let (a, b): (u32, u32) = (a.parse().ok()?, b.parse().ok()?);
    let (dm, md) = (valid(b, a), valid(a, b));
    match order {
        DateOrder::DayMonth if dm => Some(date_words(order, b, a, y)),
        DateOrder::MonthDay if md => Some(date_words(order, a, b, y)),
        _ if dm => Some(date_words(DateOrder::DayMonth, b, a, y)),
        _ if md => Some(date_words(DateOrder::MonthDay, a, b, y)),
        _ => None,
    }
}

/// "am"/"pm" in its spellings, starting at token `k`: (end, reading).
fn meridiem(cx: &Ctx, k: usize) -> Option<(usize, &'static str)> {
    let read = |w: &str| match w.to_ascii_lowercase().as_str() {
        "am" => Some("A.M"),
        "pm" => Some("P.M"),
        _ => None,
    };
    let w = cx.word(k)?;
    if let Some(r) = read(w) {
        return Some((k + 1, r));
    }
    // "a.m." / "p.m." (the final dot is left for the sentence logic when it ends one).
    let l = w.to_ascii_lowercase();
    if (l == "a" || l == "p")
        && cx.is_sym(k + 1, '.')
        && cx.word(k + 2).is_some_and(|m| m.eq_ignore_ascii_case("m"))
    {
        let r = if l == "a" { "A.M" } else { "P.M" };
        let mut end = k + 3;
        if cx.is_sym(end, '.')
            && !matches!(
                cx.next_start(end + 1),
                super::ctx::Next::End | super::ctx::Next::Starter
            )
        {
            end += 1;
        }
        return Some((end, r));
    }
    None
}

fn minutes_words(h: u32, m: u32, ampm: bool) -> String {
    match m {
        0 if ampm => String::new(),
        0 if h <= 12 && h > 0 => "o'clock".into(),
        0 => "hundred".into(),
        1..=9 => format!("oh {}", below_100(m)),
        _ => below_100(m),
    }
}

/// "7:45", "6:15 pm", "18:30", "10:30:15", "6pm", "7.45pm".
pub fn try_time(cx: &mut Ctx, i: usize) -> Option<usize> {
    let hs = cx.num(i)?;
    if hs.len() > 2 {
        return None;
    }
    let h: u32 = hs.parse().ok()?;
    let colon = cx.is_sym(i + 1, ':');
    let dot = cx.is_sym(i + 1, '.');
    let (m, mut e) = if (colon || dot) && cx.num(i + 2).is_some_and(|m| m.len() == 2) {
        (cx.text(i + 2).parse::<u32>().ok()?, i + 3)
    } else {
        (0, i + 1)
    };
    let has_minutes = e == i + 3;
    let mut secs = None;
    if has_minutes && colon && cx.is_sym(e, ':') && cx.num(e + 1).is_some_and(|s| s.len() == 2) {
        secs = cx.text(e + 1).parse::<u32>().ok();
        e += 2;
    }
    let mer = meridiem(cx, cx.skip_gap(e));
    // Without "am/pm", only "h:mm" is a time; "7.45" alone is a decimal.
    if mer.is_none() && !(colon && has_minutes) {
        return None;
    }
    if m > 59 || secs.is_some_and(|s| s > 59) || h > 24 || (mer.is_some() && (h > 12 || h == 0)) {
        return None;
    }
    let mut text = format!(
        "{} {}",
        cardinal(&h.to_string()),
        minutes_words(h, m, mer.is_some())
    );
    if let Some(s) = secs {
        let unit = if s == 1 { "second" } else { "seconds" };
        text = format!("{text} and {} {unit}", cardinal(&s.to_string()));
    }
    if let Some((end, r)) = mer {
        text = format!("{text} {r}");
        e = end;
    }
    cx.emit(&text, i, e);
    cx.num_end = e;
    Some(e)
}

/// "2026-11-29", "29/11/2026", "11/29/26", "29.11.2026".
pub fn try_numeric_date(cx: &mut Ctx, i: usize) -> Option<usize> {
    let a = cx.num(i)?;
    let sep = cx.sym(i + 1)?;
    if !matches!(sep, '-' | '/' | '.') || !cx.is_sym(i + 3, sep) {
        return None;
    }
    let (b, c) = (cx.num(i + 2)?, cx.num(i + 4)?);
    // A fourth part makes it something else (a version, an address).
    if cx.is_sym(i + 5, sep) && cx.num(i + 6).is_some() {
        return None;
    }
    let text = match sep {
        '-' if a.len() == 4 && b.len() <= 2 && c.len() <= 2 => {
            let (m, d): (u32, u32) = (b.parse().ok()?, c.parse().ok()?);
            valid(m, d).then(|| date_words(cx.opts.date_order, m, d, Some(a)))?
        }
        '/' if matches!(c.len(), 2 | 4) => day_month_words(cx.opts.date_order, a, b, Some(c))?,
        '.' if c.len() == 4 => day_month_words(DateOrder::DayMonth, a, b, Some(c))?,
        _ => return None,
    };
    cx.emit(&text, i, i + 5);
    cx.num_end = i + 5;
    Some(i + 5)
}

/// An optional ", 2026" / " 2026" after a day and month: (end, year digits).
fn trailing_year(cx: &Ctx, e: usize) -> Option<(usize, String)> {
    let k = if cx.is_sym(e, ',') { e + 1 } else { e };
    if !cx.gap(k) {
        return None;
    }
    let y = cx.num(k + 1)?;
    (y.len() == 4 && cx.sym(k + 2) != Some(':')).then(|| (k + 2, y.to_string()))
}

/// "29 November", "29th Nov 2026" (number at `i`, day digits `d`, month after `j`).
pub fn try_day_month(cx: &mut Ctx, i: usize, j: usize, d: &str) -> Option<usize> {
    if !cx.gap(j) || d.len() > 2 {
        return None;
    }
    let m = month(cx.word(j + 1)?)?;
    let day: u32 = d.parse().ok()?;
    if !valid(m, day) {
        return None;
    }
    let mut e = j + 2;
    if cx.is_sym(e, '.')
        && cx.word(j + 1).is_some_and(|w| w.len() <= 4)
        && cx.next_start(e + 1) != super::ctx::Next::End
    {
        e += 1;
    }
    let y = trailing_year(cx, e);
    let text = date_words(
        DateOrder::DayMonth,
        m,
        day,
        y.as_ref().map(|(_, y)| y.as_str()),
    );
    let end = y.map_or(e, |(k, _)| k);
    cx.emit(&text, i, end);
    cx.num_end = end;
    Some(end)
}

/// "Nov 29", "November 29th, 2026" (month word at `i`).
pub fn try_month_day(cx: &mut Ctx, i: usize) -> Option<usize> {
    let m = month(cx.word(i)?)?;
    let mut k = i + 1;
    if cx.is_sym(k, '.') {
        k += 1;
    }
    if !cx.gap(k) {
        return None;
    }
    let d = cx.num(k + 1)?;
    let day: u32 = d.parse().ok()?;
    if d.len() > 2
        || !valid(m, day)
        || matches!(cx.sym(k + 2), Some(':' | '.' | '/' | ',')) && cx.num(k + 3).is_some()
    {
        return None;
    }
    let mut e = k + 2;
    if cx
        .word(e)
        .is_some_and(|s| matches!(s, "st" | "nd" | "rd" | "th"))
    {
        e += 1;
    } else if cx.word(e).is_some() || cx.num(e).is_some() {
        return None;
    }
    let y = trailing_year(cx, e);
    let text = date_words(
        DateOrder::MonthDay,
        m,
        day,
        y.as_ref().map(|(_, y)| y.as_str()),
    );
    let end = y.map_or(e, |(k, _)| k);
    cx.emit(&text, i, end);
    cx.num_end = end;
    Some(end)
}
