//! Addresses: a house number before a street is read as a reader says it ("3142 Oak Ave" →
//! "thirty-one forty-two Oak Avenue"), and so is a route number ("Hwy 101" → "Highway one oh
//! one"); street types (Ave, Ct, Hwy, Expy…) after a street name and directions (N, S, E, W,
//! NW…) in a street are spelled out; a US state code after a city or before a ZIP code is
//! read as the state ("Springfield, IL 62704").

use super::abbrev;
use super::classify::{Class, Item};
use super::ctx::Ctx;
use super::numbers::Lit;
use super::words::{below_100, cardinal, digit_by_digit};

/// Street types: (written, read). Full words are listed so that a street is recognised;
/// "St" and "Dr" are read by the abbreviation rules (Saint/Street, Doctor/Drive).
const STREET_TYPES: &[(&str, &str)] = &[
    ("St", "Street"),
    ("ST", "Street"),
    ("Str", "Street"),
    ("Street", "Street"),
    ("Ave", "Avenue"),
    ("AVE", "Avenue"),
    ("Av", "Avenue"),
    ("Avenue", "Avenue"),
    ("Rd", "Road"),
    ("RD", "Road"),
    ("Road", "Road"),
    ("Blvd", "Boulevard"),
    ("BLVD", "Boulevard"),
    ("Boulevard", "Boulevard"),
    ("Ln", "Lane"),
    ("Lane", "Lane"),
    ("Dr", "Drive"),
    ("Drive", "Drive"),
    ("Ct", "Court"),
    ("Court", "Court"),
    ("Hwy", "Highway"),
    ("HWY", "Highway"),
    ("Highway", "Highway"),
    ("Expy", "Expressway"),
    ("Expressway", "Expressway"),
    ("Pkwy", "Parkway"),
    ("Parkway", "Parkway"),
    ("Fwy", "Freeway"),
    ("Freeway", "Freeway"),
    ("Pl", "Place"),
    ("Place", "Place"),
    ("Ter", "Terrace"),
    ("Terrace", "Terrace"),
    ("Cir", "Circle"),
    ("Circle", "Circle"),
    ("Sq", "Square"),
    ("Square", "Square"),
    ("Trl", "Trail"),
    ("Trail", "Trail"),
    ("Plz", "Plaza"),
    ("Plaza", "Plaza"),
    ("Way", "Way"),
    ("Row", "Row"),
    ("Alley", "Alley"),
];

const DIRECTIONS: &[(&str, &str)] = &[
    ("N", "North"),
    ("S", "South"),
    ("E", "East"),
    ("W", "West"),
    ("NE", "Northeast"),
    ("NW", "Northwest"),
    ("SE", "Southeast"),
    ("SW", "Southwest"),
];

const STATES: &[(&str, &str)] = &[
    ("AL", "Alabama"),
    ("AK", "Alaska"),
    ("AZ", "Arizona"),
    ("AR", "Arkansas"),
    ("CA", "California"),
    ("CO", "Colorado"),
    ("CT", "Connecticut"),
    ("DE", "Delaware"),
    ("FL", "Florida"),
    ("GA", "Georgia"),
    ("HI", "Hawaii"),
    ("ID", "Idaho"),
    ("IL", "Illinois"),
    ("IN", "Indiana"),
    ("IA", "Iowa"),
    ("KS", "Kansas"),
    ("KY", "Kentucky"),
    ("LA", "Louisiana"),
    ("ME", "Maine"),
    ("MD", "Maryland"),
    ("MA", "Massachusetts"),
    ("MI", "Michigan"),
    ("MN", "Minnesota"),
    ("MS", "Mississippi"),
    ("MO", "Missouri"),
    ("MT", "Montana"),
    ("NE", "Nebraska"),
    ("NV", "Nevada"),
    ("NH", "New Hampshire"),
    ("NJ", "New Jersey"),
    ("NM", "New Mexico"),
    ("NY", "New York"),
    ("NC", "North Carolina"),
    ("ND", "North Dakota"),
    ("OH", "Ohio"),
    ("OK", "Oklahoma"),
    ("OR", "Oregon"),
    ("PA", "Pennsylvania"),
    ("RI", "Rhode Island"),
    ("SC", "South Carolina"),
    ("SD", "South Dakota"),
    ("TN", "Tennessee"),
    ("TX", "Texas"),
    ("UT", "Utah"),
    ("VT", "Vermont"),
    ("VA", "Virginia"),
    ("WA", "Washington"),
    ("WV", "West Virginia"),
    ("WI", "Wisconsin"),
    ("WY", "Wyoming"),
];

