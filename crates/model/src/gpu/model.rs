//! The model on the device, as the graph path runs it: the stages (`stages/`) with their
//! kernels from the module cache, the weights, the buffers they share, the utterance's state,
//! the front half (once per utterance) and one window of frames (flow + decoder), captured
//! into CUDA graphs.

use super::GpuError;
use super::compile;
use super::device::{DBuf, Gpu, Pinned};
use super::graph_cache::GraphCache;
use super::modules::Modules;
use super::options::GpuOptions;
use super::persist::session::PersistentKernels;
use super::registry::Module;
use super::stages::Launch;
use super::stages::decoder::{self, Decoder, StageGeom};
use super::stages::duration::{self, Duration};
use super::stages::encoder::{self, Encoder};
use super::stages::flow::{self, Flow};
use super::weights::GpuWeights;
use cudarc::driver::CudaGraph;
use cudarc::driver::sys::{CUgraphInstantiate_flags, CUstreamCaptureMode};
use hark_voice::{ModelDims, Weights};
use std::time::Instant;

/// Timings of the one-off start-up work, for logs and the benchmark.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct StartupReport {
    pub compile_ms: f64,
    pub cached_modules: usize,
    pub upload_ms: f64,
    pub weight_bytes: usize,
}

/// Front-half device buffers for up to `cap` tokens (the graph path grows them on demand;
/// the persistent engine allocates its own once).
#[derive(Default)]
pub(crate) struct Front {
    pub cap: usize,
    pub enc: encoder::Buffers,
    pub dur: duration::Buffers,
}

impl Front {
    pub fn alloc(g: &Gpu, d: &ModelDims, cap: usize) -> Result<Self, GpuError> {
        Ok(Self {
            cap,
            enc: encoder::Buffers::alloc(g, d, cap)?,
            dur: duration::Buffers::alloc(g, d, cap)?,
        })
    }
}

/// Flow and decoder buffers for windows of up to `cap` frames.
#[derive(Default)]
pub(crate) struct Window {
    pub cap: usize,
    pub flow: flow::Buffers,
    pub dec: decoder::Buffers,
}

impl Window {
    pub fn alloc(
        g: &Gpu,
        d: &ModelDims,
        geoms: &[StageGeom],
        cap: usize,
    ) -> Result<Self, GpuError> {
        Ok(Self {
            cap,
            flow: flow::Buffers::alloc(g, d, cap)?,
            dec: decoder::Buffers::alloc(g, d, geoms, cap)?,
        })
    }
}

/// Device address of a buffer that may not be allocated (0 then).
pub(crate) fn p(b: &Option<DBuf>) -> u64 {
    b.as_ref().map_or(0, |b| b.ptr)
}

/// The current utterance, as `begin` left it on the device.
#[derive(Clone, Debug, Default)]
pub struct Utterance {
    pub tokens: usize,
    pub frames: usize,
    pub noise_scale: f32,
    pub durations: Vec<usize>,
}

