//! The reverse flow (`kernels/flow.cu`): all couplings in one cooperative `flow_coop` launch
//! over a window of frames. The first coupling can build z_p itself from the prior (m_p and
//! logs_p per token, the frame offsets and the noise), so expansion and z_p never exist as
//! tensors.

use super::{Launch, words};
use crate::gpu::GpuError;
use crate::gpu::device::{Arg, DBuf, Gpu, Kernel};
use crate::gpu::model::p;
use crate::gpu::modules::Modules;
use crate::gpu::registry::Entry;
use hark_voice::ModelDims;

/// Gate items (FA_TC = 8 columns + halo, 64 rows) or 16-column tiles stored with a row stride
/// of 20 (FB_LD).
pub(crate) fn flow_smem(d: &ModelDims) -> usize {
    let h = d.hidden_channels;
    let mut halo = (d.flow_kernel_size - 1) / 2;
    for _ in 1..d.flow_wn_layers {
        halo *= d.flow_dilation_rate.max(1);
    }
    (h * (8 + 2 * halo) + 2 * 32 * 8).max(h * 20) * 4
}

/// The flow's buffers for windows of up to `cap` frames: z [C, n] (z_p in, z out) and the
/// WaveNet's ping-pong, gated activations and skip sum.
#[derive(Default)]
pub(crate) struct Buffers {
    pub z: Option<DBuf>,
    pub h: [Option<DBuf>; 2],
    pub acts: Option<DBuf>,
    pub skip: Option<DBuf>,
}

impl Buffers {
    pub fn alloc(g: &Gpu, d: &ModelDims, cap: usize) -> Result<Self, GpuError> {
        let h = d.hidden_channels;
        Ok(Self {
            z: words(g, d.inter_channels * cap)?,
            h: [words(g, h * cap)?, words(g, h * cap)?],
            acts: words(g, h * cap)?,
            skip: words(g, h * cap)?,
        })
    }
}

/// Where the first coupling finds the prior (device addresses; 0 when absent).
pub(crate) struct Prior {
    pub m_p: u64,
    pub logs_p: u64,
    pub off: u64,
    pub eps: u64,
    /// The chunk's scalars: tokens, frames, first frame, noise-scale bits.
    pub prm: u64,
}

pub(crate) struct Flow {
    coop: Kernel,
}

impl Flow {
    pub fn load(g: &Gpu, m: &mut Modules) -> Result<Self, GpuError> {
        Ok(Self {
            coop: m.kernel(g, Entry::FlowCoop)?,
        })
    }

    /// Queues the flow over a window of `n` frames. With `from_prior` the first coupling
    /// builds z_p from `prior`; otherwise `b.z` already holds z_p (tests).
    pub fn launch(
        &self,
        l: &Launch,
        b: &Buffers,
        prior: &Prior,
        n: usize,
        from_prior: bool,
    ) -> Result<(), GpuError> {
        let (g, d, w, bar) = (l.gpu, l.dims, l.w, l.bar);
        let groups = d.hidden_channels / 32;
        let items = (n.div_ceil(8) * groups).max(n.div_ceil(16) * 6);
        g.launch(
            &self.coop,
            self.coop.coop(items),
            &[
                Arg::P(p(&b.z)),
                Arg::P(p(&b.h[0])),
                Arg::P(p(&b.h[1])),
                Arg::P(p(&b.acts)),
                Arg::P(p(&b.skip)),
                Arg::I(n as i32),
                Arg::I(from_prior as i32),
                Arg::P(w.flow_table),
                Arg::P(prior.m_p),
                Arg::P(prior.logs_p),
                Arg::P(prior.off),
                Arg::P(prior.eps),
                Arg::P(prior.prm),
                Arg::P(bar),
            ],
        )
    }
}
