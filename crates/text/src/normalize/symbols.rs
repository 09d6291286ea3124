//! Symbols and punctuation. Each symbol has the verbosity level from which it is spoken, as in
//! NVDA and Orca; prosody marks (. , ? ! ; :) are kept at every level so espeak still pauses.

use super::PunctuationVerbosity as V;
use super::ctx::{Ctx, Next};
use super::{emoji, numbers};

/// (name, level it is spoken from). Context rules below override some.
fn info(c: char) -> Option<(&'static str, V)> {
    Some(match c {
        '&' => ("and", V::Some),
        '@' => ("at", V::Some),
        '#' => ("hash", V::Most),
        '+' => ("plus", V::Some),
        '=' => ("equals", V::Some),
        '×' => ("times", V::Some),
        '÷' => ("divided by", V::Some),
        '±' => ("plus or minus", V::Some),
        '<' => ("less than", V::Some),
        '>' => ("greater than", V::Some),
        '≤' => ("less than or equal to", V::Some),
        '≥' => ("greater than or equal to", V::Some),
        '≠' => ("not equal to", V::Some),
        '≈' => ("approximately", V::Some),
        '∞' => ("infinity", V::Some),
        '√' => ("square root of", V::Some),
        '%' => ("percent", V::Some),
        '‰' => ("per mille", V::Some),
        '°' => ("degrees", V::Some),
        '$' => ("dollar", V::Some),
        '€' => ("euro", V::Some),
        '£' => ("pound", V::Some),
        '¥' => ("yen", V::Some),
        '¢' => ("cents", V::Some),
        '©' => ("copyright", V::Some),
        '®' => ("registered", V::Some),
        '™' => ("trademark", V::Some),
        '§' => ("section", V::Some),
        '→' => ("right arrow", V::Some),
        '←' => ("left arrow", V::Some),
        '↑' => ("up arrow", V::Some),
        '↓' => ("down arrow", V::Some),
        '⇒' => ("implies", V::Some),
        '/' => ("slash", V::Some),
        '\\' => ("backslash", V::Most),
        '*' => ("star", V::Most),
        '~' => ("tilde", V::Most),
        '^' => ("caret", V::Most),
        '_' => ("underscore", V::Most),
        '|' => ("bar", V::Most),
        '"' => ("quote", V::Most),
        '(' => ("left paren", V::Most),
        ')' => ("right paren", V::Most),
        '[' => ("left bracket", V::Most),
        ']' => ("right bracket", V::Most),
        '{' => ("left brace", V::Most),
        '}' => ("right brace", V::Most),
        '¶' => ("paragraph", V::Most),
        '†' => ("dagger", V::Most),
        '‡' => ("double dagger", V::Most),
        '•' | '◦' | '▪' | '‣' | '●' | '○' | '■' | '□' | '·' => ("bullet", V::Most),
        '-' => ("dash", V::Most),
        '–' | '—' | '―' => ("dash", V::Most),
        '`' => ("grave", V::All),
        '\'' => ("tick", V::All),
        '.' => ("dot", V::All),
        ',' => ("comma", V::All),
        ';' => ("semicolon", V::All),
        ':' => ("colon", V::All),
        '?' => ("question", V::All),
        '!' => ("bang", V::All),
        '…' => ("dot dot dot", V::All),
        '¡' | '¿' => ("", V::All),
        _ => return None,
    })
}

/// Speak `name` for tokens `i..j` if the verbosity reaches `level`.
fn say(cx: &mut Ctx, name: &str, level: V, i: usize, j: usize) -> bool {
    if cx.verbosity() >= level && !name.is_empty() {
        cx.emit(name, i, j);
        true
    } else {
        false
    }
}

fn is_open_or_close(c: char) -> bool {
    matches!(c, '(' | ')' | '[' | ']' | '{' | '}')
}

/// A quantity ended just before token `i` (possibly across one gap).
fn after_quantity(cx: &Ctx, i: usize) -> bool {
    cx.num_end == i || (i > 0 && cx.gap(i - 1) && cx.num_end == i - 1)
}

fn before_number(cx: &Ctx, j: usize) -> bool {
    let k = cx.skip_gap(j);
    numbers::starts_number(cx, k) || matches!(cx.sym(k), Some('$' | '€' | '£' | '¥' | '₹'))
}

