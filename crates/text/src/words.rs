//! Which phonemes say which word: espeak-ng's IPA for a clause, matched to the words of the
//! clause's text.
//!
//! `espeak_TextToPhonemes` separates words by spaces, so usually the clause's IPA words are
//! its text words, one for one. Not always: espeak joins words it has one entry for ("in the"
//! → `ɪnðə`, "of the", "for a", "do not"; about 200 such entries in `en_list`) and the parts of
//! a hyphenated word ("well-known" → `wˈɛlnˈoʊn`), and it splits what it reads as several
//! words (raw digits "1990" → `nˈaɪntiːnhˈʌndɹɪd nˈaɪnti`). Its own word events from a
//! synthesis pass do not help: they cost a whole espeak synthesis (≈ 4 ms for a 6 s sentence,
//! against 0.07 ms for the phonemes) and are wrong for the entries that separate words with
//! `||` ("such as" reports words at characters 1 and 2). So when the counts differ, each text
//! word is phonemised alone (cached) and the two phoneme strings are aligned (edit distance,
//! word boundaries cheap to skip), which splits a joined IPA word between its text words and
//! gives a split text word all of its IPA words.

use std::collections::HashMap;
use std::ops::Range;
use std::sync::Mutex;

use unicode_normalization::char::is_combining_mark;

/// Characters that make no word on their own (a token of only these is left out).
fn is_silent_punct(c: char) -> bool {
    matches!(
        c,
        '.' | ','
            | ';'
            | ':'
            | '!'
            | '?'
            | '\''
            | '"'
            | '('
            | ')'
            | '['
            | ']'
            | '{'
            | '}'
            | '-'
            | '…'
            | '–'
            | '—'
            | '«'
            | '»'
            | '“'
            | '”'
            | '‘'
            | '’'
    )
}

fn is_word_char(c: char) -> bool {
    c.is_alphanumeric() || is_combining_mark(c)
}

/// The words of `text[range]`: whitespace-separated tokens trimmed of punctuation at either
/// end (a token of symbols only, "&", is kept whole; one of punctuation only is left out).
/// Byte ranges in `text`.
pub(crate) fn text_words(text: &str, range: Range<usize>) -> Vec<Range<usize>> {
    let Some(slice) = text.get(range.clone()) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let mut start = None;
    let mut push = |a: usize, b: usize| {
        let tok = &slice[a..b];
        let lead = tok.find(is_word_char);
        let trail = tok.rfind(is_word_char);
        match (lead, trail) {
            (Some(l), Some(t)) => {
                let end = t + tok[t..].chars().next().map_or(1, char::len_utf8);
                out.push(range.start + a + l..range.start + a + end);
            }
            _ if tok.chars().all(is_silent_punct) => {}
            _ => out.push(range.start + a..range.start + b),
        }
    };
    for (i, c) in slice.char_indices() {
        if c.is_whitespace() {
            if let Some(a) = start.take() {
                push(a, i);
            }
        } else if start.is_none() {
            start = Some(i);
        }
    }
    if let Some(a) = start {
        push(a, slice.len());
    }
    out
}

/// espeak's stress marks: they belong to the syllable after them.
fn is_stress(c: char) -> bool {
    matches!(c, 'ˈ' | 'ˌ')
}

/// The IPA words of a clause: runs of characters between spaces.
fn ipa_words(ipa: &[char]) -> Vec<Range<usize>> {
    let mut out = Vec::new();
    let mut start = None;
    for (i, &c) in ipa.iter().enumerate() {
        if c == ' ' {
            if let Some(a) = start.take() {
                out.push(a..i);
            }
        } else if start.is_none() {
            start = Some(i);
        }
    }
    if let Some(a) = start {
        out.push(a..ipa.len());
    }
    out
}

/// The most cells the alignment fills (≈ 2000 phonemes on each side); beyond it the IPA
/// words are shared out in proportion.
const MAX_CELLS: usize = 4_000_000;

