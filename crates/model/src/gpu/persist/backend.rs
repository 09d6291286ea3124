//! `PersistentBackend`: the `Backend` trait over a persistent-kernel session, with the graph
//! path and then the CPU as fallbacks.
//!
//! - A job the kernel cannot take (more than `layout::TMAX` ids or `layout::FMAX` frames)
//!   runs on the graph path; the kernel is stopped for it and launched again at the next job.
//! - A kernel that stops answering (the watchdog) or fails is torn down: the graph path takes
//!   over if the device still works, else the CPU (when the backend was given the voice).

use super::protocol::{ProtocolError, stage_times};
use super::session::Session;
use crate::backend::{Backend, BackendError, CpuBackend, UtteranceInfo};
use crate::cpu::noise::NoiseSource;
use crate::gpu::backend::WARM_UP_STEPS;
use crate::gpu::{CudaBackend, GpuError, GpuOptions};
use hark_voice::Scales;
use hark_voice::Voice;
use std::sync::Arc;

/// Where the current utterance is being made.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Route {
    Persistent,
    Graph,
    Cpu,
}

pub struct PersistentBackend {
    /// The model (weights, kernels) and the graph path; `None` only after a hung kernel,
    /// when the device is given up (leaked) and the CPU speaks.
    graph: Option<CudaBackend>,
    session: Option<Session>,
    cpu: Option<CpuBackend>,
    voice: Option<Arc<Voice>>,
    route: Option<Route>,
    /// Why the persistent path is not (or no longer) in use.
    pub fallback: Option<String>,
    /// Let the kernel run ahead of the requests (like the graph path's speculation).
    pub speculate: bool,
}

impl PersistentBackend {
    /// The graph backend for `voice`, then the persistent kernel on the same model.
    pub fn new(voice: &Arc<Voice>, opts: &GpuOptions) -> Result<Self, GpuError> {
        let graph = CudaBackend::new(voice, opts)?;
        Ok(Self::from_graph(graph, Some(voice.clone())))
    }

    /// Starts the persistent kernel on `graph`'s model and warms it up (unless the model's
    /// options say not to). If it cannot start, the backend runs on the graph path and
    /// `fallback` says why.
    pub fn from_graph(graph: CudaBackend, voice: Option<Arc<Voice>>) -> Self {
        let mut b = Self {
            session: None,
            cpu: None,
            voice,
            route: None,
            fallback: None,
            speculate: true,
            graph: Some(graph),
        };
        let model = &mut b.graph.as_mut().expect("graph").model;
        let warm_up = model.opts.warm_up;
        let started = model
            .persistent_kernels()
            .map(|pk| {
                tracing::info!(
                    "persistent CUDA kernel: module in {:.0} ms{}",
                    pk.compile_ms,
                    if pk.cached { " (from the cache)" } else { "" }
                );
            })
            .and_then(|()| Session::start(model));
        match started {
            Ok(s) => {
                b.session = Some(s);
                if warm_up && let Err(e) = b.warm_up() {
                    b.fail_over(&format!("warm-up failed: {e}"));
                }
            }
            Err(e) => {
                tracing::warn!("persistent CUDA engine unavailable ({e}); using CUDA graphs");
                b.fallback = Some(e.to_string());
            }
        }
        b
    }

    /// Whether utterances run in the persistent kernel now.
    pub fn is_persistent(&self) -> bool {
        self.session.is_some() && self.fallback.is_none()
    }

    /// Whether the current utterance is being made by the persistent kernel.
    pub fn on_persistent_path(&self) -> bool {
        self.route == Some(Route::Persistent)
    }

    /// The graph backend underneath (the model, for diagnostics).
    pub fn graph(&self) -> Option<&CudaBackend> {
        self.graph.as_ref()
    }

    /// Blocks of the persistent kernel's launch.
    pub fn blocks(&self) -> u32 {
        self.session.as_ref().map_or(0, |s| s.blocks)
    }

    /// Whether the kernel stamps its stages for the next jobs (benchmarks).
    pub fn set_profile(&mut self, on: bool) {
        if let Some(s) = self.session.as_mut() {
            s.host.set_profile(on);
        }
    }

    /// Milliseconds per stage of the last job the kernel made with profiling on (empty if
    /// none); read after `quiesce`.
    pub fn stage_profile(&self) -> Vec<(&'static str, f64)> {
        self.session
            .as_ref()
            .map_or_else(Vec::new, |s| stage_times(&s.host.profile()))
    }

    fn warm_up(&mut self) -> Result<(), BackendError> {
        crate::backend::warm_up(self, &WARM_UP_STEPS)?;
        self.quiesce()
    }

    /// Abandons the current utterance and waits until the kernel is idle (benchmarks start
    /// each onset run on an idle GPU).
    pub fn quiesce(&mut self) -> Result<(), BackendError> {
        if self.route == Some(Route::Persistent)
            && let Some(s) = self.session.as_mut()
        {
            let r = s.host.quiesce();
            self.route = None;
            if let Err(e) = r {
                return Err(self.on_protocol_error(e));
            }
        }
        Ok(())
    }

    /// Pauses or resumes the kernel's walk (no chunk starts while paused).
    pub fn set_paused(&mut self, paused: bool) {
        if let Some(s) = self.session.as_mut() {
            s.host.set_paused(paused);
        }
    }

