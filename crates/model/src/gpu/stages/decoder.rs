//! The HiFi-GAN decoder (`kernels/decoder.cu`): `dec_conv` (conv_pre), then per upsampling
//! stage `dec_up` (LeakyReLU + transposed conv) and `dec_rb` (all resblocks of the stage,
//! averaged by the next stage's input), and `dec_post` (LeakyReLU, conv_post, tanh) writing
//! the window's samples.

use super::Launch;
use crate::gpu::GpuError;
use crate::gpu::device::{Arg, DBuf, Gpu, Kernel};
use crate::gpu::model::p;
use crate::gpu::modules::Modules;
use crate::gpu::registry::Entry;
use hark_voice::ModelDims;

/// Largest dynamic shared memory a resblock block may use.
const RB_SMEM_MAX: usize = 200 * 1024;

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

pub fn stage_geoms(d: &ModelDims) -> Vec<StageGeom> {
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

pub(crate) fn conv_smem(d: &ModelDims) -> usize {
    d.inter_channels * (32 + d.dec_pre_kernel_size - 1) * 4
}

pub(crate) fn up_smem(d: &ModelDims) -> usize {
    stage_geoms(d)
        .iter()
        .map(|g| g.cin * ((32 + g.k - 1) / g.rate + 2))
        .max()
        .unwrap_or(0)
        * 4
}

pub(crate) fn rb_smem(d: &ModelDims) -> usize {
    stage_geoms(d).iter().map(|g| g.rb_smem).max().unwrap_or(0)
}

pub(crate) fn post_smem(d: &ModelDims) -> usize {
    let last = stage_geoms(d).last().map_or(1, |g| g.cout);
    last * (256 + d.dec_post_kernel_size - 1) * 4
}

/// The decoder's buffers for windows of up to `cap` frames: conv_pre's output, each stage's
/// upsampled signal and resblock outputs, and two output buffers (chunk N is copied out of one
/// while chunk N+1 fills the other).
#[derive(Default)]
pub(crate) struct Buffers {
    pub pre: Option<DBuf>,
    pub up: Vec<DBuf>,
    pub rbs: Vec<DBuf>,
    pub out: [Option<DBuf>; 2],
}

impl Buffers {
    pub fn alloc(
        g: &Gpu,
        d: &ModelDims,
        geoms: &[StageGeom],
        cap: usize,
    ) -> Result<Self, GpuError> {
        let f4 = |n: usize| g.alloc(n * 4);
        let mut up = Vec::new();
        let mut rbs = Vec::new();
        let mut len = cap;
        for s in geoms {
            len *= s.rate;
            up.push(f4(s.cout * len)?);
            rbs.push(f4(d.resblock_kernel_sizes.len() * s.cout * len)?);
        }
        let samples = cap * d.samples_per_frame();
        Ok(Self {
            pre: Some(f4(d.upsample_initial_channel * cap)?),
            up,
            rbs,
            out: [Some(f4(samples)?), Some(f4(samples)?)],
        })
    }
}

pub(crate) struct Decoder {
    conv: Kernel,
    up: Kernel,
    rb: Kernel,
    post: Kernel,
}

impl Decoder {
    pub fn load(g: &Gpu, m: &mut Modules) -> Result<Self, GpuError> {
        Ok(Self {
            conv: m.kernel(g, Entry::DecConv)?,
            up: m.kernel(g, Entry::DecUp)?,
            rb: m.kernel(g, Entry::DecRb)?,
            post: m.kernel(g, Entry::DecPost)?,
        })
    }

    /// Queues the decoder over the window's z [C, n] at `z`; writes samples [a, a + count)
    /// to `b.out[slot]`.
    #[allow(clippy::too_many_arguments)]
    pub fn launch(
        &self,
        l: &Launch,
        geoms: &[StageGeom],
        b: &Buffers,
        z: u64,
        n: usize,
        a: usize,
        count: usize,
        slot: usize,
    ) -> Result<(), GpuError> {
        let (g, d, w) = (l.gpu, l.dims, l.w);
        let up0 = d.upsample_initial_channel;
        g.launch(
            &self.conv,
            self.conv.grid(n.div_ceil(32), up0.div_ceil(64)),
            &[
                Arg::P(z),
                Arg::I(n as i32),
                Arg::I(d.inter_channels as i32),
                Arg::P(w.pre_w),
                Arg::P(w.pre_b),
                Arg::I(d.dec_pre_kernel_size as i32),
                Arg::P(p(&b.pre)),
                Arg::I(up0 as i32),
            ],
        )?;
        let mut src = p(&b.pre);
        let mut mean = 0;
        let mut len = n;
        for (s, (geo, st)) in geoms.iter().zip(&w.stages).enumerate() {
            let lout = len * geo.rate;
            g.launch(
                &self.up,
                self.up.grid(lout.div_ceil(32), geo.cout.div_ceil(32)),
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
                    Arg::P(b.up[s].ptr),
                    Arg::I(geo.cout as i32),
                ],
            )?;
            // Narrower tiles (more halo recompute) until the stage fills half the GPU.
            let nrb = d.resblock_kernel_sizes.len();
            let mut tn = geo.tn;
            while tn > 16 && lout.div_ceil(tn) * nrb < (g.sms as usize) / 2 {
                tn /= 2;
            }
            let dims = self
                .rb
                .grid(lout.div_ceil(tn), nrb)
                .with_smem(geo.rb_smem as u32);
            g.launch(
                &self.rb,
                dims,
                &[
                    Arg::P(b.up[s].ptr),
                    Arg::I(lout as i32),
                    Arg::I(geo.cout as i32),
                    Arg::P(st.rb_w_table),
                    Arg::P(st.rb_b_table),
                    Arg::I(tn as i32),
                    Arg::I(geo.hmax as i32),
                    Arg::P(b.rbs[s].ptr),
                ],
            )?;
            src = b.rbs[s].ptr;
            mean = 1;
            len = lout;
        }
        let last = geoms.last().expect("at least one stage");
        g.launch(
            &self.post,
            self.post.grid(count.div_ceil(256), 1),
            &[
                Arg::P(src),
                Arg::I(last.cout as i32),
                Arg::I(len as i32),
                Arg::P(w.post_w),
                Arg::P(w.post_b),
                Arg::I(d.dec_post_kernel_size as i32),
                Arg::I(a as i32),
                Arg::I(count as i32),
                Arg::P(p(&b.out[slot])),
            ],
        )
    }
}
