//! Where a text's chapters begin, for an exported book's chapter marks: its markdown headings
//! (`# Title` … `###### Title`) when it has any, else its sections between blank lines. A
//! text of one section has none.

use std::borrow::Cow;

/// The longest title taken from a section's first line.
const MAX_TITLE_CHARS: usize = 60;

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Chapter {
    /// Byte offset of its first line in the text.
    pub start: usize,
    pub title: String,
}

/// The chapters of `text`, in order.
pub fn chapters(text: &str) -> Vec<Chapter> {
    let headings: Vec<Chapter> = lines(text)
        .filter_map(|(at, line)| {
            let (_, title) = heading(line)?;
            Some(Chapter {
                start: at,
                title: title.to_string(),
            })
        })
        .collect();
    if !headings.is_empty() {
        // Text before the first heading is a chapter of its own.
        let lead = &text[..headings[0].start];
        return match lines(lead).find(|(_, l)| !l.trim().is_empty()) {
            Some((at, line)) => std::iter::once(Chapter {
                start: at,
                title: short_title(line),
            })
            .chain(headings)
            .collect(),
            None => headings,
        };
    }
    let mut sections = Vec::new();
    let mut after_blank = true;
    for (at, line) in lines(text) {
        let blank = line.trim().is_empty();
        if !blank && after_blank {
            sections.push(Chapter {
                start: at,
                title: short_title(line),
            });
        }
        after_blank = blank;
    }
    if sections.len() < 2 {
        sections.clear();
    }
    sections
}

/// `text` with the `#` marks of its headings blanked (the same length, so offsets into it
/// still hold), so that a heading is read as its title.
pub fn unmark_headings(text: &str) -> Cow<'_, str> {
    let marks: Vec<std::ops::Range<usize>> = lines(text)
        .filter_map(|(at, line)| heading(line).map(|(marks, _)| at + marks.start..at + marks.end))
        .collect();
    if marks.is_empty() {
        return Cow::Borrowed(text);
    }
    let mut bytes = text.as_bytes().to_vec();
    for m in marks {
        bytes[m].fill(b' ');
    }
    // Only ASCII `#` became ASCII spaces.
    Cow::Owned(String::from_utf8(bytes).expect("still UTF-8"))
}

/// `text` cut so that each heading line is a piece of its own (in order, covering the whole
/// text): read apart, a heading is a sentence of its own, not the start of the next one.
pub fn heading_pieces(text: &str) -> Vec<std::ops::Range<usize>> {
    let mut cuts = vec![0];
    for (at, line) in lines(text) {
        if heading(line).is_some() {
            cuts.extend([at, at + line.len()]);
        }
    }
    cuts.push(text.len());
    cuts.dedup();
    cuts.windows(2).map(|w| w[0]..w[1]).collect()
}

/// Each line with its byte offset.
fn lines(text: &str) -> impl Iterator<Item = (usize, &str)> {
    text.split_inclusive('\n').scan(0, |at, line| {
        let start = *at;
        *at += line.len();
        Some((start, line.trim_end_matches(['\n', '\r'])))
    })
}

/// An ATX heading's `#` marks (range in the line) and its title: up to three spaces, one to
/// six `#`, a space, the title (closing `#`s dropped).
fn heading(line: &str) -> Option<(std::ops::Range<usize>, &str)> {
    let indent = line.len() - line.trim_start_matches(' ').len();
    let rest = &line[indent..];
    let hashes = rest.len() - rest.trim_start_matches('#').len();
    if indent > 3 || !(1..=6).contains(&hashes) || !rest[hashes..].starts_with([' ', '\t']) {
        return None;
    }
    let title = rest[hashes..].trim().trim_end_matches('#').trim_end();
    (!title.is_empty()).then_some((indent..indent + hashes, title))
}

/// A section's first line as its title, cut at a word within [`MAX_TITLE_CHARS`].
fn short_title(line: &str) -> String {
    let line = line.trim();
    if line.chars().count() <= MAX_TITLE_CHARS {
        return line.to_string();
    }
    let mut title = String::new();
    for word in line.split_whitespace() {
        if title.chars().count() + word.chars().count() + 1 > MAX_TITLE_CHARS {
            break;
        }
        if !title.is_empty() {
            title.push(' ');
        }
        title.push_str(word);
    }
    if title.is_empty() {
        title = line.chars().take(MAX_TITLE_CHARS).collect();
    }
    title + "…"
}

#[cfg(test)]
mod tests {
    use super::*;

    fn starts(text: &str) -> Vec<(usize, String)> {
        chapters(text)
            .into_iter()
            .map(|c| (c.start, c.title))
            .collect()
    }

    #[test]
    fn headings_make_the_chapters() {
        let text = "Preface line.\n\n# One\nText.\n\nMore.\n## Two ##\nEnd.\n#not a heading\n";
        assert_eq!(
            starts(text),
            [
                (0, "Preface line.".to_string()),
                (15, "One".to_string()),
                (34, "Two".to_string())
            ]
        );
        let plain = unmark_headings(text);
        assert_eq!(plain.len(), text.len());
        assert!(plain.contains("\n  One\n") && plain.contains("\n   Two ##\n"));
        assert!(plain.contains("#not a heading"));
        let pieces: Vec<&str> = heading_pieces(text).into_iter().map(|r| &text[r]).collect();
        assert_eq!(
            pieces,
            [
                "Preface line.\n\n",
                "# One",
                "\nText.\n\nMore.\n",
                "## Two ##",
                "\nEnd.\n#not a heading\n"
            ]
        );
        assert_eq!(
            heading_pieces("plain"),
            vec![std::ops::Range { start: 0, end: 5 }]
        );
    }

    #[test]
    fn without_headings_blank_lines_make_them() {
        let long = "word ".repeat(30);
        let text = format!("First part.\nstill first.\n\n \n{long}\n\nLast.");
        let c = chapters(&text);
        assert_eq!(c.len(), 3);
        assert_eq!((c[0].start, c[0].title.as_str()), (0, "First part."));
        assert_eq!(c[1].start, 28);
        assert!(c[1].title.ends_with('…') && c[1].title.chars().count() <= 61);
        assert!(chapters("One section.\nOnly one.").is_empty());
        assert!(chapters("").is_empty());
        assert_eq!(unmark_headings("no marks"), Cow::Borrowed("no marks"));
    }
}
