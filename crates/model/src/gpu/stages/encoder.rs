//! The text encoder (`kernels/encoder.cu`): `enc_embed`, then per layer `enc_attn` (QKV,
//! relative-position attention, output projection, residual and LayerNorm, one cooperative
//! launch) and `enc_ffn` (the feed-forward block; the last layer also projects to m_p and
//! logs_p).

use super::{Launch, words};
use crate::gpu::GpuError;
use crate::gpu::device::{Arg, DBuf, Gpu, Kernel};
use crate::gpu::model::p;
use crate::gpu::modules::Modules;
use crate::gpu::registry::Entry;
use hark_voice::ModelDims;

/// Dynamic shared memory of the attention kernel; bounds the tokens per utterance.
pub(crate) const ATTN_SMEM: usize = 96 * 1024;

/// Bytes of dynamic shared memory `enc_attn` uses (encoder.cu): the most of its phases. Phase 2
/// holds the query tile, its relative-position scores, the chunk's scores, three per-query
/// rows, the chunk's V (padded) and both relative-position tables (`ek`, `ev`).
#[cfg(test)]
fn attn_smem_used(d: &ModelDims) -> usize {
    const TQ: usize = 8; // ATT_TQ
    const JC: usize = 128; // ATT_JC
    let (h, kch) = (d.hidden_channels, d.hidden_channels / d.n_heads);
    let nrel = 2 * d.window_size + 1;
    let phase2 = kch * TQ + TQ * nrel + TQ * JC + 3 * TQ + kch * (JC + 1) + 2 * nrel * kch;
    let phase13 = h * 16; // QKV_TC, OUT_TC columns of x
    phase2.max(phase13) * 4
}

/// The FFN's second conv runs as this many k slices (`FFN_S` in encoder.cu) of 64 input
/// channels; their partial sums fill the `qkv` scratch ([FFN_SLICES * H, T]). Its items were a
/// chain of 12 weight rounds, one per block, at 3 slices; at 12 they are 4 rounds long
/// (H100, `enc_phases.py`: encoder 853 -> 664 us at 111 ids, 1114 -> 1016 us at 259; 6, 8, 16
/// and 24 slices were slower than 12).
const FFN_SLICES: usize = 12;
/// The FFN's first conv runs as this many k slices (`FFN_S1`); their partial sums go to
/// `hbuf` ([FFN_S1 * filter_channels, T]).
const FFN1_SLICES: usize = 3;

pub(crate) fn ffn_smem(d: &ModelDims) -> usize {
    let (h, f, kf) = (d.hidden_channels, d.filter_channels, d.ffn_kernel_size);
    (h / FFN1_SLICES * (16 + kf - 1))
        .max(f / FFN_SLICES * (16 + kf - 1))
        .max(h * 8)
        * 4
}

/// The most ids one utterance may have (the attention kernel's shared memory).
pub fn max_tokens(d: &ModelDims) -> usize {
    (ATTN_SMEM / 4 - 3 * d.hidden_channels - 8) / d.n_heads
}

/// The encoder's buffers for up to `cap` tokens: ids in, x [H, T], m_p and logs_p [C, T] out,
/// and its scratch.
#[derive(Default)]
pub(crate) struct Buffers {
    pub ids: Option<DBuf>,
    pub x: Option<DBuf>,
    pub qkv: Option<DBuf>,
    pub hbuf: Option<DBuf>,
    pub m_p: Option<DBuf>,
    pub logs_p: Option<DBuf>,
}

impl Buffers {
    pub fn alloc(g: &Gpu, d: &ModelDims, cap: usize) -> Result<Self, GpuError> {
        let (h, c) = (d.hidden_channels, d.inter_channels);
        Ok(Self {
            ids: words(g, cap)?,
            x: words(g, h * cap)?,
            qkv: words(g, FFN_SLICES.max(3) * h * cap)?,
            hbuf: words(g, FFN1_SLICES * d.filter_channels * cap)?,
            m_p: words(g, c * cap)?,
            logs_p: words(g, c * cap)?,
        })
    }
}

pub(crate) struct Encoder {
    embed: Kernel,
    attn: Kernel,
    ffn: Kernel,
}

impl Encoder {
    pub fn load(g: &Gpu, m: &mut Modules) -> Result<Self, GpuError> {
        Ok(Self {
            embed: m.kernel(g, Entry::EncEmbed)?,
            attn: m.kernel(g, Entry::EncAttn)?,
            ffn: m.kernel(g, Entry::EncFfn)?,
        })
    }

    /// Queues the encoder over the `t` ids already in `b.ids`.
    pub fn launch(&self, l: &Launch, b: &Buffers, t: usize) -> Result<(), GpuError> {
        let (g, d, w, bar) = (l.gpu, l.dims, l.w, l.bar);
        let h = d.hidden_channels;
        g.launch(
            &self.embed,
            self.embed.grid((h * t).div_ceil(256), 1),
            &[
                Arg::P(p(&b.ids)),
                Arg::P(w.emb),
                Arg::P(p(&b.x)),
                Arg::I(t as i32),
            ],
        )?;
        let ti = t as i32;
        // Work items per phase (encoder.cu): attention's QKV projection, (head, 8-query
        // tile), output projection, LayerNorm; the FFN's two convs (each split in k), LayerNorm.
        let attn_items = (t.div_ceil(16) * (3 * h / 64))
            .max(d.n_heads * t.div_ceil(8))
            .max(t.div_ceil(16) * (h / 64));
        let ffn_items = (t.div_ceil(16) * (d.filter_channels / 64) * FFN1_SLICES)
            .max(t.div_ceil(16) * (h / 64) * FFN_SLICES)
            .max(t.div_ceil(8));
        for (l, e) in w.enc.iter().enumerate() {
            g.launch(
                &self.attn,
                self.attn.coop(attn_items),
                &[
                    Arg::P(p(&b.x)),
                    Arg::I(ti),
                    Arg::P(e.wqkv),
                    Arg::P(e.bqkv),
                    Arg::P(e.ek),
                    Arg::P(e.ev),
                    Arg::P(e.wo),
                    Arg::P(e.bo),
                    Arg::P(e.g1),
                    Arg::P(e.b1n),
                    Arg::P(p(&b.qkv)),
                    Arg::P(bar),
                ],
            )?;
            let last = l + 1 == w.enc.len();
            g.launch(
                &self.ffn,
                self.ffn.coop(ffn_items),
                &[
                    Arg::P(p(&b.x)),
                    Arg::I(ti),
                    Arg::P(e.w1),
                    Arg::P(e.b1),
                    Arg::P(e.w2),
                    Arg::P(e.b2),
                    Arg::P(e.g2),
                    Arg::P(e.b2n),
                    Arg::P(p(&b.hbuf)),
                    Arg::P(p(&b.qkv)),
                    Arg::P(bar),
                    Arg::P(if last { w.proj_w } else { 0 }),
                    Arg::P(if last { w.proj_b } else { 0 }),
                    Arg::P(p(&b.m_p)),
                    Arg::P(p(&b.logs_p)),
                ],
            )?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_attention_kernel_fits_its_shared_memory() {
        let d = ModelDims::piper_medium();
        assert!(
            attn_smem_used(&d) <= ATTN_SMEM,
            "{} > {ATTN_SMEM}",
            attn_smem_used(&d)
        );
    }
}