/// State codes that are also words or common abbreviations: read as a state only before a
/// ZIP code.
const AMBIGUOUS_STATES: &[&str] = &[
    "AL", "AR", "CO", "DE", "GA", "HI", "ID", "IN", "LA", "MA", "MD", "ME", "MO", "MS", "MT", "NE",
    "OH", "OK", "OR", "PA", "SC", "VA",
];

/// Words before a number that make it a route number.
const ROUTES: &[&str] = &[
    "Hwy",
    "HWY",
    "Highway",
    "Route",
    "Rte",
    "Rt",
    "Interstate",
    "US",
    "SR",
    "I",
];

pub fn state_name(w: &str) -> Option<&'static str> {
    STATES.iter().find(|(c, _)| *c == w).map(|&(_, n)| n)
}

fn street_type(w: &str) -> Option<&'static str> {
    STREET_TYPES.iter().find(|(a, _)| *a == w).map(|&(_, r)| r)
}

/// "N", "NW"… (an abbreviated compass direction).
pub fn is_direction(w: &str) -> bool {
    DIRECTIONS.iter().any(|(a, _)| *a == w)
}

fn direction(w: &str) -> Option<&'static str> {
    DIRECTIONS
        .iter()
        .find(|(a, r)| *a == w || *r == w)
        .map(|&(_, r)| r)
}

/// A house or route number as said: "3142" → "thirty-one forty-two", "1600" → "sixteen
/// hundred", "101" → "one oh one", "10250" → "ten two fifty".
pub fn house_words(d: &str) -> String {
    let n = |s: &str| s.parse::<u32>().unwrap_or(0);
    match d.len() {
        0..=2 => cardinal(d),
        3 => {
            let (h, t) = (&d[..1], &d[1..]);
            match (n(h), n(t)) {
                (_, 0) => cardinal(d),
                (h, t @ 1..=9) => format!("{} oh {}", below_100(h), below_100(t)),
                (h, t) => format!("{} {}", below_100(h), below_100(t)),
            }
        }
        4 => {
            let (hi, lo) = (n(&d[..2]), n(&d[2..]));
            match (hi, lo) {
                (_, 0) if hi % 10 == 0 => cardinal(d),
                (_, 0) => format!("{} hundred", below_100(hi)),
                (_, 1..=9) => format!("{} oh {}", below_100(hi), below_100(lo)),
                _ => format!("{} {}", below_100(hi), below_100(lo)),
            }
        }
        5 => format!("{} {}", below_100(n(&d[..2])), house_words(&d[2..])),
        _ => digit_by_digit(d),
    }
}

/// A street from token `k`: [direction] one to three name words (or an ordinal, "45th") and
/// a street type. Returns the index just after the type.
fn street_from(cx: &Ctx, k: usize) -> Option<usize> {
    let mut j = k;
    if cx.word(j).and_then(direction).is_some() {
        j += 1;
        if cx.is_sym(j, '.') {
            j += 1;
        }
        if !cx.gap(j) {
            return None;
        }
        j += 1;
    }
    for _ in 0..3 {
        // A name part: a capitalised word, or an ordinal ("5th").
        if cx.num(j).is_some() && cx.word(j + 1).is_some_and(|w| w.len() == 2) {
            j += 2;
        } else if cx
            .word(j)
            .is_some_and(|w| w.starts_with(char::is_uppercase))
        {
            j += 1;
        } else {
            return None;
        }
        if !cx.gap(j) {
            return None;
        }
        if cx.word(j + 1).and_then(street_type).is_some() {
            return Some(j + 2);
        }
        j += 1;
    }
    None
}

/// A route word just before the number at `i`, across a gap, a dot or a dash ("Hwy. 101",
/// "I-95"; "I" only with the dash).
fn is_route(cx: &Ctx, i: usize) -> bool {
    let Some(mut p) = i.checked_sub(1) else {
        return false;
    };
    let dash = cx.is_sym(p, '-');
    if cx.gap(p) || dash {
        let Some(q) = p.checked_sub(1) else {
            return false;
        };
        p = q;
    }
    if cx.is_sym(p, '.') && p > 0 {
        p -= 1;
    }
    cx.word(p)
        .is_some_and(|w| ROUTES.contains(&w) && (w != "I" || dash))
}