pub struct GpuModel {
    pub gpu: Gpu,
    pub dims: ModelDims,
    pub f16: bool,
    /// The options the model was made with (the persistent session reads its own from here).
    pub opts: GpuOptions,
    pub(crate) modules: Modules,
    pub(crate) enc: Encoder,
    pub(crate) dur: Duration,
    pub(crate) flow: Flow,
    pub(crate) dec: Decoder,
    /// Filled by [`GpuModel::persistent_kernels`].
    pub pk: Option<PersistentKernels>,
    pub w: GpuWeights,
    pub geoms: Vec<StageGeom>,
    pub startup: StartupReport,
    pub(crate) bar: DBuf,
    pub(crate) front: Front,
    pub(crate) win: Window,
    pub(crate) eps: Option<DBuf>,
    pub(crate) eps_cap: usize,
    pub utt: Option<Utterance>,
    /// When set, CUDA events mark stage boundaries (see [`GpuModel::take_stage_ms`]).
    pub profile: bool,
    marks: Vec<(&'static str, cudarc::driver::CudaEvent)>,
    /// Per-chunk scalars read by flow_coop (tokens, frames, lo, noise-scale bits).
    prm: DBuf,
    prm_host: [Pinned; 2],
    /// Captured flow + decoder sequences by (window, output offset, samples, slot), at most
    /// [`GpuOptions::graph_cache`] of them.
    pub(crate) graphs: GraphCache<(usize, usize, usize, usize), CudaGraph>,
    /// Off by [`GpuOptions::graphs`], or after a capture failed.
    pub graphs_enabled: bool,
    /// Durations (`[..t]`, i32 bits) and logw (`[t..2t]`) land here (pinned) and `sdp_done`
    /// says when.
    dur_host: Pinned,
    sdp_done: cudarc::driver::CudaEvent,
}

impl GpuModel {
    /// Context, kernels (compiled or from the disk cache), weights on the device; f16 flow
    /// and decoder weights unless `opts.all_f32`.
    pub fn new(weights: &Weights, dims: &ModelDims, opts: &GpuOptions) -> Result<Self, GpuError> {
        compile::check_dims(dims).map_err(GpuError::Unavailable)?;
        let gpu = Gpu::new()?;
        let f16 = opts.f16();
        let mut modules = Modules::new(dims, opts, gpu.cc);
        let loaded = modules.load(&gpu, &Module::GRAPH)?;
        let enc = Encoder::load(&gpu, &mut modules)?;
        let dur = Duration::load(&gpu, &mut modules)?;
        let flow = Flow::load(&gpu, &mut modules)?;
        let dec = Decoder::load(&gpu, &mut modules)?;
        let t1 = Instant::now();
        let w = GpuWeights::upload(&gpu, weights, dims, f16)?;
        let upload_ms = t1.elapsed().as_secs_f64() * 1e3;
        let bar = gpu.alloc(64)?;
        let prm = gpu.alloc(16)?;
        let prm_host = [gpu.alloc_pinned(4)?, gpu.alloc_pinned(4)?];
        let dur_host = gpu.alloc_pinned(1024)?;
        let sdp_done = gpu.ctx.new_event(None)?;
        Ok(Self {
            startup: StartupReport {
                compile_ms: loaded.ms,
                cached_modules: loaded.from_cache,
                upload_ms,
                weight_bytes: w.bytes,
            },
            gpu,
            dims: dims.clone(),
            f16,
            opts: *opts,
            modules,
            enc,
            dur,
            flow,
            dec,
            pk: None,
            w,
            geoms: decoder::stage_geoms(dims),
            bar,
            front: Front::default(),
            win: Window::default(),
            eps: None,
            eps_cap: 0,
            utt: None,
            profile: false,
            marks: Vec::new(),
            prm,
            prm_host,
            graphs: GraphCache::new(opts.graph_cache),
            graphs_enabled: opts.graphs,
            dur_host,
            sdp_done,
        })
    }

    /// Records a stage boundary on the compute stream (profiling only).
    pub fn mark(&mut self, label: &'static str) -> Result<(), GpuError> {
        if self.profile {
            let ev = self
                .gpu
                .ctx
                .new_event(Some(cudarc::driver::sys::CUevent_flags::CU_EVENT_DEFAULT))?;
            ev.record(&self.gpu.stream)?;
            self.marks.push((label, ev));
        }
        Ok(())
    }

    /// GPU milliseconds between consecutive marks, each named by the mark that ends it.
    pub fn take_stage_ms(&mut self) -> Result<Vec<(&'static str, f64)>, GpuError> {
        self.gpu.sync()?;
        let marks = std::mem::take(&mut self.marks);
        let mut out = Vec::new();
        for pair in marks.windows(2) {
            out.push((pair[1].0, pair[0].1.elapsed_ms(&pair[1].1)? as f64));
        }
        Ok(out)
    }

    pub(crate) fn ensure_front(&mut self, t: usize) -> Result<(), GpuError> {
        if t <= self.front.cap {
            return Ok(());
        }
        self.front = Front::alloc(&self.gpu, &self.dims, t.next_power_of_two().max(64))?;
        self.graphs.clear();
        Ok(())
    }

    pub(crate) fn ensure_window(&mut self, n: usize) -> Result<(), GpuError> {
        if n <= self.win.cap {
            return Ok(());
        }
        let cap = n.next_power_of_two().max(64);
        self.win = Window::alloc(&self.gpu, &self.dims, &self.geoms, cap)?;
        self.graphs.clear();
        Ok(())
    }

    /// Whether the GPU encoder takes these ids (count and vocabulary), as a clear error.
    pub fn check_ids(&self, ids: &[i64]) -> Result<(), GpuError> {
        let d = &self.dims;
        let t = ids.len();
        let max_t = encoder::max_tokens(d);
        if t == 0 || t > max_t {
            return Err(GpuError::Model(crate::cpu::ModelError::Input(format!(
                "{t} phoneme ids: the CUDA encoder takes 1..={max_t}"
            ))));
        }
        if let Some(&bad) = ids.iter().find(|&&i| i < 0 || i as usize >= d.n_vocab) {
            return Err(GpuError::Model(crate::cpu::ModelError::Input(format!(
                "phoneme id {bad} is outside the vocabulary 0..{}",
                d.n_vocab
            ))));
        }
        Ok(())
    }

