//! `hark speak --out` in every format, decoded back and compared with the WAV of the same
//! text: lengths, samples (exactly for FLAC, by correlation for Opus and MP3), chapters read
//! back from each file's own tags, subtitles against the word timings; memory that stays flat
//! however long the audio; and no file left by a failed export.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;
use testkit::installed_voices_dir;
use testkit::limits::run_limited;

const HARK: &str = env!("CARGO_BIN_EXE_hark");
const RATE: u32 = 22_050;
const TEXT: &str = "# Arrival\nThe train came in at noon. Nobody was waiting on the long, \
    empty platform in the rain.\n\n# Departure\nShe left the next morning.\n";

fn speak(voices: &Path, args: &[&str], text: &str) -> std::process::Output {
    let o = Command::new(HARK)
        .args(["speak", "--backend", "cpu"])
        .args(args)
        .arg(text)
        .env("HARK_VOICES_DIR", voices)
        .output()
        .expect("run hark");
    assert!(
        o.status.success(),
        "hark speak {args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    o
}

fn json(path: &Path) -> Vec<Value> {
    let v: Value = serde_json::from_str(&std::fs::read_to_string(path).expect("read json"))
        .expect("valid json");
    v.as_array().expect("a list").clone()
}

fn ms(sample: u64) -> u64 {
    (sample * 1000 + RATE as u64 / 2) / RATE as u64
}

/// Pearson correlation of `a` and `b` over their common length, `b` shifted by `lag`.
fn correlation(a: &[f32], b: &[f32], lag: isize) -> f64 {
    let pairs: Vec<(f64, f64)> = (0..a.len())
        .filter_map(|i| {
            let j = i as isize + lag;
            (j >= 0 && (j as usize) < b.len()).then(|| (a[i] as f64, b[j as usize] as f64))
        })
        .collect();
    let n = pairs.len() as f64;
    let (ma, mb) = pairs
        .iter()
        .fold((0.0, 0.0), |(x, y), (a, b)| (x + a / n, y + b / n));
    let (mut sab, mut saa, mut sbb) = (0.0, 0.0, 0.0);
    for (a, b) in &pairs {
        sab += (a - ma) * (b - mb);
        saa += (a - ma) * (a - ma);
        sbb += (b - mb) * (b - mb);
    }
    sab / (saa * sbb).sqrt()
}

/// The lag of `b` against `a` (within ±`max`) where they correlate best, and that value.
fn best_lag(a: &[f32], b: &[f32], max: isize) -> (isize, f64) {
    (-max..=max)
        .map(|l| (l, correlation(a, b, l)))
        .fold((0, f64::MIN), |best, x| if x.1 > best.1 { x } else { best })
}

/// All samples of a FLAC or MP3 file (mono), through symphonia, gapless.
fn symphonia_decode(path: &Path) -> Vec<f32> {
    use symphonia::core::audio::SampleBuffer;
    use symphonia::core::codecs::DecoderOptions;
    use symphonia::core::formats::FormatOptions;
    use symphonia::core::io::MediaSourceStream;
    use symphonia::core::probe::Hint;
    let file = std::fs::File::open(path).expect("open");
    let mss = MediaSourceStream::new(Box::new(file), Default::default());
    let mut hint = Hint::new();
    hint.with_extension(path.extension().and_then(|e| e.to_str()).unwrap_or(""));
    let opts = FormatOptions {
        enable_gapless: true,
        ..Default::default()
    };
    let mut format = symphonia::default::get_probe()
        .format(&hint, mss, &opts, &Default::default())
        .expect("a format symphonia reads")
        .format;
    let track = format.default_track().expect("a track").clone();
    assert_eq!(track.codec_params.sample_rate, Some(RATE));
    let mut decoder = symphonia::default::get_codecs()
        .make(&track.codec_params, &DecoderOptions::default())
        .expect("a decoder");
    let mut out = Vec::new();
    while let Ok(packet) = format.next_packet() {
        let decoded = decoder.decode(&packet).expect("decodes");
        let mut buf = SampleBuffer::<f32>::new(decoded.capacity() as u64, *decoded.spec());
        buf.copy_interleaved_ref(decoded);
        out.extend_from_slice(buf.samples());
    }
    out
}

/// The Vorbis comments of a comment list (vendor, count, entries; lengths little-endian).
fn vorbis_comments(mut b: &[u8]) -> Vec<String> {
    let take = |b: &mut &[u8]| {
        let n = u32::from_le_bytes(b[..4].try_into().unwrap()) as usize;
        let s = String::from_utf8(b[4..4 + n].to_vec()).expect("utf-8");
        *b = &b[4 + n..];
        s
    };
    take(&mut b); // vendor
    let count = u32::from_le_bytes(b[..4].try_into().unwrap());
    b = &b[4..];
    (0..count).map(|_| take(&mut b)).collect()
}

/// Chapter starts (ms) and titles from `CHAPTERnnn` comments.
fn vorbis_chapters(comments: &[String]) -> Vec<(u64, String)> {
    let get = |k: &str| {
        comments
            .iter()
            .find_map(|c| c.strip_prefix(&format!("{k}=")).map(str::to_string))
    };
    (1..)
        .map_while(|i| {
            let at = get(&format!("CHAPTER{i:03}"))?;
            let name = get(&format!("CHAPTER{i:03}NAME"))?;
            let p: Vec<u64> = at
                .split([':', '.'])
                .map(|x| x.parse().expect("a number"))
                .collect();
            Some((((p[0] * 60 + p[1]) * 60 + p[2]) * 1000 + p[3], name))
        })
        .collect()
}

/// The VORBIS_COMMENT block of a FLAC file.
fn flac_comments(path: &Path) -> Vec<String> {
    let b = std::fs::read(path).expect("read");
    assert_eq!(&b[..4], b"fLaC");
    let mut at = 4;
    loop {
        let (kind, len) = (
            b[at] & 0x7f,
            u32::from_be_bytes([0, b[at + 1], b[at + 2], b[at + 3]]),
        );
        if kind == 4 {
            return vorbis_comments(&b[at + 4..at + 4 + len as usize]);
        }
        assert!(b[at] & 0x80 == 0, "no VORBIS_COMMENT block");
        at += 4 + len as usize;
    }
}

/// An Ogg Opus file decoded at 48 kHz with its pre-skip and end trimming applied (RFC 7845),
/// and its comments.
fn opus_decode(path: &Path) -> (Vec<f32>, Vec<String>) {
    let mut r = ogg::PacketReader::new(std::fs::File::open(path).expect("open"));
    let head = r.read_packet_expected().expect("OpusHead");
    assert_eq!(&head.data[..8], b"OpusHead");
    let pre_skip = u16::from_le_bytes([head.data[10], head.data[11]]) as usize;
    let tags = r.read_packet_expected().expect("OpusTags");
    assert_eq!(&tags.data[..8], b"OpusTags");
    let comments = vorbis_comments(&tags.data[8..]);
    let mut dec = opus::Decoder::new(48_000, opus::Channels::Mono).expect("decoder");
    let (mut pcm, mut buf, mut last_granule) = (Vec::new(), vec![0f32; 5760], 0);
    while let Some(p) = r.read_packet().expect("a page") {
        let n = dec.decode_float(&p.data, &mut buf, false).expect("decodes");
        pcm.extend_from_slice(&buf[..n]);
        last_granule = p.absgp_page();
        if p.last_in_stream() {
            break;
        }
    }
    pcm.truncate(last_granule as usize);
    (pcm.split_off(pre_skip.min(pcm.len())), comments)
}

/// `samples` at 22,050 Hz resampled to `to` (delay removed), as the reference for a decoder
/// running at that rate.
fn resampled(samples: &[f32], to: u32) -> Vec<f32> {
    let mut rs = hark_audio::resample::StreamResampler::new(RATE, to).expect("resampler");
    let mut out = Vec::new();
    rs.process(samples, &mut out).expect("resample");
    rs.drain(&mut out).expect("drain");
    out.truncate((samples.len() as f64 * to as f64 / RATE as f64).round() as usize);
    out
}

/// Parsed cues of a VTT or SRT file: (start ms, end ms, text).
fn cues(path: &Path) -> Vec<(u64, u64, String)> {
    let text = std::fs::read_to_string(path).expect("read subtitles");
    let t = |s: &str| -> u64 {
        let p: Vec<u64> = s
            .trim()
            .split([':', '.', ','])
            .map(|x| x.parse().expect("a time"))
            .collect();
        ((p[0] * 60 + p[1]) * 60 + p[2]) * 1000 + p[3]
    };
    text.split("\n\n")
        .filter_map(|block| {
            let mut lines = block.lines().skip_while(|l| !l.contains("-->"));
            let (a, b) = lines.next()?.split_once("-->")?;
            Some((t(a), t(b), lines.collect::<Vec<_>>().join(" ")))
        })
        .collect()
}

#[test]
fn every_format_decodes_back_to_the_wav_with_its_chapters() {
    let Some(voices) = installed_voices_dir(HARK) else {
        return;
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let p = |name: &str| -> PathBuf { dir.path().join(name) };
    let s = |p: &PathBuf| p.to_str().expect("utf-8").to_string();
    let (wav, timings, chapters, vtt) = (p("x.wav"), p("t.json"), p("c.json"), p("x.vtt"));
    speak(
        voices,
        &[
            "--out",
            &s(&wav),
            "--timings",
            &s(&timings),
            "--chapters",
            &s(&chapters),
            "--subtitles",
            &s(&vtt),
        ],
        TEXT,
    );
    let (_, reference) = testkit::read_wav(&wav);
    let reference_ms = reference.len() as f64 * 1000.0 / RATE as f64;
    let words = json(&timings);
    let start_of = |w: &str| {
        let w = words
            .iter()
            .find(|x| x["text"] == w)
            .unwrap_or_else(|| panic!("word {w}"));
        w["start_sample"].as_u64().expect("sample")
    };
    // Chapters: the headings, the second between the word before it and its own title.
    let chapters = json(&chapters);
    let titles: Vec<&str> = chapters
        .iter()
        .map(|c| c["title"].as_str().unwrap())
        .collect();
    assert_eq!(titles, ["Arrival", "Departure"]);
    let starts: Vec<u64> = chapters
        .iter()
        .map(|c| c["start_sample"].as_u64().unwrap())
        .collect();
    assert_eq!(starts[0], 0);
    let before = words
        .iter()
        .find(|x| x["text"] == "rain")
        .expect("the word before the heading")["end_sample"]
        .as_u64()
        .unwrap();
    assert!(
        before <= starts[1] && starts[1] <= start_of("Departure"),
        "{before} ≤ {} ≤ {}",
        starts[1],
        start_of("Departure")
    );
    assert!(
        !words
            .iter()
            .any(|w| w["text"].as_str().unwrap().contains('#')),
        "heading marks are not read as words"
    );
    let want_chapters: Vec<(u64, String)> = starts
        .iter()
        .zip(&titles)
        .map(|(&s, t)| (ms(s), t.to_string()))
        .collect();

    // FLAC: the same 16-bit samples exactly.
    let flac = p("x.flac");
    speak(voices, &["--out", &s(&flac)], TEXT);
    let back = symphonia_decode(&flac);
    let to16 =
        |x: &[f32]| -> Vec<i16> { x.iter().map(|&v| (v * 32768.0).round() as i16).collect() };
    assert_eq!(back.len(), reference.len(), "FLAC length");
    assert!(
        to16(&back) == to16(&reference),
        "FLAC samples differ from the WAV's"
    );
    assert_eq!(vorbis_chapters(&flac_comments(&flac)), want_chapters);

    // Opus: as long as the WAV (pre-skip and end trimming), the same speech, its chapters.
    let opus = p("x.opus");
    speak(voices, &["--out", &s(&opus)], TEXT);
    let (back, comments) = opus_decode(&opus);
    let back_ms = back.len() as f64 / 48.0;
    assert!(
        (back_ms - reference_ms).abs() <= 1.0,
        "Opus: {back_ms} ms against {reference_ms} ms"
    );
    let want = resampled(&reference, 48_000);
    let (lag, r) = best_lag(&want, &back, 48);
    eprintln!("opus: {back_ms:.1} ms (WAV {reference_ms:.1}), correlation {r:.3} at lag {lag}");
    assert!(
        lag.abs() <= 2 && r > 0.9,
        "Opus: correlation {r} at lag {lag}"
    );
    assert_eq!(vorbis_chapters(&comments), want_chapters);

    // MP3: gapless through LAME's Info frame, the same speech, ID3v2 chapters.
    let mp3 = p("x.mp3");
    speak(voices, &["--out", &s(&mp3)], TEXT);
    let back = symphonia_decode(&mp3);
    let back_ms = back.len() as f64 * 1000.0 / RATE as f64;
    let (lag, r) = best_lag(&reference, &back, 1200);
    eprintln!("mp3: {back_ms:.1} ms (WAV {reference_ms:.1}), correlation {r:.3} at lag {lag}");
    assert!(
        (back_ms - reference_ms).abs() <= 5.0,
        "MP3: {back_ms} ms against {reference_ms} ms"
    );
    assert!(
        lag.abs() <= 2 && r > 0.9,
        "MP3: correlation {r} at lag {lag}"
    );
    let tag = id3::Tag::read_from_path(&mp3).expect("an ID3v2 tag");
    let got: Vec<(u64, String)> = tag
        .chapters()
        .map(|c| {
            let title = c
                .frames
                .iter()
                .find_map(|f| f.content().text())
                .unwrap_or("");
            (c.start_time as u64, title.to_string())
        })
        .collect();
    let floor_ms: Vec<(u64, String)> = starts
        .iter()
        .zip(&titles)
        .map(|(&s, t)| (s * 1000 / RATE as u64, t.to_string()))
        .collect();
    assert_eq!(got, floor_ms);

    // Subtitles: each cue runs from one word's start to a later word's end, in order, at most
    // 7 words, and together they cover every word.
    let vtt_text = std::fs::read_to_string(&vtt).expect("vtt");
    assert!(vtt_text.starts_with("WEBVTT\n\n"), "{vtt_text}");
    let cues = cues(&vtt);
    let word_ms: Vec<(u64, u64)> = words
        .iter()
        .map(|w| {
            let (a, b) = (
                w["start_sample"].as_u64().unwrap(),
                w["end_sample"].as_u64().unwrap(),
            );
            (ms(a), ms(b))
        })
        .collect();
    assert!(cues.len() >= 3, "{cues:?}");
    let mut covered = 0;
    for (start, end, text) in &cues {
        let n = text.split_whitespace().count();
        assert!((1..=7).contains(&n), "cue of {n} words: {text}");
        assert_eq!(
            word_ms[covered].0, *start,
            "cue {text:?} starts at its first word"
        );
        covered += n;
        assert_eq!(
            word_ms[covered - 1].1,
            *end,
            "cue {text:?} ends with its last word"
        );
    }
    assert_eq!(covered, words.len(), "every word is in a cue");
    assert!(cues.windows(2).all(|w| w[0].1 <= w[1].0), "cues in order");
    // SRT: the same cues, numbered, with a comma before the milliseconds.
    let srt = p("x.srt");
    speak(
        voices,
        &["--out", &s(&p("y.flac")), "--subtitles", &s(&srt)],
        TEXT,
    );
    let srt_text = std::fs::read_to_string(&srt).expect("srt");
    assert!(srt_text.starts_with("1\n00:00:00,"), "{srt_text}");
    assert_eq!(self::cues(&srt), cues);
}

/// `seconds` of audio: a word, then ten-second SSML breaks.
fn long_document(seconds: usize) -> Vec<u8> {
    let breaks = "<break time=\"10s\"/>".repeat(seconds / 10);
    format!("<speak>Hello.{breaks}</speak>").into_bytes()
}

#[test]
fn memory_stays_flat_however_long_the_export() {
    let Some(voices) = installed_voices_dir(HARK) else {
        return;
    };
    let dir = tempfile::tempdir().expect("tempdir");
    for ext in ["flac", "opus", "mp3"] {
        let out = dir.path().join(format!("long.{ext}"));
        let peak = |seconds: usize| {
            let mut cmd = Command::new(HARK);
            cmd.args(["speak", "--backend", "cpu", "--ssml", "--out"])
                .arg(&out)
                .arg("-")
                .env("HARK_VOICES_DIR", voices);
            let r = run_limited(cmd, &long_document(seconds), 2048);
            assert!(r.status.success(), "{ext}: {}", r.stderr);
            r.max_rss_kb
        };
        let (short, long) = (peak(10), peak(1800));
        // Half an hour is 76 MiB as 16-bit samples, 152 MiB as f32: none of it may be kept.
        eprintln!("{ext}: peak {short} kB for 10 s, {long} kB for 30 min");
        assert!(
            long < short + 16 * 1024,
            "{ext}: {long} kB for 30 min against {short} kB for 10 s"
        );
    }
}

#[test]
fn a_failed_export_leaves_no_file() {
    let Some(voices) = installed_voices_dir(HARK) else {
        return;
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let run = |name: &str, text: &str| {
        Command::new(HARK)
            .args(["speak", "--backend", "cpu", "--out"])
            .arg(dir.path().join(name))
            .arg(text)
            .env("HARK_VOICES_DIR", voices)
            .output()
            .expect("run hark")
    };
    let o = run("x.aac", "Hello.");
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains(".opus"));
    for name in ["x.flac", "x.opus", "x.mp3"] {
        let o = run(name, "... ?!");
        assert!(!o.status.success(), "{name}: nothing speakable is an error");
    }
    let left: Vec<_> = std::fs::read_dir(dir.path()).expect("dir").collect();
    assert!(left.is_empty(), "left behind: {left:?}");
}

/// `--progress` without a terminal: plain lines on stderr, the last one at 100 % with the
/// audio's length; without it, nothing (a script's stderr stays quiet).
#[test]
fn progress_lines_end_at_100_percent_with_the_length() {
    let Some(voices) = installed_voices_dir(HARK) else {
        return;
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let flac = dir.path().join("p.flac");
    let out = flac.to_str().expect("utf-8 path");
    let o = speak(voices, &["--out", out, "--progress"], TEXT);
    let err = String::from_utf8_lossy(&o.stderr);
    let last = err.lines().rev().find(|l| l.starts_with("hark: "));
    let last = last.unwrap_or_else(|| panic!("no progress line in {err:?}"));
    assert!(last.starts_with("hark: 100%, "), "{last}");
    // "hark: 100%, 6s of audio in 2s": the length as the file has it.
    let frames = symphonia_decode(&flac).len() as f64;
    let said: f64 = last["hark: 100%, ".len()..]
        .split('s')
        .next()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no seconds in {last}"));
    assert!(
        (said - frames / RATE as f64).abs() <= 0.5,
        "{last} for {frames} samples"
    );
    let quiet = speak(voices, &["--out", out], TEXT);
    assert!(!String::from_utf8_lossy(&quiet.stderr).contains("hark: 100%"));
}
