//! Abbreviations: titles ("Mr.", "Dr."), street words ("St.", "Ave."), Latin ("e.g.", "etc."),
//! and number words ("No. 5", "p. 12"). A full stop eaten by an abbreviation is put back only
//! where a new sentence clearly starts, so the segmenter is not fooled.

use super::ctx::{Ctx, Next};

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// Before a name; never ends a sentence.
    Title,
    /// After a name or word; may end a sentence.
    Trailing,
    /// Only before a number ("No. 5").
    Numeric,
}

/// (written form without the dot, reading, kind). Matched case-sensitively.
const TABLE: &[(&str, &str, Kind)] = &[
    ("Mr", "Mister", Kind::Title),
    ("MR", "Mister", Kind::Title),
    ("Mrs", "Missus", Kind::Title),
    ("Ms", "Miz", Kind::Title),
    ("Mx", "Mix", Kind::Title),
    ("Prof", "Professor", Kind::Title),
    ("Mt", "Mount", Kind::Title),
    ("Ft", "Fort", Kind::Title),
    ("Capt", "Captain", Kind::Title),
    ("Lt", "Lieutenant", Kind::Title),
    ("Sgt", "Sergeant", Kind::Title),
    ("Rev", "Reverend", Kind::Title),
    ("Hon", "Honorable", Kind::Title),
    ("Gov", "Governor", Kind::Title),
    ("Sen", "Senator", Kind::Title),
    ("Pres", "President", Kind::Title),
    ("Jr", "Junior", Kind::Trailing),
    ("Sr", "Senior", Kind::Trailing),
    ("Inc", "Incorporated", Kind::Trailing),
    ("Ltd", "Limited", Kind::Trailing),
    ("Corp", "Corporation", Kind::Trailing),
    ("Bros", "Brothers", Kind::Trailing),
    ("Ave", "Avenue", Kind::Trailing),
    ("Rd", "Road", Kind::Trailing),
    ("Blvd", "Boulevard", Kind::Trailing),
    ("Ln", "Lane", Kind::Trailing),
    ("etc", "et cetera", Kind::Trailing),
    ("vs", "versus", Kind::Trailing),
    ("Vs", "versus", Kind::Trailing),
    ("cf", "compare", Kind::Trailing),
    ("approx", "approximately", Kind::Trailing),
    ("dept", "department", Kind::Trailing),
    ("Dept", "Department", Kind::Trailing),
    ("min", "minimum", Kind::Numeric),
    ("max", "maximum", Kind::Numeric),
    ("No", "number", Kind::Numeric),
    ("no", "number", Kind::Numeric),
    ("Nos", "numbers", Kind::Numeric),
    ("p", "page", Kind::Numeric),
    ("pp", "pages", Kind::Numeric),
    ("vol", "volume", Kind::Numeric),
    ("Vol", "Volume", Kind::Numeric),
    ("fig", "figure", Kind::Numeric),
    ("Fig", "Figure", Kind::Numeric),
    ("ch", "chapter", Kind::Numeric),
    ("Ch", "Chapter", Kind::Numeric),
    ("sec", "section", Kind::Numeric),
    ("Sec", "Section", Kind::Numeric),
    ("eq", "equation", Kind::Numeric),
    ("Eq", "Equation", Kind::Numeric),
    ("Apt", "Apartment", Kind::Numeric),
    ("apt", "apartment", Kind::Numeric),
    ("Ste", "Suite", Kind::Numeric),
    ("ext", "extension", Kind::Numeric),
    ("Ext", "Extension", Kind::Numeric),
    ("acct", "account", Kind::Numeric),
    ("Acct", "Account", Kind::Numeric),
];

/// Dotted abbreviations, written without their dots and lower-cased.
const DOTTED: &[(&str, &str)] = &[
    ("eg", "for example"),
    ("ie", "that is"),
    ("aka", "also known as"),
    ("etal", "and others"),
    ("phd", "P.H.D"),
    ("ad", "A.D"),
    ("bc", "B.C"),
    ("bce", "B.C.E"),
    ("ce", "C.E"),
    ("rsvp", "R.S.V.P"),
    ("nb", "note"),
    ("ps", "P.S"),
    ("viz", "namely"),
];

/// Whether `w` followed by a full stop may be an abbreviation ("Dr", "etc", "e.g", "J"), so
/// that the stop need not end a sentence.
pub fn may_be_abbreviation(w: &str) -> bool {
    let dotless: String = w.chars().filter(|&c| c != '.').collect();
    dotless.chars().count() <= 1
        || matches!(dotless.as_str(), "St" | "ST" | "Dr" | "DR")
        || TABLE.iter().any(|(k, _, _)| *k == dotless)
        || DOTTED.iter().any(|(k, _)| *k == dotless.to_lowercase())
}

fn next_is_capitalised(cx: &Ctx, j: usize) -> bool {
    matches!(cx.next_start(j), Next::Upper | Next::Starter)
}

/// Emit `reading` for tokens `i..j` (j excludes a following dot) and decide about the dot.
pub fn finish(cx: &mut Ctx, reading: &str, i: usize, j: usize, may_end: bool) -> usize {
    let dot = cx.is_sym(j, '.');
    let end = if dot { j + 1 } else { j };
    cx.emit(reading, i, end);
    if dot && may_end && matches!(cx.next_start(end), Next::End | Next::Starter) {
        let src = cx.src(j, j + 1);
        cx.out.stop(src);
    }
    end
}

