//! Digit strings, read digit by digit in groups with a pause between them: phone numbers
//! ("555.123.4567", "+1 (555) 123-4567"), IP addresses, card numbers and card endings
//! ("ending in 4321"), one-time codes and PINs, ZIP codes ("IL 62704", "ZIP 90210-1234").
//! A digit string is recognised by its shape or by the words around it.

use super::acronyms::spell;
use super::address;
use super::classify::{Class, Item};
use super::ctx::Ctx;
use super::words::{cardinal, digit_by_digit};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Digits {
    pub groups: Vec<String>,
    /// Between groups: ", " (a pause) or " dot ".
    pub joiner: &'static str,
    /// A leading "+" (an international number).
    pub plus: bool,
    /// Read after the groups ("colon eight zero eight zero" of an IP address and port).
    pub tail: String,
}

impl Digits {
    fn new(groups: Vec<String>, joiner: &'static str) -> Self {
        Self {
            groups,
            joiner,
            plus: false,
            tail: String::new(),
        }
    }

    pub fn words(&self) -> String {
        // A US toll-free prefix is said "eight hundred": "1-800-555-0199".
        let toll_free = |k: usize| {
            self.joiner == ", "
                && self.groups.len() >= 3
                && self.groups[k] == "800"
                && (k == 0 || (k == 1 && self.groups[0] == "1"))
        };
        let read: Vec<String> = self
            .groups
            .iter()
            .enumerate()
            .map(|(k, g)| {
                if toll_free(k) {
                    "eight hundred".to_string()
                } else {
                    digit_by_digit(g)
                }
            })
            .collect();
        let mut text = read.join(self.joiner);
        if self.plus {
            text = format!("plus {text}");
        }
        if !self.tail.is_empty() {
            text = format!("{text} {}", self.tail);
        }
        text
    }
}

/// An unbroken run cut for reading: threes and fours ("123456" → "123 456", "12345678" →
/// "1234 5678"); up to five digits stay whole.
fn chunks(d: &str) -> Vec<String> {
    let n = d.len();
    if n <= 5 {
        return vec![d.to_string()];
    }
    let sizes: Vec<usize> = if n.is_multiple_of(4) {
        vec![4; n / 4]
    } else {
        let (mut threes, fours) = match n % 3 {
            0 => (n / 3, 0),
            1 => ((n - 4) / 3, 1),
            _ => ((n - 8) / 3, 2),
        };
        let mut v = Vec::new();
        while threes > 0 {
            v.push(3);
            threes -= 1;
        }
        v.extend(std::iter::repeat_n(4, fours));
        v
    };
    let mut out = Vec::new();
    let mut at = 0;
    for s in sizes {
        out.push(d[at..at + s].to_string());
        at += s;
    }
    out
}

/// Words just before a number that make it a code read digit by digit (three digits or
/// more).
const CUES: &[&str] = &[
    "code",
    "codes",
    "otp",
    "pin",
    "passcode",
    "zip",
    "zipcode",
    "postcode",
    "ending",
    "ends",
    "ref",
    "reference",
    "confirmation",
    "tracking",
    "serial",
    "invoice",
    "extension",
    "ext",
    "pnr",
    "routing",
    "imei",
    "voucher",
    "coupon",
];

/// Cues that are also ordinary words before quantities ("order 500 units", "call 100
/// people"): a code after "number" or "#", or a long one.
const WEAK_CUES: &[&str] = &[
    "account",
    "acct",
    "card",
    "booking",
    "policy",
    "member",
    "membership",
    "customer",
    "order",
    "tel",
    "phone",
    "call",
    "fax",
    "mobile",
    "cell",
];

/// Words that may stand between a cue and its number ("code is", "ending in").
const FILLERS: &[&str] = &["is", "was", "number", "no", "num", "in", "with"];

/// Words before "ending in" that make the number a year: "the year ending in 2020".
const PERIODS: &[&str] = &[
    "year", "years", "decade", "season", "period", "quarter", "month", "week",
];

