//! Markdown and plain-text list structure: headings, bullets, numbered items, quotes, rules
//! and fences at line starts; emphasis, inline code, links and HTML tags inline. Markers are
//! dropped; headings and list items end with a sentence stop; fenced code is read with
//! symbols (verbosity at least "most").

use super::ctx::{Ctx, Line};
use super::lexer::Kind;
use super::words::cardinal;

/// Index of the first token of the next line (or the end).
fn line_end(cx: &Ctx, i: usize) -> usize {
    let mut j = i;
    while j < cx.len() && !matches!(cx.kind(j), Some(Kind::Space { newlines }) if newlines > 0) {
        j += 1;
    }
    j
}

fn is_fence(cx: &Ctx, i: usize) -> bool {
    let c = cx.sym(i);
    matches!(c, Some('`' | '~')) && cx.sym(i + 1) == c && cx.sym(i + 2) == c
}

/// At the start of a line. Returns where to continue after dropped markers.
pub fn line_start(cx: &mut Ctx, i: usize) -> Option<usize> {
    if is_fence(cx, i) {
        // The fence line (with its language tag) is not read.
        cx.code = !cx.code;
        let e = line_end(cx, i);
        let src = cx.src(i, e);
        cx.out.stop(src);
        return Some(e);
    }
    if cx.code {
        return None;
    }
    let c = cx.sym(i)?;
    // A rule: a line of only - * _ = (three or more).
    if matches!(c, '-' | '*' | '_' | '=') {
        let e = line_end(cx, i);
        let only = (i..e).all(|k| cx.gap(k) || cx.sym(k) == Some(c));
        if only && e - i >= 3 {
            let src = cx.src(i, e);
            cx.out.stop(src);
            return Some(e);
        }
    }
    // Headings and quotes: "## Title", "> quoted".
    if c == '#' || c == '>' {
        let mut j = i;
        while cx.sym(j) == Some(c) {
            j += 1;
        }
        if cx.gap(j) && (c == '>' || j - i <= 6) {
            if c == '#' {
                cx.line = Line::Block;
            }
            return Some(j + 1);
        }
        return None;
    }
    // Bullets.
    if matches!(
        c,
        '-' | '*' | '+' | '•' | '◦' | '▪' | '‣' | '●' | '○' | '■' | '□' | '–' | '·'
    ) && cx.gap(i + 1)
    {
        cx.line = Line::Block;
        let mut j = i + 2;
        // Task boxes: "- [ ]", "- [x]".
        if cx.is_sym(j, '[') {
            let (k, done) = if cx.is_sym(j + 1, ']') {
                (j + 2, false)
            } else if cx.gap(j + 1) && cx.is_sym(j + 2, ']') {
                (j + 3, false)
            } else if cx.word(j + 1).is_some_and(|w| w.eq_ignore_ascii_case("x"))
                && cx.is_sym(j + 2, ']')
            {
                (j + 3, true)
            } else {
                (j, false)
            };
            if k != j {
                cx.emit(if done { "done:" } else { "to do:" }, j, k);
                j = cx.skip_gap(k);
            }
        }
        return Some(j);
    }
    // Table separator rows: "|---|:---:|".
    if c == '|' {
        let e = line_end(cx, i);
        if (i..e).all(|k| cx.gap(k) || matches!(cx.sym(k), Some('|' | '-' | ':'))) {
            return Some(e);
        }
        cx.line = Line::Block;
        return Some(i + 1);
    }
    None
}

/// "1. Item" / "1) Item" at a line start: the number is read, the marker dropped.
pub fn numbered_item(cx: &mut Ctx, i: usize) -> Option<usize> {
    let d = cx.num(i)?;
    if d.len() > 3 || !matches!(cx.sym(i + 1), Some('.' | ')')) || !cx.gap(i + 2) {
        return None;
    }
    let w = cardinal(d);
    cx.emit(&w, i, i + 2);
    let src = cx.src(i + 1, i + 2);
    cx.out.pause(src);
    cx.line = Line::Block;
    Some(i + 3)
}

