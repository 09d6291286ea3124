//! Hand-written FFI to espeak-ng 1.52.0.1, built from source by `espeak-rs-sys` and linked
//! statically, and a process-wide owner.
//!
//! espeak-ng keeps its state in globals and is not thread-safe, so every call goes through
//! one `Mutex`. The library is initialised lazily on first use, from the data folder that
//! [`data_dir`] resolves; a failure (no data, no voice) is reported as a [`TextError`] and never
//! panics.
//!
//! espeak-ng's upstream API has no `espeak_TextToPhonemesWithTerminator` (a patch in Piper's
//! fork), so [`Espeak::clauses`] returns, for each clause, the byte range that espeak consumed;
//! the terminator is recovered from that range by [`super::clause`].
//!
//! Debian's 1.51, which Hark linked before, overflowed a stack buffer on some inputs ("stack
//! smashing detected") and read freed memory on text in other scripts. Only text that
//! [`make_safe`] has passed is handed to espeak still (defence in depth, with the child process
//! of [`super::espeak_child`]); see there.

use std::borrow::Cow;
use std::ffi::{CStr, CString, c_char, c_int, c_void};
use std::path::{Path, PathBuf};
use std::ptr;
use std::sync::{Mutex, MutexGuard, OnceLock};

use super::TextError;

type EspeakNgStatus = c_int;
type EspeakNgErrorContext = *mut c_void;

const ENS_OK: EspeakNgStatus = 0;
/// `ENOUTPUT_MODE_SYNCHRONOUS` from `espeak-ng/espeak_ng.h`.
const ENOUTPUT_MODE_SYNCHRONOUS: c_int = 0x0001;
/// `espeakCHARS_AUTO`: what piper-phonemize passes (UTF-8, with an 8-bit fallback).
const ESPEAK_CHARS_AUTO: c_int = 0;
/// Phoneme mode: bit 1 = IPA, no tie, no separator.
const ESPEAK_PHONEMES_IPA: c_int = 0x02;

// The static library and its link lines come from `espeak-rs-sys`; the declarations are ours.
use espeak_rs_sys as _;

unsafe extern "C" {
    fn espeak_ng_InitializePath(path: *const c_char);
    fn espeak_ng_Initialize(context: *mut EspeakNgErrorContext) -> EspeakNgStatus;
    fn espeak_ng_InitializeOutput(
        output_mode: c_int,
        buffer_length: c_int,
        device: *const c_char,
    ) -> EspeakNgStatus;
    fn espeak_ng_SetVoiceByName(name: *const c_char) -> EspeakNgStatus;
    fn espeak_ng_ClearErrorContext(context: *mut EspeakNgErrorContext);
    fn espeak_ng_GetStatusCodeMessage(status: EspeakNgStatus, buffer: *mut c_char, length: usize);
    fn espeak_TextToPhonemes(
        textptr: *mut *const c_void,
        textmode: c_int,
        phonememode: c_int,
    ) -> *const c_char;
    fn espeak_Info(path_data: *mut *const c_char) -> *const c_char;
}

/// One clause as espeak-ng returned it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawClause {
    /// Byte offset where this call started reading.
    pub start: usize,
    /// Byte offset where the next call starts, or `None` when espeak reached the end
    /// (the terminating NUL included).
    pub end: Option<usize>,
    /// IPA as espeak returned it (not normalised).
    pub ipa: String,
}

/// The initialised library. Only reachable through [`Espeak::lock`].
pub struct Espeak {
    voice: Option<String>,
}

struct Global {
    state: Result<Espeak, TextError>,
}

fn global() -> &'static Mutex<Global> {
    static GLOBAL: OnceLock<Mutex<Global>> = OnceLock::new();
    GLOBAL.get_or_init(|| {
        Mutex::new(Global {
            state: initialise(),
        })
    })
}

fn status_message(status: EspeakNgStatus) -> String {
    let mut buf = [0 as c_char; 512];
    // SAFETY: the buffer is valid for `buf.len()` bytes; espeak writes a NUL-terminated string.
    unsafe { espeak_ng_GetStatusCodeMessage(status, buf.as_mut_ptr(), buf.len()) };
    // SAFETY: NUL-terminated by espeak (and the buffer was zeroed).
    let msg = unsafe { CStr::from_ptr(buf.as_ptr()) };
    format!("{} (status {status:#x})", msg.to_string_lossy())
}

