//! Roman numerals after titles and names: "Chapter IV" → "Chapter four", "World War II" →
//! "World War two", "Henry VIII" → "Henry the eighth". The pronoun "I" stays a pronoun.

use super::ctx::Ctx;
use super::words::{cardinal_u, ordinal_words};

/// Strict value of a canonical numeral ("IV" yes, "IIII" no), up to 3999.
pub fn value(s: &str) -> Option<u32> {
    if s.is_empty() || s.len() > 15 {
        return None;
    }
    let digit = |c: char| match c {
        'I' => Some(1),
        'V' => Some(5),
        'X' => Some(10),
        'L' => Some(50),
        'C' => Some(100),
        'D' => Some(500),
        'M' => Some(1000),
        _ => None,
    };
    let vals: Vec<u32> = s.chars().map(digit).collect::<Option<_>>()?;
    let mut total = 0;
    for (k, &v) in vals.iter().enumerate() {
        if vals.get(k + 1).is_some_and(|&n| n > v) {
            total -= v as i64;
        } else {
            total += v as i64;
        }
    }
    let total = u32::try_from(total)
        .ok()
        .filter(|&t| (1..4000).contains(&t))?;
    (to_roman(total) == s).then_some(total)
}

fn to_roman(mut n: u32) -> String {
    const T: [(u32, &str); 13] = [
        (1000, "M"),
        (900, "CM"),
        (500, "D"),
        (400, "CD"),
        (100, "C"),
        (90, "XC"),
        (50, "L"),
        (40, "XL"),
        (10, "X"),
        (9, "IX"),
        (5, "V"),
        (4, "IV"),
        (1, "I"),
    ];
    let mut s = String::new();
    for (v, r) in T {
        while n >= v {
            s.push_str(r);
            n -= v;
        }
    }
    s
}

/// Words after which a numeral is read as a cardinal, "I" included ("Chapter I").
const TITLES: &[&str] = &[
    "chapter", "part", "volume", "vol", "book", "act", "scene", "section", "article", "phase",
    "stage", "level", "type", "class", "title", "episode", "season", "series", "tier", "war",
    "bowl", "mark", "mk", "psalm", "canto", "appendix", "unit", "round", "grade", "gen",
];

/// Names that take regnal ordinals ("Henry the eighth").
const REGNAL: &[&str] = &[
    "Alexander",
    "Alfonso",
    "Benedict",
    "Catherine",
    "Charles",
    "Clement",
    "Constantine",
    "Edward",
    "Elizabeth",
    "Ferdinand",
    "Francis",
    "Frederick",
    "George",
    "Gregory",
    "Gustav",
    "Henry",
    "Innocent",
    "Ivan",
    "James",
    "John",
    "Leo",
    "Louis",
    "Ludwig",
    "Mary",
    "Napoleon",
    "Nicholas",
    "Paul",
    "Peter",
    "Philip",
    "Pius",
    "Ramesses",
    "Richard",
    "Robert",
    "Rudolf",
    "Stephen",
    "Urban",
    "Victor",
    "Wilhelm",
    "William",
];

pub fn try_roman(cx: &mut Ctx, i: usize) -> Option<usize> {
    let w = cx.word(i)?;
    let (base, poss) = match w.strip_suffix("'s") {
        Some(b) => (b, "'s"),
        None => (w, ""),
    };
    let v = value(base)?;
    let prev = cx.prev_word(i)?;
    if !prev.starts_with(char::is_uppercase) && !TITLES.contains(&prev) {
        return None;
    }
    let title = TITLES.contains(&prev.to_lowercase().as_str());
    let regnal = REGNAL.contains(&prev);
    let single = base.len() == 1;
    let text = if title {
        cardinal_u(u64::from(v))
    } else if regnal && base != "I" && (!single || base == "V" || base == "X") {
        format!("the {}", ordinal_words(&cardinal_u(u64::from(v))))
    } else if !single && base.chars().all(|c| matches!(c, 'I' | 'V' | 'X')) {
        // After another capitalised word ("Rocky II", "Apollo XI"); I, V, X only, so that
        // "Washington DC" or "Size XL"-like codes are left alone.
        cardinal_u(u64::from(v))
    } else {
        return None;
    };
    let text = format!("{text}{poss}");
    cx.emit(&text, i, i + 1);
    Some(i + 1)
}

#[cfg(test)]
mod tests {
    #[test]
    fn values() {
        assert_eq!(super::value("VIII"), Some(8));
        assert_eq!(super::value("XIV"), Some(14));
        assert_eq!(super::value("MCMXC"), Some(1990));
        assert_eq!(super::value("IIII"), None);
        assert_eq!(super::value("IC"), None);
        assert_eq!(super::value("Hi"), None);
    }
}
