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
}