/// For each character of a clause's IPA, the text word (index into `words`) it says; `None`
/// for the spaces between words. `alone(k)` phonemises word `k` by itself (only asked for
/// when the counts of IPA and text words differ).
pub(crate) fn label(
    ipa: &[char],
    words: usize,
    mut alone: impl FnMut(usize) -> Vec<char>,
) -> Vec<Option<usize>> {
    let runs = ipa_words(ipa);
    let mut labels = vec![None; ipa.len()];
    if words == 0 || runs.is_empty() {
        return labels;
    }
    let by_run = |labels: &mut [Option<usize>], of: &dyn Fn(usize) -> usize| {
        for (j, run) in runs.iter().enumerate() {
            for slot in &mut labels[run.clone()] {
                *slot = Some(of(j));
            }
        }
    };
    if runs.len() == words {
        by_run(&mut labels, &|j| j);
        return labels;
    }
    let standalone: Vec<Vec<char>> = (0..words).map(&mut alone).collect();
    let cells = (standalone.iter().map(Vec::len).sum::<usize>() + words) * (ipa.len() + 1);
    if cells > MAX_CELLS {
        let n = runs.len();
        by_run(&mut labels, &|j| j * words / n);
        return labels;
    }
    let mut labels = align(ipa, &standalone);
    fill(ipa, &runs, &mut labels);
    labels
}

/// One item of a sequence being aligned: a phoneme or a word boundary.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Sym {
    Ph(char),
    Gap,
}

/// Costs (tenths): a different phoneme, a phoneme left out or added, a boundary skipped.
const SUBST: u32 = 10;
const INDEL: u32 = 10;
const SKIP_BOUNDARY: u32 = 3;

/// Edit-distance alignment of the clause's IPA with its words said alone, each word's
/// phonemes labelled with the word. Labels per clause character (stress marks and spaces
/// left `None`; [`fill`] completes them).
fn align(ipa: &[char], alone: &[Vec<char>]) -> Vec<Option<usize>> {
    // The words alone: phonemes labelled by word, a boundary between words.
    let mut a: Vec<(Sym, Option<usize>)> = Vec::new();
    for (k, w) in alone.iter().enumerate() {
        if k > 0 {
            a.push((Sym::Gap, None));
        }
        for &c in w {
            if c == ' ' {
                a.push((Sym::Gap, None));
            } else if !is_stress(c) {
                a.push((Sym::Ph(c), Some(k)));
            }
        }
    }
    // The clause: phonemes with their index, spaces as boundaries.
    let b: Vec<(Sym, usize)> = ipa
        .iter()
        .enumerate()
        .filter(|(_, c)| !is_stress(**c))
        .map(|(i, &c)| (if c == ' ' { Sym::Gap } else { Sym::Ph(c) }, i))
        .collect();
    let (n, m) = (a.len(), b.len());
    let w = m + 1;
    let skip = |s: Sym| if s == Sym::Gap { SKIP_BOUNDARY } else { INDEL };
    let pair = |x: Sym, y: Sym| match (x, y) {
        (Sym::Gap, Sym::Gap) => Some(0),
        (Sym::Ph(p), Sym::Ph(q)) => Some(if p == q { 0 } else { SUBST }),
        _ => None,
    };
    // 0: diagonal, 1: skip an item of `a`, 2: skip an item of `b`.
    let mut cost = vec![0u32; (n + 1) * w];
    let mut from = vec![0u8; (n + 1) * w];
    for j in 1..=m {
        cost[j] = cost[j - 1] + skip(b[j - 1].0);
        from[j] = 2;
    }
    for i in 1..=n {
        cost[i * w] = cost[(i - 1) * w] + skip(a[i - 1].0);
        from[i * w] = 1;
        for j in 1..=m {
            let mut best = (cost[(i - 1) * w + j] + skip(a[i - 1].0), 1u8);
            let left = cost[i * w + j - 1] + skip(b[j - 1].0);
            if left < best.0 {
                best = (left, 2);
            }
            if let Some(c) = pair(a[i - 1].0, b[j - 1].0) {
                let diag = cost[(i - 1) * w + j - 1] + c;
                if diag <= best.0 {
                    best = (diag, 0);
                }
            }
            cost[i * w + j] = best.0;
            from[i * w + j] = best.1;
        }
    }
    let mut labels = vec![None; ipa.len()];
    let (mut i, mut j) = (n, m);
    while i > 0 || j > 0 {
        match from[i * w + j] {
            0 => {
                if let (Sym::Ph(_), Some(k)) = a[i - 1] {
                    labels[b[j - 1].1] = Some(k);
                }
                i -= 1;
                j -= 1;
            }
            1 => i -= 1,
            _ => j -= 1,
        }
    }
    labels
}

