//! Every Unicode scalar value through espeak-ng, for valgrind (docs/RELIABILITY.md):
//! `scripts/valgrind-codepoints.sh` runs it under `valgrind --error-exitcode=1`.
//!
//! `espeak_codepoints VOICE [FROM TO [trace]]` (hex code points, default 0 to 10FFFF): the code points
//! go in chunks of 256 through `hark_text::phonemize` (the sanitiser, then espeak-ng in this
//! process), each in four contexts: alone, doubled, before a bracket and before a quote (the
//! contexts in which Debian's 1.51 read freed or uninitialised memory). Prints how many texts
//! and code points went through; any error of espeak-ng is printed and makes the exit code 2.

use std::time::Instant;

const CHUNK: u32 = 256;

fn parse_hex(s: Option<String>, default: u32) -> u32 {
    s.and_then(|s| u32::from_str_radix(s.trim_start_matches("0x"), 16).ok())
        .unwrap_or(default)
        .min(0x10FFFF)
}

fn main() {
    let mut args = std::env::args().skip(1);
    let Some(voice) = args.next() else {
        eprintln!("usage: espeak_codepoints VOICE [FROM TO] (hex)");
        std::process::exit(64);
    };
    let from = parse_hex(args.next(), 0);
    let to = parse_hex(args.next(), 0x10FFFF);
    // `trace`: each chunk's range on stderr before it goes in (to find valgrind's report).
    let trace = args.next().is_some_and(|a| a == "trace");
    // The data Hark reads (Piper's, `scripts/espeak-data.sh`), when given; else the build's.
    if let Some(dir) = std::env::var_os("HARK_ESPEAK_DATA").filter(|d| !d.is_empty()) {
        hark_text::espeak::set_data_dir(dir.into());
    }
    match hark_text::espeak::data_dir() {
        Ok(d) => eprintln!("espeak-ng data: {}", d.display()),
        Err(e) => eprintln!("espeak-ng data: {e}"),
    }
    let start = Instant::now();
    let (mut texts, mut points, mut errors) = (0usize, 0usize, 0usize);
    let mut lo = from;
    while lo <= to {
        let hi = lo.saturating_add(CHUNK - 1).min(to);
        let mut text = String::new();
        for cp in lo..=hi {
            // Surrogates are not scalar values.
            let Some(c) = char::from_u32(cp) else {
                continue;
            };
            text.push_str(&format!("{c} {c}{c} {c}[x] {c}\"y\" "));
            points += 1;
            if cp % 16 == 15 {
                text.push_str(". ");
            }
        }
        if trace {
            eprintln!("chunk U+{lo:04X}..U+{hi:04X}");
        }
        if let Err(e) = hark_text::phonemize(&text, &voice) {
            eprintln!("{voice} U+{lo:04X}..U+{hi:04X}: {e}");
            errors += 1;
        }
        texts += 1;
        if lo.is_multiple_of(0x10000) {
            eprintln!(
                "{voice}: U+{lo:04X} after {:.0} s",
                start.elapsed().as_secs_f64()
            );
        }
        lo = hi + 1;
        if hi == 0x10FFFF {
            break;
        }
    }
    println!(
        "{voice}: U+{from:04X}..U+{to:04X}: {points} code points in {texts} texts, {errors} errors, {:.0} s",
        start.elapsed().as_secs_f64()
    );
    if errors > 0 {
        std::process::exit(2);
    }
}
