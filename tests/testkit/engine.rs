//! Helpers for driving the streaming engine in-process.

use hark_engine::{Event, Events, UtteranceId};
use hark_voice::Voice;
use std::path::Path;
use std::time::Duration;

pub fn load_voice(voices: &Path) -> Voice {
    Voice::load_from(voices, Some("en_US-joe-medium")).expect("load voice")
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
