//! One run of the persistent kernel: its device buffers, the mapped area, the argument
//! table, the cooperative launch (the only host launch), and a clean shutdown. While the
//! kernel runs it holds every SM, so nothing else may be launched on the device and no
//! buffer may be freed (a free waits for the device); [`Session`] enforces both by owning
//! everything the kernel touches and releasing it only after the kernel has returned.

use super::layout::{self, args, ctl};
use super::protocol::{Host, ProtocolError, Shared};
use crate::gpu::GpuError;
use crate::gpu::device::{Arg, DBuf, Kernel};
use crate::gpu::model::{Front, GpuModel, Window, p};
use crate::gpu::registry::{Entry, Module};
use cudarc::driver::result as cu;
use cudarc::driver::{CudaContext, CudaEvent, CudaStream, sys};
use std::mem::ManuallyDrop;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The persistent engine's module: compiled on first use (the graph path never pays for it).
pub struct PersistentKernels {
    pub persistent: Kernel,
    /// Grid barriers alone on the persistent kernel's grid (benchmark).
    pub barrier_probe: Kernel,
    pub compile_ms: f64,
    pub cached: bool,
}

impl GpuModel {
    /// Compiles (or loads from the disk cache) the persistent engine's module
    /// ([`Module::Persistent`]: every stage file and persistent.cu in one compilation unit,
    /// without the graph path's kernels).
    pub fn persistent_kernels(&mut self) -> Result<&PersistentKernels, GpuError> {
        if self.pk.is_none() {
            let t0 = Instant::now();
            let g = &self.gpu;
            let loaded = self.modules.load(g, &[Module::Persistent])?;
            self.pk = Some(PersistentKernels {
                persistent: self.modules.kernel(g, Entry::Persistent)?,
                barrier_probe: self.modules.kernel(g, Entry::BarrierProbe)?,
                compile_ms: t0.elapsed().as_secs_f64() * 1e3,
                cached: loaded.from_cache > 0,
            });
        }
        Ok(self.pk.as_ref().expect("just set"))
    }

    /// Microseconds per grid barrier on the persistent kernel's grid: 2000 barriers in one
    /// cooperative launch, less an empty launch, timed with events.
    pub fn grid_barrier_us(&mut self) -> Result<f64, GpuError> {
        self.persistent_kernels()?;
        let k = &self.pk.as_ref().expect("compiled").barrier_probe;
        let bar = self.gpu.alloc(64)?;
        let flags = Some(cudarc::driver::sys::CUevent_flags::CU_EVENT_DEFAULT);
        let (a, b) = (
            self.gpu.ctx.new_event(flags)?,
            self.gpu.ctx.new_event(flags)?,
        );
        let time = |n: i32| -> Result<f64, GpuError> {
            a.record(&self.gpu.stream)?;
            let dims = k.coop(k.max_coresident as usize);
            self.gpu.launch(k, dims, &[Arg::P(bar.ptr), Arg::I(n)])?;
            b.record(&self.gpu.stream)?;
            self.gpu.sync()?;
            Ok(a.elapsed_ms(&b)? as f64)
        };
        time(100)?;
        let (empty, full) = (time(0)?, time(2000)?);
        Ok((full - empty) * 1e3 / 2000.0)
    }
}

/// Pinned host memory mapped into the device's address space.
struct Mapped {
    host: *mut u32,
    dev: u64,
    ctx: Arc<CudaContext>,
}

impl Mapped {
    fn new(ctx: &Arc<CudaContext>, words: usize) -> Result<Self, GpuError> {
        ctx.bind_to_thread()?;
        let bytes = words * 4;
        // SAFETY: a plain allocation of `bytes`, zeroed before use; DEVICEMAP makes it
        // addressable by kernels, PORTABLE by every context.
        let host = unsafe {
            cu::malloc_host(
                bytes,
                sys::CU_MEMHOSTALLOC_DEVICEMAP | sys::CU_MEMHOSTALLOC_PORTABLE,
            )?
        } as *mut u32;
        // SAFETY: freshly allocated, `words` u32s.
        unsafe { std::ptr::write_bytes(host, 0, words) };
        let mut dev = 0u64;
        // SAFETY: `host` was allocated with DEVICEMAP just above.
        let r = unsafe { sys::cuMemHostGetDevicePointer_v2(&mut dev, host as *mut _, 0) };
        if r != sys::CUresult::CUDA_SUCCESS {
            // SAFETY: allocated above, freed once.
            unsafe {
                let _ = cu::free_host(host as *mut _);
            }
            return Err(GpuError::Driver(format!(
                "cuMemHostGetDevicePointer: {r:?}"
            )));
        }
        Ok(Self {
            host,
            dev,
            ctx: ctx.clone(),
        })
    }
}

impl Drop for Mapped {
    fn drop(&mut self) {
        let _ = self.ctx.bind_to_thread();
        // SAFETY: allocated by `malloc_host`, freed once, after the kernel returned.
        unsafe {
            let _ = cu::free_host(self.host as *mut _);
        }
    }
}