    /// Encoder on `ids`: leaves x, m_p, logs_p on the device (asynchronous).
    pub fn run_encoder(&mut self, ids: &[i64]) -> Result<(), GpuError> {
        self.check_ids(ids)?;
        let t = ids.len();
        self.ensure_front(t)?;
        self.mark("start")?;
        let ids32: Vec<i32> = ids.iter().map(|&i| i as i32).collect();
        let b = &self.front.enc;
        self.gpu.htod_async(p(&b.ids), &ids32)?;
        // The copy reads `ids32` later: wait for it before the vector goes away.
        self.enc.launch(&self.launch(), b, t)?;
        self.mark("encoder")?;
        Ok(())
    }

    /// Queues the duration predictor (`noise` is [2, T] already times noise_w) and the copy
    /// of its durations to pinned memory; the host can work until [`Self::sdp_ready`] and
    /// then take them with [`Self::finish_sdp`]. Leaves durations and frame offsets on the
    /// device.
    pub fn launch_sdp(&mut self, noise: &[f32], length_scale: f32) -> Result<(), GpuError> {
        let t = noise.len() / 2;
        let f = &self.front;
        self.gpu.htod_async(p(&f.dur.z2), noise)?;
        self.dur
            .launch(&self.launch(), p(&f.enc.x), &f.dur, t, length_scale)?;
        self.mark("duration predictor")?;
        if self.dur_host.len() < 2 * t {
            self.dur_host = self.gpu.alloc_pinned((2 * t).next_power_of_two())?;
        }
        super::device::count(&super::device::COPIES);
        let (dur, logw) = self.dur_host.slice_mut()[..2 * t].split_at_mut(t);
        // SAFETY: `dur` and `logw` hold t words each; the pinned buffer has room and is read
        // only after `sdp_done` completes.
        unsafe {
            let stream = self.gpu.stream.cu_stream();
            cudarc::driver::result::memcpy_dtoh_async(dur, p(&self.front.dur.dur), stream)?;
            cudarc::driver::result::memcpy_dtoh_async(logw, p(&self.front.dur.logw), stream)?;
        }
        self.sdp_done.record(&self.gpu.stream)?;
        Ok(())
    }

    pub fn sdp_ready(&self) -> bool {
        self.sdp_done.is_complete()
    }

    /// The durations and logw of [`Self::launch_sdp`], once they are on the host.
    pub fn finish_sdp(&mut self, t: usize) -> Result<(Vec<usize>, Vec<f32>), GpuError> {
        self.sdp_done.synchronize()?;
        let (dur, logw) = self.dur_host.slice()[..2 * t].split_at(t);
        let dur = dur
            .iter()
            .map(|v| (v.to_bits() as i32).max(0) as usize)
            .collect();
        Ok((dur, logw.to_vec()))
    }

    /// Makes an utterance current: frames, prior noise [C, F] (None when noise_scale is 0).
    pub fn set_utterance(
        &mut self,
        durations: Vec<usize>,
        noise_scale: f32,
        eps: Option<&[f32]>,
    ) -> Result<(), GpuError> {
        let frames: usize = durations.iter().sum();
        let c = self.dims.inter_channels;
        if let Some(e) = eps {
            if e.len() != c * frames {
                return Err(GpuError::Driver("prior noise has the wrong length".into()));
            }
            if e.len() > self.eps_cap {
                self.eps_cap = e.len().next_power_of_two();
                self.eps = Some(self.gpu.alloc(self.eps_cap * 4)?);
                self.graphs.clear();
            }
            // Pageable source: staged before the call returns, so `e` may go away.
            self.gpu.htod_async(p(&self.eps), e)?;
        }
        self.utt = Some(Utterance {
            tokens: durations.len(),
            frames,
            noise_scale: if eps.is_some() { noise_scale } else { 0.0 },
            durations,
        });
        Ok(())
    }