/// Completes the labels of an alignment: a phoneme nothing was aligned to takes its
/// neighbour's word within its IPA word (the one before it, or after it at the start), an IPA
/// word with none takes the word before it (or after it); stress marks take the word of what
/// follows them; and words never go backwards.
fn fill(ipa: &[char], runs: &[Range<usize>], labels: &mut [Option<usize>]) {
    let mut run_first: Vec<Option<usize>> = Vec::with_capacity(runs.len());
    for run in runs {
        let mut last = None;
        for i in run.clone() {
            if is_stress(ipa[i]) {
                continue;
            }
            match labels[i] {
                Some(l) => last = Some(l),
                None => labels[i] = last,
            }
        }
        let first = run.clone().find_map(|i| labels[i]);
        for i in run.clone() {
            if labels[i].is_some() {
                break;
            }
            if !is_stress(ipa[i]) {
                labels[i] = first;
            }
        }
        run_first.push(first);
    }
    // IPA words with nothing aligned: the word before, else the next.
    let mut prev: Option<usize> = None;
    for (r, run) in runs.iter().enumerate() {
        let has = run_first[r].is_some();
        if !has {
            let l = prev.or_else(|| run_first[r + 1..].iter().find_map(|x| *x));
            for i in run.clone() {
                if !is_stress(ipa[i]) {
                    labels[i] = l;
                }
            }
        }
        if let Some(l) = run.clone().rev().find_map(|i| labels[i]) {
            prev = Some(l);
        }
    }
    // Stress marks: the word of the next phoneme in their IPA word.
    for run in runs {
        let mut next = None;
        for i in run.clone().rev() {
            if is_stress(ipa[i]) {
                labels[i] = next.or(labels[i]);
            } else {
                next = labels[i];
            }
        }
    }
    // Anything still without a word (an IPA word of stress marks only): its neighbour's.
    let mut last = None;
    for (i, l) in labels.iter_mut().enumerate() {
        if ipa[i] != ' ' && l.is_none() {
            *l = last;
        }
        last = l.or(last);
    }
    let first = labels.iter().find_map(|x| *x).unwrap_or(0);
    for (i, l) in labels.iter_mut().enumerate() {
        if ipa[i] != ' ' && l.is_none() {
            *l = Some(first);
        }
    }
    let mut max = None;
    for l in labels.iter_mut().flatten() {
        if max.is_some_and(|m| *l < m) {
            *l = max.unwrap_or(*l);
        }
        max = Some(*l);
    }
}

/// Words phonemised alone, by (voice, word).
type AloneCache = HashMap<(String, String), Vec<char>>;

/// The cache of words phonemised alone; cleared when full, so it stays small.
static ALONE: Mutex<Option<AloneCache>> = Mutex::new(None);
const ALONE_MAX: usize = 4096;