fn initialise() -> Result<Espeak, TextError> {
    let dir = data_dir()?;
    // espeak-ng copies the path into a buffer of 160 bytes and appends file names to it.
    let c_dir = CString::new(dir.as_os_str().as_encoded_bytes())
        .ok()
        .filter(|c| c.as_bytes().len() <= MAX_DATA_PATH_BYTES)
        .ok_or_else(|| {
            TextError::EspeakInit(format!(
                "the path of espeak-ng's data is longer than {MAX_DATA_PATH_BYTES} bytes or \
                 holds NUL: {}; set HARK_ESPEAK_DATA to a copy in a shorter path",
                dir.display()
            ))
        })?;
    // SAFETY: called once, under the global lock's initialiser, with a NUL-terminated path of
    // an existing folder (so espeak never falls back to $ESPEAK_DATA_PATH or $HOME).
    unsafe { espeak_ng_InitializePath(c_dir.as_ptr()) };
    let mut context: EspeakNgErrorContext = ptr::null_mut();
    // SAFETY: `context` is a valid out-pointer; it is cleared below.
    let status = unsafe { espeak_ng_Initialize(&mut context) };
    // SAFETY: clearing a NULL or espeak-allocated context is allowed.
    unsafe { espeak_ng_ClearErrorContext(&mut context) };
    if status != ENS_OK {
        return Err(TextError::EspeakInit(format!(
            "{} (data: {})",
            status_message(status),
            dir.display()
        )));
    }
    // SAFETY: synchronous mode, no audio device.
    let status = unsafe { espeak_ng_InitializeOutput(ENOUTPUT_MODE_SYNCHRONOUS, 0, ptr::null()) };
    if status != ENS_OK {
        return Err(TextError::EspeakInit(status_message(status)));
    }
    Ok(Espeak { voice: None })
}

/// espeak-ng keeps its data path in `char path_home[160]` and builds file paths from it in
/// buffers a little longer; a longer path is refused rather than cut.
pub const MAX_DATA_PATH_BYTES: usize = 140;

static DATA_DIR: OnceLock<PathBuf> = OnceLock::new();

/// Use espeak-ng's data from `dir` (a folder `espeak-ng-data`, with `phontab` in it) instead of
/// the one this build made. For the binaries' edge (`HARK_ESPEAK_DATA`, an installed copy);
/// only the first call counts, and only before espeak-ng's first use. Returns whether `dir` is
/// the folder in effect.
pub fn set_data_dir(dir: PathBuf) -> bool {
    DATA_DIR.get_or_init(|| dir.clone()) == &dir
}

/// Whether `dir` holds espeak-ng's compiled data (its phoneme table).
pub fn is_data_dir(dir: &Path) -> bool {
    dir.join("phontab").is_file() && dir.join("phondata").is_file()
}

/// The data folder espeak-ng is initialised from: the one set with [`set_data_dir`], else the
/// one this build of espeak-ng made ([`built_data_dir`]). An error says where it looked.
pub fn data_dir() -> Result<PathBuf, TextError> {
    if let Some(dir) = DATA_DIR.get() {
        return if is_data_dir(dir) {
            Ok(dir.clone())
        } else {
            Err(TextError::EspeakInit(format!(
                "no espeak-ng data in {} (it needs phontab and phondata): check HARK_ESPEAK_DATA, \
                 or reinstall with scripts/run.sh",
                dir.display()
            )))
        };
    }
    built_data_dir().ok_or_else(|| {
        TextError::EspeakInit(format!(
            "espeak-ng's data was not found: not set (HARK_ESPEAK_DATA, or an installed copy in \
             ~/.local/share/hark/espeak-ng-data), and not in this build's folder {}",
            BUILD_DIR.unwrap_or("(unknown)")
        ))
    })
}

/// `<target>/<profile>/build` of the build that compiled this crate (see build.rs).
const BUILD_DIR: Option<&str> = option_env!("HARK_ESPEAK_BUILD_DIR");

/// The data that `espeak-rs-sys` compiled and installed in its `OUT_DIR`
/// (`<build>/espeak-rs-sys-<hash>/out/share/espeak-ng-data`), when it is still there (a
/// development build, the tests, CI). Of several builds (other hashes), the newest. `None`
/// for a binary that was moved away from its build folder.
pub fn built_data_dir() -> Option<PathBuf> {
    let build = Path::new(BUILD_DIR?);
    let mut best: Option<(std::time::SystemTime, PathBuf)> = None;
    for entry in std::fs::read_dir(build).ok()?.flatten() {
        if !entry
            .file_name()
            .to_string_lossy()
            .starts_with("espeak-rs-sys-")
        {
            continue;
        }
        let dir = entry.path().join("out/share/espeak-ng-data");
        if !is_data_dir(&dir) {
            continue;
        }
        let when = std::fs::metadata(dir.join("phontab"))
            .and_then(|m| m.modified())
            .unwrap_or(std::time::UNIX_EPOCH);
        if best.as_ref().is_none_or(|(t, _)| when > *t) {
            best = Some((when, dir));
        }
    }
    best.map(|(_, dir)| dir)
}

