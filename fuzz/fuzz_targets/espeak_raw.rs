//! espeak-ng itself on arbitrary text, as `hark speak --raw` hands it over (sanitised and made
//! safe, see `hark_text::espeak::make_safe`): no abort, no panic, offsets inside the text.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    hark_text::phonemize(&text, "en-us").expect("phonemise raw text");
});
