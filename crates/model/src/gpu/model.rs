//! The model on the device: kernels, weights, buffers and the launch sequences of the front
//! half (once per utterance) and of one window of frames (flow + decoder).

use super::GpuError;
use super::compile;
use super::device::{Arg, DBuf, Dims, Gpu, Kernel, Pinned};
use super::weights::GpuWeights;
use cudarc::driver::CudaGraph;
use cudarc::driver::sys::{CUgraphInstantiate_flags, CUstreamCaptureMode};
use hark_voice::{ModelDims, Weights};
use std::collections::HashMap;
use std::time::Instant;

/// Dynamic shared memory of the attention kernel; bounds the tokens per utterance.
const ATTN_SMEM: usize = 96 * 1024;
/// Largest dynamic shared memory a resblock block may use.
const RB_SMEM_MAX: usize = 200 * 1024;
/// Dynamic shared memory of the convolution-core test kernel (`conv_probe`).
const PROBE_SMEM: usize = 96 * 1024;

pub struct Kernels {
    pub embed: Kernel,
    pub attn: Kernel,
    pub ffn: Kernel,
    pub sdp: Kernel,
    pub flow: Kernel,
    pub conv: Kernel,
    pub up: Kernel,
    pub rb: Kernel,
    pub post: Kernel,
    /// The convolution core alone as the decoder and the flow compile it (parity tests only).
    pub probe: Kernel,
    pub flow_probe: Kernel,
}

/// The persistent engine's module: compiled on first use (the graph path never pays for it).
pub struct PersistentKernels {
    pub persistent: Kernel,
    /// Grid barriers alone on the persistent kernel's grid (benchmark).
    pub barrier_probe: Kernel,
    pub compile_ms: f64,
    pub cached: bool,
}

/// Per-stage decoder geometry.
#[derive(Clone, Copy, Debug)]
pub struct StageGeom {
    pub cin: usize,
    pub cout: usize,
    pub rate: usize,
    pub k: usize,
    pub pad: usize,
    pub tn: usize,
    pub hmax: usize,
    pub rb_smem: usize,
}

fn stage_geoms(d: &ModelDims) -> Vec<StageGeom> {
    let hmax = d
        .resblock_kernel_sizes
        .iter()
        .zip(&d.resblock_dilation_sizes)
        .map(|(&k, ds)| ds.iter().map(|&x| x * (k - 1) / 2).sum::<usize>())
        .max()
        .unwrap_or(0);
    (0..d.upsample_rates.len())
        .map(|s| {
            let cin = d.upsample_initial_channel >> s;
            let cout = cin / 2;
            let (rate, k) = (d.upsample_rates[s], d.upsample_kernel_sizes[s]);
            // Widest power-of-two tile (16..=256) whose two buffers fit.
            let mut tn = 256;
            while tn > 16 && 2 * cout * (tn + 2 * hmax) * 4 > RB_SMEM_MAX {
                tn /= 2;
            }
            StageGeom {
                cin,
                cout,
                rate,
                k,
                pad: (k - rate) / 2,
                tn,
                hmax,
                rb_smem: 2 * cout * (tn + 2 * hmax) * 4,
            }
        })
        .collect()
}

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
    pub ids: Option<DBuf>,
    pub x: Option<DBuf>,
    pub qkv: Option<DBuf>,
    pub hbuf: Option<DBuf>,
    pub m_p: Option<DBuf>,
    pub logs_p: Option<DBuf>,
    pub a: Option<DBuf>,
    pub b: Option<DBuf>,
    pub g: Option<DBuf>,
    pub z2: Option<DBuf>,
    pub logw: Option<DBuf>,
    pub dur: Option<DBuf>,
    pub off: Option<DBuf>,
}

impl Front {
    pub fn alloc(g: &Gpu, d: &ModelDims, cap: usize) -> Result<Self, GpuError> {
        let f4 = |n: usize| g.alloc(n * 4).map(Some);
        let (h, c, dpf) = (d.hidden_channels, d.inter_channels, d.dp_filter_channels);
        Ok(Self {
            cap,
            ids: f4(cap)?,
            x: f4(h * cap)?,
            qkv: f4(3 * h * cap)?,
            hbuf: f4(d.filter_channels * cap)?,
            m_p: f4(c * cap)?,
            logs_p: f4(c * cap)?,
            a: f4(dpf * cap)?,
            b: f4(dpf * cap)?,
            g: f4(dpf * cap)?,
            z2: f4(2 * cap)?,
            logw: f4(cap)?,
            dur: f4(cap)?,
            off: f4(cap + 1)?,
        })
    }
}