/// Exclusive access to the initialised library.
pub struct EspeakGuard {
    guard: MutexGuard<'static, Global>,
}

impl Espeak {
    /// Lock the process-wide instance, initialising it on first use.
    pub fn lock() -> Result<EspeakGuard, TextError> {
        // A panic while holding the lock cannot leave espeak half-initialised in a way we can
        // detect, so a poisoned lock is taken over.
        let guard = global().lock().unwrap_or_else(|p| p.into_inner());
        if let Err(e) = &guard.state {
            return Err(e.clone());
        }
        Ok(EspeakGuard { guard })
    }
}

impl EspeakGuard {
    fn inner(&mut self) -> &mut Espeak {
        match &mut self.guard.state {
            Ok(e) => e,
            // `Espeak::lock` only hands out a guard for an initialised library.
            Err(_) => unreachable!("EspeakGuard exists only for an initialised library"),
        }
    }

    /// Select an espeak-ng voice ("en-us"). Cached: a repeated name is not set again.
    pub fn set_voice(&mut self, name: &str) -> Result<(), TextError> {
        let inner = self.inner();
        if inner.voice.as_deref() == Some(name) {
            return Ok(());
        }
        let c_name = CString::new(name).map_err(|_| TextError::Voice {
            voice: name.replace('\0', "\\0"),
            message: "voice name contains NUL".into(),
        })?;
        // SAFETY: valid NUL-terminated string; the library is initialised and we hold the lock.
        let status = unsafe { espeak_ng_SetVoiceByName(c_name.as_ptr()) };
        if status != ENS_OK {
            inner.voice = None;
            return Err(TextError::Voice {
                voice: name.to_string(),
                message: status_message(status),
            });
        }
        inner.voice = Some(name.to_string());
        Ok(())
    }

    /// Clear the character espeak's clause reader may keep back across calls.
    ///
    /// `ReadClause` reads one character past a clause and keeps it in a static for the next
    /// call. At the end of some texts (e.g. one ending in `..`) that character is left over
    /// and would be prepended to the *next* text — piper-phonemize has this leak. Reading
    /// `" a"` always ends by running out of input, which leaves nothing behind (a clause can
    /// only end at punctuation after a letter or digit, or at a blank line).
    fn reset_reader(&mut self) {
        const FLUSH: &[u8] = b" a\0";
        let mut cursor: *const c_void = FLUSH.as_ptr().cast();
        for _ in 0..8 {
            // SAFETY: NUL-terminated static buffer; we hold the global lock.
            let ph = unsafe {
                espeak_TextToPhonemes(&mut cursor, ESPEAK_CHARS_AUTO, ESPEAK_PHONEMES_IPA)
            };
            if ph.is_null() || cursor.is_null() {
                break;
            }
        }
    }

    /// Run `espeak_TextToPhonemes` over `text` until it reports the end, one call per clause.
    ///
    /// `text` must not contain NUL (the caller sanitises it). The reader is reset first, so
    /// the result does not depend on earlier texts. The text goes through [`make_safe`]
    /// (which keeps byte offsets); callers that infer clause ends from the text should pass
    /// it through `make_safe` themselves, so that they read what espeak read.
    pub fn clauses(&mut self, text: &str) -> Result<Vec<RawClause>, TextError> {
        CALLS_ON_THIS_THREAD.with(|n| n.set(n.get() + 1));
        self.reset_reader();
        let safe = make_safe(text);
        let pieces = clause_pieces(&safe);
        let mut out = Vec::new();
        for (k, piece) in pieces.iter().enumerate() {
            let last = k + 1 == pieces.len();
            self.piece_clauses(&safe[piece.clone()], piece.start, last, &mut out)?;
        }
        Ok(out)
    }

    /// The clauses of one piece of [`clause_pieces`], at byte offset `at` of the whole text;
    /// the end of a piece that is not the `last` is a clause end at that offset.
    fn piece_clauses(
        &mut self,
        piece: &str,
        at: usize,
        last: bool,
        out: &mut Vec<RawClause>,
    ) -> Result<(), TextError> {
        let c_text = CString::new(piece).map_err(|_| TextError::InteriorNul)?;
        let bytes = c_text.as_bytes_with_nul();
        let base = bytes.as_ptr() as usize;
        let limit = bytes.len();
        let piece_end = (!last).then_some(at + piece.len());
        let mut cursor: *const c_void = c_text.as_ptr().cast();
        let mut start = 0usize;
        loop {
            // SAFETY: `cursor` points into `c_text` (NUL-terminated, alive for the loop); espeak
            // advances it within that buffer or sets it to NULL; we hold the global lock.
            let ph = unsafe {
                espeak_TextToPhonemes(&mut cursor, ESPEAK_CHARS_AUTO, ESPEAK_PHONEMES_IPA)
            };
            if ph.is_null() {
                // Only when espeak cannot decode the text (not expected for UTF-8).
                return Err(TextError::Espeak(
                    "espeak_TextToPhonemes could not decode the text".into(),
                ));
            }
            // SAFETY: espeak returns a NUL-terminated string in its own static buffer, valid
            // until the next call; it is copied at once.
            let ipa = unsafe { CStr::from_ptr(ph) }.to_string_lossy().into_owned();
            let end = if cursor.is_null() {
                None
            } else {
                let off = (cursor as usize).wrapping_sub(base);
                if off >= limit || off <= start {
                    // Not expected from espeak: stop rather than loop or read out of bounds.
                    tracing::debug!(start, off, "espeak text pointer did not advance; stopping");
                    out.push(RawClause {
                        start: at + start,
                        end: piece_end,
                        ipa,
                    });
                    return Ok(());
                }
                Some(off)
            };
            out.push(RawClause {
                start: at + start,
                end: end.map(|e| at + e).or(piece_end),
                ipa,
            });
            match end {
                Some(off) => start = off,
                None => return Ok(()),
            }
        }
    }
}

