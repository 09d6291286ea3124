//! The CUDA device as Hark uses it: a context, two streams (compute, copy), raw device
//! buffers, loaded kernels and a launcher. Everything that can fail without a GPU is checked
//! before cudarc is asked to load a library (its loaders panic when one is missing).

use super::GpuError;
use cudarc::driver::result as cu;
use cudarc::driver::sys;
use cudarc::driver::{CudaContext, CudaFunction, CudaModule, CudaStream};
use std::ffi::c_void;
use std::sync::Arc;

pub const NVRTC_MISSING: &str =
    "NVRTC (libnvrtc) not found; add the CUDA toolkit's lib64 to LD_LIBRARY_PATH";

/// Why CUDA cannot be used here, or `None` when the driver library and a device exist.
pub fn unavailable_reason() -> Option<String> {
    // A machine with a driver but no NVRTC (checked first, so that it shows without a GPU).
    #[cfg(feature = "fault-inject")]
    if crate::fault::nvrtc_missing() {
        return Some(NVRTC_MISSING.into());
    }
    // SAFETY: only probes whether the shared library can be opened.
    let driver = std::panic::catch_unwind(|| unsafe { sys::is_culib_present() }).unwrap_or(false);
    if !driver {
        return Some("no NVIDIA driver (libcuda) found".into());
    }
    // SAFETY: as above, for NVRTC.
    let nvrtc = std::panic::catch_unwind(|| unsafe { cudarc::nvrtc::sys::is_culib_present() })
        .unwrap_or(false);
    if !nvrtc {
        return Some(NVRTC_MISSING.into());
    }
    match std::panic::catch_unwind(|| cu::init().and_then(|_| cu::device::get_count())) {
        Ok(Ok(n)) if n > 0 => None,
        Ok(Ok(_)) => Some("no CUDA device".into()),
        Ok(Err(e)) => Some(format!("CUDA driver error: {e}")),
        Err(_) => Some("the CUDA driver could not be loaded".into()),
    }
}

/// A device allocation, freed on drop.
pub struct DBuf {
    pub ptr: u64,
    pub bytes: usize,
    ctx: Arc<CudaContext>,
}

impl Drop for DBuf {
    fn drop(&mut self) {
        if self.ptr != 0 {
            let _ = self.ctx.bind_to_thread();
            // SAFETY: allocated by `Gpu::alloc` in this context and freed once.
            unsafe {
                let _ = cu::free_sync(self.ptr);
            }
        }
    }
}

impl DBuf {
    /// Address of element `i` of a buffer of `T`s.
    pub fn at<T>(&self, i: usize) -> u64 {
        debug_assert!(
            (i + 1) * std::mem::size_of::<T>() <= self.bytes.max(std::mem::size_of::<T>())
        );
        self.ptr + (i * std::mem::size_of::<T>()) as u64
    }
}

/// Page-locked host memory, so copies run asynchronously and at full speed.
pub struct Pinned {
    ptr: *mut f32,
    len: usize,
    ctx: Arc<CudaContext>,
}

// SAFETY: the buffer is plain host memory owned by this value.
unsafe impl Send for Pinned {}

