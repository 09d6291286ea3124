//! One run of the persistent kernel: its device buffers, the mapped area, the argument
//! table, the cooperative launch (the only host launch), and a clean shutdown. While the
//! kernel runs it holds every SM, so nothing else may be launched on the device and no
//! buffer may be freed (a free waits for the device); [`Session`] enforces both by owning
//! everything the kernel touches and releasing it only after the kernel has returned.

use super::layout::{self, args, ctl};
use super::protocol::{Host, ProtocolError, Shared};
use crate::gpu::GpuError;
use crate::gpu::device::{Arg, DBuf};
use crate::gpu::model::{Front, GpuModel, Window, p};
use cudarc::driver::result as cu;
use cudarc::driver::{CudaContext, CudaEvent, CudaStream, sys};
use std::mem::ManuallyDrop;
use std::sync::Arc;
use std::time::Duration;

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

/// The watchdog bound, `HARK_PERSIST_WATCHDOG_MS` (e.g. much longer under compute-sanitizer).
fn watchdog() -> Duration {
    let ms = std::env::var("HARK_PERSIST_WATCHDOG_MS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2000u64);
    Duration::from_millis(ms.max(10))
}

/// Blocks of the persistent kernel: as many as can be co-resident, or fewer with
/// `HARK_PERSIST_BLOCKS` (compute-sanitizer's racecheck only finishes on a small grid; every
/// stage loops over its work items, so any grid gives the same result).
fn grid_blocks(max_coresident: u32) -> u32 {
    std::env::var("HARK_PERSIST_BLOCKS")
        .ok()
        .and_then(|v| v.parse::<u32>().ok())
        .map_or(max_coresident, |n| n.clamp(1, max_coresident))
}

fn persistent_kernel(m: &GpuModel) -> Result<&crate::gpu::device::Kernel, GpuError> {
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
        for (i, b) in [
            (args::IDS, &front.ids),
            (args::X, &front.x),
            (args::QKV, &front.qkv),
            (args::HBUF, &front.hbuf),
            (args::MP, &front.m_p),
            (args::LOGSP, &front.logs_p),
            (args::A, &front.a),
            (args::B, &front.b),
            (args::G, &front.g),
            (args::Z2, &front.z2),
            (args::LOGW, &front.logw),
            (args::DUR, &front.dur),
            (args::OFF, &front.off),
            (args::Z, &win.z),
            (args::H0, &win.h[0]),
            (args::H1, &win.h[1]),
            (args::ACTS, &win.acts),
            (args::SKIP, &win.skip),
            (args::PRE, &win.pre),
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
                win.up[s].ptr,
                win.rbs[s].ptr,
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
        let blocks = grid_blocks(kernel.max_coresident);
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
        self.host.watchdog = watchdog();
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