/// Flow and decoder buffers for windows of up to `cap` frames.
#[derive(Default)]
pub(crate) struct Window {
    pub cap: usize,
    pub z: Option<DBuf>,
    pub h: [Option<DBuf>; 2],
    pub acts: Option<DBuf>,
    pub skip: Option<DBuf>,
    pub pre: Option<DBuf>,
    pub up: Vec<DBuf>,
    pub rbs: Vec<DBuf>,
    /// Two output buffers: chunk N is copied out of one while chunk N+1 fills the other.
    pub out: [Option<DBuf>; 2],
}

impl Window {
    pub fn alloc(
        g: &Gpu,
        d: &ModelDims,
        geoms: &[StageGeom],
        cap: usize,
    ) -> Result<Self, GpuError> {
        let f4 = |n: usize| g.alloc(n * 4);
        let h = d.hidden_channels;
        let mut up = Vec::new();
        let mut rbs = Vec::new();
        let mut len = cap;
        for s in geoms {
            len *= s.rate;
            up.push(f4(s.cout * len)?);
            rbs.push(f4(d.resblock_kernel_sizes.len() * s.cout * len)?);
        }
        Ok(Self {
            cap,
            z: Some(f4(d.inter_channels * cap)?),
            h: [Some(f4(h * cap)?), Some(f4(h * cap)?)],
            acts: Some(f4(h * cap)?),
            skip: Some(f4(h * cap)?),
            pre: Some(f4(d.upsample_initial_channel * cap)?),
            up,
            rbs,
            out: [
                Some(f4(cap * d.samples_per_frame())?),
                Some(f4(cap * d.samples_per_frame())?),
            ],
        })
    }
}

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
    pub k: Kernels,
    /// Filled by [`GpuModel::persistent_kernels`].
    pub pk: Option<PersistentKernels>,
    /// Dynamic shared memory the persistent kernel needs: the largest of all stages.
    pk_smem: u32,
    pub w: GpuWeights,
    pub geoms: Vec<StageGeom>,
    pub startup: StartupReport,
    bar: DBuf,
    front: Front,
    win: Window,
    eps: Option<DBuf>,
    eps_cap: usize,
    pub utt: Option<Utterance>,
    /// When set, CUDA events mark stage boundaries (see [`GpuModel::take_stage_ms`]).
    pub profile: bool,
    marks: Vec<(&'static str, cudarc::driver::CudaEvent)>,
    /// Per-chunk scalars read by flow_coop (tokens, frames, lo, noise-scale bits).
    prm: DBuf,
    prm_host: [Pinned; 2],
    /// Captured flow + decoder sequences by (window, output offset, samples, slot).
    graphs: HashMap<(usize, usize, usize, usize), CudaGraph>,
    /// Off with HARK_CUDA_GRAPHS=0, or after a capture failed.
    pub graphs_enabled: bool,
    /// Durations land here (pinned) and `sdp_done` says when.
    dur_host: Pinned,
    sdp_done: cudarc::driver::CudaEvent,
}