/// A cue before the number at `i` (of `digits` digits). A weak cue needs "number" or "#"
/// before the number, or five digits (seven after a phone word, or an emergency number).
fn cue_before(cx: &Ctx, i: usize, digits: usize) -> bool {
    let before = cx.words_before(i, 4);
    if before.iter().any(|w| PERIODS.contains(&w.as_str())) {
        return false;
    }
    let marked = (i > 0 && cx.is_sym(cx.skip_gap_back(i - 1), '#'))
        || before
            .first()
            .is_some_and(|w| matches!(w.as_str(), "number" | "no" | "num"));
    let phone = before.first().is_some_and(|w| {
        matches!(
            w.as_str(),
            "tel" | "phone" | "call" | "fax" | "mobile" | "cell"
        )
    });
    let emergency = phone && matches!(cx.text(i), "911" | "999" | "112" | "000");
    let weak_ok = marked || emergency || digits >= if phone { 7 } else { 5 };
    let is_cue =
        |w: &String| CUES.contains(&w.as_str()) || (weak_ok && WEAK_CUES.contains(&w.as_str()));
    let cue = |k: usize| before.get(k).is_some_and(is_cue);
    let filler = |k: usize| before.get(k).is_some_and(|w| FILLERS.contains(&w.as_str()));
    cue(0) || (filler(0) && cue(1)) || (filler(0) && filler(1) && cue(2))
}

/// "ext. 567", "acct. 1234": an abbreviated cue with its dot.
fn abbreviated_cue(cx: &Ctx, i: usize) -> bool {
    i >= 3
        && cx.gap(i - 1)
        && cx.is_sym(i - 2, '.')
        && cx.word(i - 3).is_some_and(|w| {
            let w = w.to_lowercase();
            w.len() <= 4 && (CUES.contains(&w.as_str()) || WEAK_CUES.contains(&w.as_str()))
        })
}

/// "4321 is your code", "482913 is your verification code".
fn cue_after(cx: &Ctx, end: usize) -> bool {
    let mut words = Vec::new();
    let mut k = end;
    while words.len() < 5 && cx.gap(k) && cx.word(k + 1).is_some() {
        words.push(cx.text(k + 1).to_lowercase());
        k += 2;
    }
    words.len() >= 3
        && words[0] == "is"
        && words[1] == "your"
        && words[2..]
            .iter()
            .take(3)
            .any(|w| matches!(w.as_str(), "code" | "pin" | "passcode" | "otp"))
}

/// A masked card number before `i`: "**** 4321", "xxxx-4321", "•••• 4321".
fn masked_before(cx: &Ctx, i: usize) -> bool {
    let Some(p) = i.checked_sub(1) else {
        return false;
    };
    let p = if cx.gap(p) || cx.is_sym(p, '-') {
        match p.checked_sub(1) {
            Some(q) => q,
            None => return false,
        }
    } else {
        p
    };
    let masked_word = cx
        .word(p)
        .is_some_and(|w| w.len() >= 3 && w.chars().all(|c| c == 'x' || c == 'X'));
    let mask = |k: usize| matches!(cx.sym(k), Some('*' | '•' | '●' | '∙' | '·'));
    masked_word || (p >= 2 && mask(p) && mask(p - 1) && mask(p - 2))
}

/// A US state code just before `i` ("IL 62704").
fn state_before(cx: &Ctx, i: usize) -> bool {
    i >= 2
        && cx.gap(i - 1)
        && cx
            .word(i - 2)
            .is_some_and(|w| address::state_name(w).is_some())
}