pub fn try_symbol(cx: &mut Ctx, i: usize) -> Option<usize> {
    let c = cx.sym(i)?;
    let src = cx.src(i, i + 1);
    let all = cx.verbosity() >= V::All;
    match c {
        '.' | '…' => {
            // A run of dots is an ellipsis.
            let mut j = i + 1;
            while matches!(cx.sym(j), Some('.' | '…')) {
                j += 1;
            }
            let ellipsis = c == '…' || j - i >= 2;
            // "Node.js", "file.txt": a dot inside a word.
            if !ellipsis
                && i > 0
                && !cx.boundary(i - 1)
                && cx.word(i + 1).is_some()
                && cx.word(i - 1).is_some()
            {
                let lower = cx
                    .word(i + 1)
                    .is_some_and(|w| w.starts_with(char::is_lowercase));
                if lower {
                    cx.emit("dot", i, i + 1);
                    return Some(i + 1);
                }
            }
            let src = cx.src(i, j);
            if ellipsis {
                say(cx, "dot dot dot", V::All, i, j);
                if matches!(cx.next_start(j), Next::Lower | Next::Attached) {
                    cx.out.pause(src);
                } else {
                    cx.out.stop(src);
                }
            } else {
                say(cx, "dot", V::All, i, j);
                cx.out.stop(src);
            }
            Some(j)
        }
        '?' | '!' => {
            let mut j = i + 1;
            while matches!(cx.sym(j), Some('?' | '!')) {
                j += 1;
            }
            say(
                cx,
                if c == '?' { "question" } else { "bang" },
                V::All,
                i,
                i + 1,
            );
            cx.out.punct(c, cx.src(i, j));
            Some(j)
        }
        ',' | ';' | ':' => {
            say(cx, info(c)?.0, V::All, i, i + 1);
            cx.out.punct(c, src);
            Some(i + 1)
        }
        '-' | '–' | '—' | '―' => {
            let mut j = i + 1;
            while cx.sym(j) == Some(c) {
                j += 1;
            }
            let spaced_before = i == 0 || cx.boundary(i - 1);
            let spaced_after = cx.boundary(j);
            // Ranges: "10–20", "10:30–11:45", "$5-$10", "1939 – 1945".
            if j == i + 1 && after_quantity(cx, i) && before_number(cx, j) {
                if c == '-' && spaced_before && spaced_after {
                    cx.emit("minus", i, j);
                } else {
                    cx.emit("to", i, j);
                }
                return Some(j);
            }
            // "well-known", "five-year": a hyphen joins words.
            if c == '-' && j == i + 1 && !spaced_before && !spaced_after && i > 0 {
                if cx.word(j).is_some() && (cx.word(i - 1).is_some() || cx.num_end == i) {
                    cx.out.hyphen(src);
                    return Some(j);
                }
                // "COVID-19": just a space.
                return Some(j);
            }
            if !say(cx, "dash", V::Most, i, j) || all {
                cx.out.pause(cx.src(i, j));
            }
            Some(j)
        }
        '/' => {
            // "$45/month", "5 km/h" (handled as a unit), "and/or".
            if after_quantity(cx, i) && cx.word(i + 1).is_some() {
                cx.emit("per", i, i + 1);
                return Some(i + 1);
            }
            if i > 0 && cx.is_word(i - 1, "and") && cx.is_word(i + 1, "or") {
                return Some(i + 1);
            }
            say(cx, "slash", V::Some, i, i + 1);
            Some(i + 1)
        }
        '#' if cx.num(i + 1).is_some() => {
            cx.emit("number", i, i + 1);
            Some(i + 1)
        }
        '#' if cx.word(i + 1).is_some() && (i == 0 || cx.boundary(i - 1)) => {
            say(cx, "hashtag", V::Some, i, i + 1);
            Some(i + 1)
        }
        '*' if after_quantity(cx, i) && before_number(cx, i + 1) => {
            cx.emit("times", i, i + 1);
            Some(i + 1)
        }
        '~' if before_number(cx, i + 1) && (i == 0 || cx.boundary(i - 1)) => {
            cx.emit("about", i, i + 1);
            Some(i + 1)
        }
        '+' if after_quantity(cx, i) && !before_number(cx, i + 1) => {
            // "18+", "1000+ users"
            cx.emit("plus", i, i + 1);
            Some(i + 1)
        }
        '(' | ')' | '[' | ']' | '{' | '}' | '"' => {
            let spoken = say(cx, info(c)?.0, V::Most, i, i + 1);
            if is_open_or_close(c) && (!spoken || all) && cx.out.ends_with_word() {
                // Brackets are heard as a short pause.
                let next_is_punct = matches!(
                    cx.sym(cx.skip_gap(i + 1)),
                    Some('.' | ',' | ';' | ':' | '?' | '!')
                );
                // "f(x)": an opening bracket glued to a word is no pause.
                let glued_open = matches!(c, '(' | '[' | '{') && i > 0 && !cx.boundary(i - 1);
                if !next_is_punct && !glued_open {
                    cx.out.pause(src);
                }
            }
            Some(i + 1)
        }
        _ => {
            if let Some((name, level)) = info(c) {
                if say(cx, name, level, i, i + 1) {
                    cx.num_end = usize::MAX;
                } else if matches!(c, '•' | '·' | '|') {
                    cx.out.pause(src);
                }
                return Some(i + 1);
            }
            if let Some(j) = emoji::try_emoji(cx, i) {
                return Some(j);
            }
            // Anything else (stray marks, unknown symbols, control characters) is silent.
            Some(i + 1)
        }
    }
}
