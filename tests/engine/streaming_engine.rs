//! The streaming engine without a device (`Output::None`): its audio equals the synchronous
//! synthesiser's, events come in order, and stop/interrupt/append behave.

use hark_engine::{
    BackendChoice, Engine, EngineConfig, Event, Mode, Output, StepMode, Synthesizer,
};
use std::sync::Arc;
use std::time::Duration;
use testkit::engine::{events_until, finished, load_voice, strip};
use testkit::installed_voices_dir;

const HARK: &str = env!("CARGO_BIN_EXE_hark");
const LONG: Duration = Duration::from_secs(180);
/// Short sentences: the streaming segmenter leaves them whole, like `hark speak --out`.
const TEXT: &str = "Hello from Hark. This is streamed. It ends here.";

fn headless(steps: StepMode) -> Option<(Engine, hark_engine::Events, Synthesizer)> {
    let voices = installed_voices_dir(HARK)?;
    let voice = load_voice(voices);
    let mut synth = Synthesizer::new(load_voice(voices), BackendChoice::Cpu).expect("synth");
    synth.scales.noise_scale = 0.0;
    synth.scales.noise_w = 0.0;
    let mut cfg = EngineConfig::new(Arc::new(voice));
    cfg.backend = BackendChoice::Cpu;
    cfg.output = Output::None;
    cfg.emit_chunks = true;
    cfg.settings.scales = synth.scales;
    cfg.settings.steps = steps;
    let (engine, events) = Engine::start(cfg).expect("engine");
    Some((engine, events, synth))
}

fn chunks(events: &[Event]) -> Vec<f32> {
    events
        .iter()
        .flat_map(|e| match e {
            Event::Chunk { samples, .. } => samples.clone(),
            _ => Vec::new(),
        })
        .collect()
}

#[test]
fn streamed_audio_equals_the_synthesizer_for_fixed_and_adaptive_steps() {
    for steps in [StepMode::Auto, StepMode::Fixed(7), StepMode::Fixed(128)] {
        let Some((engine, mut events, synth)) = headless(steps) else {
            return;
        };
        let mut reference = Vec::new();
        synth
            .speak_text(TEXT, |s| {
                reference.extend_from_slice(s);
                Ok(())
            })
            .expect("synthesize");
        let id = engine.speak(TEXT, Mode::Queue);
        let got = events_until(&mut events, LONG, finished(id));
        let audio = chunks(&got);
        assert_eq!(audio.len(), reference.len(), "{steps:?}");
        let max = audio
            .iter()
            .zip(&reference)
            .map(|(a, b)| (a - b).abs())
            .fold(0.0f32, f32::max);
        assert!(max < 1e-4, "{steps:?}: max difference {max}");
        // Started first, a Progress per sentence covering the text in order, Stats, Finished.
        assert!(
            matches!(got[0], Event::Started { id: i } if i == id),
            "{:?}",
            strip(&got)
        );
        let ranges: Vec<_> = got
            .iter()
            .filter_map(|e| match e {
                Event::Progress { char_range, .. } => Some(char_range.clone()),
                _ => None,
            })
            .collect();
        assert_eq!(ranges.len(), 3, "{:?}", strip(&got));
        assert!(ranges.windows(2).all(|w| w[0].end <= w[1].start));
        assert_eq!(TEXT[ranges[1].clone()].trim(), "This is streamed.");
        let n = got.len();
        assert!(matches!(&got[n - 2], Event::Stats(s) if s.id == id && s.onset_ms.is_some()));
        assert_eq!(got[n - 1], Event::Finished { id, stopped: false });
    }
}

#[test]
fn queued_utterances_finish_in_order_and_interrupt_stops_the_current_one() {
    let Some((engine, mut events, _)) = headless(StepMode::Fixed(16)) else {
        return;
    };
    let a = engine.speak("One.", Mode::Queue);
    let b = engine.speak("Two.", Mode::Queue);
    let c = engine.speak("Three.", Mode::Queue);
    let got = events_until(&mut events, LONG, finished(c));
    let order: Vec<_> = got
        .iter()
        .filter_map(|e| match e {
            Event::Finished { id, stopped } => Some((*id, *stopped)),
            _ => None,
        })
        .collect();
    assert_eq!(order, vec![(a, false), (b, false), (c, false)]);

    // A long text, interrupted as soon as it starts: it ends stopped, the new one plays.
    engine.set_settings(hark_engine::Settings {
        steps: StepMode::Fixed(8),
        ..hark_engine::Settings::for_voice(&load_voice(installed_voices_dir(HARK).expect("voices")))
    });
    let long = engine.speak(&"This sentence goes on and on. ".repeat(20), Mode::Queue);
    events_until(
        &mut events,
        LONG,
        |e| matches!(e, Event::Started { id } if *id == long),
    );
    let next = engine.speak("Next.", Mode::Interrupt);
    let got = events_until(&mut events, LONG, finished(next));
    let stopped_at = got.iter().position(|e| {
        *e == Event::Finished {
            id: long,
            stopped: true,
        }
    });
    let next_started = got.iter().position(|e| *e == Event::Started { id: next });
    assert!(
        matches!((stopped_at, next_started), (Some(s), Some(n)) if s < n),
        "{:?}",
        strip(&got)
    );
    assert_eq!(
        got.last(),
        Some(&Event::Finished {
            id: next,
            stopped: false
        })
    );
}

#[test]
fn appended_pieces_join_one_utterance_in_order() {
    let Some((engine, mut events, _)) = headless(StepMode::Auto) else {
        return;
    };
    let pieces = [
        "Hello the",
        "re, this is a",
        "ppended text. And a second",
        " sentence.",
    ];
    let full: String = pieces.concat();
    let ids: Vec<_> = pieces.iter().map(|p| engine.append(p)).collect();
    assert!(ids.iter().all(|&i| i == ids[0]), "{ids:?}");
    let got = events_until(&mut events, LONG, finished(ids[0]));
    let spoken: Vec<&str> = got
        .iter()
        .filter_map(|e| match e {
            Event::Progress { char_range, .. } => Some(&full[char_range.clone()]),
            _ => None,
        })
        .collect();
    // Every word once, in order, never cut mid-word.
    let joined = spoken.join(" ");
    let words: Vec<&str> = joined.split_whitespace().collect();
    let expected: Vec<&str> = full.split_whitespace().collect();
    assert_eq!(words, expected, "{spoken:?}");
    assert_eq!(
        got.last(),
        Some(&Event::Finished {
            id: ids[0],
            stopped: false
        })
    );
}
