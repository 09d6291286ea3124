//! Sentence navigation through the engine API, with the real voice on a simulated device
//! (the real audio callback on a timer, so "being heard" means what it does on a sound
//! card): previous/repeat/next land on the right sentence, back 5 s lands 5 s back, both
//! replay from memory (the backend begins no sentence twice), words fire again in order,
//! `Finished` comes once, and the audio kept stays within its cap.

use hark_engine::{BackendChoice, Engine, EngineConfig, Event, Events, Output, SentenceTiming};
use std::ops::Range;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};
use testkit::engine::{events_until, finished, load_voice};
use testkit::installed_voices_dir;

const HARK: &str = env!("CARGO_BIN_EXE_hark");
const LONG: Duration = Duration::from_secs(240);
const FOUR: &str = "The first sentence is about the morning light on the hills. \
                    The second sentence talks about the garden behind the house. \
                    The third one mentions the old stone wall by the road. \
                    The fourth and last sentence ends this little story.";

fn engine(voices: &Path, output: Output, keep: Duration) -> (Engine, Events) {
    let voice = load_voice(voices);
    let mut cfg = EngineConfig::new(Arc::new(voice));
    cfg.backend = BackendChoice::Cpu;
    cfg.output = output;
    cfg.keep_audio = keep;
    cfg.settings.scales.noise_scale = 0.0;
    cfg.settings.scales.noise_w = 0.0;
    Engine::start(cfg).expect("engine")
}

fn is_word(e: &Event) -> bool {
    matches!(e, Event::Word { .. })
}

fn progress(e: &Event) -> Option<Range<usize>> {
    match e {
        Event::Progress { char_range, .. } => Some(char_range.clone()),
        _ => None,
    }
}

/// The sentences heard, each with the words that fired in it, in order.
fn passes(events: &[Event]) -> Vec<(Range<usize>, Vec<Range<usize>>)> {
    let mut out: Vec<(Range<usize>, Vec<Range<usize>>)> = Vec::new();
    for e in events {
        match e {
            Event::Progress { char_range, .. } => out.push((char_range.clone(), Vec::new())),
            Event::Word { char_range, .. } => {
                let (sentence, words) = out.last_mut().expect("a word before any sentence");
                assert!(
                    sentence.start <= char_range.start && char_range.end <= sentence.end,
                    "word {char_range:?} outside its sentence {sentence:?}"
                );
                words.push(char_range.clone());
            }
            _ => {}
        }
    }
    out
}

/// Waits for sentence `n` (counting every `Progress`) and its first word.
fn into_sentence(events: &mut Events, n: usize, got: &mut Vec<Event>) {
    let mut seen = got.iter().filter_map(progress).count();
    let mut in_it = false;
    got.extend(events_until(events, LONG, |e| {
        if progress(e).is_some() {
            seen += 1;
            in_it = seen == n;
        }
        in_it && is_word(e)
    }));
}

fn load() -> String {
    format!(
        "(load {})",
        std::fs::read_to_string("/proc/loadavg")
            .unwrap_or_default()
            .trim()
    )
}

#[test]
fn previous_repeat_and_next_land_on_the_right_sentence_and_replay_from_memory() {
    let Some(voices) = installed_voices_dir(HARK) else {
        return;
    };
    let (engine, mut events) = engine(voices, hark_audio::simulated(None), Duration::from_secs(60));
    let id = engine.speak(FOUR, hark_engine::Mode::Interrupt);
    let mut got = Vec::new();
    // 1 → 2, back to 1, again 1, then 2 → 3 (next), and the rest.
    into_sentence(&mut events, 2, &mut got);
    let asked = Instant::now();
    engine.previous_sentence();
    into_sentence(&mut events, 3, &mut got);
    eprintln!(
        "previous sentence: first word again after {:?} {}",
        asked.elapsed(),
        load()
    );
    engine.repeat_sentence();
    into_sentence(&mut events, 5, &mut got);
    engine.next_sentence();
    got.extend(events_until(&mut events, LONG, finished(id)));

    let p = passes(&got);
    let ranges: Vec<Range<usize>> = p.iter().map(|(r, _)| r.clone()).collect();
    let distinct: Vec<Range<usize>> = ranges.iter().fold(Vec::new(), |mut v, r| {
        if !v.contains(r) {
            v.push(r.clone())
        }
        v
    });
    assert_eq!(distinct.len(), 4, "four sentences: {ranges:?}");
    let [s1, s2, s3, s4] = [0, 1, 2, 3].map(|i| distinct[i].clone());
    assert_eq!(
        ranges,
        [
            s1.clone(),
            s2.clone(),
            s1.clone(),
            s1.clone(),
            s2.clone(),
            s3,
            s4
        ],
        "sentences heard"
    );
    // Whole passes hear every word of the sentence in order (as the timeline has them); the
    // ones cut short by a step, a start of them. The timeline holds a sentence once its
    // synthesis has ended (Engine::timeline): when `next` comes while the second sentence is
    // still being synthesised (a slow or busy machine), the step drops it, so it may be absent;
    // then its two cut passes must still agree with each other.
    let timeline = engine.timeline();
    let words_of = |range: &Range<usize>| -> Option<Vec<Range<usize>>> {
        timeline
            .iter()
            .find(|(u, t)| *u == id && t.range == *range)
            .map(|(_, t)| t.words.iter().map(|w| w.range.clone()).collect())
    };
    assert!(
        p[0].1.len() >= 8,
        "words of the first sentence: {:?}",
        p[0].1
    );
    for (k, (range, words)) in p.iter().enumerate() {
        let whole = match words_of(range) {
            Some(whole) => whole,
            None if *range == s2 => {
                let (a, b) = (&p[1].1, &p[4].1);
                assert!(
                    a.starts_with(b) || b.starts_with(a),
                    "the cut passes of the second sentence disagree: {a:?} and {b:?}"
                );
                continue;
            }
            None => panic!("pass {k}: sentence {range:?} is not in the timeline"),
        };
        if [0, 3, 5, 6].contains(&k) {
            assert_eq!(*words, whole, "pass {k} of {range:?}: every word");
        } else {
            assert!(
                whole.starts_with(words),
                "pass {k} of {range:?}: {words:?} is not a start of {whole:?}"
            );
        }
    }
    // Started and Finished once each; nothing synthesised twice.
    let count = |f: fn(&Event) -> bool| got.iter().filter(|e| f(e)).count();
    assert_eq!(count(|e| matches!(e, Event::Started { .. })), 1);
    assert_eq!(
        count(|e| matches!(e, Event::Finished { stopped: false, .. })),
        1
    );
    assert_eq!(
        engine.sentences_synthesised(),
        4,
        "replays synthesised again"
    );
    assert!(engine.kept_audio_samples() > 0);
}