/// What one piece that [`clause_pieces`] hands to espeak-ng may cost between two clause marks.
/// espeak-ng 1.52 copies a clause into `sbuf[800]` on the stack (`N_TR_SOURCE`), with spaces
/// added around symbols and between digits and letters, and reads past its end when that
/// fills: `LookupDict2` overflowed under AddressSanitizer on 450 bytes of "a1 ", 600 of
/// "a-b ", 400 of "a/b " and 300 of "1a1a…" (one word), and on dotted runs amid 144 words
/// (the fuzzer, 445 bytes). 250 bytes of "1a1a…" did not. The cost counts what espeak adds
/// (see [`char_cost`]); 300 is about a third of the buffer for the worst case measured.
pub const MAX_CLAUSE_COST: usize = 300;

/// `text` in pieces for espeak-ng: one piece, the whole text, unless the run since the last
/// clause mark (`, ; : ! ?` before whitespace) would cost more than [`MAX_CLAUSE_COST`]; then
/// a piece ends after the last whitespace before that (or, in a word that long, at the limit),
/// and espeak reads the next piece as a clause of its own, as it does when its buffer is full.
/// A dot does not end the run: espeak reads some as abbreviations and goes on.
pub fn clause_pieces(text: &str) -> Vec<std::ops::Range<usize>> {
    let mut pieces = Vec::new();
    let (mut start, mut cost) = (0usize, 0usize);
    // Where a piece may end (after a whitespace character), and the cost from there on.
    let mut cut: Option<(usize, usize)> = None;
    let mut prev: Option<char> = None;
    for (i, c) in text.char_indices() {
        if c.is_whitespace() && prev.is_some_and(|p| matches!(p, ',' | ';' | ':' | '!' | '?')) {
            cost = 0;
            cut = None;
        }
        let add = char_cost(prev, c);
        if cost + add > MAX_CLAUSE_COST && i > start {
            let end = match cut {
                Some((at, after)) if at > start => {
                    cost = after;
                    at
                }
                _ => {
                    cost = 0;
                    i
                }
            };
            pieces.push(start..end);
            start = end;
            cut = None;
        }
        cost += add;
        if c.is_whitespace() {
            cut = Some((i + c.len_utf8(), 0));
        } else if let Some((_, after)) = &mut cut {
            *after += add;
        }
        prev = Some(c);
    }
    pieces.push(start..text.len());
    pieces
}

/// What `c` costs in espeak-ng's clause buffer after `prev`: its bytes, two spaces around a
/// symbol, and one between a digit and a letter or before a capital inside a word.
fn char_cost(prev: Option<char>, c: char) -> usize {
    let bytes = c.len_utf8();
    if c.is_whitespace() {
        return bytes;
    }
    if !c.is_alphanumeric() {
        return bytes + 2;
    }
    let joined = prev.is_some_and(|p| {
        p.is_alphanumeric()
            && (p.is_numeric() != c.is_numeric() || (p.is_lowercase() && c.is_uppercase()))
    });
    bytes + usize::from(joined)
}

