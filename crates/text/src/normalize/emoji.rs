//! Emoji: read by name from a small table of common ones, or skipped (a setting). Skin tones,
//! variation selectors and zero-width-joiner sequences are folded into their first emoji; a
//! run of the same emoji is read once. Unknown emoji are skipped in both modes (a user
//! dictionary entry can name them).

use super::EmojiMode;
use super::ctx::Ctx;

const NAMES: &[(char, &str)] = &[
    ('😀', "grinning face"),
    ('😃', "grinning face"),
    ('😄', "grinning face"),
    ('😁', "beaming face"),
    ('😆', "laughing face"),
    ('😅', "grinning face with sweat"),
    ('😂', "face with tears of joy"),
    ('🤣', "rolling on the floor laughing"),
    ('🙂', "slightly smiling face"),
    ('🙃', "upside-down face"),
    ('😉', "winking face"),
    ('😊', "smiling face"),
    ('😇', "smiling face with halo"),
    ('🥰', "smiling face with hearts"),
    ('😍', "heart eyes"),
    ('😘', "face blowing a kiss"),
    ('😋', "yum"),
    ('😜', "winking face with tongue"),
    ('🤪', "zany face"),
    ('🤔', "thinking face"),
    ('🤨', "raised eyebrow"),
    ('😐', "neutral face"),
    ('😑', "expressionless face"),
    ('😶', "face without mouth"),
    ('🙄', "eye roll"),
    ('😏', "smirking face"),
    ('😬', "grimacing face"),
    ('😌', "relieved face"),
    ('😔', "pensive face"),
    ('😴', "sleeping face"),
    ('🤯', "mind blown"),
    ('🥳', "partying face"),
    ('😎', "smiling face with sunglasses"),
    ('🤓', "nerd face"),
    ('😕', "confused face"),
    ('😟', "worried face"),
    ('😮', "surprised face"),
    ('😲', "astonished face"),
    ('😳', "flushed face"),
    ('🥺', "pleading face"),
    ('😢', "crying face"),
    ('😭', "loudly crying face"),
    ('😱', "screaming face"),
    ('😞', "disappointed face"),
    ('😩', "weary face"),
    ('😤', "huffing face"),
    ('😡', "angry face"),
    ('😠', "angry face"),
    ('🤬', "swearing face"),
    ('💀', "skull"),
    ('💩', "pile of poo"),
    ('🤡', "clown"),
    ('👻', "ghost"),
    ('👽', "alien"),
    ('🤖', "robot"),
    ('🙈', "see-no-evil monkey"),
    ('❤', "red heart"),
    ('🧡', "orange heart"),
    ('💛', "yellow heart"),
    ('💚', "green heart"),
    ('💙', "blue heart"),
    ('💜', "purple heart"),
    ('🖤', "black heart"),
    ('💔', "broken heart"),
    ('💕', "two hearts"),
    ('💯', "hundred points"),
    ('💥', "collision"),
    ('💫', "dizzy"),
    ('💬', "speech bubble"),
    ('👋', "waving hand"),
    ('👌', "OK hand"),
    ('✌', "victory hand"),
    ('🤞', "crossed fingers"),
    ('👈', "pointing left"),
    ('👉', "pointing right"),
    ('👆', "pointing up"),
    ('👇', "pointing down"),
    ('👍', "thumbs up"),
    ('👎', "thumbs down"),
    ('👏', "clapping hands"),
    ('🙌', "raising hands"),
    ('🙏', "folded hands"),
    ('💪', "flexed biceps"),
    ('👀', "eyes"),
    ('🤷', "shrug"),
    ('🤦', "facepalm"),
    ('🎉', "party popper"),
    ('🎊', "confetti ball"),
    ('🎂', "birthday cake"),
    ('🎁', "wrapped gift"),
    ('🏆', "trophy"),
    ('🔥', "fire"),
    ('✨', "sparkles"),
    ('⭐', "star"),
    ('🌟', "glowing star"),
    ('★', "star"),
    ('☆', "white star"),
    ('⚡', "high voltage"),
    ('☀', "sun"),
    ('🌧', "rain cloud"),
    ('☔', "umbrella with rain"),
    ('❄', "snowflake"),
    ('🌈', "rainbow"),
    ('🌍', "globe"),
    ('🌎', "globe"),
    ('🌏', "globe"),
    ('🚀', "rocket"),
    ('✈', "airplane"),
    ('🚗', "car"),
    ('🏠', "house"),
    ('☕', "hot beverage"),
    ('🍕', "pizza"),
    ('🍺', "beer"),
    ('🍷', "wine glass"),
    ('🍎', "red apple"),
    ('🐶', "dog face"),
    ('🐱', "cat face"),
    ('🐛', "bug"),
    ('🦀', "crab"),
    ('🐍', "snake"),
    ('💡', "light bulb"),
    ('📌', "pushpin"),
    ('📎', "paperclip"),
    ('📅', "calendar"),
    ('📆', "calendar"),
    ('📧', "e-mail"),
    ('📞', "telephone"),
    ('📱', "mobile phone"),
    ('💻', "laptop"),
    ('📝', "memo"),
    ('📚', "books"),
    ('📣', "megaphone"),
    ('🔔', "bell"),
    ('🔒', "locked"),
    ('🔑', "key"),
    ('🔗', "link"),
    ('🔍', "magnifying glass"),
    ('⏰', "alarm clock"),
    ('⌛', "hourglass"),
    ('⏳', "hourglass"),
    ('💰', "money bag"),
    ('💸', "money with wings"),
    ('🧵', "thread"),
    ('✅', "check mark"),
    ('✔', "check mark"),
    ('✓', "check mark"),
    ('☑', "check box with check"),
    ('❌', "cross mark"),
    ('✗', "cross mark"),
    ('✘', "cross mark"),
    ('❎', "cross mark"),
    ('❗', "exclamation mark"),
    ('❓', "question mark"),
    ('⚠', "warning"),
    ('🚫', "prohibited"),
    ('⛔', "no entry"),
    ('🛑', "stop sign"),
    ('🆕', "new"),
    ('🆗', "OK button"),
    ('➡', "right arrow"),
    ('⬅', "left arrow"),
    ('⬆', "up arrow"),
    ('⬇', "down arrow"),
    ('🔴', "red circle"),
    ('🟢', "green circle"),
    ('🔵', "blue circle"),
    ('🟡', "yellow circle"),
];