/// Where a word starts in the utterance's audio as first synthesised: the lengths of the
/// sentences before it and its place in its own (the timeline's positions of a sentence
/// synthesised after a replay count the replay too).
fn word_start(timeline: &[SentenceTiming], word: &Range<usize>) -> i64 {
    let mut before = 0;
    for s in timeline {
        if let Some(w) = s.words.iter().find(|w| w.range == *word) {
            return (before + w.samples.start - s.samples.start) as i64;
        }
        before += s.samples.end - s.samples.start;
    }
    panic!("word {word:?} not in the timeline")
}

fn words_of(events: &[Event]) -> Vec<Range<usize>> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::Word { char_range, .. } => Some(char_range.clone()),
            _ => None,
        })
        .collect()
}

#[test]
fn back_five_seconds_lands_five_seconds_back_and_replays_from_memory() {
    let Some(voices) = installed_voices_dir(HARK) else {
        return;
    };
    let text = [FOUR, FOUR].join(" ");
    let (engine, mut events) = engine(voices, hark_audio::simulated(None), Duration::from_secs(60));
    let rate = load_voice(voices).config.sample_rate as f64;
    let id = engine.speak(&text, hark_engine::Mode::Interrupt);
    let mut got = Vec::new();
    into_sentence(&mut events, 5, &mut got);
    // A few words into it, so that 5 s back is mid-sentence.
    let mut n = 0;
    got.extend(events_until(&mut events, LONG, |e| {
        n += is_word(e) as usize;
        n == 3
    }));
    let heard = words_of(&got).pop().expect("a word");
    engine.skip(-5.0);
    let before = got.len();
    got.extend(events_until(&mut events, LONG, |e| progress(e).is_some()));
    // The engine acted on a word from the one heard at the call to the last before the jump.
    let heard_last = words_of(&got[before..]).pop().unwrap_or(heard.clone());
    let replay = got.len() - 1;
    got.extend(events_until(&mut events, LONG, finished(id)));

    let timeline: Vec<SentenceTiming> = engine
        .timeline()
        .into_iter()
        .filter(|(u, _)| *u == id)
        .map(|(_, t)| t)
        .collect();
    let replayed = words_of(&got[replay..]);
    let landed = replayed.first().expect("words after the skip").clone();
    let back = (5.0 * rate) as i64;
    let at = |w: &Range<usize>| word_start(&timeline, w);
    let (from, to, landed_at) = (at(&heard) - back, at(&heard_last) - back, at(&landed));
    // It lands at the start of the word 5 s back: no later, and less than a word earlier.
    let slack = (0.8 * rate) as i64;
    assert!(
        from - slack <= landed_at && landed_at <= to,
        "landed at sample {landed_at}; 5 s back from the word heard is {from}..={to}"
    );
    // From there every word plays in order to the end, and nothing was synthesised twice.
    let words: Vec<Range<usize>> = timeline
        .iter()
        .flat_map(|s| s.words.iter().map(|w| w.range.clone()))
        .collect();
    let k = words
        .iter()
        .position(|w| *w == landed)
        .expect("landed word");
    assert_eq!(replayed, words[k..], "words after the skip");
    let sentences = timeline.len() as u64;
    assert_eq!(
        engine.sentences_synthesised(),
        sentences,
        "replays synthesised again"
    );
}

#[test]
fn the_audio_kept_for_replay_stays_within_its_cap() {
    let Some(voices) = installed_voices_dir(HARK) else {
        return;
    };
    let rate = load_voice(voices).config.sample_rate as u64;
    let keep = Duration::from_secs(6);
    let (engine, mut events) = engine(voices, Output::None, keep);
    let id = engine.speak(&[FOUR, FOUR].join(" "), hark_engine::Mode::Interrupt);
    let mut most = 0;
    let got = events_until(&mut events, LONG, |e| {
        most = most.max(engine.kept_audio_samples());
        finished(id)(e)
    });
    let audio: u64 = engine
        .timeline()
        .iter()
        .map(|(_, t)| t.samples.end - t.samples.start)
        .sum();
    assert!(
        audio > 3 * 6 * rate,
        "the text is longer than the cap: {audio} samples"
    );
    assert!(most <= 6 * rate, "kept {most} samples, cap {}", 6 * rate);
    assert!(engine.kept_audio_samples() > rate / 2, "something is kept");
    assert!(
        got.iter()
            .any(|e| matches!(e, Event::Finished { stopped: false, .. }))
    );
}