/// Inline markers. Returns where to continue when the token was a marker.
pub fn inline(cx: &mut Ctx, i: usize) -> Option<usize> {
    let c = cx.sym(i)?;
    match c {
        '`' => {
            let mut j = i;
            while cx.is_sym(j, '`') {
                j += 1;
            }
            cx.inline_code = !cx.inline_code;
            Some(j)
        }
        '*' | '_' | '~' if !cx.inline_code && !cx.code => {
            let mut j = i;
            while cx.is_sym(j, c) {
                j += 1;
            }
            if c == '~' && j - i != 2 {
                return None;
            }
            // Emphasis hugs a word: "*word", "word*", "**bold**".
            let before =
                i == 0 || cx.boundary(i - 1) || cx.sym(i - 1).is_some_and(|p| !p.is_alphanumeric());
            let after = cx.boundary(j) || cx.sym(j).is_some_and(|p| !p.is_alphanumeric());
            let opens = before && !cx.boundary(j);
            let closes = after && i > 0 && !cx.boundary(i - 1);
            // "snake_case" is not emphasis.
            if c == '_' && !before && !after {
                return None;
            }
            (opens || closes).then_some(j)
        }
        '!' if cx.is_sym(i + 1, '[') => {
            let (close, end) = link_target(cx, i + 1)?;
            cx.emit("image", i, i + 2);
            cx.skips.push((close, end));
            Some(i + 2)
        }
        '[' => {
            let (close, end) = link_target(cx, i)?;
            cx.skips.push((close, end));
            Some(i + 1)
        }
        '<' => html_tag(cx, i),
        _ => None,
    }
}

/// For "[text](target)" at `i`: (index of "]", index after ")"). Bounded look-ahead.
fn link_target(cx: &Ctx, i: usize) -> Option<(usize, usize)> {
    let limit = (i + 200).min(cx.len());
    let close = (i + 1..limit).find(|&k| {
        cx.is_sym(k, ']') || matches!(cx.kind(k), Some(Kind::Space { newlines }) if newlines > 0)
    })?;
    if !cx.is_sym(close, ']') || !cx.is_sym(close + 1, '(') {
        return None;
    }
    let limit = (close + 400).min(cx.len());
    let end = (close + 2..limit).find(|&k| cx.is_sym(k, ')') || cx.boundary(k))?;
    cx.is_sym(end, ')').then_some((close, end + 1))
}

/// "<br>", "</p>", "<div class=x>": dropped (a pause for block tags).
fn html_tag(cx: &mut Ctx, i: usize) -> Option<usize> {
    let name_at = if cx.is_sym(i + 1, '/') { i + 2 } else { i + 1 };
    let name = cx.word(name_at)?.to_ascii_lowercase();
    const TAGS: &[&str] = &[
        "a",
        "b",
        "i",
        "u",
        "em",
        "strong",
        "code",
        "pre",
        "span",
        "div",
        "p",
        "br",
        "hr",
        "li",
        "ul",
        "ol",
        "table",
        "tr",
        "td",
        "th",
        "h",
        "img",
        "sup",
        "sub",
        "small",
        "mark",
        "kbd",
        "blockquote",
        "details",
        "summary",
    ];
    if !TAGS.contains(&name.as_str()) {
        return None;
    }
    let limit = (i + 64).min(cx.len());
    let end = (name_at + 1..limit).find(|&k| cx.is_sym(k, '>') || cx.is_sym(k, '<'))?;
    if !cx.is_sym(end, '>') {
        return None;
    }
    if matches!(name.as_str(), "br" | "p" | "div" | "li" | "tr" | "hr" | "h") {
        let src = cx.src(i, end + 1);
        cx.out.pause(src);
    }
    Some(end + 1)
}
