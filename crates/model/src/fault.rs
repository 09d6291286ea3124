//! Faults injected on purpose, for the tests that show Hark survives them (issue 19, item 4;
//! docs/RELIABILITY.md, "Faults injected"). Only with the `fault-inject` feature, which only
//! the tests' dev-dependencies turn on: a release or bundle build has none of this.
//!
//! A test sets the fault with [`set`]; a binary built with the feature (the test build of
//! `hark`) also reads `HARK_FAULT` once, at the first question:
//! - `gpu-lost-after:N`: the backend from `make_backend` fails with a device error from its
//!   (N+1)th decode call on, `begin` too (the GPU is gone);
//! - `nvrtc-missing`: CUDA reports libnvrtc as absent;
//! - `persistent-watchdog:N`: the persistent kernel's (N+1)th chunk wait never sees its chunk,
//!   so the watchdog fires (once).

use crate::backend::{Backend, BackendError, UtteranceInfo};
use hark_voice::Scales;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    GpuLostAfter(usize),
    NvrtcMissing,
    PersistentWatchdog(usize),
}

impl Fault {
    /// `HARK_FAULT`'s syntax (module docs).
    pub fn parse(s: &str) -> Option<Fault> {
        let (name, n) = match s.split_once(':') {
            Some((name, n)) => (name, n.trim().parse().ok()?),
            None => (s, 0),
        };
        match name.trim() {
            "gpu-lost-after" => Some(Fault::GpuLostAfter(n)),
            "nvrtc-missing" => Some(Fault::NvrtcMissing),
            "persistent-watchdog" => Some(Fault::PersistentWatchdog(n)),
            _ => None,
        }
    }
}

/// `None`: not read from the environment yet.
static ACTIVE: Mutex<Option<Option<Fault>>> = Mutex::new(None);
/// Chunk waits of the persistent kernel seen since the fault was set.
static WAITS: AtomicUsize = AtomicUsize::new(0);

/// Sets (or with `None` clears) the fault for what starts next, in place of `HARK_FAULT`.
pub fn set(fault: Option<Fault>) {
    *ACTIVE.lock().unwrap_or_else(|e| e.into_inner()) = Some(fault);
    WAITS.store(0, Ordering::Relaxed);
}

/// The fault in force.
pub fn active() -> Option<Fault> {
    let mut a = ACTIVE.lock().unwrap_or_else(|e| e.into_inner());
    *a.get_or_insert_with(|| {
        let env = std::env::var("HARK_FAULT").ok()?;
        let f = Fault::parse(&env);
        if f.is_none() {
            tracing::warn!("HARK_FAULT={env:?} is not a fault this build knows");
        }
        f
    })
}

pub fn nvrtc_missing() -> bool {
    active() == Some(Fault::NvrtcMissing)
}

/// Whether this chunk wait of the persistent kernel is the one that never ends.
pub fn persistent_job_hangs() -> bool {
    match active() {
        Some(Fault::PersistentWatchdog(n)) => WAITS.fetch_add(1, Ordering::Relaxed) == n,
        _ => false,
    }
}

/// `backend`, wrapped to lose its device after N decode calls under `gpu-lost-after:N`.
pub fn wrap(backend: Box<dyn Backend>) -> Box<dyn Backend> {
    match active() {
        Some(Fault::GpuLostAfter(n)) => Box::new(LosesDevice {
            inner: backend,
            decodes_left: n,
        }),
        _ => backend,
    }
}

/// A backend whose device goes away after `decodes_left` more decode calls.
struct LosesDevice {
    inner: Box<dyn Backend>,
    decodes_left: usize,
}

impl LosesDevice {
    fn lost() -> BackendError {
        BackendError::Device("the GPU was lost (injected fault)".into())
    }
}

impl Backend for LosesDevice {
    fn name(&self) -> String {
        self.inner.name()
    }

    fn begin(
        &mut self,
        ids: &[i64],
        scales: &Scales,
        seed: u64,
    ) -> Result<UtteranceInfo, BackendError> {
        if self.decodes_left == 0 {
            return Err(Self::lost());
        }
        self.inner.begin(ids, scales, seed)
    }

    fn decode(&mut self, start: usize, end: usize) -> Result<Vec<f32>, BackendError> {
        if self.decodes_left == 0 {
            return Err(Self::lost());
        }
        self.decodes_left -= 1;
        self.inner.decode(start, end)
    }

    fn decode_cancellable(
        &mut self,
        start: usize,
        end: usize,
        cancelled: crate::cpu::CancelFn,
    ) -> Result<Option<Vec<f32>>, BackendError> {
        if self.decodes_left == 0 {
            return Err(Self::lost());
        }
        self.decodes_left -= 1;
        self.inner.decode_cancellable(start, end, cancelled)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hark_fault_syntax() {
        assert_eq!(
            Fault::parse("gpu-lost-after:3"),
            Some(Fault::GpuLostAfter(3))
        );
        assert_eq!(Fault::parse("nvrtc-missing"), Some(Fault::NvrtcMissing));
        assert_eq!(
            Fault::parse("persistent-watchdog:2"),
            Some(Fault::PersistentWatchdog(2))
        );
        assert_eq!(Fault::parse("gpu-lost-after:x"), None);
        assert_eq!(Fault::parse("disk-on-fire"), None);
    }
}