/// Everything the running kernel may touch.
struct Resources {
    mapped: Mapped,
    _front: Front,
    _win: Window,
    _args: DBuf,
    _bar: DBuf,
    _dispatch: DBuf,
}

pub struct Session {
    pub host: Host,
    res: ManuallyDrop<Resources>,
    stream: Arc<CudaStream>,
    /// Recorded after the launch: complete once the kernel has returned.
    returned: Arc<CudaEvent>,
    words: usize,
    /// Blocks of the cooperative launch (co-resident: one or more per SM).
    pub blocks: u32,
    /// The kernel is running (or may be: a failed shutdown leaves this set).
    running: bool,
    /// Set by `abandon`: the buffers are never freed.
    leak: bool,
    args_dev: u64,
    ci: usize,
    hop: usize,
}

/// The watchdog bound ([`crate::gpu::GpuOptions::watchdog`], at least 10 ms).
fn watchdog(m: &GpuModel) -> Duration {
    m.opts.watchdog.max(Duration::from_millis(10))
}

/// Blocks of the persistent kernel: as many as can be co-resident, or fewer by
/// [`crate::gpu::GpuOptions::persist_blocks`].
fn grid_blocks(m: &GpuModel, max_coresident: u32) -> u32 {
    m.opts
        .persist_blocks
        .map_or(max_coresident, |n| n.clamp(1, max_coresident))
}

fn persistent_kernel(m: &GpuModel) -> Result<&Kernel, GpuError> {
    m.pk.as_ref()
        .map(|pk| &pk.persistent)
        .ok_or_else(|| GpuError::Unavailable("the persistent module is not compiled".into()))
}

impl Session {
    /// Allocates the session's buffers and launches the kernel (the one host launch); the
    /// module must be compiled ([`GpuModel::persistent_kernels`]).
    pub fn start(m: &GpuModel) -> Result<Self, GpuError> {
        let kernel = persistent_kernel(m)?;
        let d = &m.dims;
        if m.w.enc.len() > args::MAX_LAYERS || m.geoms.len() > args::MAX_STAGES {
            return Err(GpuError::Unavailable(
                "this voice has more layers than the persistent kernel takes".into(),
            ));
        }
        let g = &m.gpu;
        let (ci, hop) = (d.inter_channels, d.samples_per_frame());
        let context = d.flow_decoder_receptive_frames();
        let words = layout::mapped_words(ci, hop);
        let mapped = Mapped::new(&g.ctx, words)?;
        let front = Front::alloc(g, d, layout::TMAX)?;
        let win = Window::alloc(g, d, &m.geoms, layout::STEP_MAX + 2 * context)?;
        let bar = g.alloc(64)?;
        let dispatch = g.alloc(64)?;
        let mut a = vec![0u64; args::WORDS];
        let dev = mapped.dev;
        a[args::CTL] = dev;
        a[args::JOBS] = dev + 4 * ctl::WORDS as u64;
        a[args::RING] = dev + 4 * (ctl::WORDS + 2 * layout::job_words(ci)) as u64;
        a[args::BAR] = bar.ptr;
        a[args::DISPATCH] = dispatch.ptr;
        a[args::PROF] = dev + 4 * layout::prof_base(ci, hop) as u64;
        let (enc, dur, fl, dec) = (&front.enc, &front.dur, &win.flow, &win.dec);
        for (i, b) in [
            (args::IDS, &enc.ids),
            (args::X, &enc.x),
            (args::QKV, &enc.qkv),
            (args::HBUF, &enc.hbuf),
            (args::MP, &enc.m_p),
            (args::LOGSP, &enc.logs_p),
            (args::A, &dur.a),
            (args::B, &dur.b),
            (args::G, &dur.g),
            (args::Z2, &dur.z2),
            (args::LOGW, &dur.logw),
            (args::DUR, &dur.dur),
            (args::OFF, &dur.off),
            (args::Z, &fl.z),
            (args::H0, &fl.h[0]),
            (args::H1, &fl.h[1]),
            (args::ACTS, &fl.acts),
            (args::SKIP, &fl.skip),
            (args::PRE, &dec.pre),
        ] {
            a[i] = p(b);
        }
        let w = &m.w;
        for (i, v) in [
            (args::EMB, w.emb),
            (args::PROJ_W, w.proj_w),
            (args::PROJ_B, w.proj_b),
            (args::SDP_TABLE, w.sdp_table),
            (args::FLOW_TABLE, w.flow_table),
            (args::PRE_W, w.pre_w),
            (args::PRE_B, w.pre_b),
            (args::POST_W, w.post_w),
            (args::POST_B, w.post_b),
            (args::PRE_K, d.dec_pre_kernel_size as u64),
            (args::POST_K, d.dec_post_kernel_size as u64),
            (args::UP0, d.upsample_initial_channel as u64),
            (args::NLAYERS, w.enc.len() as u64),
            (args::NSTAGES, m.geoms.len() as u64),
            (args::CONTEXT, context as u64),
            (args::SMS, g.sms as u64),
        ] {
            a[i] = v;
        }
        for (l, e) in w.enc.iter().enumerate() {
            let at = args::ENC + l * args::ENC_STRIDE;
            a[at..at + args::ENC_STRIDE].copy_from_slice(&[
                e.wqkv, e.bqkv, e.ek, e.ev, e.wo, e.bo, e.g1, e.b1n, e.w1, e.b1, e.w2, e.b2, e.g2,
                e.b2n,
            ]);
        }
        for (s, (geo, st)) in m.geoms.iter().zip(&w.stages).enumerate() {
            let at = args::STAGE + s * args::STAGE_STRIDE;
            a[at..at + args::STAGE_STRIDE].copy_from_slice(&[
                st.up_w,
                st.up_b,
                st.rb_w_table,
                st.rb_b_table,
                dec.up[s].ptr,
                dec.rbs[s].ptr,
                geo.cin as u64,
                geo.cout as u64,
                geo.rate as u64,
                geo.k as u64,
                geo.pad as u64,
                geo.tn as u64,
                geo.hmax as u64,
            ]);
        }
        let args_buf = g.upload(&a)?;
        let stream = g.ctx.new_stream()?;
        let returned = Arc::new(g.ctx.new_event(None)?);
        // SAFETY: `mapped` holds `words` zeroed, page-aligned words and outlives `host`
        // (both are owned by the session; `res` is dropped after `host` stops using it).
        let sh = unsafe { Shared::new(mapped.host, ci, hop) };
        let blocks = grid_blocks(m, kernel.max_coresident);
        let mut s = Self {
            host: Host::new(sh),
            args_dev: args_buf.ptr,
            res: ManuallyDrop::new(Resources {
                mapped,
                _front: front,
                _win: win,
                _args: args_buf,
                _bar: bar,
                _dispatch: dispatch,
            }),
            stream,
            returned,
            words,
            blocks,
            running: false,
            leak: false,
            ci,
            hop,
        };
        s.launch(m)?;
        Ok(s)
    }

