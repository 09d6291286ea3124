//! sd_hark's protocol reader (hark_speechd::protocol) and settings: any bytes, cut into
//! lines as speech-dispatcher's would be. It must never panic; a data block always ends at
//! its dot line; replies are protocol lines.
#![no_main]
use hark_speechd::protocol::{Command, Parser};
use hark_speechd::settings::SpdSettings;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let mut p = Parser::default();
    let mut settings = SpdSettings::default();
    for line in text.split_inclusive('\n') {
        let step = p.line(line);
        if let Some(r) = &step.reply {
            let code = r.get(..3).unwrap_or("");
            assert!(code.chars().all(|c| c.is_ascii_digit()), "{r:?}");
        }
        if let Some(Command::Set(pairs)) = &step.command {
            for (k, v) in pairs {
                let _ = settings.set(k, v);
            }
        }
    }
    // A dot line always ends a block.
    let _ = p.line(".\n");
    assert!(!p.in_block());
    let _ = hark_speechd::keys::key_parts(&text);
});
