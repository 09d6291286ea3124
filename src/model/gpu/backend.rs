//! `CudaBackend`: the `Backend` trait over [`GpuModel`]. The host draws the same noise as the
//! CPU reference (same seed, same order), so both backends speak the same utterance.

use super::device::Pinned;
use super::{GpuError, GpuModel};
use crate::model::Scales;
use crate::model::backend::{Backend, BackendError, UtteranceInfo};
use crate::model::cpu::noise::NoiseSource;
use crate::voice::Voice;
use cudarc::driver::result as cu;

pub struct CudaBackend {
    pub model: GpuModel,
    context: usize,
    pinned: Pinned,
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
    /// f16 flow/decoder weights unless `HARK_CUDA_F32=1`.
    pub fn new(voice: &Voice) -> Result<Self, GpuError> {
        Self::with_precision(voice, !super::f32_mode_requested())
    }

    pub fn with_precision(voice: &Voice, f16: bool) -> Result<Self, GpuError> {
        let dims = &voice.config.dims;
        let model = GpuModel::new(&voice.weights, dims, f16)?;
        let pinned = model.gpu.alloc_pinned(64 * dims.samples_per_frame())?;
        let mut b = Self {
            model,
            context: dims.flow_decoder_receptive_frames(),
            pinned,
            stages: Vec::new(),
        };
        b.warm_up()?;
        Ok(b)
    }

    /// One short utterance through every kernel, so the first real one pays no module load,
    /// allocation or first-launch cost.
    fn warm_up(&mut self) -> Result<(), GpuError> {
        let ids: Vec<i64> = [1i64, 0, 20, 0, 21, 0, 2].to_vec();
        let scales = Scales {
            noise_scale: 0.667,
            length_scale: 1.0,
            noise_w: 0.8,
        };
        self.start(&ids, &scales, 0)?;
        let frames = self.model.utt.as_ref().map_or(0, |u| u.frames);
        if frames > 0 {
            self.chunk(0, frames.min(16))?;
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
        let t = ids.len();
        self.model.run_encoder(ids)?;
        let mut rng = NoiseSource::new(seed);
        let noise = rng.sdp_noise(t, scales.noise_w);
        let durations = self.model.run_sdp(&noise.data, scales.length_scale)?;
        let frames: usize = durations.iter().sum();
        let eps = if scales.noise_scale == 0.0 {
            None
        } else {
            Some(
                rng.normal(vec![self.model.dims.inter_channels, frames])
                    .data,
            )
        };
        self.model
            .set_utterance(durations.clone(), scales.noise_scale, eps.as_deref())?;
        Ok(UtteranceInfo { durations, frames })
    }

    fn chunk(&mut self, start: usize, end: usize) -> Result<Vec<f32>, GpuError> {
        let count = self.model.launch_window(start, end, self.context)?;
        if count > self.pinned.len() {
            self.pinned = self.model.gpu.alloc_pinned(count.next_power_of_two())?;
        }
        let g = &self.model.gpu;
        // SAFETY: `out` holds `count` floats; the pinned buffer has room; synced below.
        unsafe {
            cu::memcpy_dtoh_async(
                &mut self.pinned.slice_mut()[..count],
                self.model.out_ptr(),
                g.stream.cu_stream(),
            )?;
        }
        self.model.mark("copy to host")?;
        self.model.gpu.sync()?;
        if self.model.profile {
            let st = self.model.take_stage_ms()?;
            self.stages.extend(st);
        }
        Ok(self.pinned.slice()[..count].to_vec())
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
