//! Times ("7:45", "6:15 pm", "18:30", "15:20:40 UTC", "5 pm e.s.t") and dates ("2026-11-29",
//! "29/11/2026", "2017/08/04", "11-07-2004", "Nov 29", "june 21 2015", "Feb-16-2021",
//! "24 august 2011"). Ambiguous numeric dates follow the date order (the setting, or the
//! voice's locale); dates written with a month name are read in the order written.

use super::DateOrder;
use super::acronyms::spell;
use super::classify::{Class, Item};
use super::ctx::{Ctx, Next};
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

/// A month name or abbreviation in any case ("Nov", "sept", "JUNE") → (1..=12, weak). Weak:
/// "may" in lower case is mostly the verb, and is a month only with more support (a day
/// suffix, a year, a date cue before).
pub fn month_word(w: &str) -> Option<(u32, bool)> {
    if w.len() < 3 || w.len() > 9 || !w.is_ascii() {
        return None;
    }
    let l = w.to_ascii_lowercase();
    let m = if l == "sept" {
        9
    } else {
        MONTHS.iter().position(|m| {
            let m = m.to_ascii_lowercase();
            l == m || (l.len() == 3 && m.starts_with(&l))
        })? as u32
            + 1
    };
    let lower = w.starts_with(|c: char| c.is_ascii_lowercase());
    Some((m, lower && l == "may"))
}

/// A numeric or written date.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Date {
    pub month: u32,
    pub day: u32,
    pub year: Option<String>,
    /// How it is read: "the fifth of April" or "April fifth".
    pub order: DateOrder,
}

impl Date {
    pub fn words(&self) -> String {
        date_words(self.order, self.month, self.day, self.year.as_deref())
    }
}

/// "29/11" or "11/29" read in the preferred order, or the other when only that is valid.
pub fn slash_date(order: DateOrder, a: &str, b: &str) -> Option<Date> {
    if a.len() > 2 || b.len() > 2 {
        return None;
    }
    let (a, b): (u32, u32) = (a.parse().ok()?, b.parse().ok()?);
    let (dm, md) = (valid(b, a), valid(a, b));
    let date = |order, month, day| Date {
        month,
        day,
        year: None,
        order,
    };
    match order {
        DateOrder::DayMonth if dm => Some(date(order, b, a)),
        DateOrder::MonthDay if md => Some(date(order, a, b)),
        _ if dm => Some(date(DateOrder::DayMonth, b, a)),
        _ if md => Some(date(DateOrder::MonthDay, a, b)),
        _ => None,
    }
}

/// Words before a number that make it a date, even a proper fraction: "on 4/5", "due 12/3".
const DATE_CUES: &[&str] = &[
    "on",
    "until",
    "till",
    "til",
    "since",
    "due",
    "dated",
    "expires",
    "expiry",
    "expiring",
    "deadline",
    "monday",
    "tuesday",
    "wednesday",
    "thursday",
    "friday",
    "saturday",
    "sunday",
    "mon",
    "tue",
    "tues",
    "wed",
    "thu",
    "thur",
    "thurs",
    "fri",
    "sat",
    "sun",
];

/// Words that also come before quantities ("reduced by 1/3", "from 1/2 to 3/4"): a date cue
/// only where the number cannot be a proper fraction.
const WEAK_DATE_CUES: &[&str] = &[
    "by",
    "from",
    "before",
    "after",
    "through",
    "thru",
    "every",
    "date",
    "born",
    "starting",
    "effective",
];

/// A date cue before `i`; `weak` also accepts the cues that come before quantities.
pub fn date_cue(cx: &Ctx, i: usize, weak: bool) -> bool {
    cx.words_before(i, 1).first().is_some_and(|w| {
        DATE_CUES.contains(&w.as_str()) || (weak && WEAK_DATE_CUES.contains(&w.as_str()))
    })
}

/// Time zones read letter by letter after a time: "EST", "utc", "e.s.t".
const ZONES: &[&str] = &[
    "EST", "EDT", "CST", "CDT", "MST", "MDT", "PST", "PDT", "AKST", "AKDT", "HST", "HDT", "UTC",
    "GMT", "BST", "CET", "CEST", "EET", "EEST", "WET", "IST", "JST", "KST", "AEST", "AEDT", "ACST",
    "AWST", "NZST", "NZDT", "SGT", "HKT", "ET", "PT", "CT", "MT",
];