impl Pinned {
    pub fn slice(&self) -> &[f32] {
        // SAFETY: `ptr` holds `len` initialised floats (zeroed at allocation).
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }
    pub fn slice_mut(&mut self) -> &mut [f32] {
        // SAFETY: as above, and `&mut self` makes the access unique.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) }
    }
    pub fn len(&self) -> usize {
        self.len
    }
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

impl Drop for Pinned {
    fn drop(&mut self) {
        let _ = self.ctx.bind_to_thread();
        // SAFETY: allocated by `malloc_host` and freed once.
        unsafe {
            let _ = cu::free_host(self.ptr as *mut c_void);
        }
    }
}

/// A kernel argument, passed by value.
#[derive(Clone, Copy, Debug)]
pub enum Arg {
    P(u64),
    I(i32),
    F(f32),
}

/// A launch: function, grid, block-shared bytes, cooperative or not.
#[derive(Clone, Copy, Debug)]
pub struct Dims {
    pub grid: (u32, u32, u32),
    pub smem: u32,
    pub cooperative: bool,
}

pub const THREADS: u32 = 256;

/// Host-side kernel and graph launches since start, process-wide (the benchmark counts
/// them per utterance; the persistent engine makes none after its start).
pub static LAUNCHES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
/// CUDA graphs captured and instantiated since start, process-wide: each holds host memory
/// in the driver until dropped, so the soak samples it beside RSS.
pub static GRAPH_CAPTURES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
/// Captured graphs dropped to keep the cache within its cap (`GpuOptions::graph_cache`).
pub static GRAPH_EVICTIONS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
/// Host-issued asynchronous copies since start, process-wide.
pub static COPIES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

pub fn count(c: &std::sync::atomic::AtomicU64) {
    c.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
}

pub struct Gpu {
    pub ctx: Arc<CudaContext>,
    pub stream: Arc<CudaStream>,
    pub copy_stream: Arc<CudaStream>,
    pub name: String,
    pub sms: u32,
    pub cc: (i32, i32),
}

impl Gpu {
    pub fn new() -> Result<Self, GpuError> {
        if let Some(why) = unavailable_reason() {
            return Err(GpuError::Unavailable(why));
        }
        let ctx = std::panic::catch_unwind(|| CudaContext::new(0))
            .map_err(|_| GpuError::Unavailable("creating the CUDA context panicked".into()))??;
        // Hark orders its own work on its streams; cudarc's per-buffer events are not needed.
        // SAFETY: no cudarc-managed buffers are used across streams.
        unsafe { ctx.disable_event_tracking() };
        let stream = ctx.new_stream()?;
        let copy_stream = ctx.new_stream()?;
        let name = ctx.name()?;
        let cc = ctx.compute_capability()?;
        let sms = ctx
            .attribute(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?
            as u32;
        Ok(Self {
            ctx,
            stream,
            copy_stream,
            name,
            sms,
            cc,
        })
    }

    pub fn alloc(&self, bytes: usize) -> Result<DBuf, GpuError> {
        self.ctx.bind_to_thread()?;
        let b = bytes.max(4);
        // SAFETY: a plain allocation, zeroed before use.
        let ptr = unsafe {
            let p = cu::malloc_sync(b)?;
            cu::memset_d8_sync(p, 0, b)?;
            p
        };
        Ok(DBuf {
            ptr,
            bytes: b,
            ctx: self.ctx.clone(),
        })
    }

    pub fn alloc_pinned(&self, len: usize) -> Result<Pinned, GpuError> {
        self.ctx.bind_to_thread()?;
        // SAFETY: allocation of len floats, zeroed below.
        let ptr = unsafe { cu::malloc_host(len.max(1) * 4, 0)? } as *mut f32;
        // SAFETY: freshly allocated, len floats.
        unsafe { std::ptr::write_bytes(ptr, 0, len.max(1)) };
        Ok(Pinned {
            ptr,
            len,
            ctx: self.ctx.clone(),
        })
    }

    /// Synchronous upload (weights, once).
    pub fn upload<T: Copy>(&self, data: &[T]) -> Result<DBuf, GpuError> {
        let b = self.alloc(std::mem::size_of_val(data))?;
        if !data.is_empty() {
            // SAFETY: `b` holds at least size_of_val(data) bytes.
            unsafe { cu::memcpy_htod_sync(b.ptr, data)? };
        }
        Ok(b)
    }

    /// Copy on the compute stream; `src` must stay alive and unchanged until the stream syncs.
    pub fn htod_async<T>(&self, dst: u64, src: &[T]) -> Result<(), GpuError> {
        count(&COPIES);
        // SAFETY: the caller passes a destination with room for `src`.
        unsafe { cu::memcpy_htod_async(dst, src, self.stream.cu_stream())? };
        Ok(())
    }

    pub fn dtoh_sync<T: Copy + Default>(&self, src: u64, n: usize) -> Result<Vec<T>, GpuError> {
        self.stream.synchronize()?;
        let mut v = vec![T::default(); n];
        if n > 0 {
            // SAFETY: the source holds n elements of T.
            unsafe { cu::memcpy_dtoh_sync(&mut v, src)? };
        }
        Ok(v)
    }

    pub fn sync(&self) -> Result<(), GpuError> {
        self.stream.synchronize()?;
        Ok(())
    }

    pub fn load(&self, image: Vec<u8>) -> Result<Arc<CudaModule>, GpuError> {
        let t0 = std::time::Instant::now();
        let m = self
            .ctx
            .load_module(cudarc::nvrtc::Ptx::from_binary(image))?;
        tracing::debug!(
            "module loaded in {:.1} ms",
            t0.elapsed().as_secs_f64() * 1e3
        );
        Ok(m)
    }

    /// Launches `f` with THREADS threads per block on `stream` (the compute stream if None).
    pub fn launch(&self, f: &Kernel, d: Dims, args: &[Arg]) -> Result<(), GpuError> {
        self.launch_on(f, d, args, &self.stream)
    }

    pub fn launch_on(
        &self,
        f: &Kernel,
        d: Dims,
        args: &[Arg],
        stream: &CudaStream,
    ) -> Result<(), GpuError> {
        count(&LAUNCHES);
        let stream = stream.cu_stream();
        // Each argument lives in an 8-byte slot; i32/f32 occupy its first 4 bytes (LE).
        let mut slots: Vec<u64> = args
            .iter()
            .map(|a| match *a {
                Arg::P(p) => p,
                Arg::I(i) => i as u32 as u64,
                Arg::F(x) => x.to_bits() as u64,
            })
            .collect();
        let mut params: Vec<*mut c_void> = slots
            .iter_mut()
            .map(|s| s as *mut u64 as *mut c_void)
            .collect();
        let block = (THREADS, 1, 1);
        // SAFETY: argument count and types match the kernel's signature (checked by the
        // parity tests); the slots outlive the call, which copies them.
        unsafe {
            if d.cooperative {
                cu::launch_cooperative_kernel(
                    f.func.cu_function(),
                    d.grid,
                    block,
                    d.smem,
                    stream,
                    &mut params,
                )?;
            } else {
                cu::launch_kernel(
                    f.func.cu_function(),
                    d.grid,
                    block,
                    d.smem,
                    stream,
                    &mut params,
                )?;
            }
        }
        Ok(())
    }

    pub fn mem_info(&self) -> Result<(usize, usize), GpuError> {
        self.ctx.bind_to_thread()?;
        Ok(cu::mem_get_info()?)
    }
}

/// A loaded kernel and the most blocks of it that can be co-resident (for cooperative
/// launches), at the dynamic shared memory it was prepared for.
#[derive(Clone)]
pub struct Kernel {
    pub func: CudaFunction,
    pub name: &'static str,
    pub max_coresident: u32,
    pub smem: u32,
}

impl Kernel {
    pub fn new(
        gpu: &Gpu,
        module: &Arc<CudaModule>,
        name: &'static str,
        smem: u32,
    ) -> Result<Self, GpuError> {
        let func = module.load_function(name)?;
        // Always set: static scratch plus dynamic memory may pass the 48 KB default.
        func.set_attribute(
            sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
            smem as i32,
        )?;
        let per_sm =
            func.occupancy_max_active_blocks_per_multiprocessor(THREADS, smem as usize, None)?;
        tracing::debug!(
            "kernel {name}: {per_sm} co-resident blocks per SM at {smem} B of shared memory"
        );
        if per_sm == 0 {
            return Err(GpuError::Compile(format!(
                "kernel {name} cannot run with {smem} bytes of shared memory"
            )));
        }
        Ok(Self {
            func,
            name,
            max_coresident: per_sm * gpu.sms,
            smem,
        })
    }

    /// A cooperative launch of at most `want` blocks (persistent kernels loop over work).
    pub fn coop(&self, want: usize) -> Dims {
        Dims {
            grid: ((want.max(1) as u32).min(self.max_coresident), 1, 1),
            smem: self.smem,
            cooperative: true,
        }
    }

    pub fn grid(&self, x: usize, y: usize) -> Dims {
        Dims {
            grid: (x.max(1) as u32, y.max(1) as u32, 1),
            smem: self.smem,
            cooperative: false,
        }
    }
}

impl Dims {
    pub fn with_smem(mut self, smem: u32) -> Self {
        self.smem = smem;
        self
    }
}