impl GpuModel {
    /// Context, kernels (compiled or from the disk cache), weights on the device.
    pub fn new(weights: &Weights, dims: &ModelDims, f16: bool) -> Result<Self, GpuError> {
        compile::check_dims(dims).map_err(GpuError::Unavailable)?;
        let gpu = Gpu::new()?;
        let t0 = Instant::now();
        let defs = compile::defines(dims, f16);
        // NVRTC compiles one program per thread: the four modules side by side, so a cold
        // start costs the slowest module, not the sum.
        let files = [
            compile::ENCODER,
            compile::DURATION,
            compile::FLOW,
            compile::DECODER,
        ];
        let bins: Vec<Result<(Vec<u8>, bool), GpuError>> = std::thread::scope(|s| {
            let jobs: Vec<_> = files
                .iter()
                .map(|f| s.spawn(|| compile::cubin(f.0, f.1, &defs, gpu.cc)))
                .collect();
            jobs.into_iter()
                .map(|j| {
                    j.join().unwrap_or_else(|_| {
                        Err(GpuError::Compile("the NVRTC thread panicked".into()))
                    })
                })
                .collect()
        });
        let mut cached = 0;
        let mut modules = Vec::with_capacity(files.len());
        for b in bins {
            let (bin, hit) = b?;
            cached += hit as usize;
            modules.push(gpu.load(bin)?);
        }
        let [enc, dur, flow, dec]: [_; 4] = modules
            .try_into()
            .map_err(|_| GpuError::Compile("expected four kernel modules".into()))?;
        let compile_ms = t0.elapsed().as_secs_f64() * 1e3;
        let d = dims;
        let (h, f, kf) = (d.hidden_channels, d.filter_channels, d.ffn_kernel_size);
        let geoms = stage_geoms(d);
        let fl = 4usize;
        let ffn_smem = (h * (16 + kf - 1)).max(f * (8 + kf - 1) + h * 8) * fl;
        let npar = 3 * d.dp_num_bins - 1;
        let sdp_smem = (h * 32)
            .max(2 * d.dp_filter_channels * 8 + npar * 8)
            .max(256)
            * fl;
        let mut halo = (d.flow_kernel_size - 1) / 2;
        for _ in 1..d.flow_wn_layers {
            halo *= d.flow_dilation_rate.max(1);
        }
        // flow.cu: gate items (FA_TC = 8 columns + halo, 64 rows) or 16-column tiles stored
        // with a row stride of 20 (FB_LD).
        let flow_smem = (h * (8 + 2 * halo) + 2 * 32 * 8).max(h * 20) * fl;
        let conv_smem = d.inter_channels * (32 + d.dec_pre_kernel_size - 1) * fl;
        let up_smem = geoms
            .iter()
            .map(|g| g.cin * ((32 + g.k - 1) / g.rate + 2))
            .max()
            .unwrap_or(0)
            * fl;
        let rb_smem = geoms.iter().map(|g| g.rb_smem).max().unwrap_or(0);
        let last = geoms.last().map_or(1, |g| g.cout);
        let post_smem = last * (256 + d.dec_post_kernel_size - 1) * fl;
        let pk_smem = [
            ATTN_SMEM, ffn_smem, sdp_smem, flow_smem, conv_smem, up_smem, rb_smem, post_smem,
        ]
        .into_iter()
        .max()
        .unwrap_or(0) as u32;
        let k = Kernels {
            embed: Kernel::new(&gpu, &enc, "enc_embed", 0)?,
            attn: Kernel::new(&gpu, &enc, "enc_attn", ATTN_SMEM as u32)?,
            ffn: Kernel::new(&gpu, &enc, "enc_ffn", ffn_smem as u32)?,
            sdp: Kernel::new(&gpu, &dur, "sdp", sdp_smem as u32)?,
            flow: Kernel::new(&gpu, &flow, "flow_coop", flow_smem as u32)?,
            conv: Kernel::new(&gpu, &dec, "dec_conv", conv_smem as u32)?,
            up: Kernel::new(&gpu, &dec, "dec_up", up_smem as u32)?,
            rb: Kernel::new(&gpu, &dec, "dec_rb", rb_smem as u32)?,
            post: Kernel::new(&gpu, &dec, "dec_post", post_smem as u32)?,
            probe: Kernel::new(&gpu, &dec, "conv_probe", PROBE_SMEM as u32)?,
            flow_probe: Kernel::new(&gpu, &flow, "flow_conv_probe", PROBE_SMEM as u32)?,
        };
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
                compile_ms,
                cached_modules: cached,
                upload_ms,
                weight_bytes: w.bytes,
            },
            gpu,
            dims: dims.clone(),
            f16,
            k,
            pk: None,
            pk_smem,
            w,
            geoms,
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
            graphs: HashMap::new(),
            graphs_enabled: std::env::var("HARK_CUDA_GRAPHS").map_or(true, |v| v != "0"),
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