/// The digit groups starting at `i`, joined by single spaces (groups of three or more) or
/// dashes: (groups, end).
fn run(cx: &Ctx, i: usize) -> Option<(Vec<String>, usize)> {
    let mut groups = vec![cx.num(i)?.to_string()];
    let mut j = i + 1;
    while groups.len() < 6 {
        let spaced = cx.gap(j) && cx.text(j) == " ";
        let dashed = cx.is_sym(j, '-');
        match cx.num(j + 1) {
            Some(g) if (spaced && g.len() >= 3) || (dashed && g.len() >= 2) => {
                groups.push(g.to_string());
                j += 2;
            }
            _ => break,
        }
    }
    // Not the start of a decimal, a time or a longer expression.
    if matches!(cx.sym(j), Some('.' | ':' | ',' | '/')) && cx.num(j + 1).is_some() {
        return None;
    }
    Some((groups, j))
}

/// A number read as a code because of the words around it: "ending in 4321", "PIN 1234",
/// "ZIP 90210", "IL 62704", "**** 4321", "123456 is your code".
pub fn cued(cx: &Ctx, i: usize) -> Option<Item> {
    cx.num(i)?;
    let (groups, end) = run(cx, i)?;
    let total: usize = groups.iter().map(String::len).sum();
    let zip = state_before(cx, i) && groups[0].len() == 5 && groups.len() <= 2;
    let cued =
        total >= 3 && (cue_before(cx, i, total) || abbreviated_cue(cx, i) || cue_after(cx, end));
    if !(cued || zip || (total >= 2 && masked_before(cx, i))) {
        return None;
    }
    let groups = if groups.len() == 1 {
        chunks(&groups[0])
    } else {
        groups
    };
    Some(Item::new(i, end, Class::Digits(Digits::new(groups, ", "))))
}

/// A letters-and-digits code after a cue: "tracking number 1Z999AA1012", "ref AB12CD".
/// Read character by character: letters spelled, digits one by one.
pub fn alnum_code(cx: &Ctx, i: usize) -> Option<Item> {
    if cx.num(i).is_none() && cx.word(i).is_none() {
        return None;
    }
    let mut j = i;
    let mut text = String::new();
    while j < cx.len() && j < i + 24 && (cx.num(j).is_some() || cx.word(j).is_some()) {
        text.push_str(cx.text(j));
        j += 1;
    }
    let letters = text.chars().filter(char::is_ascii_alphabetic).count();
    let digits = text.chars().filter(char::is_ascii_digit).count();
    if !(cx.boundary(j) || matches!(cx.sym(j), Some('.' | ',' | ';' | ')')))
        || letters == 0
        || digits == 0
        || text.len() < 4
        || !text.is_ascii()
        || !(cue_before(cx, i, digits) || abbreviated_cue(cx, i))
    {
        return None;
    }
    let mut parts: Vec<String> = Vec::new();
    for k in i..j {
        let t = cx.text(k);
        parts.push(if cx.num(k).is_some() {
            digit_by_digit(t)
        } else {
            spell(&t.to_uppercase())
        });
    }
    Some(Item::new(i, j, Class::Words(parts.join(" "))))
}

/// Masked groups of a card number ("xxxx-xxxx-", "XXXX "), silent before its last digits.
pub fn try_mask(cx: &mut Ctx, i: usize) -> Option<usize> {
    let is_mask = |k: usize| {
        cx.word(k)
            .is_some_and(|w| w.len() >= 3 && w.chars().all(|c| c == 'x' || c == 'X'))
    };
    if !is_mask(i) {
        return None;
    }
    let mut j = i;
    while is_mask(j) && (cx.is_sym(j + 1, '-') || cx.gap(j + 1)) {
        j += 2;
        if cx.num(j).is_some() {
            return Some(j);
        }
    }
    None
}

/// Digit strings known by their shape: phone numbers, IP addresses, card numbers.
pub fn pattern(cx: &Ctx, i: usize) -> Option<Item> {
    phone(cx, i).or_else(|| ip(cx, i)).or_else(|| card(cx, i))
}