/// Latin and other dotted abbreviations: "e.g.", "i.e.", "a.k.a.", "et al.", "Ph.D.".
fn try_dotted(cx: &mut Ctx, i: usize) -> Option<usize> {
    let mut key = String::new();
    let mut j = i;
    while let Some(w) = cx.word(j) {
        if w.chars().count() > 3 || !cx.is_sym(j + 1, '.') {
            break;
        }
        key.push_str(&w.to_lowercase());
        j += 2;
    }
    if j == i {
        // "et al."
        if cx.is_word(i, "et") && cx.gap(i + 1) && cx.is_word(i + 2, "al") {
            let end = finish(cx, "and others", i, i + 3, true);
            return Some(end);
        }
        return None;
    }
    // The last dot is handled by `finish`.
    let last_dot = j - 1;
    // "Ph.D" without a final dot
    if cx.word(j).is_some() && !cx.boundary(j) {
        let w = cx.text(j).to_lowercase();
        if DOTTED.iter().any(|(k, _)| *k == format!("{key}{w}")) {
            key.push_str(&w);
            let r = DOTTED.iter().find(|(k, _)| *k == key)?.1;
            return Some(finish(cx, r, i, j + 1, true));
        }
    }
    let &(_, r) = DOTTED.iter().find(|(k, _)| *k == key)?;
    // "ie" in "i.e." is fine; a lone "no." is not a dotted abbreviation here.
    if key.len() < 2 {
        return None;
    }
    let may_end = !matches!(key.as_str(), "eg" | "ie" | "viz" | "nb" | "aka");
    Some(finish(cx, r, i, last_dot, may_end))
}

pub fn try_abbrev(cx: &mut Ctx, i: usize) -> Option<usize> {
    if let Some(j) = try_dotted(cx, i) {
        return Some(j);
    }
    let w = cx.word(i)?;
    let dot = cx.is_sym(i + 1, '.');
    // Saint or Street; Doctor or Drive.
    if matches!(w, "St" | "ST" | "Dr" | "DR") {
        let after = cx.skip_gap(if dot { i + 2 } else { i + 1 });
        let next_name = next_is_capitalised(cx, if dot { i + 2 } else { i + 1 })
            && !cx.word(after).is_some_and(super::address::is_direction)
            && !matches!(
                cx.next_start(if dot { i + 2 } else { i + 1 }),
                Next::Starter | Next::End
            );
        let prev_name = cx
            .prev_word(i)
            .is_some_and(|p| p.starts_with(char::is_uppercase))
            || cx.num_end == i.saturating_sub(1)
            || cx.num_end == i;
        let saint = w.eq_ignore_ascii_case("st");
        let reading = match (next_name, prev_name, saint) {
            (true, _, true) => "Saint",
            (false, _, true) => "Street",
            (true, _, false) | (false, false, false) => "Doctor",
            (false, true, false) => "Drive",
        };
        let trailing = matches!(reading, "Street" | "Drive");
        return Some(finish(cx, reading, i, i + 1, trailing));
    }
    let &(_, reading, kind) = TABLE.iter().find(|(a, _, _)| *a == w)?;
    match kind {
        Kind::Title => {
            // "Mr" needs a name after it.
            let j = if dot { i + 2 } else { i + 1 };
            if !next_is_capitalised(cx, j) {
                return None;
            }
            Some(finish(cx, reading, i, i + 1, false))
        }
        Kind::Trailing => {
            if !dot && !matches!(w, "etc" | "vs" | "Vs" | "Jr" | "Sr" | "Inc" | "Ltd") {
                return None;
            }
            // "vs." and "cf." sit inside a sentence.
            let may_end = !matches!(w, "vs" | "Vs" | "cf");
            Some(finish(cx, reading, i, i + 1, may_end))
        }
        Kind::Numeric => {
            let j = if dot { i + 2 } else { i + 1 };
            let k = cx.skip_gap(j);
            // Only before a number, and not "no 5-year plan" without a dot.
            if cx.num(k).is_none() || (!dot && w.chars().count() <= 2 && w != "No") {
                return None;
            }
            let end = if dot { i + 2 } else { i + 1 };
            cx.emit(reading, i, end);
            Some(end)
        }
    }
}

/// Initials: "J. R. R. Tolkien" (dots dropped), "U.S.A." (letters read one by one).
pub fn try_initials(cx: &mut Ctx, i: usize) -> Option<usize> {
    let w = cx.word(i)?;
    let mut c = w.chars();
    let first = c.next()?;
    if c.next().is_some() || !first.is_uppercase() || !cx.is_sym(i + 1, '.') {
        return None;
    }
    // "U.S.A." written solid.
    let mut letters = vec![first];
    let mut j = i + 2;
    while let Some(w) = cx.word(j) {
        let mut c = w.chars();
        match (c.next(), c.next()) {
            (Some(l), None) if l.is_uppercase() && cx.is_sym(j + 1, '.') => {
                letters.push(l);
                j += 2;
            }
            (Some(l), None) if l.is_uppercase() && cx.boundary(j + 1) => {
                // "U.S.A" without the last dot.
                letters.push(l);
                j += 1;
                break;
            }
            _ => break,
        }
    }
    let reading: String = letters
        .iter()
        .map(char::to_string)
        .collect::<Vec<_>>()
        .join(".");
    let last = j - 1;
    if !cx.is_sym(last, '.') {
        cx.emit(&reading, i, j);
        return Some(j);
    }
    cx.emit(&reading, i, last + 1);
    // A dot after initials ends a sentence only before a typical sentence opener.
    if matches!(cx.next_start(last + 1), Next::End | Next::Starter) {
        let src = cx.src(last, last + 1);
        cx.out.stop(src);
    }
    Some(last + 1)
}