    fn ensure_front(&mut self, t: usize) -> Result<(), GpuError> {
        if t <= self.front.cap {
            return Ok(());
        }
        self.front = Front::alloc(&self.gpu, &self.dims, t.next_power_of_two().max(64))?;
        self.graphs.clear();
        Ok(())
    }

    fn ensure_window(&mut self, n: usize) -> Result<(), GpuError> {
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
        let max_t = (ATTN_SMEM / 4 - 3 * d.hidden_channels - 8) / d.n_heads;
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
        let d = self.dims.clone();
        let t = ids.len();
        self.ensure_front(t)?;
        self.mark("start")?;
        let ids32: Vec<i32> = ids.iter().map(|&i| i as i32).collect();
        let f = &self.front;
        let g = &self.gpu;
        g.htod_async(p(&f.ids), &ids32)?;
        // The copy reads `ids32` later: wait for it before the vector goes away.
        let h = d.hidden_channels;
        g.launch(
            &self.k.embed,
            self.k.embed.grid((h * t).div_ceil(256), 1),
            &[
                Arg::P(p(&f.ids)),
                Arg::P(self.w.emb),
                Arg::P(p(&f.x)),
                Arg::I(t as i32),
            ],
        )?;
        let ti = t as i32;
        let items_qkv = t.div_ceil(32) * (3 * h / 64);
        let items_ffn = t.div_ceil(16) * (d.filter_channels / 64);
        for (l, e) in self.w.enc.iter().enumerate() {
            g.launch(
                &self.k.attn,
                self.k.attn.coop(items_qkv.max(t)),
                &[
                    Arg::P(p(&f.x)),
                    Arg::I(ti),
                    Arg::P(e.wqkv),
                    Arg::P(e.bqkv),
                    Arg::P(e.ek),
                    Arg::P(e.ev),
                    Arg::P(e.wo),
                    Arg::P(e.bo),
                    Arg::P(e.g1),
                    Arg::P(e.b1n),
                    Arg::P(p(&f.qkv)),
                    Arg::P(self.bar.ptr),
                ],
            )?;
            let last = l + 1 == self.w.enc.len();
            g.launch(
                &self.k.ffn,
                self.k.ffn.coop(items_ffn.max(t.div_ceil(8) * (h / 64))),
                &[
                    Arg::P(p(&f.x)),
                    Arg::I(ti),
                    Arg::P(e.w1),
                    Arg::P(e.b1),
                    Arg::P(e.w2),
                    Arg::P(e.b2),
                    Arg::P(e.g2),
                    Arg::P(e.b2n),
                    Arg::P(p(&f.hbuf)),
                    Arg::P(p(&f.qkv)),
                    Arg::P(self.bar.ptr),
                    Arg::P(if last { self.w.proj_w } else { 0 }),
                    Arg::P(if last { self.w.proj_b } else { 0 }),
                    Arg::P(p(&f.m_p)),
                    Arg::P(p(&f.logs_p)),
                ],
            )?;
        }
        self.mark("encoder")?;
        Ok(())
    }

    /// Duration predictor on the encoder output; `noise` is [2, T] already times noise_w.
    /// Leaves durations and frame offsets on the device and returns the durations.
    pub fn run_sdp(&mut self, noise: &[f32], length_scale: f32) -> Result<Vec<usize>, GpuError> {
        self.launch_sdp(noise, length_scale)?;
        self.finish_sdp(noise.len() / 2)
    }

