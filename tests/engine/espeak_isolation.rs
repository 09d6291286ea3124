//! espeak-ng in a child process (hark_text::espeak_child), with the `hark` binary as the
//! child: a crash on one text loses that text only, and the next text is phonemised by a
//! new child; a child killed while idle is replaced without an error.

use hark_text::TextError;
use hark_text::espeak_child::{child_id, crash_on_text_for_test, isolate};
use std::path::Path;

#[test]
fn a_crash_in_espeak_loses_one_text_and_the_next_works() {
    isolate(Path::new(env!("CARGO_BIN_EXE_hark"))).expect("start the child");
    let want = hark_text::phonemize("Hello there. How are you?", "en-us").expect("phonemise");
    assert!(!want.is_empty());
    let first = child_id().expect("a child runs");

    crash_on_text_for_test("dies with the child");
    let err = hark_text::phonemize("This text dies with the child.", "en-us").unwrap_err();
    assert!(matches!(err, TextError::EspeakCrashed(_)), "{err}");
    assert!(err.to_string().contains("skipped"), "{err}");
    assert_eq!(child_id(), None, "the dead child is gone");
    assert_ne!(first, 0);

    let again = hark_text::phonemize("Hello there. How are you?", "en-us").expect("phonemise");
    assert_eq!(again, want, "a new child gives the same phonemes");
    let second = child_id().expect("a new child runs");
    assert_ne!(first, second);

    // Killed while idle: replaced, and the request still answered.
    let killed = std::process::Command::new("kill")
        .args(["-9", &second.to_string()])
        .status()
        .expect("run kill");
    assert!(killed.success());
    std::thread::sleep(std::time::Duration::from_millis(100));
    let after = hark_text::phonemize("Hello there. How are you?", "en-us").expect("phonemise");
    assert_eq!(after, want);
    assert_ne!(child_id(), Some(second));

    // Texts known to crash espeak-ng 1.51 in process are answered (kept safe before espeak).
    for text in ["W.".repeat(85), "W".repeat(120)] {
        hark_text::phonemize(&text, "en-us").expect("phonemise a former crasher");
    }

    // Word timing phonemises single words too (espeak joins "in the", "of the"): those go
    // to the child as well, so this thread never runs espeak-ng in process.
    let text = "He sat in the garden of the old house, and thought. Quillbeck came.";
    let mut map: std::collections::BTreeMap<String, Vec<i64>> = [("_", 0), ("^", 1), ("$", 2)]
        .into_iter()
        .map(|(k, v)| (k.to_string(), vec![v]))
        .collect();
    for c in hark_text::phonemize(text, "en-us")
        .expect("phonemise")
        .concat()
    {
        let n = map.len() as i64;
        map.entry(c.to_string()).or_insert(vec![n]);
    }
    let before = hark_text::espeak::in_process_calls_for_test();
    let sentences = hark_text::text_to_ids(text, "en-us", &map).expect("ids");
    assert_eq!(
        hark_text::espeak::in_process_calls_for_test(),
        before,
        "espeak-ng ran in process"
    );
    let words: Vec<(&str, bool)> = sentences
        .iter()
        .flat_map(|s| &s.words)
        .map(|w| (&text[w.text.clone()], !w.ids.is_empty()))
        .collect();
    let want = [
        "He",
        "sat",
        "in",
        "the",
        "garden",
        "of",
        "the",
        "old",
        "house",
        "and",
        "thought",
        "Quillbeck",
        "came",
    ];
    assert_eq!(words, want.map(|w| (w, true)));
    // "in" and "the" each have their own ids (the split of espeak's "ɪnðə" needs both
    // words phonemised alone).
    let s = &sentences[0];
    assert!(s.words[2].ids.end <= s.words[3].ids.start, "{:?}", s.words);
}
