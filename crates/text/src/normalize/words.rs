//! Numbers as English words (US style: no "and" after hundred).

const ONES: [&str; 20] = [
    "zero",
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "eleven",
    "twelve",
    "thirteen",
    "fourteen",
    "fifteen",
    "sixteen",
    "seventeen",
    "eighteen",
    "nineteen",
];
const TENS: [&str; 10] = [
    "", "", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety",
];
const SCALES: [&str; 12] = [
    "",
    "thousand",
    "million",
    "billion",
    "trillion",
    "quadrillion",
    "quintillion",
    "sextillion",
    "septillion",
    "octillion",
    "nonillion",
    "decillion",
];

/// 0..=99.
pub fn below_100(n: u32) -> String {
    if n < 20 {
        ONES[n as usize].to_string()
    } else if n.is_multiple_of(10) {
        TENS[(n / 10) as usize].to_string()
    } else {
        format!("{}-{}", TENS[(n / 10) as usize], ONES[(n % 10) as usize])
    }
}

fn below_1000(n: u32, out: &mut Vec<String>) {
    if n >= 100 {
        out.push(ONES[(n / 100) as usize].to_string());
        out.push("hundred".into());
    }
    if !n.is_multiple_of(100) || n == 0 {
        out.push(below_100(n % 100));
    }
}

/// A digit string read as a cardinal ("1200" → "one thousand two hundred"). Leading zeros
/// are ignored; more digits than the scale names cover are read one by one.
pub fn cardinal(digits: &str) -> String {
    let d = digits.trim_start_matches('0');
    if d.is_empty() {
        return "zero".into();
    }
    if d.len() > 3 * SCALES.len() || !d.bytes().all(|b| b.is_ascii_digit()) {
        return digit_by_digit(digits);
    }
    let groups: Vec<u32> = {
        let mut g = Vec::new();
        let bytes = d.as_bytes();
        let first = bytes.len() % 3;
        let mut start = 0;
        if first != 0 {
            g.push(parse_small(&d[..first]));
            start = first;
        }
        while start < bytes.len() {
            g.push(parse_small(&d[start..start + 3]));
            start += 3;
        }
        g
    };
    let mut out = Vec::new();
    let n = groups.len();
    for (k, &g) in groups.iter().enumerate() {
        if g == 0 {
            continue;
        }
        below_1000(g, &mut out);
        let scale = SCALES[n - 1 - k];
        if !scale.is_empty() {
            out.push(scale.into());
        }
    }
    out.join(" ")
}

fn parse_small(s: &str) -> u32 {
    s.bytes().fold(0, |a, b| a * 10 + u32::from(b - b'0'))
}

pub fn cardinal_u(n: u64) -> String {
    cardinal(&n.to_string())
}

/// "123" → "one two three".
pub fn digit_by_digit(digits: &str) -> String {
    let mut out = String::with_capacity(digits.len() * 5);
    for b in digits.bytes().filter(u8::is_ascii_digit) {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(ONES[usize::from(b - b'0')]);
    }
    out
}

/// The ordinal of a cardinal phrase: its last word changes ("twenty-one" → "twenty-first").
pub fn ordinal_words(cardinal: &str) -> String {
    let (head, last) = match cardinal.rfind([' ', '-']) {
        Some(p) => cardinal.split_at(p + 1),
        None => ("", cardinal),
    };
    let last = match last {
        "one" => "first".to_string(),
        "two" => "second".into(),
        "three" => "third".into(),
        "five" => "fifth".into(),
        "eight" => "eighth".into(),
        "nine" => "ninth".into(),
        "twelve" => "twelfth".into(),
        w if w.ends_with('y') => format!("{}ieth", &w[..w.len() - 1]),
        w => format!("{w}th"),
    };
    format!("{head}{last}")
}

pub fn ordinal(digits: &str) -> String {
    ordinal_words(&cardinal(digits))
}

/// Plural of a number phrase ("nineteen nineties", "two thousands").
pub fn plural_words(words: &str) -> String {
    if let Some(stem) = words.strip_suffix('y') {
        format!("{stem}ies")
    } else if words.ends_with('x') {
        format!("{words}es")
    } else {
        format!("{words}s")
    }
}

/// A year read the way people say it: 1945 → "nineteen forty-five", 1900 → "nineteen
/// hundred", 1905 → "nineteen oh five", 2005 → "two thousand five", 2026 → "twenty
/// twenty-six". `None` outside 1000..=2999 with two-part readings.
pub fn year(n: u32) -> Option<String> {
    if !(1000..=2999).contains(&n) {
        return None;
    }
    let (hi, lo) = (n / 100, n % 100);
    if (2000..2010).contains(&n) || n.is_multiple_of(1000) {
        return Some(cardinal_u(u64::from(n)));
    }
    if hi % 10 == 0 && lo < 10 {
        // 1001..1009 etc.: "one thousand five".
        return Some(cardinal_u(u64::from(n)));
    }
    Some(match lo {
        0 => format!("{} hundred", below_100(hi)),
        1..=9 => format!("{} oh {}", below_100(hi), ONES[lo as usize]),
        _ => format!("{} {}", below_100(hi), below_100(lo)),
    })
}

/// "4.5" → "four point five"; the fraction is read digit by digit.
pub fn decimal(int: &str, frac: &str) -> String {
    let int = if int.is_empty() { "0" } else { int };
    if frac.is_empty() {
        return cardinal(int);
    }
    format!("{} point {}", cardinal(int), digit_by_digit(frac))
}

/// Denominator words for fractions ("quarter", "third"), singular.
pub fn denominator(d: &str) -> String {
    match d.trim_start_matches('0') {
        "2" => "half".into(),
        "4" => "quarter".into(),
        // "hundredth", not "one hundredth": "ninety-nine hundredths".
        other => {
            let o = ordinal(other);
            o.strip_prefix("one ").map_or(o.clone(), str::to_string)
        }
    }
}

/// "3/4" → "three quarters", "1/2" → "one half".
pub fn fraction(num: &str, den: &str) -> String {
    let one = num.trim_start_matches('0') == "1";
    let d = denominator(den);
    let d = if one {
        d
    } else if d == "half" {
        "halves".into()
    } else {
        format!("{d}s")
    };
    format!("{} {d}", cardinal(num))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cardinals() {
        assert_eq!(cardinal("0"), "zero");
        assert_eq!(cardinal("10"), "ten");
        assert_eq!(cardinal("45"), "forty-five");
        assert_eq!(cardinal("1200"), "one thousand two hundred");
        assert_eq!(cardinal("1000000"), "one million");
        assert_eq!(cardinal("1000001"), "one million one");
        assert_eq!(cardinal("007"), "seven");
    }

    #[test]
    fn ordinals_and_years() {
        assert_eq!(ordinal("21"), "twenty-first");
        assert_eq!(ordinal("12"), "twelfth");
        assert_eq!(ordinal("40"), "fortieth");
        assert_eq!(ordinal("100"), "one hundredth");
        assert_eq!(year(1945).unwrap(), "nineteen forty-five");
        assert_eq!(year(1900).unwrap(), "nineteen hundred");
        assert_eq!(year(1905).unwrap(), "nineteen oh five");
        assert_eq!(year(2000).unwrap(), "two thousand");
        assert_eq!(year(2007).unwrap(), "two thousand seven");
        assert_eq!(year(2026).unwrap(), "twenty twenty-six");
        assert_eq!(plural_words("nineteen ninety"), "nineteen nineties");
    }
}
