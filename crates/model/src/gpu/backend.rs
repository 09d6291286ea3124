//! `CudaBackend`: the `Backend` trait over [`GpuModel`]. The host draws the same noise as the
//! CPU reference (same seed, same order), so both backends speak the same utterance.

use super::device::Pinned;
use super::{GpuError, GpuModel, GpuOptions};
use crate::backend::{Backend, BackendError, UtteranceInfo, WARM_UP_SCALES, warm_up_ids};
use crate::cpu::noise::NoiseSource;
use cudarc::driver::CudaEvent;
use cudarc::driver::result as cu;
use hark_voice::Scales;
use hark_voice::Voice;

/// A chunk whose kernels and copy to the host are queued.
#[derive(Clone, Copy)]
struct InFlight {
    start: usize,
    end: usize,
    slot: usize,
    count: usize,
}

/// The warm-up's chunk schedule on the GPU: every kernel, graph shape and first-touch cost
/// is paid before real speech.
pub(crate) const WARM_UP_STEPS: [usize; 6] = [16, 16, 32, 64, 128, 256];

pub struct CudaBackend {
    pub model: GpuModel,
    context: usize,
    /// Page-locked landing buffers, one per output slot.
    pinned: [Pinned; 2],
    /// Per slot: window computed (compute stream), samples on the host (copy stream).
    computed: [CudaEvent; 2],
    copied: [CudaEvent; 2],
    next_slot: usize,
    /// The chunk after the last one returned, started speculatively (same size).
    pending: Option<InFlight>,
    frames: usize,
    /// Start chunk N+1 while the caller uses chunk N (double buffering); on by default.
    pub speculate: bool,
    /// Size of the last chunk asked for (speculation waits for a steady size).
    last_size: usize,
    /// Stage timings (ms) gathered while `model.profile` is set; the caller drains them.
    pub stages: Vec<(&'static str, f64)>,
}

impl From<GpuError> for BackendError {
    fn from(e: GpuError) -> Self {
        match e {
            GpuError::Model(m) => BackendError::Model(m),
            other => BackendError::Device(other.to_string()),
        }
    }
}

impl CudaBackend {
    /// The model for `voice` on the device as `opts` say (f16 flow/decoder weights unless
    /// `opts.all_f32`), then [`Self::from_model`].
    ///
    /// A multi-speaker voice is refused: the CUDA kernels do not condition on a speaker
    /// (`cpu::speaker` does), and audio without it would be a wrong voice.
    pub fn new(voice: &Voice, opts: &GpuOptions) -> Result<Self, GpuError> {
        if voice.config.is_multi_speaker() {
            return Err(GpuError::Unavailable(format!(
                "the CUDA backend does not condition on a speaker, and {} is a multi-speaker \
                 voice ({} speakers)",
                voice.config.name, voice.config.num_speakers
            )));
        }
        Self::from_model(GpuModel::new(&voice.weights, &voice.config.dims, opts)?)
    }

    /// The backend over a model already on the device (tests use random weights); warms up
    /// unless the model's options say not to.
    pub fn from_model(model: GpuModel) -> Result<Self, GpuError> {
        let t0 = std::time::Instant::now();
        // The prior-noise top-up of long sentences runs on rayon's pool: start it now, not at
        // the first long sentence, so the process's threads are all there once the engine is
        // ready (the H200 soak saw 8 threads become 24 at its first long sentence).
        let _ = rayon::current_num_threads();
        let dims = &model.dims;
        let n = 64 * dims.samples_per_frame();
        let pinned = [model.gpu.alloc_pinned(n)?, model.gpu.alloc_pinned(n)?];
        let ev = || model.gpu.ctx.new_event(None);
        let computed = [ev()?, ev()?];
        let copied = [ev()?, ev()?];
        let context = dims.flow_decoder_receptive_frames();
        let mut b = Self {
            context,
            pinned,
            computed,
            copied,
            next_slot: 0,
            pending: None,
            frames: 0,
            speculate: true,
            last_size: 0,
            stages: Vec::new(),
            model,
        };
        let t1 = std::time::Instant::now();
        if b.model.opts.warm_up {
            b.warm_up()?;
        }
        let st = &b.model.startup;
        tracing::info!(
            "{} ready in {:.0} ms: kernels {:.0} ms ({} of 4 from the cache), weights {:.0} ms, warm-up {:.0} ms",
            b.name(),
            t0.elapsed().as_secs_f64() * 1e3,
            st.compile_ms,
            st.cached_modules,
            st.upload_ms,
            t1.elapsed().as_secs_f64() * 1e3
        );
        Ok(b)
    }

    /// An utterance through every kernel with the usual chunk schedule, so the first real
    /// one pays no module load, allocation, graph capture or first-launch cost.
    fn warm_up(&mut self) -> Result<(), GpuError> {
        let frames = self.start(&warm_up_ids(), &WARM_UP_SCALES, 0)?.frames;
        let mut a = 0;
        for size in WARM_UP_STEPS {
            if a >= frames {
                break;
            }
            let e = (a + size).min(frames);
            self.chunk(a, e)?;
            a = e;
        }
        if let Some(p) = self.pending.take() {
            self.copied[p.slot].synchronize()?;
        }
        self.model.utt = None;
        Ok(())
    }

