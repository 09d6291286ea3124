//! The streaming engine without a device (`Output::None`): its audio equals the synchronous
//! synthesiser's, events come in order, and stop/interrupt/append behave.

use hark_engine::{
    BackendChoice, Engine, EngineConfig, Event, Input, Mode, Output, StepMode, Synthesizer,
};
use std::sync::Arc;
use std::time::{Duration, Instant};
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
    // Chunks are what plays: keep the inaudible start the engine would cut, as the file has.
    cfg.trim_lead_in = false;
    cfg.settings.scales = synth.scales;
    cfg.settings.steps = steps;
    let (engine, events) = Engine::start(cfg).expect("engine");
    Some((engine, events, synth))
}

/// All the audio of `input`, from the blocking path.
fn synthesize(synth: &mut Synthesizer, input: Input) -> Vec<f32> {
    let mut audio = Vec::new();
    synth
        .speak(input, |s| {
            audio.extend_from_slice(s);
            Ok(())
        })
        .expect("synthesize");
    audio
}

fn max_difference(a: &[f32], b: &[f32]) -> f32 {
    a.iter()
        .zip(b)
        .map(|(a, b)| (a - b).abs())
        .fold(0.0f32, f32::max)
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
        let Some((engine, mut events, mut synth)) = headless(steps) else {
            return;
        };
        let reference = synthesize(&mut synth, Input::Text(TEXT));
        let id = engine.speak(TEXT, Mode::Queue);
        let got = events_until(&mut events, LONG, finished(id));
        let audio = chunks(&got);
        assert_eq!(audio.len(), reference.len(), "{steps:?}");
        let max = max_difference(&audio, &reference);
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

#[test]
fn ids_are_streamed_as_the_synthesizer_speaks_them() {
    let Some((engine, mut events, mut synth)) = headless(StepMode::Fixed(16)) else {
        return;
    };
    let ids = [1, 0, 20, 0, 30, 0, 25, 0, 41, 0, 2];
    let reference = synthesize(&mut synth, Input::Ids(&ids));
    let id = engine.speak_input(Input::Ids(&ids), Mode::Queue);
    let got = events_until(&mut events, LONG, finished(id));
    let audio = chunks(&got);
    assert_eq!(audio.len(), reference.len());
    let max = max_difference(&audio, &reference);
    assert!(max < 1e-4, "max difference {max}");
    assert_eq!(got.last(), Some(&Event::Finished { id, stopped: false }));
}

#[test]
fn an_ssml_document_streams_as_the_synthesizer_speaks_it() {
    // Volume per run, a break and marks: the same samples on both paths, and the marks as
    // events in order (without a device, when the audio before them is out). A run's rate
    // and pitch go through libsonic, whose output depends a little on the chunks it is fed:
    // there the length agrees to within 1 %.
    let plain = hark_text::ssml::parse(
        "<speak>Hello <mark name=\"a\"/>from Hark.<break time=\"300ms\"/>\
         <prosody volume=\"-3dB\">It ends here.</prosody><mark name=\"b\"/></speak>",
    )
    .expect("ssml");
    let shifted = hark_text::ssml::parse(
        "<speak><prosody pitch=\"+5st\" rate=\"120%\">Hello from Hark.</prosody>\
         <prosody pitch=\"-2st\">It ends here.</prosody></speak>",
    )
    .expect("ssml");
    for steps in [StepMode::Auto, StepMode::Fixed(7)] {
        let Some((engine, mut events, mut synth)) = headless(steps) else {
            return;
        };
        let reference = synthesize(&mut synth, Input::Document(&plain));
        let id = engine.speak_input(Input::Document(&plain), Mode::Queue);
        let got = events_until(&mut events, LONG, finished(id));
        let audio = chunks(&got);
        assert_eq!(audio.len(), reference.len(), "{steps:?}");
        let max = max_difference(&audio, &reference);
        assert!(max < 1e-4, "{steps:?}: max difference {max}");
        let marks: Vec<&str> = got
            .iter()
            .filter_map(|e| match e {
                Event::Mark { name, .. } => Some(name.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(marks, ["a", "b"], "{steps:?}");

        let reference = synthesize(&mut synth, Input::Document(&shifted));
        let id = engine.speak_input(Input::Document(&shifted), Mode::Queue);
        let audio = chunks(&events_until(&mut events, LONG, finished(id)));
        let ratio = audio.len() as f64 / reference.len() as f64;
        assert!((ratio - 1.0).abs() < 0.01, "{steps:?}: length ×{ratio:.4}");
    }
}

/// About 1 MB of text with numbers, abbreviations and paragraphs.
fn megabyte() -> String {
    let parts = [
        "Dr. Smith paid $3.50 on 12 May, then left the room. ",
        "The quick brown fox jumps over the lazy dog, while the old farmer watches. ",
        "Is it 2.5% or 3.14? Nobody knows!\n\n",
    ];
    let mut t = String::new();
    for i in 0.. {
        if t.len() >= 1 << 20 {
            break;
        }
        t.push_str(parts[i % parts.len()]);
    }
    t
}

#[test]
fn a_megabyte_of_text_in_one_speak_starts_at_once_and_stops_promptly() {
    let Some((engine, mut events, _)) = headless(StepMode::Auto) else {
        return;
    };
    let text = megabyte();
    let asked = Instant::now();
    let id = engine.speak(&text, Mode::Queue);
    events_until(
        &mut events,
        LONG,
        |e| matches!(e, Event::Chunk { id: i, .. } if *i == id),
    );
    // Phonemising all of it would take minutes: the phonemiser reads the text as it goes.
    let first = asked.elapsed();
    assert!(
        first < Duration::from_secs(20),
        "first audio after {first:?}"
    );

    let stop = Instant::now();
    engine.stop();
    let got = events_until(&mut events, LONG, finished(id));
    let took = stop.elapsed();
    assert_eq!(got.last(), Some(&Event::Finished { id, stopped: true }));
    assert!(took < Duration::from_secs(5), "stopped after {took:?}");

    // Nothing of the long text is left: the next utterance comes at once, and alone.
    let next = engine.speak("Next.", Mode::Queue);
    let got = events_until(&mut events, LONG, finished(next));
    let after = stop.elapsed();
    assert!(
        after < Duration::from_secs(20),
        "next finished {after:?} after the stop"
    );
    eprintln!(
        "1 MB: first audio after {first:?}, stopped in {took:?}, the next done {after:?} after the stop"
    );
    assert!(
        got.iter().all(|e| match e {
            Event::Chunk { id: i, .. } | Event::Progress { id: i, .. } => *i == next,
            _ => true,
        }),
        "{:?}",
        strip(&got)
    );
    assert!(
        got.iter()
            .any(|e| matches!(e, Event::Stats(s) if s.id == next && s.queue_depth == 0))
    );
    assert!(matches!(got.last(), Some(Event::Finished { id, stopped: false }) if *id == next));
}

/// `hark speak --out` is the reference: the blocking path (the CPU backend, each sentence
/// decoded whole) gives exactly the samples of the CPU backend driven directly, noise
/// included, and those of the CPU pipeline to f32 rounding (the backend runs its wide
/// convolutions on Winograd's algorithm, the pipeline on the direct kernel).
#[test]
fn the_synthesizer_is_the_cpu_backend_bit_for_bit() {
    use hark_model::backend::{Backend, CpuBackend};
    let Some(voices) = installed_voices_dir(HARK) else {
        return;
    };
    let voice = load_voice(voices);
    let ids = [1, 0, 20, 0, 30, 0, 25, 0, 41, 0, 59, 0, 2];
    let scales = voice.config.inference;
    let pipeline =
        hark_model::cpu::pipeline::synthesize(&voice.weights, &voice.config.dims, &ids, &scales, 7)
            .expect("pipeline")
            .audio;
    let mut backend = CpuBackend::new(Arc::new(load_voice(voices)));
    let info = backend.begin(&ids, &scales, 7).expect("begin");
    let want = backend.decode(0, info.frames).expect("decode");
    let err = hark_voice::tensor::rel_l2(&want, &pipeline);
    assert!(err < 1e-4, "backend against the pipeline: rel L2 {err:e}");
    let mut synth = Synthesizer::new(voice, BackendChoice::Cpu).expect("synth");
    synth.seed = 7;
    assert!(
        synthesize(&mut synth, Input::Ids(&ids)) == want,
        "the samples differ"
    );
}

#[test]
fn a_multi_speaker_voice_streams_as_its_speaker_on_the_cpu() {
    let Some(onnx) = testkit::multi_speaker_onnx_or_skip() else {
        return;
    };
    let voices = tempfile::tempdir().expect("tempdir");
    hark_voice::import_piper(&onnx, None, voices.path(), None, Default::default())
        .expect("import the multi-speaker voice");
    let voice = |speaker: &str| {
        let mut v = hark_voice::Voice::load_from(voices.path(), Some("hark-multi")).expect("load");
        v.select_speaker(speaker).expect("a speaker");
        v
    };
    // Auto takes the CPU: the CUDA backend does not condition on a speaker.
    let mut synth = Synthesizer::new(voice("chloe"), BackendChoice::Auto).expect("synth");
    assert!(
        synth.backend_name().starts_with("cpu"),
        "{}",
        synth.backend_name()
    );
    synth.scales.noise_scale = 0.0;
    synth.scales.noise_w = 0.0;
    let text = "Hello from Hark.";
    let reference = synthesize(&mut synth, Input::Text(text));
    let (engine, mut events) =
        Engine::start(testkit::engine::deterministic_config(voice("chloe"))).expect("engine");
    let id = engine.speak(text, Mode::Queue);
    let audio = chunks(&events_until(&mut events, LONG, finished(id)));
    assert_eq!(audio.len(), reference.len());
    let max = max_difference(&audio, &reference);
    assert!(max < 1e-4, "max difference {max}");
    // Another speaker is another voice.
    let mut other = Synthesizer::new(voice("ada"), BackendChoice::Cpu).expect("synth");
    other.scales = synth.scales;
    let ada = synthesize(&mut other, Input::Text(text));
    assert!(
        ada.len() != reference.len() || max_difference(&ada, &reference) > 1e-2,
        "ada and chloe sound the same"
    );
}
