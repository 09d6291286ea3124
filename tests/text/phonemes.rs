//! Hark's phonemiser against Piper's own (`piper_phonemize.phonemize_espeak`).
//!
//! The reference is generated, not pasted: `python3 scripts/reference_phonemes.py
//! tests/data/generated` (CI runs it first). `HARK_TEST_DATA` overrides the directory.
//! Without the file the test prints "skipped: …" and passes.

use std::collections::BTreeMap;

use hark_text::{
    MAX_SENTENCE_PHONEMES, espeak_version, phoneme_ids, phonemize, split_sentences, text_to_ids,
};
use serde::Deserialize;

#[derive(Deserialize)]
struct Reference {
    espeak_version: Option<String>,
    piper_phonemize_version: Option<String>,
    espeak_voice: String,
    phoneme_id_map: BTreeMap<String, Vec<i64>>,
    sentences: Vec<Item>,
    /// Seeded random punctuation-heavy texts (espeak's clause rules).
    #[serde(default)]
    fuzz: Vec<Item>,
}

#[derive(Deserialize)]
struct Item {
    text: String,
    /// Sentences of codepoints, each as a one-character string.
    phonemes: Vec<Vec<String>>,
    ids: Vec<Vec<i64>>,
}

fn load() -> Option<Reference> {
    crate::generated("phonemes.json", "reference_phonemes.py")
}

fn chars(sentence: &[String]) -> Vec<char> {
    sentence
        .iter()
        .map(|s| {
            let mut it = s.chars();
            let c = it.next().expect("empty phoneme string");
            assert!(it.next().is_none(), "phoneme {s:?} is not one codepoint");
            c
        })
        .collect()
}

/// Compare Hark with the reference for each item; returns (failures, sentences checked).
fn compare(items: &[Item], voice: &str, map: &BTreeMap<String, Vec<i64>>) -> (Vec<String>, usize) {
    let mut failures = Vec::new();
    let mut n_sentences = 0;
    for item in items {
        let (want, want_ids): (Vec<Vec<char>>, Vec<&Vec<i64>>) =
            crate::spoken(&item.phonemes, &item.ids)
                .map(|(p, ids)| (chars(p), ids))
                .unzip();
        let got = phonemize(&item.text, voice).expect("phonemize");
        n_sentences += want.len();
        if got != want {
            let show = |v: &[Vec<char>]| -> Vec<String> {
                v.iter().map(|s| s.iter().collect::<String>()).collect()
            };
            failures.push(format!(
                "{:?}\n   piper: {:?}\n   hark:  {:?}",
                item.text,
                show(&want),
                show(&got)
            ));
            continue;
        }
        for (sent, ids) in got.iter().zip(&want_ids) {
            let (mine, _missing) = phoneme_ids(sent, map);
            if &&mine != ids {
                failures.push(format!(
                    "{:?}: ids differ\n   piper: {ids:?}\n   hark:  {mine:?}",
                    item.text
                ));
            }
        }
        // The sentence API gives the same ids for every speakable sentence; one longer than
        // MAX_SENTENCE_PHONEMES comes in pieces (each `^ _ … $`) that rejoin to Piper's ids.
        let full = text_to_ids(&item.text, voice, map).expect("text_to_ids");
        let mut k = 0;
        while k < full.len() {
            let range = &full[k].text_range;
            let pieces = full[k..]
                .iter()
                .take_while(|s| &s.text_range == range)
                .count();
            let group = &full[k..k + pieces];
            let mut ids = group[0].ids.clone();
            for piece in &group[1..] {
                ids.pop();
                ids.extend_from_slice(&piece.ids[2..]);
            }
            if !want_ids.contains(&&ids) {
                failures.push(format!(
                    "{:?}: text_to_ids ids not in the reference",
                    item.text
                ));
            }
            for piece in group {
                assert!(piece.phonemes.chars().count() <= MAX_SENTENCE_PHONEMES);
            }
            assert!(item.text.get(range.clone()).is_some());
            k += pieces;
        }
    }
    (failures, n_sentences)
}

#[test]
fn matches_piper_phonemize() {
    testkit::use_espeak_data();
    let Some(reference) = load() else { return };
    let (system_version, data_path) = espeak_version().expect("espeak-ng initialises");
    println!(
        "reference: piper-phonemize {:?}, espeak-ng {:?}; Hark: system espeak-ng {system_version} ({data_path})",
        reference.piper_phonemize_version, reference.espeak_version
    );
    assert!(
        reference.sentences.len() >= 30,
        "expected at least 30 reference texts"
    );
    let voice = &reference.espeak_voice;
    let map = &reference.phoneme_id_map;
    for (name, items) in [
        ("sentences", &reference.sentences),
        ("random texts", &reference.fuzz),
    ] {
        let (failures, n_sentences) = compare(items, voice, map);
        assert!(
            failures.is_empty(),
            "{} of {} {name} differ from piper_phonemize (reference espeak-ng {:?}, system {system_version}):\n{}",
            failures.len(),
            items.len(),
            reference.espeak_version,
            failures.join("\n")
        );
        println!(
            "{name}: {} texts, {n_sentences} sentences identical",
            items.len()
        );
    }
}

/// Phonemising sentence by sentence (as a streaming caller does) gives Piper's sentences.
#[test]
fn split_then_phonemize_matches_whole_text() {
    testkit::use_espeak_data();
    let Some(reference) = load() else { return };
    let text: String = reference
        .sentences
        .iter()
        .map(|i| i.text.as_str())
        .collect::<Vec<_>>()
        .join(" ");
    let whole = phonemize(&text, &reference.espeak_voice).unwrap();
    let mut pieces = Vec::new();
    for r in split_sentences(&text, 400) {
        pieces.extend(phonemize(&text[r], &reference.espeak_voice).unwrap());
    }
    assert_eq!(whole, pieces);
}