/// A time zone at token `k`: (end, reading). Two-letter zones only in capitals.
fn zone(cx: &Ctx, k: usize) -> Option<(usize, String)> {
    let w = cx.word(k)?;
    let up = w.to_ascii_uppercase();
    let mut end;
    let mut text;
    if ZONES.contains(&up.as_str()) && (w == up || (w.len() >= 3 && w == w.to_ascii_lowercase())) {
        end = k + 1;
        text = spell(&up);
    } else {
        // "e.s.t", "E.S.T."
        let mut letters = String::new();
        let mut j = k;
        while let Some(l) = cx.word(j).filter(|l| l.len() == 1)
            && letters.len() < 4
        {
            letters.push_str(&l.to_ascii_uppercase());
            j += 1;
            if !cx.is_sym(j, '.') || cx.word(j + 1).is_none_or(|n| n.len() != 1) {
                break;
            }
            j += 1;
        }
        if letters.len() < 2 || !ZONES.contains(&letters.as_str()) {
            return None;
        }
        end = j;
        if cx.is_sym(end, '.') && !matches!(cx.next_start(end + 1), Next::End | Next::Starter) {
            end += 1;
        }
        text = spell(&letters);
    }
    // "UTC+2", "GMT-05:30"
    if let Some(c @ ('+' | '-')) = cx.sym(end)
        && let Some(h) = cx.num(end + 1).filter(|h| h.len() <= 2)
    {
        let sign = if c == '+' { "plus" } else { "minus" };
        text = format!("{text} {sign} {}", cardinal(h));
        end += 2;
        if cx.is_sym(end, ':')
            && let Some(m) = cx.num(end + 1).filter(|m| m.len() == 2)
        {
            if m != "00" {
                text = format!("{text} {}", below_100(m.parse().unwrap_or(0)));
            }
            end += 2;
        }
    }
    Some((end, text))
}

/// Words around "2:03:45" that make it a duration: "took 2:03:45", "a time of 2:03:45".
const DURATION_CUES: &[&str] = &[
    "took", "takes", "taking", "lasted", "lasts", "lasting", "duration", "elapsed", "runtime",
    "finished", "clocked", "ran", "in",
];

/// Nouns that make a duration with "of", "is" or "was" after them: "a time of 1:59:40".
const DURATION_NOUNS: &[&str] = &["time", "length", "record", "duration", "runtime"];

fn duration_cue(cx: &Ctx, i: usize, end: usize) -> bool {
    let before = cx.words_before(i, 2);
    let first = before.first().map_or("", String::as_str);
    let second = before.get(1).map_or("", String::as_str);
    let after = cx.gap(end)
        && cx
            .word(end + 1)
            .is_some_and(|w| matches!(w, "long" | "left" | "remaining"));
    DURATION_CUES.contains(&first)
        || (matches!(first, "of" | "is" | "was") && DURATION_NOUNS.contains(&second))
        || after
}

/// A time of day, or a duration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Time {
    pub hour: u32,
    pub minute: u32,
    pub second: Option<u32>,
    /// "A.M" or "P.M".
    pub meridiem: Option<&'static str>,
    /// Spelled zone ("E.S.T").
    pub zone: Option<String>,
    /// "2:03:45" as hours, minutes and seconds.
    pub duration: bool,
}

fn count(n: u32, one: &str) -> String {
    format!(
        "{} {one}{}",
        cardinal(&n.to_string()),
        if n == 1 { "" } else { "s" }
    )
}

impl Time {
    pub fn words(&self) -> String {
        if self.duration {
            return hours_minutes_seconds(self.hour, self.minute, self.second.unwrap_or(0), false);
        }
        let seconds = self.second.filter(|&s| s > 0);
        let mut text = match seconds {
            // "15:20:40": a clock read to the second is said in its units; "fifteen twenty and
            // forty seconds" leaves the listener to guess what "twenty" was.
            Some(s) if self.meridiem.is_none() => {
                hours_minutes_seconds(self.hour, self.minute, s, true)
            }
            _ => {
                let clock = format!(
                    "{} {}",
                    cardinal(&self.hour.to_string()),
                    minutes_words(self.hour, self.minute, self.meridiem.is_some())
                );
                match seconds {
                    Some(s) => format!("{clock} and {}", count(s, "second")),
                    None => clock,
                }
            }
        };
        for extra in [self.meridiem.map(str::to_string), self.zone.clone()]
            .into_iter()
            .flatten()
        {
            text = format!("{text} {extra}");
        }
        text
    }
}