/// `word` phonemised alone with `phonemise` (cached per voice).
pub(crate) fn alone(
    voice: &str,
    word: &str,
    phonemise: impl FnOnce(&str) -> Vec<char>,
) -> Vec<char> {
    let key = (voice.to_string(), word.to_string());
    {
        let cache = ALONE.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(v) = cache.as_ref().and_then(|c| c.get(&key)) {
            return v.clone();
        }
    }
    let v = phonemise(word);
    let mut cache = ALONE.lock().unwrap_or_else(|e| e.into_inner());
    let c = cache.get_or_insert_with(HashMap::new);
    if c.len() >= ALONE_MAX {
        c.clear();
    }
    c.insert(key, v.clone());
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chars(s: &str) -> Vec<char> {
        s.chars().collect()
    }

    /// The word of each IPA word, as "word-index per run" with splits shown by `/`.
    fn runs_of(ipa: &str, labels: &[Option<usize>]) -> Vec<String> {
        let ipa = chars(ipa);
        ipa_words(&ipa)
            .into_iter()
            .map(|r| {
                let mut s = String::new();
                let mut last = None;
                for i in r {
                    if is_stress(ipa[i]) {
                        continue;
                    }
                    if last.is_some() && last != labels[i] {
                        s.push('/');
                    }
                    if last != labels[i] {
                        s.push_str(&labels[i].map_or("-".into(), |l| l.to_string()));
                    }
                    last = labels[i];
                }
                s
            })
            .collect()
    }

    #[test]
    fn text_words_are_tokens_trimmed_of_punctuation() {
        let t = "  Hello, world! \"Quoted\" well-known & don't ... (x) $5";
        let got: Vec<&str> = text_words(t, 0..t.len())
            .into_iter()
            .map(|r| &t[r])
            .collect();
        assert_eq!(
            got,
            [
                "Hello",
                "world",
                "Quoted",
                "well-known",
                "&",
                "don't",
                "x",
                "5"
            ]
        );
        let got: Vec<&str> = text_words(t, 9..20).into_iter().map(|r| &t[r]).collect();
        assert_eq!(got, ["world", "Quo"]);
        assert!(text_words("é", 1..2).is_empty());
    }

    #[test]
    fn equal_counts_are_one_for_one() {
        let ipa = "hɛlˈoʊ wˈɜːld";
        let l = label(&chars(ipa), 2, |_| panic!("not needed"));
        assert_eq!(runs_of(ipa, &l), ["0", "1"]);
        // Stress marks go with the word; spaces with none.
        assert_eq!(l[3], Some(0));
        assert_eq!(l[6], None);
        assert_eq!(l[8], Some(1));
    }

    #[test]
    fn a_joined_word_is_split_between_its_words() {
        // "He sat in the garden": espeak says "in the" as one word.
        let ipa = "hiː sˈæt ɪnðə ɡˈɑːɹdən";
        let alone = ["hˈiː", "sˈæt", "ˈɪn", "ðˈə", "ɡˈɑːɹdən"];
        let l = label(&chars(ipa), 5, |k| chars(alone[k]));
        assert_eq!(runs_of(ipa, &l), ["0", "1", "2/3", "4"]);
        // …at the right phoneme.
        let i = ipa.chars().position(|c| c == 'ð').unwrap();
        assert_eq!((l[i - 1], l[i]), (Some(2), Some(3)));
    }

    #[test]
    fn a_split_word_gets_all_of_its_ipa_words() {
        // Raw "in 1990 we": the year is two IPA words.
        let ipa = "ɪn nˈaɪntiːnhˈʌndɹɪd nˈaɪnti wiː";
        let alone = ["ˈɪn", "nˈaɪntiːnhˈʌndɹɪd nˈaɪnti", "wˈiː"];
        let l = label(&chars(ipa), 3, |k| chars(alone[k]));
        assert_eq!(runs_of(ipa, &l), ["0", "1", "1", "2"]);
    }

    #[test]
    fn pronunciation_in_context_still_aligns() {
        // "of the old": "the" is ðɪ before a vowel, ðə alone; joined "of the".
        let ipa = "ʌvðɪ ˈoʊld hˈaʊs";
        let alone = ["ˈʌv", "ðˈə", "ˈoʊld", "hˈaʊs"];
        let l = label(&chars(ipa), 4, |k| chars(alone[k]));
        assert_eq!(runs_of(ipa, &l), ["0/1", "2", "3"]);
    }

    #[test]
    fn silent_and_extra_words_keep_order() {
        // A text word espeak says nothing for, and an IPA word no text word matches.
        let ipa = "ɐ kˈæt zˈɛd sˈæt";
        let alone = ["ˈeɪ", "", "kˈæt", "sˈæt", ""];
        let l = label(&chars(ipa), 5, |k| chars(alone[k]));
        let runs = runs_of(ipa, &l);
        assert_eq!(runs, ["0", "2", "2", "3"]);
        let mut last = 0;
        for x in l.iter().flatten() {
            assert!(*x >= last);
            last = *x;
        }
    }

    #[test]
    fn no_text_words_label_nothing() {
        let l = label(&chars("ɐ b"), 0, |_| Vec::new());
        assert!(l.iter().all(Option::is_none));
    }

    proptest::proptest! {
        /// Any strings: labels exist for every phoneme, never go backwards, stay in range.
        #[test]
        fn labels_are_monotone_and_complete(
            ipa in "[a-dˈ ]{0,40}",
            alone in proptest::collection::vec("[a-dˈ ]{0,8}", 1..8),
        ) {
            let ipa = chars(&ipa);
            let l = label(&ipa, alone.len(), |k| chars(&alone[k]));
            let mut last = 0;
            for (i, x) in l.iter().enumerate() {
                if ipa[i] == ' ' {
                    proptest::prop_assert!(x.is_none());
                    continue;
                }
                let x = x.expect("a phoneme without a word");
                proptest::prop_assert!(x < alone.len() && x >= last);
                last = x;
            }
        }
    }
}
