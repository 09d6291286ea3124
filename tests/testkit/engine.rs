//! Helpers for driving the streaming engine in-process.

use hark_engine::{EngineConfig, Event, Events, Output, StepMode, UtteranceId};
use hark_voice::Voice;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

pub fn load_voice(voices: &Path) -> Voice {
    Voice::load_from(voices, Some("en_US-joe-medium")).expect("load voice")
}

/// A headless engine on the CPU whose chunks can be compared sample for sample: every chunk
/// reported, the inaudible start kept, no noise, steps of 16 frames.
pub fn deterministic_config(voice: Voice) -> EngineConfig {
    let mut cfg = EngineConfig::new(Arc::new(voice));
    cfg.backend = hark_engine::BackendChoice::Cpu;
    cfg.output = Output::None;
    cfg.emit_chunks = true;
    cfg.trim_lead_in = false;
    cfg.settings.scales.noise_scale = 0.0;
    cfg.settings.scales.noise_w = 0.0;
    cfg.settings.steps = StepMode::Fixed(16);
    cfg
}

/// Receives events until `done` says stop (the event that satisfied it is included), or
/// panics after `timeout`.
pub fn events_until(
    events: &mut Events,
    timeout: Duration,
    mut done: impl FnMut(&Event) -> bool,
) -> Vec<Event> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("runtime");
    let mut got = Vec::new();
    let r = rt.block_on(async {
        tokio::time::timeout(timeout, async {
            while let Some(ev) = events.recv().await {
                let stop = done(&ev);
                got.push(ev);
                if stop {
                    return true;
                }
            }
            false
        })
        .await
    });
    match r {
        Ok(true) => got,
        Ok(false) => panic!("the engine closed its event stream; got {got:?}"),
        Err(_) => panic!(
            "no matching event within {timeout:?}; got {:?}",
            strip(&got)
        ),
    }
}

/// Events without chunk samples, for messages.
pub fn strip(events: &[Event]) -> Vec<String> {
    events
        .iter()
        .map(|e| match e {
            Event::Chunk { id, samples } => format!("Chunk{{id: {id}, {} samples}}", samples.len()),
            other => format!("{other:?}"),
        })
        .collect()
}

pub fn finished(id: UtteranceId) -> impl FnMut(&Event) -> bool {
    move |e| matches!(e, Event::Finished { id: i, .. } if *i == id)
}
