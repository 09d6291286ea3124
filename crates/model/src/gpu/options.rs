//! The CUDA backend's switches, as one value handed to its constructors ([`super::GpuModel`],
//! [`super::CudaBackend`], [`super::persist::PersistentBackend`]). The library never reads the
//! environment: binaries fill this from the `HARK_*` variables at their edge
//! (`hark_engine::Overrides`), and the default is what Hark ships with.

use std::time::Duration;

/// How the CUDA backend runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GpuOptions {
    /// Everything in f32 with FMA (`HARK_CUDA_F32=1`, parity debugging); otherwise flow and
    /// decoder weights are f16.
    pub all_f32: bool,
    /// How the f16-weight convolutions run (`HARK_CUDA_MMA`).
    pub mma: Mma,
    /// Capture each window's flow + decoder launches into a CUDA graph (`HARK_CUDA_GRAPHS=0`:
    /// launch the kernels directly).
    pub graphs: bool,
    /// Captured graphs held at most, least recently used out first (`HARK_CUDA_GRAPH_CACHE`,
    /// at least 1).
    pub graph_cache: usize,
    /// Backends run a warm-up utterance at start (`HARK_CUDA_WARMUP=0` skips it, e.g. under
    /// compute-sanitizer, where every kernel runs hundreds of times slower).
    pub warm_up: bool,
    /// Keep compiled cubins in the disk cache (`HARK_KERNEL_NOCACHE` set: always compile).
    pub kernel_cache: bool,
    /// No progress from the persistent kernel for this long means it is hung
    /// (`HARK_PERSIST_WATCHDOG_MS`, e.g. much longer under compute-sanitizer; at least 10 ms).
    pub watchdog: Duration,
    /// Blocks of the persistent kernel, at most as many as can be co-resident; `None`: that
    /// many (`HARK_PERSIST_BLOCKS`: compute-sanitizer's racecheck only finishes on a small
    /// grid; every stage loops over its work items, so any grid gives the same result).
    pub persist_blocks: Option<u32>,
    /// Build the kernels as PTX that the driver finishes (`HARK_CUDA_PTX=1`), as Hark does
    /// by itself on a GPU newer than its NVRTC knows; otherwise as the GPU's machine code.
    pub ptx: bool,
    /// How long an `Auto` engine's start waits for the kernels (read from the cache in 10–15
    /// ms, compiled in seconds on a first start) before it speaks on the CPU and moves to the
    /// GPU once they are ready (`HARK_CUDA_COMPILE_WAIT_MS`; 0: always start on the CPU).
    pub compile_wait: Duration,
}

/// How f16-weight convolutions run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Mma {
    /// `HARK_CUDA_MMA=0`: on the f32 FMA path.
    Off,
    /// `HARK_CUDA_MMA=1`: on tensor cores (`mma.sync`) with activations rounded to f16.
    On,
    /// The default: as `On`, except that the flow keeps each activation as two f16 (value and
    /// rounding error) for f32-like inputs.
    #[default]
    SplitFlow,
}

impl Default for GpuOptions {
    fn default() -> Self {
        Self {
            all_f32: false,
            mma: Mma::default(),
            graphs: true,
            graph_cache: super::graph_cache::DEFAULT_CAP,
            warm_up: true,
            kernel_cache: true,
            watchdog: Duration::from_millis(2000),
            persist_blocks: None,
            ptx: false,
            compile_wait: Duration::from_millis(500),
        }
    }
}

impl GpuOptions {
    /// Whether flow and decoder weights are f16 (the default precision).
    pub fn f16(&self) -> bool {
        !self.all_f32
    }

    /// These options in the other precision (tests run both).
    pub fn with_f16(self, f16: bool) -> Self {
        Self {
            all_f32: !f16,
            ..self
        }
    }

    /// Whether f16-weight convolutions run on tensor cores.
    pub fn tensor_cores(&self) -> bool {
        self.mma != Mma::Off
    }
}
