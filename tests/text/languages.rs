//! Other languages: Hark's phonemes and ids against Piper's own (`piper_phonemize`), for each
//! sentence of `tests/data/language_sentences.tsv` with its espeak-ng voice (German, French,
//! Spanish, Russian, Arabic, Hindi, Chinese).
//!
//! Hark's espeak-ng 1.52.0.1 reads Piper's own data (`HARK_ESPEAK_DATA`, set by scripts/test.sh
//! from scripts/espeak-data.sh), and every sentence must then be identical, phonemes and ids.
//! With the data espeak-ng 1.52.0.1 builds for itself, German ü, Russian stress and Mandarin
//! words differ (docs/TEXT.md, "Differences from Piper").
//!
//! The reference is generated, not pasted: `scripts/reference_languages.py tests/data/generated`
//! (scripts/test.sh runs it). `HARK_TEST_DATA` overrides the directory. Without the file the
//! test prints "skipped: …" and passes.

use std::collections::{BTreeMap, BTreeSet};

use hark_text::{espeak_version, phoneme_ids, phonemize, text_to_ids};
use serde::Deserialize;

#[derive(Deserialize)]
struct Reference {
    piper_phonemize_version: Option<String>,
    phoneme_id_map: BTreeMap<String, Vec<i64>>,
    items: Vec<Item>,
}

#[derive(Deserialize)]
struct Item {
    voice: String,
    text: String,
    /// Sentences of codepoints, each as a one-character string.
    phonemes: Vec<Vec<String>>,
    ids: Vec<Vec<i64>>,
}

fn load() -> Option<Reference> {
    crate::generated("languages.json", "reference_languages.py")
}

#[test]
fn other_languages_match_piper_phonemize() {
    testkit::use_espeak_data();
    let Some(reference) = load() else { return };
    let (version, data) = espeak_version().expect("espeak-ng initialises");
    println!(
        "reference: piper-phonemize {:?}; Hark: espeak-ng {version} ({data})",
        reference.piper_phonemize_version
    );
    let voices: BTreeSet<&str> = reference.items.iter().map(|i| i.voice.as_str()).collect();
    for want in ["de", "fr", "es", "ru", "ar", "hi", "cmn"] {
        assert!(voices.contains(want), "no reference sentence for {want}");
    }
    let map = &reference.phoneme_id_map;
    let mut failures = Vec::new();
    let mut checked = 0;
    for item in &reference.items {
        let (want, want_ids): (Vec<String>, Vec<&Vec<i64>>) =
            crate::spoken(&item.phonemes, &item.ids)
                .map(|(p, ids)| (p.concat(), ids))
                .unzip();
        let got = phonemize(&item.text, &item.voice).expect("phonemize");
        let got_text: Vec<String> = got.iter().map(|s| s.iter().collect()).collect();
        for s in &got {
            let (_, missing) = phoneme_ids(s, map);
            if !missing.is_empty() {
                failures.push(format!(
                    "[{}] {:?}: symbols not in Piper's map: {missing:?}",
                    item.voice, item.text
                ));
            }
        }
        if got_text != want {
            failures.push(format!(
                "[{}] {:?}\n   piper: {want:?}\n   hark:  {got_text:?}",
                item.voice, item.text
            ));
            continue;
        }
        let ids: Vec<Vec<i64>> = got.iter().map(|s| phoneme_ids(s, map).0).collect();
        let want_owned: Vec<Vec<i64>> = want_ids.iter().map(|v| (*v).clone()).collect();
        if ids != want_owned {
            failures.push(format!("[{}] {:?}: ids differ", item.voice, item.text));
            continue;
        }
        // The sentence API (what the engine speaks) gives the same ids.
        let sentences = text_to_ids(&item.text, &item.voice, map).expect("text_to_ids");
        let api: Vec<Vec<i64>> = sentences.into_iter().map(|s| s.ids).collect();
        if api != want_owned {
            failures.push(format!(
                "[{}] {:?}: text_to_ids differs",
                item.voice, item.text
            ));
            continue;
        }
        checked += 1;
    }
    assert!(
        failures.is_empty(),
        "{} of {} texts differ from piper_phonemize:\n{}",
        failures.len(),
        reference.items.len(),
        failures.join("\n")
    );
    println!("{checked} texts identical in {} voices", voices.len());
}