    /// Queues the duration predictor and the copy of its durations to pinned memory; the
    /// host can work until [`Self::sdp_ready`] and then take them with [`Self::finish_sdp`].
    pub fn launch_sdp(&mut self, noise: &[f32], length_scale: f32) -> Result<(), GpuError> {
        let t = noise.len() / 2;
        let f = &self.front;
        let g = &self.gpu;
        g.htod_async(p(&f.z2), noise)?;
        let items = t.div_ceil(32) * self.dims.dp_filter_channels.div_ceil(64);
        g.launch(
            &self.k.sdp,
            self.k.sdp.coop(items.max(t.div_ceil(8))),
            &[
                Arg::P(p(&f.x)),
                Arg::I(t as i32),
                Arg::P(self.w.sdp_table),
                Arg::P(p(&f.z2)),
                Arg::P(p(&f.a)),
                Arg::P(p(&f.b)),
                Arg::P(p(&f.g)),
                Arg::P(p(&f.logw)),
                Arg::P(p(&f.dur)),
                Arg::P(p(&f.off)),
                Arg::F(length_scale),
                Arg::P(self.bar.ptr),
            ],
        )?;
        self.mark("duration predictor")?;
        if self.dur_host.len() < t {
            self.dur_host = self.gpu.alloc_pinned(t.next_power_of_two())?;
        }
        super::device::count(&super::device::COPIES);
        // SAFETY: `dur` holds t ints; the pinned buffer has room and is read only after
        // `sdp_done` completes.
        unsafe {
            cudarc::driver::result::memcpy_dtoh_async(
                &mut self.dur_host.slice_mut()[..t],
                p(&self.front.dur),
                self.gpu.stream.cu_stream(),
            )?;
        }
        self.sdp_done.record(&self.gpu.stream)?;
        Ok(())
    }

    pub fn sdp_ready(&self) -> bool {
        self.sdp_done.is_complete()
    }

    pub fn finish_sdp(&mut self, t: usize) -> Result<Vec<usize>, GpuError> {
        self.sdp_done.synchronize()?;
        Ok(self.dur_host.slice()[..t]
            .iter()
            .map(|v| (v.to_bits() as i32).max(0) as usize)
            .collect())
    }

    /// Host copies of front-half results (for tests and diagnostics).
    pub fn read_front(&self, t: usize) -> Result<FrontHost, GpuError> {
        let d = &self.dims;
        let f = &self.front;
        let g = &self.gpu;
        Ok(FrontHost {
            x: g.dtoh_sync(p(&f.x), d.hidden_channels * t)?,
            m_p: g.dtoh_sync(p(&f.m_p), d.inter_channels * t)?,
            logs_p: g.dtoh_sync(p(&f.logs_p), d.inter_channels * t)?,
            logw: g.dtoh_sync(p(&f.logw), t)?,
            off: g.dtoh_sync(p(&f.off), t + 1)?,
        })
    }

