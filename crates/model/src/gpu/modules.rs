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
    force_ptx: bool,
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
            force_ptx: opts.ptx,
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
        if todo.is_empty() {
            return Ok(Loaded::default());
        }
        let target = compile::target_for(self.cc, self.force_ptx)?;
        if let compile::Target::Ptx(a) = target {
            tracing::info!(
                "CUDA kernels as PTX for compute_{a}, finished by the driver (GPU sm_{}{})",
                self.cc.0,
                self.cc.1
            );
        }
        let (dims, f16, mma, disk_cache) = (&self.dims, self.f16, self.mma, self.disk_cache);
        let bins = compile_side_by_side(&todo, dims, f16, mma, target, disk_cache);
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

/// `compile::cubin` of each of `mods`, one NVRTC program per thread (NVRTC compiles one
/// program per thread: a cold start costs the slowest module, not the sum), in their order.
fn compile_side_by_side(
    mods: &[Module],
    dims: &ModelDims,
    f16: bool,
    mma: Mma,
    target: compile::Target,
    disk_cache: bool,
) -> Vec<Result<(Vec<u8>, bool), GpuError>> {
    std::thread::scope(|s| {
        let jobs: Vec<_> = mods
            .iter()
            .map(|&m| {
                s.spawn(move || {
                    let defs = compile::module_defines(m, dims, f16, mma);
                    compile::cubin(m.name(), &m.text(), &defs, target, disk_cache)
                })
            })
            .collect();
        jobs.into_iter()
            .map(|j| {
                j.join()
                    .unwrap_or_else(|_| Err(GpuError::Compile("the NVRTC thread panicked".into())))
            })
            .collect()
    })
}

/// The compute capability and name of device 0, from the driver without a context.
fn device_identity() -> Result<((i32, i32), String), GpuError> {
    use cudarc::driver::result as cu;
    use cudarc::driver::sys::CUdevice_attribute as A;
    if let Some(why) = super::device::unavailable_reason() {
        return Err(GpuError::Unavailable(why));
    }
    let dev = cu::device::get(0)?;
    // SAFETY: `dev` came from cuDeviceGet above.
    let cc = unsafe {
        (
            cu::device::get_attribute(dev, A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)?,
            cu::device::get_attribute(dev, A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)?,
        )
    };
    Ok((cc, cu::device::get_name(dev)?))
}

/// Compiles into the disk cache every module that the CUDA backend for `engine` loads at
/// start on this machine's GPU, without a CUDA context, so that it can run on a thread of its
/// own while the CPU speaks: a first start on a machine spends seconds in NVRTC, a later one
/// reads the cache. Returns how many modules were cached already.
pub fn prepare_kernels(
    dims: &ModelDims,
    opts: &GpuOptions,
    engine: super::persist::GpuEngine,
) -> Result<Loaded, GpuError> {
    let t0 = Instant::now();
    super::compile::check_dims(dims).map_err(GpuError::Compile)?;
    let (cc, name) = device_identity()?;
    let target = compile::target_for(cc, opts.ptx)?;
    let persistent =
        super::persist::choice::resolve(engine, &name) == super::persist::GpuEngine::Persistent;
    let mods: Vec<Module> = Module::GRAPH
        .into_iter()
        .chain(persistent.then_some(Module::Persistent))
        .collect();
    let (f16, mma) = (opts.f16(), opts.mma);
    let hits = compile_side_by_side(&mods, dims, f16, mma, target, opts.kernel_cache);
    let mut from_cache = 0;
    for h in hits {
        from_cache += h?.1 as usize;
    }
    Ok(Loaded {
        ms: t0.elapsed().as_secs_f64() * 1e3,
        from_cache,
    })
}
