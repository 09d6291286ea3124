//! espeak-ng itself on arbitrary text, as `hark speak --raw` hands it over (sanitised and made
//! safe, see `hark_text::espeak::make_safe`): no abort, no panic, offsets inside the text.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(
    init: {
        // A machine without this build's folder (the device host) names espeak-ng's data.
        if let Some(dir) = std::env::var_os("HARK_ESPEAK_DATA") {
            hark_text::espeak::set_data_dir(dir.into());
        }
    },
    |data: &[u8]| {
        let text = String::from_utf8_lossy(data);
        hark_text::phonemize(&text, "en-us").expect("phonemise raw text");
    }
);
