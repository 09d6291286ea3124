//! The phonemiser thread: text jobs → the phonemiser loop (segments → phoneme ids, read as
//! they are queued) → the bounded phoneme queue. espeak-ng is a process-wide singleton, so
//! one thread doing all phonemising is natural.

use super::EngineError;
use super::api::{Control, Event, UtteranceId};
use super::phonemise::{self, Input, Piece, WordIds};
use super::worker::{Cmd, Item};
use hark_text::segment::Segmenter;
use hark_voice::Voice;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::{Duration, Instant};

/// Appended text after the last clause boundary waits this long for more before it is spoken.
const APPEND_IDLE: Duration = Duration::from_millis(300);
/// How long one push waits before re-checking for a stop.
const PUSH_SLICE: Duration = Duration::from_millis(50);
/// The longest the phonemiser holds back an utterance's later segments while the engine
/// works on its first audio.
const FIRST_AUDIO_WAIT: Duration = Duration::from_millis(500);

/// What a job speaks.
pub(crate) enum JobInput {
    Text(String),
    Ids(Vec<i64>),
    Document(hark_text::ssml::Document),
}

/// What the phonemiser thread is sent.
pub(crate) enum ToProducer {
    Job(Job),
    /// The normaliser's punctuation verbosity from now on.
    Verbosity(hark_text::normalize::PunctuationVerbosity),
}

pub(crate) struct Job {
    pub id: UtteranceId,
    pub epoch: u64,
    pub input: JobInput,
    /// Offset of the job's text within the utterance's text.
    pub base: usize,
    /// Complete text (`speak`) rather than a piece that may end mid-clause (`append`).
    pub whole: bool,
    /// The start of an utterance: cut a short first segment.
    pub first: bool,
    pub requested: Instant,
}

/// Appended text held back until a clause boundary or a pause in the input.
struct Carry {
    id: UtteranceId,
    epoch: u64,
    text: String,
    base: usize,
    first: bool,
    requested: Instant,
    /// Jobs whose end is reported once the carried text is queued.
    jobs: usize,
}

struct Producer {
    voice: Arc<Voice>,
    segmenter: Segmenter,
    control: Arc<Control>,
    wake: mpsc::Sender<Cmd>,
    events: tokio::sync::mpsc::UnboundedSender<Event>,
    /// Index of the next segment of the latest utterance (for its seed).
    next_index: (UtteranceId, usize),
}

/// Text the phonemiser's warm-up speaks to nobody: numbers, an abbreviation, a currency and
/// punctuation, so espeak-ng's data and the normaliser's tables are loaded before real text.
const WARM_UP_TEXT: &str = "Dr. Smith paid $3.50 on 12 May; then she said: \"Hello, world!\"";

/// Phonemises `WARM_UP_TEXT` once (espeak-ng loads its data on first use), so the first real
/// utterance does not pay for it. Any thread may do it: espeak-ng is behind one lock.
pub(crate) fn warm_up(voice: &Voice, segmenter: &Segmenter) {
    let input = Input::Text(WARM_UP_TEXT);
    for s in phonemise::sentences(&voice.config, segmenter, input, true, 0) {
        if let Err(e) = s {
            tracing::warn!("phonemiser warm-up failed: {e}");
            return;
        }
    }
}

pub(crate) fn spawn(
    voice: Arc<Voice>,
    segmenter: Segmenter,
    control: Arc<Control>,
    jobs: mpsc::Receiver<ToProducer>,
    wake: mpsc::Sender<Cmd>,
    events: tokio::sync::mpsc::UnboundedSender<Event>,
) -> Result<std::thread::JoinHandle<()>, EngineError> {
    let mut p = Producer {
        voice,
        segmenter,
        control,
        wake,
        events,
        next_index: (0, 0),
    };
    std::thread::Builder::new()
        .name("hark-phonemiser".into())
        .spawn(move || p.run(jobs))
        .map_err(|e| EngineError::Sink(format!("cannot start the phonemiser thread: {e}")))
}

impl Producer {
    fn epoch(&self) -> u64 {
        self.control.epoch()
    }

    fn run(&mut self, jobs: mpsc::Receiver<ToProducer>) {
        let mut carry: Option<Carry> = None;
        loop {
            if self.control.shutdown.load(Ordering::Acquire) {
                return;
            }
            if carry.as_ref().is_some_and(|c| c.epoch != self.epoch()) {
                carry = None;
            }
            let wait = if carry.is_some() {
                APPEND_IDLE
            } else {
                Duration::from_secs(1)
            };
            match jobs.recv_timeout(wait) {
                Ok(ToProducer::Verbosity(v)) => self.segmenter.options.normalize.verbosity = v,
                Ok(ToProducer::Job(job)) if job.epoch != self.epoch() => {}
                Ok(ToProducer::Job(job)) => carry = self.take(job, carry),
                Err(RecvTimeoutError::Timeout) => {
                    if let Some(c) = carry.take() {
                        self.flush(c);
                    }
                }
                Err(RecvTimeoutError::Disconnected) => {
                    if let Some(c) = carry.take() {
                        self.flush(c);
                    }
                    return;
                }
            }
        }
    }