thread_local! {
    static CALLS_ON_THIS_THREAD: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// Test hook: how many texts this thread has handed to libespeak-ng in this process (none
/// while espeak runs in a child, [`super::espeak_child::isolate`]).
#[doc(hidden)]
pub fn in_process_calls_for_test() -> usize {
    CALLS_ON_THIS_THREAD.with(std::cell::Cell::get)
}

/// Letter bytes a run of dotted single letters ("F.B.I") may hold; see [`make_safe`].
pub const MAX_DOTTED_LETTER_BYTES: usize = 40;

/// Bytes of a word that may follow a dotted single letter ("W.word"); see [`make_safe`].
pub const MAX_WORD_AFTER_DOTTED_LETTER_BYTES: usize = 80;

/// Characters espeak-ng 1.51 drops before it splits words (`chars_ignore_default`: soft
/// hyphen, zero-width non-joiner), and, to be safe, every other invisible format character:
/// they must not hide a run from [`make_safe`].
fn invisible(c: char) -> bool {
    matches!(c, '\u{ad}' | '\u{200b}'..='\u{200f}' | '\u{2060}'..='\u{2064}' | '\u{feff}')
}

/// `text` with every run of dotted single letters ("a.b.c.d…") cut into runs of at most
/// [`MAX_DOTTED_LETTER_BYTES`] letter bytes, by turning the dots between two of its letters
/// into spaces. Byte offsets are kept (a `.` and a space are one byte each); text without such
/// a run is returned as it is.
///
/// Why: espeak-ng 1.51 reads single letters separated by dots as one abbreviation
/// (`CheckDottedAbbrev` in translate.c) and copies their bytes into `char word_buf[80]` on the
/// stack without a bound. 85 ASCII letters ("W.W.W…", which is how the normaliser spelled
/// an 85-letter capital word) overwrite the stack guard and the process aborts with "stack
/// smashing detected"; fewer letters of two to four bytes do it sooner (60 "é.", 39 "𝐀.").
/// A letter is counted as 4 bytes unless it is ASCII (espeak lower-cases it first, which can
/// lengthen it), and 40 leaves room for the run's last letter without a dot and for "'s".
///
/// What makes a run is judged on the safe side, because espeak's tokeniser joins more than
/// "W.W": its run goes on over "W..W", "W .W", "W.,W", "W.!W", "W.…W" and "W.\nW" (each
/// overflows; the fuzzer found the first two). So here a run is single letters or digits with
/// a dot somewhere in each gap between them, whatever else the gap holds; it ends at a gap
/// without a dot or at a longer word ("ab").
///
/// A word right after a dotted letter overflows another buffer when it is long: "W." and
/// 170 letters abort as well (the fuzzer's third; a long word alone, or after "W. ", does
/// not). So the dots before a word of more than [`MAX_WORD_AFTER_DOTTED_LETTER_BYTES`] that
/// follows a dotted letter become spaces too, and so does a dot after a single letter that is
/// followed by such a run of any characters but spaces (`dots_before_long_runs`).
///
/// espeak-ng 1.52 (the one linked now) adds overflows that AddressSanitizer found and three
/// more rules, each one ASCII byte for another: the `s` of "PDFs" and the like becomes `S`
/// (`plurals_after_capital_f`), the `.` or `,` between a number and a long run of symbols
/// ("77777.||||…") a space (`marks_between_numbers_and_symbols`), and so do the marks of a
/// number of more than 64 characters (`marks_in_long_numbers`).
pub fn make_safe(text: &str) -> Cow<'_, str> {
    let mut dotted = DottedRuns::default();
    for (i, c) in text.char_indices() {
        if !invisible(c) {
            dotted.push(i, c);
        }
    }
    dotted.end_group(text.len());
    let mut cuts = dotted.cuts;
    cuts.extend(dots_before_long_runs(text));
    cuts.extend(dots_in_long_clauses(text));
    let visible: Vec<(usize, char)> = text
        .char_indices()
        .filter(|(_, c)| !invisible(*c))
        .collect();
    let mut edits = plurals_after_capital_f(&visible);
    edits.extend(marks_between_numbers_and_symbols(&visible));
    edits.extend(marks_in_long_numbers(&visible));
    if cuts.is_empty() && edits.is_empty() {
        return Cow::Borrowed(text);
    }
    cuts.sort_by_key(|r| r.start);
    let mut out = String::with_capacity(text.len());
    let mut cuts = cuts.iter().peekable();
    for (i, c) in text.char_indices() {
        while cuts.next_if(|r| r.end <= i).is_some() {}
        let in_cut = cuts.peek().is_some_and(|r| r.contains(&i));
        out.push(if in_cut && c == '.' { ' ' } else { c });
    }
    // Each edit puts one ASCII byte for another, so the text stays UTF-8 of the same length.
    let mut bytes = out.into_bytes();
    for (i, b) in edits {
        debug_assert!(bytes[i].is_ascii() && b.is_ascii());
        bytes[i] = b;
    }
    Cow::Owned(String::from_utf8(bytes).expect("ASCII replaced by ASCII"))
}