    /// Gives up the persistent path after `why`: the graph path if the device still answers,
    /// else the CPU (the device is then left alone: a stuck kernel holds it).
    fn fail_over(&mut self, why: &str) {
        let Some(mut s) = self.session.take() else {
            return;
        };
        self.route = None;
        let stopped = s.stop();
        let device_ok = stopped.is_ok()
            && self
                .graph
                .as_ref()
                .is_some_and(|g| g.model.gpu.sync().is_ok());
        if device_ok {
            tracing::error!("persistent CUDA engine: {why}; using CUDA graphs");
            drop(s);
        } else {
            tracing::error!("persistent CUDA engine: {why}; the GPU is left alone, using the CPU");
            s.abandon();
            if let Some(g) = self.graph.take() {
                // Dropping it would free device memory, which waits for the stuck kernel.
                std::mem::forget(g);
            }
            self.cpu = self.voice.clone().map(CpuBackend::new);
        }
        self.fallback = Some(why.to_string());
    }

    fn on_protocol_error(&mut self, e: ProtocolError) -> BackendError {
        match e {
            ProtocolError::Input(m) => BackendError::Device(m),
            other => {
                let msg = other.to_string();
                self.fail_over(&msg);
                BackendError::Device(msg)
            }
        }
    }

    /// The graph backend when it may be used (the kernel stopped), else the CPU.
    fn fallback_backend(&mut self) -> Result<(&mut dyn Backend, Route), BackendError> {
        if let Some(s) = self.session.as_mut()
            && s.is_running()
            && let Err(e) = s.stop()
        {
            let msg = format!("it did not stop for the graph path: {e}");
            self.fail_over(&msg);
        }
        if let Some(g) = self.graph.as_mut() {
            return Ok((g, Route::Graph));
        }
        match self.cpu.as_mut() {
            Some(c) => Ok((c, Route::Cpu)),
            None => Err(BackendError::Device(format!(
                "the CUDA device was given up ({})",
                self.fallback.as_deref().unwrap_or("unknown")
            ))),
        }
    }

    fn begin_persistent(
        &mut self,
        ids: &[i64],
        scales: &Scales,
        seed: u64,
    ) -> Result<Option<UtteranceInfo>, BackendError> {
        let Some(g) = self.graph.as_ref() else {
            return Ok(None);
        };
        g.model.check_ids(ids)?;
        if ids.len() > super::layout::TMAX || self.fallback.is_some() {
            return Ok(None);
        }
        let Some(s) = self.session.as_mut() else {
            return Ok(None);
        };
        if !s.is_running() {
            // Stopped for a job the graph path took: one launch brings it back.
            s.restart(&g.model)?;
        }
        s.host.speculate = self.speculate;
        let mut rng = NoiseSource::new(seed);
        let zsdp = rng.sdp_noise(ids.len(), scales.noise_w);
        match s.host.begin(
            ids,
            &zsdp.data,
            scales.length_scale,
            scales.noise_scale,
            Some(&mut rng),
        ) {
            Ok(durations) => {
                let frames = durations.iter().sum();
                Ok(Some(UtteranceInfo {
                    durations,
                    frames,
                    logw: None,
                }))
            }
            // Too many frames for the kernel's slots: the graph path makes this one.
            Err(ProtocolError::TooLarge(m)) => {
                tracing::info!("persistent CUDA engine: {m}; this one goes through CUDA graphs");
                Ok(None)
            }
            Err(e) => Err(self.on_protocol_error(e)),
        }
    }
}

impl Drop for PersistentBackend {
    fn drop(&mut self) {
        // The kernel first: the graph backend's buffers must outlive it.
        self.session.take();
    }
}

impl Backend for PersistentBackend {
    fn name(&self) -> String {
        match (&self.graph, self.is_persistent()) {
            (Some(g), true) => g.name().replace(')', ", persistent kernel)"),
            (Some(g), false) => g.name().replace(')', ", CUDA graphs)"),
            (None, _) => self.cpu.as_ref().map_or("none".into(), |c| c.name()),
        }
    }

    fn begin(
        &mut self,
        ids: &[i64],
        scales: &Scales,
        seed: u64,
    ) -> Result<UtteranceInfo, BackendError> {
        self.route = None;
        if let Some(info) = self.begin_persistent(ids, scales, seed)? {
            self.route = Some(Route::Persistent);
            return Ok(info);
        }
        let (b, route) = self.fallback_backend()?;
        let info = b.begin(ids, scales, seed)?;
        self.route = Some(route);
        Ok(info)
    }

    fn decode(&mut self, start: usize, end: usize) -> Result<Vec<f32>, BackendError> {
        match self.route {
            None => Err(BackendError::NoUtterance),
            Some(Route::Persistent) => {
                let s = self.session.as_mut().ok_or(BackendError::NoUtterance)?;
                match s.host.decode(start, end) {
                    Ok(pcm) => Ok(pcm),
                    Err(e) => Err(self.on_protocol_error(e)),
                }
            }
            Some(Route::Graph) => self
                .graph
                .as_mut()
                .ok_or(BackendError::NoUtterance)?
                .decode(start, end),
            Some(Route::Cpu) => self
                .cpu
                .as_mut()
                .ok_or(BackendError::NoUtterance)?
                .decode(start, end),
        }
    }
}