    fn start(
        &mut self,
        ids: &[i64],
        scales: &Scales,
        seed: u64,
    ) -> Result<UtteranceInfo, GpuError> {
        // A speculative chunk of the previous utterance is no longer wanted.
        if let Some(p) = self.pending.take() {
            self.copied[p.slot].synchronize()?;
        }
        let t = ids.len();
        self.model.run_encoder(ids)?;
        let mut rng = NoiseSource::new(seed);
        let noise = rng.sdp_noise(t, scales.noise_w);
        self.model.launch_sdp(&noise.data, scales.length_scale)?;
        // The prior noise is the next stretch of the same random stream: draw it while the
        // GPU runs the front half, then top up or trim once the frame count is known.
        let c = self.model.dims.inter_channels;
        let mut eps = Vec::new();
        if scales.noise_scale != 0.0 {
            // Bounded by a generous frame count, in case the GPU is slow to answer.
            while !self.model.sdp_ready() && eps.len() < c * 16 * t {
                eps.extend(rng.normal(vec![1, 4 * c]).data);
            }
        }
        let (durations, logw) = self.model.finish_sdp(t)?;
        let t0 = std::time::Instant::now();
        let frames: usize = durations.iter().sum();
        let eps = if scales.noise_scale == 0.0 {
            None
        } else {
            let need = c * frames;
            if eps.len() < need {
                // On the critical path now: spread over the host's cores.
                eps.extend(rng.normals_parallel(need - eps.len()));
            }
            eps.truncate(need);
            Some(eps)
        };
        if self.model.profile {
            let ms = t0.elapsed().as_secs_f64() * 1e3;
            self.stages
                .push(("host: prior-noise top-up after durations", ms));
        }
        self.model
            .set_utterance(durations.clone(), scales.noise_scale, eps.as_deref())?;
        self.frames = frames;
        Ok(UtteranceInfo {
            durations,
            frames,
            logw: Some(logw),
        })
    }

    /// Queues chunk [start, end): kernels (a captured graph) on the compute stream, then the
    /// copy into the slot's pinned buffer on the copy stream once an event says it is done.
    fn launch(&mut self, start: usize, end: usize) -> Result<InFlight, GpuError> {
        let slot = self.next_slot;
        self.next_slot ^= 1;
        let count = self.model.launch_window(start, end, self.context, slot)?;
        if count > self.pinned[slot].len() {
            // Grows once per larger chunk size, not per chunk.
            self.pinned[slot] = self.model.gpu.alloc_pinned(count.next_power_of_two())?;
        }
        let g = &self.model.gpu;
        self.computed[slot].record(&g.stream)?;
        g.copy_stream.wait(&self.computed[slot])?;
        super::device::count(&super::device::COPIES);
        // SAFETY: `out[slot]` holds `count` floats and the pinned buffer has room; nobody
        // reads the pinned buffer before `copied[slot]` completes.
        unsafe {
            cu::memcpy_dtoh_async(
                &mut self.pinned[slot].slice_mut()[..count],
                self.model.out_ptr(slot),
                g.copy_stream.cu_stream(),
            )?;
        }
        self.copied[slot].record(&g.copy_stream)?;
        Ok(InFlight {
            start,
            end,
            slot,
            count,
        })
    }

    fn chunk(&mut self, start: usize, end: usize) -> Result<Vec<f32>, GpuError> {
        let job = match self.pending.take() {
            Some(p) if p.start == start && p.end == end => p,
            other => {
                if let Some(p) = other {
                    self.copied[p.slot].synchronize()?;
                }
                self.launch(start, end)?
            }
        };
        // Chunk N+1 computes while chunk N is copied out and used. Only once the caller asks
        // for equal sizes twice in a row: a growing schedule would waste the guess. Profiling
        // keeps the stages apart, so it does not speculate.
        let size = job.end - job.start;
        let steady = self.last_size == size;
        self.last_size = size;
        if self.speculate && steady && !self.model.profile && job.end < self.frames {
            let next_end = (job.end + size).min(self.frames);
            self.pending = Some(self.launch(job.end, next_end)?);
        }
        self.copied[job.slot].synchronize()?;
        if self.model.profile {
            let st = self.model.take_stage_ms()?;
            self.stages.extend(st);
        }
        Ok(self.pinned[job.slot].slice()[..job.count].to_vec())
    }
}

impl Backend for CudaBackend {
    fn name(&self) -> String {
        format!(
            "cuda: {} ({})",
            self.model.gpu.name,
            if self.model.f16 {
                "f16 weights"
            } else {
                "all f32"
            }
        )
    }

    fn begin(
        &mut self,
        ids: &[i64],
        scales: &Scales,
        seed: u64,
    ) -> Result<UtteranceInfo, BackendError> {
        Ok(self.start(ids, scales, seed)?)
    }

    fn decode(&mut self, start: usize, end: usize) -> Result<Vec<f32>, BackendError> {
        if self.model.utt.is_none() {
            return Err(BackendError::NoUtterance);
        }
        Ok(self.chunk(start, end)?)
    }
}