/// The `s` of [`make_safe`]'s plural rule (espeak-ng 1.52), upper-cased: an `s` that ends a word
/// after two or more capitals, the last of them `F`, with any marks among them or before the
/// `s` ("PDFs", "xFF's", "ÉFs", "FF?s", "FF???????????s", "F?Fs", "A'Fs", "A‘Fs"). espeak-ng
/// reads such a word as the plural of an abbreviation and overflows a stack buffer in
/// `MatchRule` (from `addPluralSuffixes`); AddressSanitizer found it in 91 bytes of technical
/// prose ("docs.rFFFFFs/regex"), silent without it. Only `F` does it (every capital was tried),
/// and a letter or digit after the `s` does not. The fuzzer found the marks one form at a
/// time (`?` before the `s`, then eleven of them, then `?` between the capitals); of the marks
/// tried, only `?` and the apostrophes keep espeak in the word, but any mark is passed here,
/// since an `S` costs nothing. "PDFS" is spelled "P D F S", as espeak reads any such capitals;
/// without the rule espeak said "P D F" and dropped the `s`. The normaliser already spells
/// all-capital plurals with dots ("P.D.F's"), so this catches `--raw` text and mixed case.
fn plurals_after_capital_f(visible: &[(usize, char)]) -> Vec<(usize, u8)> {
    let mut out = Vec::new();
    // Capitals since the last letter, digit or space that was not one, and the last of them.
    let (mut capitals, mut last) = (0usize, ' ');
    for (k, &(i, c)) in visible.iter().enumerate() {
        if c.is_uppercase() {
            capitals += 1;
            last = c;
            continue;
        }
        if !c.is_alphanumeric() && !c.is_whitespace() {
            continue; // a mark: the capitals go on
        }
        let ends_word = visible
            .get(k + 1)
            .is_none_or(|&(_, d)| !d.is_alphanumeric());
        if c == 's' && capitals >= 2 && last == 'F' && ends_word {
            out.push((i, b'S'));
        }
        capitals = 0;
    }
    out
}

/// Digits a number may have before [`make_safe`]'s number rule looks at the mark after it.
pub const MIN_DIGITS_BEFORE_SYMBOLS: usize = 3;
/// Characters that may follow a number's `.` or `,` (symbols and digits, no letter or space)
/// before [`make_safe`]'s number rule looks at them.
pub const MAX_SYMBOLS_AFTER_NUMBER: usize = 8;

/// The marks of [`make_safe`]'s number rule (espeak-ng 1.52), to become spaces: a `.` or `,`
/// after at least [`MIN_DIGITS_BEFORE_SYMBOLS`] digits, followed by more than
/// [`MAX_SYMBOLS_AFTER_NUMBER`] characters that are neither letters nor spaces, among which
/// (the mark counted) two that are not ASCII digits stand side by side.
/// espeak-ng reads the number, the mark and what follows as one word and overflows a stack
/// buffer in `TranslateClauseWithTerminator`: "77777." or "77777," then 16 of `|`, `#`, `=`,
/// `-`, `.` and most other ASCII symbols, mixed or not; 15 symbols, 4 digits, a space instead of
/// the mark or a letter among the symbols do not (AddressSanitizer, every ASCII symbol tried).
/// The fuzzer then found "12822.*.5000000…": five digits, `.`, a symbol, `.` and 14 digits or
/// more, with `*`, `-`, `/`, `|`, `+` or `#` (probed: `.**.`, `.*.*.` too; 13 digits, 4 digits
/// before, `*` without a dot, or digits and single marks do not), and "00000,७.55555555555"
/// (a Devanagari digit is no digit to espeak's English, so it counts as a mark here). The
/// limits are half of those measured. A number with thousands separators or decimals
/// ("1,234,567.89", "555.123.4567") has no two marks side by side and is left alone.
fn marks_between_numbers_and_symbols(visible: &[(usize, char)]) -> Vec<(usize, u8)> {
    let mut out = Vec::new();
    let mut digits = 0usize;
    for (k, &(i, c)) in visible.iter().enumerate() {
        if c.is_numeric() {
            digits += 1;
            continue;
        }
        if digits >= MIN_DIGITS_BEFORE_SYMBOLS && matches!(c, '.' | ',') {
            // The mark and what follows it, as far as the rule looks (the scan stays short).
            let run: Vec<char> = std::iter::once(c)
                .chain(
                    visible[k + 1..]
                        .iter()
                        .map(|&(_, d)| d)
                        .take_while(|d| !d.is_alphabetic() && !d.is_whitespace())
                        .take(MAX_SYMBOLS_AFTER_NUMBER + 1),
                )
                .collect();
            // espeak reads only ASCII digits as such here ("00000,७.5555…" overflows too).
            let marks_side_by_side = run
                .windows(2)
                .any(|w| !w[0].is_ascii_digit() && !w[1].is_ascii_digit());
            if run.len() > MAX_SYMBOLS_AFTER_NUMBER + 1 && marks_side_by_side {
                out.push((i, b' '));
            }
        }
        digits = 0;
    }
    out
}