    /// Launches flow + decoder for frames [start, end) of the current utterance with
    /// `context` frames either side; the chunk's samples end up in the `out` buffer.
    pub fn launch_window(
        &mut self,
        start: usize,
        end: usize,
        context: usize,
        slot: usize,
    ) -> Result<usize, GpuError> {
        let utt = self
            .utt
            .clone()
            .ok_or_else(|| GpuError::Driver("no utterance".into()))?;
        let fr = utt.frames;
        if start >= end || end > fr {
            return Err(GpuError::Model(crate::cpu::ModelError::Input(format!(
                "decode_window: frames [{start}, {end}) not inside [0, {fr})"
            ))));
        }
        let lo = start.saturating_sub(context);
        let n = (end + context).min(fr) - lo;
        let hop = self.dims.samples_per_frame();
        let (a, count) = ((start - lo) * hop, (end - start) * hop);
        // Allocation happens here, never inside a capture.
        self.ensure_window(n)?;
        let ph = &mut self.prm_host[slot];
        let v = [
            utt.tokens as u32,
            utt.frames as u32,
            lo as u32,
            utt.noise_scale.to_bits(),
        ];
        for (d, s) in ph.slice_mut().iter_mut().zip(v) {
            *d = f32::from_bits(s);
        }
        self.gpu
            .htod_async(self.prm.ptr, &self.prm_host[slot].slice()[..4])?;
        self.mark("host gap (durations, prior noise)")?;
        // Graphs for chunks with their full right context (a bounded set of shapes); the
        // utterance's tail has a shape of its own and runs directly.
        if self.profile || !self.graphs_enabled || end + context > fr {
            // Direct launches: profiling marks need the stages apart.
            self.launch_flow(lo, n, true)?;
            self.mark("flow")?;
            self.launch_decoder(n, a, count, slot)?;
            self.mark("decoder")?;
            return Ok(count);
        }
        let key = (n, a, count, slot);
        if !self.graphs.contains(&key) {
            match self.capture(lo, n, a, count, slot) {
                Ok(g) => {
                    super::device::count(&super::device::GRAPH_CAPTURES);
                    if self.graphs.insert(key, g) {
                        super::device::count(&super::device::GRAPH_EVICTIONS);
                    }
                }
                Err(e) => {
                    tracing::warn!("CUDA graph capture failed ({e}); launching kernels directly");
                    self.graphs_enabled = false;
                    self.launch_flow(lo, n, true)?;
                    self.launch_decoder(n, a, count, slot)?;
                    return Ok(count);
                }
            }
        }
        super::device::count(&super::device::LAUNCHES);
        self.graphs
            .get(&key)
            .ok_or_else(|| GpuError::Driver("captured graph missing".into()))?
            .launch()?;
        Ok(count)
    }

    /// Records the window's kernels (flow, decoder) into a CUDA graph.
    fn capture(
        &mut self,
        lo: usize,
        n: usize,
        a: usize,
        count: usize,
        slot: usize,
    ) -> Result<CudaGraph, GpuError> {
        let stream = self.gpu.stream.clone();
        stream.begin_capture(CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)?;
        let launched = self
            .launch_flow(lo, n, true)
            .and_then(|_| self.launch_decoder(n, a, count, slot));
        // End the capture whatever happened, so the stream stays usable.
        let graph = stream.end_capture(CUgraphInstantiate_flags(0));
        launched?;
        graph?.ok_or_else(|| GpuError::Driver("empty CUDA graph".into()))
    }

    /// Flow over a window of n frames starting at frame lo. With `from_prior` the first
    /// coupling builds z_p from the prior; otherwise z already holds z_p (tests).
    pub(crate) fn launch_flow(
        &mut self,
        _lo: usize,
        n: usize,
        from_prior: bool,
    ) -> Result<(), GpuError> {
        let f = &self.front;
        let prior = flow::Prior {
            m_p: p(&f.enc.m_p),
            logs_p: p(&f.enc.logs_p),
            off: p(&f.dur.off),
            eps: p(&self.eps),
            prm: self.prm.ptr,
        };
        self.flow
            .launch(&self.launch(), &self.win.flow, &prior, n, from_prior)
    }

    /// Decoder over the window's z [C, n]; writes samples [a, a + count) to `out`.
    pub(crate) fn launch_decoder(
        &mut self,
        n: usize,
        a: usize,
        count: usize,
        slot: usize,
    ) -> Result<(), GpuError> {
        self.dec.launch(
            &self.launch(),
            &self.geoms,
            &self.win.dec,
            p(&self.win.flow.z),
            n,
            a,
            count,
            slot,
        )
    }

    /// What the stages' launches read.
    fn launch(&self) -> Launch<'_> {
        Launch {
            gpu: &self.gpu,
            dims: &self.dims,
            w: &self.w,
            bar: self.bar.ptr,
        }
    }

    /// Device address of chunk output buffer `slot` (0 or 1).
    pub fn out_ptr(&self, slot: usize) -> u64 {
        p(&self.win.dec.out[slot])
    }
}
