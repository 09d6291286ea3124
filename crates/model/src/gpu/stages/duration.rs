//! The stochastic duration predictor (`kernels/duration.cu`): one cooperative `sdp` launch
//! from the encoder's x and the noise z [2, T] to logw, the durations and the frame offsets.

use super::{Launch, words};
use crate::gpu::GpuError;
use crate::gpu::device::{Arg, DBuf, Gpu, Kernel};
use crate::gpu::model::p;
use crate::gpu::modules::Modules;
use crate::gpu::registry::Entry;
use hark_voice::ModelDims;

pub(crate) fn sdp_smem(d: &ModelDims) -> usize {
    let npar = 3 * d.dp_num_bins - 1;
    (d.hidden_channels * 32)
        .max(2 * d.dp_filter_channels * 8 + npar * 8)
        .max(256)
        * 4
}

/// The predictor's buffers for up to `cap` tokens: its scratch, the noise in, logw, the
/// durations and the frame offsets (`cap + 1`) out.
#[derive(Default)]
pub(crate) struct Buffers {
    pub a: Option<DBuf>,
    pub b: Option<DBuf>,
    pub g: Option<DBuf>,
    pub z2: Option<DBuf>,
    pub logw: Option<DBuf>,
    pub dur: Option<DBuf>,
    pub off: Option<DBuf>,
}

impl Buffers {
    pub fn alloc(g: &Gpu, d: &ModelDims, cap: usize) -> Result<Self, GpuError> {
        let dpf = d.dp_filter_channels;
        Ok(Self {
            a: words(g, dpf * cap)?,
            b: words(g, dpf * cap)?,
            g: words(g, dpf * cap)?,
            z2: words(g, 2 * cap)?,
            logw: words(g, cap)?,
            dur: words(g, cap)?,
            off: words(g, cap + 1)?,
        })
    }
}

pub(crate) struct Duration {
    sdp: Kernel,
}

impl Duration {
    pub fn load(g: &Gpu, m: &mut Modules) -> Result<Self, GpuError> {
        Ok(Self {
            sdp: m.kernel(g, Entry::Sdp)?,
        })
    }

    /// Queues the predictor over the encoder output `x` [H, t] and the noise already in
    /// `b.z2`.
    pub fn launch(
        &self,
        l: &Launch,
        x: u64,
        b: &Buffers,
        t: usize,
        length_scale: f32,
    ) -> Result<(), GpuError> {
        let (g, d, w, bar) = (l.gpu, l.dims, l.w, l.bar);
        let items = t.div_ceil(32) * d.dp_filter_channels.div_ceil(64);
        g.launch(
            &self.sdp,
            self.sdp.coop(items.max(t.div_ceil(8))),
            &[
                Arg::P(x),
                Arg::I(t as i32),
                Arg::P(w.sdp_table),
                Arg::P(p(&b.z2)),
                Arg::P(p(&b.a)),
                Arg::P(p(&b.b)),
                Arg::P(p(&b.g)),
                Arg::P(p(&b.logw)),
                Arg::P(p(&b.dur)),
                Arg::P(p(&b.off)),
                Arg::F(length_scale),
                Arg::P(bar),
            ],
        )
    }
}