/// Pictographic ranges (emoji, dingbats, arrows and stars used as emoji).
pub fn is_emoji(c: char) -> bool {
    let cp = c as u32;
    (0x1F000..=0x1FAFF).contains(&cp)
        || (0x2600..=0x27BF).contains(&cp)
        || (0x2B00..=0x2BFF).contains(&cp)
        || (0x2300..=0x23FF).contains(&cp)
        || matches!(cp, 0x2190..=0x21FF | 0x3030 | 0x303D | 0x3297 | 0x3299)
}

/// Characters that modify the emoji before them.
fn is_modifier(c: char) -> bool {
    matches!(c as u32, 0xFE00..=0xFE0F | 0x1F3FB..=0x1F3FF | 0xE0020..=0xE007F | 0x20E3)
}

fn is_regional(c: char) -> bool {
    (0x1F1E6..=0x1F1FF).contains(&(c as u32))
}

/// Name of one emoji character, if known.
pub fn name(c: char) -> Option<&'static str> {
    NAMES.iter().find(|(e, _)| *e == c).map(|(_, n)| *n)
}

/// One emoji with its modifiers and joined parts, starting at token `i`: (end, base char).
fn sequence(cx: &Ctx, i: usize) -> Option<(usize, char)> {
    let base = cx.sym(i)?;
    if !is_emoji(base) {
        return None;
    }
    let mut j = i + 1;
    if is_regional(base) && cx.sym(j).is_some_and(is_regional) {
        j += 1;
    }
    loop {
        match cx.sym(j) {
            Some(c) if is_modifier(c) => j += 1,
            Some('\u{200D}') if cx.sym(j + 1).is_some_and(is_emoji) => j += 2,
            _ => break,
        }
    }
    Some((j, base))
}

pub fn try_emoji(cx: &mut Ctx, i: usize) -> Option<usize> {
    let (mut j, base) = sequence(cx, i)?;
    // Collapse a run of the same emoji.
    while let Some((k, b)) = sequence(cx, j) {
        if b != base {
            break;
        }
        j = k;
    }
    if cx.opts.emoji == EmojiMode::Name {
        let n = if is_regional(base) {
            Some("flag")
        } else {
            name(base)
        };
        if let Some(n) = n {
            cx.emit(n, i, j);
        }
    }
    Some(j)
}