    /// Resets the control words and launches the kernel.
    fn launch(&mut self, m: &GpuModel) -> Result<(), GpuError> {
        let kernel = persistent_kernel(m)?;
        // SAFETY: the kernel is not running, so the area is the host's alone; it holds
        // `words` words and lives as long as the session.
        let sh = unsafe {
            std::ptr::write_bytes(self.res.mapped.host, 0, ctl::WORDS);
            Shared::new(self.res.mapped.host, self.ci, self.hop)
        };
        self.host = Host::new(sh);
        self.host.watchdog = watchdog(m);
        let ev = self.returned.clone();
        self.host.alive = Box::new(move || match ev.try_is_complete() {
            Ok(false) => Ok(()),
            Ok(true) => Err("the kernel returned".into()),
            Err(e) => Err(format!("the kernel failed: {e}")),
        });
        let grid = kernel.coop(self.blocks as usize);
        m.gpu
            .launch_on(kernel, grid, &[Arg::P(self.args_dev)], &self.stream)?;
        self.returned.record(&self.stream)?;
        self.running = true;
        let sh = &self.host.sh;
        let t0 = std::time::Instant::now();
        while sh
            .ctl(ctl::STATE)
            .load(std::sync::atomic::Ordering::Acquire)
            != 1
        {
            if let Err(e) = (self.host.alive)() {
                self.running = false;
                return Err(GpuError::Driver(e));
            }
            if t0.elapsed() > self.host.watchdog {
                return Err(GpuError::Driver(
                    "the persistent kernel did not start".into(),
                ));
            }
            std::thread::yield_now();
        }
        Ok(())
    }

    /// Asks the kernel to return and waits for it. After an error the kernel may still be
    /// running: the caller must not use the device (see `abandon`).
    pub fn stop(&mut self) -> Result<(), ProtocolError> {
        if !self.running {
            return Ok(());
        }
        self.host.shutdown()?;
        self.stream
            .synchronize()
            .map_err(|e| ProtocolError::Gone(e.to_string()))?;
        self.running = false;
        Ok(())
    }

    /// Launches the kernel again after `stop` (buffers are kept).
    pub fn restart(&mut self, m: &GpuModel) -> Result<(), GpuError> {
        if self.running {
            return Ok(());
        }
        self.launch(m)
    }

    pub fn is_running(&self) -> bool {
        self.running
    }

    /// Mapped bytes (control, two job slots, the ring).
    pub fn mapped_bytes(&self) -> usize {
        self.words * 4
    }

    /// Gives up on a kernel that does not return: its buffers are leaked (freeing them would
    /// wait for it) and the process's exit reclaims them.
    pub fn abandon(mut self) {
        self.leak = true;
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        if self.leak {
            return;
        }
        match self.stop() {
            Ok(()) => {
                // SAFETY: the kernel has returned; taken once, here.
                unsafe { ManuallyDrop::drop(&mut self.res) };
            }
            Err(e) => {
                tracing::error!("persistent kernel did not shut down ({e}); leaking its buffers");
            }
        }
    }
}