/// "192.168.0.1", "10.0.0.1:8080".
fn ip(cx: &Ctx, i: usize) -> Option<Item> {
    let mut parts = Vec::new();
    let mut j = i;
    loop {
        let p = cx
            .num(j)
            .filter(|p| p.len() <= 3 && p.parse::<u32>().is_ok_and(|v| v <= 255))?;
        parts.push(p.to_string());
        j += 1;
        if parts.len() == 4 {
            break;
        }
        if !cx.is_sym(j, '.') {
            return None;
        }
        j += 1;
    }
    if cx.is_sym(j, '.') && cx.num(j + 1).is_some() {
        return None;
    }
    let mut d = Digits::new(parts, " dot ");
    if cx.is_sym(j, ':')
        && let Some(port) = cx.num(j + 1).filter(|p| p.len() <= 5)
    {
        d.tail = format!("colon {}", digit_by_digit(port));
        j += 2;
    } else if cx.is_sym(j, '/')
        && let Some(bits) = cx.num(j + 1).filter(|b| b.len() <= 2)
    {
        d.tail = format!("slash {}", cardinal(bits));
        j += 2;
    }
    Some(Item::new(i, j, Class::Digits(d)))
}

/// "4111 1111 1111 1111", "4111-1111-1111-1111", "3782 822463 10005".
fn card(cx: &Ctx, i: usize) -> Option<Item> {
    let (groups, end) = run(cx, i)?;
    let lens: Vec<usize> = groups.iter().map(String::len).collect();
    (lens == [4, 4, 4, 4] || lens == [4, 6, 5])
        .then(|| Item::new(i, end, Class::Digits(Digits::new(groups, ", "))))
}

/// Phone-like digit groups: "+1 555 123 4567", "(555) 123-4567", "+1 (555) 123-4567",
/// "555-123-4567", "555.123.4567", "555-1234", "020 7946 0958".
fn phone(cx: &Ctx, i: usize) -> Option<Item> {
    let mut groups: Vec<String> = Vec::new();
    let mut j = i;
    let plus = cx.is_sym(j, '+');
    if plus {
        j += 1;
    }
    // A country code before a bracketed area code: "+1 (555)", "1 (800)".
    if let Some(c) = cx.num(j).filter(|c| c.len() <= 3)
        && cx.gap(j + 1)
        && cx.is_sym(j + 2, '(')
    {
        groups.push(c.to_string());
        j += 2;
    }
    let mut paren = false;
    if cx.is_sym(j, '(') {
        let d = cx.num(j + 1)?;
        if !cx.is_sym(j + 2, ')') || d.len() > 4 {
            return None;
        }
        groups.push(d.to_string());
        j = cx.skip_gap(j + 3);
        paren = true;
    }
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
    let same_sep = seps.windows(2).all(|w| w[0] == w[1]);
    let spaced = seps.first() == Some(&' ');
    let dotted_phone = lens == [3, 3, 4] || lens == [1, 3, 3, 4];
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
            && (seps[0] != '.' || dotted_phone)
    };
    if !is_phone {
        return None;
    }
    let mut d = Digits::new(groups, ", ");
    d.plus = plus;
    Some(Item::new(i, j, Class::Digits(d)))
}

#[cfg(test)]
mod tests {
    use super::chunks;

    #[test]
    fn chunk_sizes() {
        let sizes = |d: &str| chunks(d).iter().map(String::len).collect::<Vec<_>>();
        assert_eq!(sizes("1234"), [4]);
        assert_eq!(sizes("12345"), [5]);
        assert_eq!(sizes("123456"), [3, 3]);
        assert_eq!(sizes("1234567"), [3, 4]);
        assert_eq!(sizes("12345678"), [4, 4]);
        assert_eq!(sizes("123456789"), [3, 3, 3]);
        assert_eq!(sizes("1234567890"), [3, 3, 4]);
        assert_eq!(sizes("12345678901"), [3, 4, 4]);
        assert_eq!(sizes("123456789012"), [4, 4, 4]);
    }
}