/// "two hours, three minutes and forty-five seconds"; a zero hour is said only on a clock.
fn hours_minutes_seconds(hour: u32, minute: u32, second: u32, clock: bool) -> String {
    let mut parts = Vec::new();
    if hour > 0 || clock {
        parts.push(count(hour, "hour"));
    }
    if minute > 0 || !parts.is_empty() {
        parts.push(count(minute, "minute"));
    }
    let last = count(second, "second");
    if parts.is_empty() {
        last
    } else {
        format!("{} and {last}", parts.join(", "))
    }
}

fn month_name(m: u32) -> &'static str {
    MONTHS[(m.clamp(1, 12) - 1) as usize]
}

/// A year in a date: four digits as a year, two as "twenty-six" or "oh five".
pub fn year_words(y: &str) -> String {
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
        if cx.is_sym(end, '.') && !matches!(cx.next_start(end + 1), Next::End | Next::Starter) {
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

/// "7:45", "6:15 pm", "18:30", "10:30:15", "6pm", "7.45pm", "3 EST", "15:20:40 UTC".
pub fn time(cx: &Ctx, i: usize) -> Option<Item> {
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
    let after = mer.map_or(e, |(end, _)| end);
    let zone =
        zone(cx, cx.skip_gap(after)).filter(|(_, z)| mer.is_some() || has_minutes || z.len() >= 5);
    // Without "am/pm" or a zone, only "h:mm" is a time; "7.45" alone is a decimal.
    if mer.is_none() && zone.is_none() && !(colon && has_minutes) {
        return None;
    }
    if m > 59 || secs.is_some_and(|s| s > 59) || h > 24 || (mer.is_some() && (h > 12 || h == 0)) {
        return None;
    }
    let end = zone.as_ref().map_or(after, |(end, _)| *end);
    let duration = secs.is_some() && mer.is_none() && zone.is_none() && duration_cue(cx, i, end);
    let t = Time {
        hour: h,
        minute: m,
        second: secs,
        meridiem: mer.map(|(_, r)| r),
        zone: zone.map(|(_, z)| z),
        duration,
    };
    Some(Item::new(i, end, Class::Time(t)))
}

/// "2026-11-29", "2017/08/04", "29/11/2026", "11/29/26", "11-07-2004", "29.11.2026".
pub fn numeric_date(cx: &Ctx, i: usize) -> Option<Item> {
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
    let order = cx.date_order;
    let date = if a.len() == 4 && b.len() <= 2 && c.len() <= 2 {
        // Year first: always year, month, day.
        let (m, d): (u32, u32) = (b.parse().ok()?, c.parse().ok()?);
        valid(m, d).then(|| Date {
            month: m,
            day: d,
            year: Some(a.to_string()),
            order,
        })?
    } else {
        let order = if sep == '.' {
            DateOrder::DayMonth
        } else {
            order
        };
        // "11/07/04" yes; "10-20-30" is not a date.
        let year_ok = match sep {
            '/' => matches!(c.len(), 2 | 4),
            _ => c.len() == 4,
        };
        if !year_ok {
            return None;
        }
        let mut d = slash_date(order, a, b)?;
        d.year = Some(c.to_string());
        d
    };
    Some(Item::new(i, i + 5, Class::Date(date)))
}

/// "-2021" at `e` after a dashed date ("16-Feb-2021"): (end, year digits).
fn dashed_year(cx: &Ctx, e: usize) -> Option<(usize, String)> {
    let y = cx.num(e + 1).filter(|y| matches!(y.len(), 2 | 4))?;
    cx.is_sym(e, '-').then(|| (e + 2, y.to_string()))
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

const WEEKDAYS: [(&str, &str); 7] = [
    ("Mon", "Monday"),
    ("Tue", "Tuesday"),
    ("Wed", "Wednesday"),
    ("Thu", "Thursday"),
    ("Fri", "Friday"),
    ("Sat", "Saturday"),
    ("Sun", "Sunday"),
];

fn weekday(w: &str) -> Option<&'static str> {
    let w = w.strip_suffix('.').unwrap_or(w);
    WEEKDAYS.iter().find_map(|&(a, full)| {
        (w == a || w == full || (w.len() == 4 && full.starts_with(w) && w != "Sund"))
            .then_some(full)
    })
}

/// "Mon-Fri", "Mon–Sat": a range of days.
pub fn weekdays(cx: &Ctx, i: usize) -> Option<Item> {
    let a = weekday(cx.word(i)?)?;
    let mut j = i + 1;
    if cx.is_sym(j, '.') {
        j += 1;
    }
    if !matches!(cx.sym(j), Some('-' | '–')) {
        return None;
    }
    let b = weekday(cx.word(j + 1)?)?;
    let mut end = j + 2;
    if cx.is_sym(end, '.')
        && cx.word(j + 1).is_some_and(|w| w.len() <= 4)
        && cx.next_start(end + 1) == Next::Lower
    {
        end += 1;
    }
    Some(Item::new(i, end, Class::Words(format!("{a} to {b}"))))
}

/// "29 November", "29th Nov 2026", "24 august 2011", "16-Feb-2021" (number at `i`, day digits
/// `d`, the month after token `j`).
pub fn day_month(cx: &Ctx, i: usize, j: usize, d: &str) -> Option<Item> {
    let dashed = cx.is_sym(j, '-');
    if !(cx.gap(j) || dashed) || d.len() > 2 {
        return None;
    }
    let w = cx.word(j + 1)?;
    let (m, weak) = month_word(w)?;
    let day: u32 = d.parse().ok()?;
    if !valid(m, day) {
        return None;
    }
    let mut e = j + 2;
    let y = if dashed {
        let y = dashed_year(cx, e);
        if y.is_none() && cx.word(e).is_some() {
            return None;
        }
        y
    } else {
        if cx.is_sym(e, '.') && w.len() <= 4 && cx.next_start(e + 1) != Next::End {
            e += 1;
        }
        trailing_year(cx, e)
    };
    let suffixed = j > i + 1;
    if weak && y.is_none() && !suffixed && !date_cue(cx, i, true) {
        return None;
    }
    let end = y.as_ref().map_or(e, |(k, _)| *k);
    let date = Date {
        month: m,
        day,
        year: y.map(|(_, y)| y),
        order: DateOrder::DayMonth,
    };
    Some(Item::new(i, end, Class::Date(date)))
}

/// "Nov 29", "November 29th, 2026", "june 21 2015", "jan 15 2020", "Feb-16-2021" (month word
/// at `i`).
pub fn month_led(cx: &Ctx, i: usize) -> Option<Item> {
    let (m, weak) = month_word(cx.word(i)?)?;
    let mut k = i + 1;
    if cx.is_sym(k, '.') {
        k += 1;
    }
    let dashed = k == i + 1 && cx.is_sym(k, '-');
    if !(dashed || cx.gap(k)) {
        return None;
    }
    k += 1;
    let d = cx.num(k)?;
    let day: u32 = d.parse().ok()?;
    if d.len() > 2
        || !valid(m, day)
        || matches!(cx.sym(k + 1), Some(':' | '.' | '/' | ',')) && cx.num(k + 2).is_some()
    {
        return None;
    }
    let mut e = k + 1;
    let suffixed = cx
        .word(e)
        .is_some_and(|s| matches!(s, "st" | "nd" | "rd" | "th" | "ST" | "ND" | "RD" | "TH"));
    if suffixed {
        e += 1;
    } else if cx.word(e).is_some() || cx.num(e).is_some() {
        return None;
    }
    let y = if dashed {
        dashed_year(cx, e)
    } else {
        trailing_year(cx, e)
    };
    if weak && y.is_none() && !suffixed && !date_cue(cx, i, true) {
        return None;
    }
    let end = y.as_ref().map_or(e, |(k, _)| *k);
    let date = Date {
        month: m,
        day,
        year: y.map(|(_, y)| y),
        order: DateOrder::MonthDay,
    };
    Some(Item::new(i, end, Class::Date(date)))
}
