//! The module cache: each [`Module`] of the registry is compiled (or taken from the disk cache)
//! and loaded at most once per model, and each entry point is prepared once for its shared
//! memory and then handed out as a [`Kernel`].

use super::GpuError;
use super::compile;
use super::device::{Gpu, Kernel};
use super::options::{GpuOptions, Mma};
use super::registry::{Entry, Module};
use cudarc::driver::CudaModule;
use hark_voice::ModelDims;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

/// What one [`Modules::load`] did.
#[derive(Clone, Copy, Debug, Default)]
pub struct Loaded {
    /// Compiling (or reading the disk cache) and loading, wall time.
    pub ms: f64,
    /// Modules that came from the disk cache.
    pub from_cache: usize,
}

pub(crate) struct Modules {
    dims: ModelDims,
    f16: bool,
    mma: Mma,
    disk_cache: bool,
    cc: (i32, i32),
    loaded: [Option<Arc<CudaModule>>; Module::ALL.len()],
    kernels: HashMap<Entry, Kernel>,
}

impl Modules {
    pub fn new(dims: &ModelDims, opts: &GpuOptions, cc: (i32, i32)) -> Self {
        Self {
            dims: dims.clone(),
            f16: opts.f16(),
            mma: opts.mma,
            disk_cache: opts.kernel_cache,
            cc,
            loaded: Default::default(),
            kernels: HashMap::new(),
        }
    }

    /// Compiles and loads those of `mods` not loaded yet. NVRTC compiles one program per
    /// thread: the modules side by side, so a cold start costs the slowest, not the sum.
    pub fn load(&mut self, gpu: &Gpu, mods: &[Module]) -> Result<Loaded, GpuError> {
        let t0 = Instant::now();
        let todo: Vec<Module> = mods
            .iter()
            .copied()
            .filter(|m| self.loaded[*m as usize].is_none())
            .collect();
        let (dims, f16, mma, cc, disk_cache) =
            (&self.dims, self.f16, self.mma, self.cc, self.disk_cache);
        let bins: Vec<Result<(Vec<u8>, bool), GpuError>> = std::thread::scope(|s| {
            let jobs: Vec<_> = todo
                .iter()
                .map(|&m| {
                    s.spawn(move || {
                        let defs = compile::module_defines(m, dims, f16, mma);
                        compile::cubin(m.name(), &m.text(), &defs, cc, disk_cache)
                    })
                })
                .collect();
            jobs.into_iter()
                .map(|j| {
                    j.join().unwrap_or_else(|_| {
                        Err(GpuError::Compile("the NVRTC thread panicked".into()))
                    })
                })
                .collect()
        });
        let mut from_cache = 0;
        for (m, b) in todo.iter().zip(bins) {
            let (bin, hit) = b?;
            from_cache += hit as usize;
            self.loaded[*m as usize] = Some(gpu.load(bin)?);
        }
        Ok(Loaded {
            ms: t0.elapsed().as_secs_f64() * 1e3,
            from_cache,
        })
    }

    /// Entry point `e`, prepared for the shared memory the registry gives it (its module is
    /// loaded first if it is not yet).
    pub fn kernel(&mut self, gpu: &Gpu, e: Entry) -> Result<Kernel, GpuError> {
        if let Some(k) = self.kernels.get(&e) {
            return Ok(k.clone());
        }
        let def = e.def();
        self.load(gpu, &[def.module])?;
        let module = self.loaded[def.module as usize]
            .as_ref()
            .expect("loaded just above");
        let k = Kernel::new(gpu, module, def.name, def.smem.bytes(&self.dims) as u32)?;
        self.kernels.insert(e, k.clone());
        Ok(k)
    }
}