/// The longest number, in characters of digits, `.` and `,`, whose marks [`make_safe`] leaves.
pub const MAX_MARKED_NUMBER_CHARS: usize = 64;

/// The marks of [`make_safe`]'s long-number rule (espeak-ng 1.52), to become spaces: every `.`
/// and `,` of a run of digits and those marks longer than [`MAX_MARKED_NUMBER_CHARS`].
/// espeak-ng reads a number with decimals as one word, the decimals digit by digit, and reads
/// past a stack buffer in `TranslateClauseWithTerminator` on a long one: 9 digits, `.` and 130
/// digits, or 30 and 100, or 5 and 200 (AddressSanitizer; the fuzzer found it in 355 bytes of
/// digit runs); 1 or 3 digits before the mark, or 45 and more, with 400 after it, 20 and 100,
/// `,` for the mark, and the same digits without a mark do not. The limit is half of the
/// shortest crasher; a number in prose ("1,234,567.89") is far shorter. The digits are then
/// read as groups, as espeak reads a long run of digits without marks.
fn marks_in_long_numbers(visible: &[(usize, char)]) -> Vec<(usize, u8)> {
    let mut out = Vec::new();
    let mut run = 0..0;
    for k in 0..=visible.len() {
        let in_number = visible
            .get(k)
            .is_some_and(|&(_, c)| c.is_numeric() || matches!(c, '.' | ','));
        if in_number {
            if run.is_empty() {
                run = k..k;
            }
            run.end = k + 1;
            continue;
        }
        // A mark after the last digit ends a clause or a sentence ("… 5555.") and stays.
        while run.end > run.start && matches!(visible[run.end - 1].1, '.' | ',') {
            run.end -= 1;
        }
        if run.len() > MAX_MARKED_NUMBER_CHARS {
            let marks = visible[run.clone()]
                .iter()
                .filter(|(_, c)| matches!(c, '.' | ','));
            out.extend(marks.map(|&(i, _)| (i, b' ')));
        }
        run = 0..0;
    }
    out
}

/// The dots of [`make_safe`]'s last rule that the word rule cannot see: a dot right after a
/// single letter or digit, followed by more than [`MAX_WORD_AFTER_DOTTED_LETTER_BYTES`] of
/// anything but spaces. espeak-ng reads symbols into the same word buffer as letters: "W." and
/// 170 `|`, `#` or `~` abort (the fuzzer's fourth, on the H200 machine), 150 do not. Each scan
/// ahead stops after that many bytes, so the whole pass stays linear.
fn dots_before_long_runs(text: &str) -> Vec<std::ops::Range<usize>> {
    let mut out = Vec::new();
    // The two visible characters before the current one.
    let (mut before, mut last) = (None::<char>, None::<char>);
    for (i, c) in text.char_indices() {
        if invisible(c) {
            continue;
        }
        let single =
            last.is_some_and(char::is_alphanumeric) && !before.is_some_and(char::is_alphanumeric);
        if c == '.' && single {
            let mut bytes = 0;
            for d in text[i + 1..].chars().filter(|d| !invisible(*d)) {
                if d.is_whitespace() {
                    break;
                }
                bytes += if d.is_ascii() { 1 } else { 4 };
                if bytes > MAX_WORD_AFTER_DOTTED_LETTER_BYTES {
                    out.push(i..i + 1);
                    break;
                }
            }
        }
        (before, last) = (last, Some(c));
    }
    out
}

/// Words a clause may hold before [`make_safe`] takes the dots out of its dotted runs: half of
/// espeak-ng's limit (`N_CLAUSE_WORDS`, 300), since this count is only an estimate of espeak's.
pub const MAX_CLAUSE_WORDS_BEFORE_DOTTED_RUNS: usize = 150;