    /// Uploads the encoder output x [H, T] directly (kernel tests of the SDP alone).
    pub fn set_encoder_output(&mut self, x: &[f32], t: usize) -> Result<(), GpuError> {
        self.ensure_front(t)?;
        self.gpu.htod_async(p(&self.front.x), x)?;
        self.gpu.sync()
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

    /// Uploads m_p / logs_p [C, T] and frame offsets directly (kernel tests of the flow).
    pub fn set_prior(
        &mut self,
        m_p: &[f32],
        logs_p: &[f32],
        durations: &[usize],
    ) -> Result<(), GpuError> {
        let t = durations.len();
        self.ensure_front(t)?;
        let mut off = Vec::with_capacity(t + 1);
        let mut acc = 0i32;
        for &d in durations {
            off.push(acc);
            acc += d as i32;
        }
        off.push(acc);
        let f = &self.front;
        self.gpu.htod_async(p(&f.m_p), m_p)?;
        self.gpu.htod_async(p(&f.logs_p), logs_p)?;
        self.gpu.htod_async(p(&f.off), &off)?;
        self.gpu.sync()
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
        if !self.graphs.contains_key(&key) {
            match self.capture(lo, n, a, count, slot) {
                Ok(g) => {
                    self.graphs.insert(key, g);
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
        self.graphs[&key].launch()?;
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
    fn launch_flow(&mut self, _lo: usize, n: usize, from_prior: bool) -> Result<(), GpuError> {
        let wn = &self.win;
        let f = &self.front;
        let groups = self.dims.hidden_channels / 32;
        let items = (n.div_ceil(8) * groups).max(n.div_ceil(16) * 6);
        self.gpu.launch(
            &self.k.flow,
            self.k.flow.coop(items),
            &[
                Arg::P(p(&wn.z)),
                Arg::P(p(&wn.h[0])),
                Arg::P(p(&wn.h[1])),
                Arg::P(p(&wn.acts)),
                Arg::P(p(&wn.skip)),
                Arg::I(n as i32),
                Arg::I(from_prior as i32),
                Arg::P(self.w.flow_table),
                Arg::P(p(&f.m_p)),
                Arg::P(p(&f.logs_p)),
                Arg::P(p(&f.off)),
                Arg::P(p(&self.eps)),
                Arg::P(self.prm.ptr),
                Arg::P(self.bar.ptr),
            ],
        )?;
        Ok(())
    }

    /// Decoder over the window's z [C, n]; writes samples [a, a + count) to `out`.
    fn launch_decoder(
        &mut self,
        n: usize,
        a: usize,
        count: usize,
        slot: usize,
    ) -> Result<(), GpuError> {
        let d = &self.dims;
        let wn = &self.win;
        let g = &self.gpu;
        let up0 = d.upsample_initial_channel;
        g.launch(
            &self.k.conv,
            self.k.conv.grid(n.div_ceil(32), up0.div_ceil(64)),
            &[
                Arg::P(p(&wn.z)),
                Arg::I(n as i32),
                Arg::I(d.inter_channels as i32),
                Arg::P(self.w.pre_w),
                Arg::P(self.w.pre_b),
                Arg::I(d.dec_pre_kernel_size as i32),
                Arg::P(p(&wn.pre)),
                Arg::I(up0 as i32),
            ],
        )?;
        let mut src = p(&wn.pre);
        let mut mean = 0;
        let mut len = n;
        for (s, (geo, st)) in self.geoms.iter().zip(&self.w.stages).enumerate() {
            let lout = len * geo.rate;
            g.launch(
                &self.k.up,
                self.k.up.grid(lout.div_ceil(32), geo.cout.div_ceil(32)),
                &[
                    Arg::P(src),
                    Arg::I(mean),
                    Arg::I(len as i32),
                    Arg::I(geo.cin as i32),
                    Arg::P(st.up_w),
                    Arg::P(st.up_b),
                    Arg::I(geo.rate as i32),
                    Arg::I(geo.k as i32),
                    Arg::I(geo.pad as i32),
                    Arg::P(wn.up[s].ptr),
                    Arg::I(geo.cout as i32),
                ],
            )?;
            // Narrower tiles (more halo recompute) until the stage fills half the GPU.
            let nrb = d.resblock_kernel_sizes.len();
            let mut tn = geo.tn;
            while tn > 16 && lout.div_ceil(tn) * nrb < (self.gpu.sms as usize) / 2 {
                tn /= 2;
            }
            let mut dims = self.k.rb.grid(lout.div_ceil(tn), nrb);
            dims.smem = geo.rb_smem as u32;
            g.launch(
                &self.k.rb,
                dims,
                &[
                    Arg::P(wn.up[s].ptr),
                    Arg::I(lout as i32),
                    Arg::I(geo.cout as i32),
                    Arg::P(st.rb_w_table),
                    Arg::P(st.rb_b_table),
                    Arg::I(tn as i32),
                    Arg::I(geo.hmax as i32),
                    Arg::P(wn.rbs[s].ptr),
                ],
            )?;
            src = wn.rbs[s].ptr;
            mean = 1;
            len = lout;
        }
        let last = self.geoms.last().expect("at least one stage");
        g.launch(
            &self.k.post,
            self.k.post.grid(count.div_ceil(256), 1),
            &[
                Arg::P(src),
                Arg::I(last.cout as i32),
                Arg::I(len as i32),
                Arg::P(self.w.post_w),
                Arg::P(self.w.post_b),
                Arg::I(d.dec_post_kernel_size as i32),
                Arg::I(a as i32),
                Arg::I(count as i32),
                Arg::P(p(&wn.out[slot])),
            ],
        )?;
        Ok(())
    }

    /// Compiles (or loads from the disk cache) the persistent engine's module: every stage
    /// file and persistent.cu in one compilation unit, without the graph path's kernels.
    pub fn persistent_kernels(&mut self) -> Result<&PersistentKernels, GpuError> {
        if self.pk.is_none() {
            let t0 = Instant::now();
            let mut defs = compile::defines(&self.dims, self.f16);
            defs.extend(super::persist::layout::defines(&self.dims));
            defs.push(("HARK_PERSISTENT_MODULE".into(), "1".into()));
            let (bin, cached) = compile::cubin(
                "persistent",
                &compile::persistent_file(),
                &defs,
                self.gpu.cc,
            )?;
            let m = self.gpu.load(bin)?;
            let g = &self.gpu;
            self.pk = Some(PersistentKernels {
                persistent: Kernel::new(g, &m, "persistent", self.pk_smem)?,
                barrier_probe: Kernel::new(g, &m, "barrier_probe", self.pk_smem)?,
                compile_ms: t0.elapsed().as_secs_f64() * 1e3,
                cached,
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

    /// Device address of chunk output buffer `slot` (0 or 1).
    pub fn out_ptr(&self, slot: usize) -> u64 {
        p(&self.win.out[slot])
    }

    /// Test entry: reverse flow of z_p [C, n] given on the host → z [C, n].
    pub fn flow_host(&mut self, z_p: &[f32], n: usize) -> Result<Vec<f32>, GpuError> {
        self.ensure_window(n)?;
        self.gpu.htod_async(p(&self.win.z), z_p)?;
        self.launch_flow(0, n, false)?;
        self.gpu
            .dtoh_sync(p(&self.win.z), self.dims.inter_channels * n)
    }

    /// Test entry for the convolution core (`conv_probe`, or `flow_conv_probe` with `flow`):
    /// y [rows, l] = b + w ⊛ act(x) with x [cin, l], w [rows, cin, k] (stored f16 in the f16
    /// mode), dilation `dil`, "same" zero padding, act = LeakyReLU(slope) unless slope is 1,
    /// `tc` output columns per block.
    #[allow(clippy::too_many_arguments)]
    pub fn conv_host(
        &mut self,
        flow: bool,
        x: &[f32],
        cin: usize,
        w: &[f32],
        b: &[f32],
        k: usize,
        dil: usize,
        slope: f32,
        tc: usize,
    ) -> Result<Vec<f32>, GpuError> {
        let l = x.len() / cin;
        let rows = b.len();
        let smem = cin * (tc + dil * (k - 1)) * 4;
        if w.len() != rows * cin * k || x.len() != cin * l || smem > PROBE_SMEM || tc == 0 {
            return Err(GpuError::Driver("conv_host: bad shapes".into()));
        }
        let g = &self.gpu;
        let wd = if self.f16 {
            let h: Vec<u16> = w
                .iter()
                .map(|&v| half::f16::from_f32(v).to_bits())
                .collect();
            g.upload(&h)?
        } else {
            g.upload(w)?
        };
        let (xd, bd, yd) = (g.upload(x)?, g.upload(b)?, g.alloc(rows * l * 4)?);
        let probe = if flow {
            &self.k.flow_probe
        } else {
            &self.k.probe
        };
        let dims = probe.grid(l.div_ceil(tc), 1).with_smem(smem as u32);
        g.launch(
            probe,
            dims,
            &[
                Arg::P(xd.ptr),
                Arg::I(l as i32),
                Arg::I(cin as i32),
                Arg::P(wd.ptr),
                Arg::P(bd.ptr),
                Arg::I(k as i32),
                Arg::I(dil as i32),
                Arg::F(slope),
                Arg::P(yd.ptr),
                Arg::I(rows as i32),
                Arg::I(tc as i32),
            ],
        )?;
        g.dtoh_sync(yd.ptr, rows * l)
    }

    /// Test entry: decoder on z [C, n] given on the host → n · hop samples.
    pub fn decode_host(&mut self, z: &[f32], n: usize) -> Result<Vec<f32>, GpuError> {
        self.ensure_window(n)?;
        self.gpu.htod_async(p(&self.win.z), z)?;
        let count = n * self.dims.samples_per_frame();
        self.launch_decoder(n, 0, count, 0)?;
        self.gpu.dtoh_sync(p(&self.win.out[0]), count)
    }
}

/// Front-half results copied to the host.
pub struct FrontHost {
    pub x: Vec<f32>,
    pub m_p: Vec<f32>,
    pub logs_p: Vec<f32>,
    pub logw: Vec<f32>,
    pub off: Vec<i32>,
}

impl Dims {
    pub fn with_smem(mut self, smem: u32) -> Self {
        self.smem = smem;
        self
    }
}