    /// Handles one job; returns what is still held back.
    fn take(&mut self, job: Job, carry: Option<Carry>) -> Option<Carry> {
        let Job {
            id,
            epoch,
            input,
            base,
            whole,
            first,
            requested,
        } = job;
        let start = |text| Carry {
            id,
            epoch,
            text,
            base,
            first,
            requested,
            jobs: 1,
        };
        let text = match input {
            JobInput::Text(text) => text,
            JobInput::Ids(ids) => {
                if let Some(c) = carry {
                    self.flush(c);
                }
                self.finish(&start(String::new()), Input::Ids(&ids));
                return None;
            }
            JobInput::Document(doc) => {
                if let Some(c) = carry {
                    self.flush(c);
                }
                self.finish(&start(String::new()), Input::Document(&doc));
                return None;
            }
        };
        let mut carry = match carry {
            // A continuation of the held-back text.
            Some(mut c) if !whole && c.id == id && c.epoch == epoch => {
                c.text.push_str(&text);
                c.jobs += 1;
                c
            }
            other => {
                if let Some(c) = other {
                    self.flush(c);
                }
                start(text)
            }
        };
        if whole {
            self.flush(carry);
            return None;
        }
        let cut = last_clause_boundary(&carry.text);
        if cut > 0 {
            let rest = carry.text.split_off(cut);
            let head = std::mem::replace(&mut carry.text, rest);
            self.queue(&carry, Input::Text(&head));
            carry.base += cut;
            carry.first = false;
        }
        Some(carry)
    }

    /// Queues all of the carried text and reports its jobs done.
    fn flush(&mut self, c: Carry) {
        self.finish(&c, Input::Text(&c.text));
    }

    /// Queues `input`, the rest of `c`'s jobs, and reports them done.
    fn finish(&mut self, c: &Carry, input: Input<'_>) {
        self.queue(c, input);
        self.push(Item::JobEnd {
            id: c.id,
            epoch: c.epoch,
            jobs: c.jobs,
        });
    }

    /// Phonemises `input` sentence by sentence into the queue, until it is said or stopped.
    fn queue(&mut self, c: &Carry, input: Input<'_>) {
        if self.next_index.0 != c.id {
            self.next_index = (c.id, 0);
        }
        let cfg = &self.voice.config;
        let mut pieces = phonemise::pieces(cfg, &self.segmenter, input, c.first, self.next_index.1);
        // Checked before each sentence is phonemised: a stop cuts a long text short.
        while c.epoch == self.epoch() {
            let Some(piece) = pieces.next() else {
                return;
            };
            let p = match piece {
                Ok(Piece::Speech(p)) => p,
                Ok(Piece::Silence { ms }) => {
                    self.push(Item::Silence {
                        id: c.id,
                        epoch: c.epoch,
                        ms,
                        requested: c.requested,
                    });
                    continue;
                }
                Ok(Piece::Mark(name)) => {
                    self.push(Item::Mark {
                        id: c.id,
                        epoch: c.epoch,
                        name,
                        requested: c.requested,
                    });
                    continue;
                }
                Err(e) => {
                    let _ = self.events.send(Event::Error {
                        id: Some(c.id),
                        message: e.to_string(),
                    });
                    continue;
                }
            };
            self.next_index.1 = p.index + 1;
            let shift = |r: &std::ops::Range<usize>| c.base + r.start..c.base + r.end;
            let words = p
                .words
                .iter()
                .map(|w| WordIds {
                    range: shift(&w.range),
                    ids: w.ids.clone(),
                })
                .collect();
            self.push(Item::Segment {
                id: c.id,
                epoch: c.epoch,
                range: shift(&p.range),
                ids: p.ids,
                words,
                index: p.index,
                requested: c.requested,
                prosody: p.prosody,
            });
            if p.index == 0 {
                self.await_first_audio(c.id, c.epoch);
            }
        }
    }

    /// Leaves both cores to the engine until utterance `id` has its first audio (or a stop,
    /// or a timeout): phonemising later segments is not on the path to the first sound.
    fn await_first_audio(&self, id: UtteranceId, epoch: u64) {
        let until = Instant::now() + FIRST_AUDIO_WAIT;
        while self.control.first_audio.load(Ordering::Acquire) < id
            && epoch == self.epoch()
            && !self.control.shutdown.load(Ordering::Acquire)
            && Instant::now() < until
        {
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    /// Waits for room in the queue (back-pressure) unless a stop makes the item stale.
    fn push(&self, mut item: Item) {
        let epoch = item.epoch();
        loop {
            if epoch != self.epoch() || self.control.shutdown.load(Ordering::Acquire) {
                return;
            }
            match self.control.queue.push(item, PUSH_SLICE) {
                Ok(()) => {
                    let _ = self.wake.send(Cmd::Wake);
                    return;
                }
                Err(back) => item = back,
            }
        }
    }
}

/// Byte offset just after the last clause or sentence boundary (punctuation then whitespace,
/// or a newline), or 0 if there is none yet.
fn last_clause_boundary(text: &str) -> usize {
    let mut cut = 0;
    let mut prev: Option<char> = None;
    for (i, c) in text.char_indices() {
        let boundary = c == '\n'
            || (c.is_whitespace()
                && prev.is_some_and(|p| matches!(p, '.' | '!' | '?' | ',' | ';' | ':')));
        if boundary {
            cut = i + c.len_utf8();
        }
        prev = Some(c);
    }
    cut
}

#[cfg(test)]
mod tests {
    use super::last_clause_boundary;

    #[test]
    fn appended_text_is_cut_after_the_last_clause() {
        assert_eq!(
            last_clause_boundary("Hello there, wor"),
            "Hello there, ".len()
        );
        assert_eq!(last_clause_boundary("no boundary yet"), 0);
        assert_eq!(last_clause_boundary("line one\nline"), "line one\n".len());
        assert_eq!(last_clause_boundary("3.14 is pi"), 0);
    }
}