/// The dots of [`make_safe`]'s clause rule (espeak-ng 1.52): in a clause of more than
/// [`MAX_CLAUSE_WORDS_BEFORE_DOTTED_RUNS`] words, every dot but one that ends a sentence after
/// a word. espeak-ng reads the letters of a dotted run ("a.b.c", "a . b . c") as one
/// abbreviation and marks the words it joins for deletion (`dictionary_skipwords`, two per
/// letter), past the clause's last word when the run straddles the clause's 300-word limit:
/// that writes beyond `words[N_CLAUSE_WORDS]` on the stack, and 1.52 crashes (a SEGV in
/// `TranslateClauseWithTerminator` on "a.b.c.d.e.f.g.h.i.j " 20 times; Debian's 1.51 did not).
///
/// The estimate counts each group of letters, of digits, and each other visible character as
/// a word, and starts again where espeak ends a clause: at `, ; : ! ?` before whitespace. A
/// dot before whitespace after a word of two or more characters is kept but does not start it
/// again, as espeak may read the word as an abbreviation and go on (the fuzzer's "Wm. e.W.W…",
/// 311 bytes, overflowed 1.52 in `TranslateClauseWithTerminator` while the estimate started
/// again there). A dot after a single letter does not end espeak's clause, nor does a newline
/// or a blank line ("W.\n" and "W.\n\n" 200 times crashed), and espeak joins runs over more
/// than dots ("W ._W"), so past the limit every other dot becomes a space. The letters stay, and espeak spells them alone
/// as it would have in the run; a clause that long is rare in prose.
fn dots_in_long_clauses(text: &str) -> Vec<std::ops::Range<usize>> {
    let visible: Vec<(usize, char)> = text
        .char_indices()
        .filter(|(_, c)| !invisible(*c))
        .collect();
    let mut out = Vec::new();
    let mut words = 0usize;
    // Length of the current group of letters or digits, and whether it is digits.
    let mut group = (0usize, false);
    for (k, &(i, c)) in visible.iter().enumerate() {
        let next = visible.get(k + 1).map(|&(_, d)| d);
        let before_space = next.is_none_or(char::is_whitespace);
        if c.is_alphanumeric() {
            let digit = c.is_numeric();
            if group.0 == 0 || group.1 != digit {
                words += 1;
                group = (0, digit);
            }
            group.0 += 1;
            continue;
        }
        let word_before = group.0;
        group = (0, false);
        if matches!(c, ',' | ';' | ':' | '!' | '?') && before_space {
            words = 0;
            continue;
        }
        if c == '.' && before_space && word_before >= 2 {
            // Ends a sentence, or an abbreviation that does not end espeak's clause ("Wm. "
            // amid dotted runs crashed 1.52): kept, and the count goes on.
            continue;
        }
        if c.is_whitespace() {
            continue;
        }
        words += 1;
        if c == '.' && words > MAX_CLAUSE_WORDS_BEFORE_DOTTED_RUNS {
            out.push(i..i + 1);
        }
    }
    out
}

/// The scan of [`make_safe`]: groups of letters or digits, and the gaps between them.
#[derive(Default)]
struct DottedRuns {
    /// Gaps whose dots become spaces.
    cuts: Vec<std::ops::Range<usize>>,
    /// Letter bytes of the current run.
    run: usize,
    /// The current group of letters or digits: characters and (counted) bytes.
    group: (usize, usize),
    /// The gap before the current group, and whether that group goes on a run.
    gap_before: std::ops::Range<usize>,
    continues: bool,
    /// The gap being read: where it started and whether it has a dot; and whether the group
    /// before it was a single letter.
    gap_start: usize,
    gap_dot: bool,
    after_single: bool,
}

impl DottedRuns {
    fn push(&mut self, i: usize, c: char) {
        if c.is_alphanumeric() {
            if self.group.0 == 0 {
                self.gap_before = self.gap_start..i;
                self.continues = self.after_single && self.gap_dot;
            }
            self.group.0 += 1;
            self.group.1 += if c.is_ascii() { 1 } else { 4 };
        } else {
            self.end_group(i);
            self.gap_dot |= c == '.';
        }
    }

    /// The group ends at byte `i` (if one is open): a single letter goes on the run or starts
    /// one; a longer group ends it.
    fn end_group(&mut self, i: usize) {
        let (chars, bytes) = std::mem::take(&mut self.group);
        if chars == 0 {
            return;
        }
        if chars > 1 {
            if self.continues && bytes > MAX_WORD_AFTER_DOTTED_LETTER_BYTES {
                self.cuts.push(self.gap_before.clone());
            }
            self.run = 0;
        } else if !self.continues {
            self.run = 0;
        } else if self.run + bytes > MAX_DOTTED_LETTER_BYTES {
            self.cuts.push(self.gap_before.clone());
            self.run = 0;
        }
        if chars == 1 {
            self.run += bytes;
        }
        self.after_single = chars == 1;
        (self.gap_start, self.gap_dot) = (i, false);
    }
}

/// The version string of the linked espeak-ng (e.g. "1.52.0.1") and its data path.
pub fn espeak_version() -> Result<(String, String), TextError> {
    let _guard = Espeak::lock()?;
    let mut path: *const c_char = ptr::null();
    // SAFETY: espeak_Info returns a static string and sets `path` to a static string or NULL.
    let version = unsafe { espeak_Info(&mut path) };
    let version = if version.is_null() {
        String::new()
    } else {
        // SAFETY: static NUL-terminated string.
        unsafe { CStr::from_ptr(version) }
            .to_string_lossy()
            .into_owned()
    };
    let path = if path.is_null() {
        String::new()
    } else {
        // SAFETY: static NUL-terminated string.
        unsafe { CStr::from_ptr(path) }
            .to_string_lossy()
            .into_owned()
    };
    Ok((version, path))
}