/// A house number before a street ("3142 Oak Ave", "221B Baker Street"), or a route number
/// after a route word ("Hwy 101", "I-95").
pub fn house(cx: &Ctx, i: usize, lit: &Lit) -> Option<Item> {
    let d = &lit.int;
    if d.is_empty() || d.len() > 5 || d.starts_with('0') {
        return None;
    }
    if is_route(cx, i) && cx.word(lit.end).is_none() {
        return Some(Item::new(i, lit.end, Class::House(d.clone())));
    }
    let mut e = lit.end;
    let letter = cx
        .word(e)
        .filter(|w| w.len() == 1 && w.starts_with(|c: char| c.is_ascii_uppercase()));
    if letter.is_some() {
        e += 1;
    }
    if !cx.gap(e) {
        return None;
    }
    street_from(cx, e + 1)?;
    let class = match letter {
        Some(l) => Class::Words(format!("{} {l}", house_words(d))),
        None => Class::House(d.clone()),
    };
    Some(Item::new(i, e, class))
}

/// Street words: "Oak Ave" → "Oak Avenue", "N Main St" → "North Main Street", "Main St NW" →
/// "Main Street Northwest", and state codes ("Austin, TX", "IL 62704").
pub fn try_street_word(cx: &mut Ctx, i: usize) -> Option<usize> {
    let w = cx.word(i)?;
    let prev_capitalised = cx
        .prev_word(i)
        .is_some_and(|p| p.starts_with(char::is_uppercase))
        && i >= 2
        && cx.gap(i - 1);
    let after_number = cx.num_end == i || (i > 0 && cx.gap(i - 1) && cx.num_end == i - 1);
    if let Some(full) = street_type(w).filter(|_| !matches!(w, "St" | "ST" | "Dr"))
        && w != full
    {
        let before_number = cx.gap(i + 1) && cx.num(i + 2).is_some()
            || cx.is_sym(i + 1, '.') && cx.gap(i + 2) && cx.num(i + 3).is_some();
        let route = full == "Highway" && before_number;
        if prev_capitalised || after_number || route {
            return Some(abbrev::finish(cx, full, i, i + 1, !route));
        }
    }
    if let Some(full) = direction(w).filter(|f| *f != w) {
        let after = if cx.is_sym(i + 1, '.') { i + 2 } else { i + 1 };
        let in_street = cx.gap(after) && street_from(cx, after + 1).is_some();
        let after_type = i >= 2 && cx.gap(i - 1) && cx.word(i - 2).and_then(street_type).is_some();
        if in_street || (after_type && (cx.boundary(after) || cx.sym(after).is_some())) {
            return Some(abbrev::finish(cx, full, i, i + 1, after_type));
        }
    }
    try_state(cx, i)
}

/// "Springfield, IL 62704", "Austin, TX".
fn try_state(cx: &mut Ctx, i: usize) -> Option<usize> {
    let w = cx.word(i)?;
    let name = state_name(w)?;
    let city = |k: usize| {
        cx.word(k)
            .is_some_and(|c| c.starts_with(char::is_uppercase) && c.chars().any(char::is_lowercase))
    };
    let comma_city = i >= 3 && cx.gap(i - 1) && cx.is_sym(i - 2, ',') && city(i - 3);
    let bare_city = i >= 2 && cx.gap(i - 1) && city(i - 2);
    let zip_after = cx.gap(i + 1) && cx.num(i + 2).is_some_and(|z| z.len() == 5);
    // Without a ZIP code, the code ends the phrase: "Austin, TX." but not "Scans, CT and MRI".
    let ends = cx.word(i + 1).is_none() && !(cx.gap(i + 1) && cx.word(i + 2).is_some());
    let state = if zip_after {
        comma_city || bare_city
    } else {
        comma_city && ends && !AMBIGUOUS_STATES.contains(&w)
    };
    if !state {
        return None;
    }
    cx.emit(name, i, i + 1);
    Some(i + 1)
}
