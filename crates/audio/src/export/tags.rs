//! Vorbis comments (FLAC's VORBIS_COMMENT block, Ogg Opus's OpusTags), with chapters as the
//! Vorbis chapter extension has them: `CHAPTER001=00:01:02.345`, `CHAPTER001NAME=Title`.

/// The vendor string written into every file's comments.
pub(crate) const VENDOR: &str = concat!("hark ", env!("CARGO_PKG_VERSION"));

/// Room for the times of chapters longer than the placeholder's (100 hours and more), so
/// the tags written at the end always fit the space reserved at the start.
const SLACK_PER_CHAPTER: usize = 4;

/// The comment list (vendor, count, `len | KEY=value` each), all lengths little-endian.
pub(crate) fn vorbis_comments(comments: &[String]) -> Vec<u8> {
    fn put(out: &mut Vec<u8>, s: &[u8]) {
        out.extend_from_slice(&(s.len() as u32).to_le_bytes());
        out.extend_from_slice(s);
    }
    let mut out = Vec::new();
    put(&mut out, VENDOR.as_bytes());
    out.extend_from_slice(&(comments.len() as u32).to_le_bytes());
    for c in comments {
        put(&mut out, c.as_bytes());
    }
    out
}

/// The chapter comments for `titles` starting at `starts` (samples at `rate`; missing ones
/// at 0, as the placeholder written before the audio).
pub(crate) fn chapter_comments(titles: &[String], starts: &[u64], rate: u32) -> Vec<String> {
    titles
        .iter()
        .enumerate()
        .flat_map(|(i, title)| {
            let at = starts.get(i).copied().unwrap_or(0);
            [
                format!("CHAPTER{:03}={}", i + 1, clock(at, rate, '.')),
                format!("CHAPTER{:03}NAME={}", i + 1, super::clean_title(title)),
            ]
        })
        .collect()
}

/// The comments' length as reserved before the audio: the placeholder's plus slack.
pub(crate) fn reserved_len(titles: &[String], rate: u32) -> usize {
    vorbis_comments(&chapter_comments(titles, &[], rate)).len() + SLACK_PER_CHAPTER * titles.len()
}

/// `HH:MM:SS.mmm` (or `,` before the milliseconds, for SRT) of sample `at`, to the nearest
/// millisecond.
pub(crate) fn clock(at: u64, rate: u32, sep: char) -> String {
    let ms = (at * 1000 + rate as u64 / 2) / rate.max(1) as u64;
    let (h, m, s, ms) = (ms / 3_600_000, ms / 60_000 % 60, ms / 1000 % 60, ms % 1000);
    format!("{h:02}:{m:02}:{s:02}{sep}{ms:03}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chapters_read_as_the_extension_writes_them() {
        let titles = ["One".to_string(), "Two\nlines".to_string()];
        let c = chapter_comments(&titles, &[0, 22050 * 3723 + 11025], 22050);
        assert_eq!(
            c,
            [
                "CHAPTER001=00:00:00.000",
                "CHAPTER001NAME=One",
                "CHAPTER002=01:02:03.500",
                "CHAPTER002NAME=Two lines"
            ]
        );
        // A time past 100 hours still fits the room reserved for the placeholder.
        let late = vorbis_comments(&chapter_comments(&titles, &[0, 22050 * 400_000], 22050));
        assert!(late.len() <= reserved_len(&titles, 22050));
        assert_eq!(clock(22050 * 61 + 22, 22050, ','), "00:01:01,001");
    }

    #[test]
    fn the_comment_list_has_its_lengths_in_front() {
        let b = vorbis_comments(&["A=b".into()]);
        let vendor = VENDOR.len();
        assert_eq!(&b[..4], &(vendor as u32).to_le_bytes());
        assert_eq!(&b[4 + vendor..8 + vendor], &1u32.to_le_bytes());
        assert_eq!(&b[8 + vendor..12 + vendor], &3u32.to_le_bytes());
        assert_eq!(&b[12 + vendor..], b"A=b");
    }
}
