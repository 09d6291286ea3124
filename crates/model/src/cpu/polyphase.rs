//! Transposed 1-D convolution as `stride` ordinary convolutions (one per output phase) on the
//! direct kernel: output column `q·s + r` only sees the taps `≡ r + pad (mod s)`.

use super::direct::{ConvDims, conv_valid_acc};
use super::tiles::{SharedOut, conv_tile_columns, for_each_tile, padded_block};
use hark_voice::tensor::Tensor;

/// Phase r's taps, reversed, read input columns `q + base`, `q + base + 1`, …: a stride-1
/// "valid" convolution with weights packed as `[Cout, Cin, taps]`.
struct Phase {
    base: isize,
    taps: usize,
    packed: Vec<f32>,
}

/// Transposed-convolution weights `w [Cin, Cout, K]` repacked per phase.
pub struct Polyphase {
    cin: usize,
    cout: usize,
    k: usize,
    stride: usize,
    pad: usize,
    phases: Vec<Phase>,
}

/// Per-tile scratch: the padded input block, the phase outputs and one interleaved row.
#[derive(Default)]
pub struct PolyScratch {
    input: Vec<f32>,
    phases: Vec<f32>,
    row: Vec<f32>,
}

impl Polyphase {
    pub fn new(w: &Tensor, stride: usize, pad: usize) -> Self {
        let (cin, cout, k) = (w.dim(0), w.dim(1), w.dim(2));
        assert!(stride > 0, "conv_transpose1d: stride 0");
        let phases = (0..stride)
            .map(|r| {
                // Tap `tap` of phase r reads input column q + (r + pad − tap)/s.
                let taps: Vec<usize> = ((r + pad) % stride..k).step_by(stride).rev().collect();
                let base = taps.first().map_or(0, |&tap| {
                    (r as isize + pad as isize - tap as isize) / stride as isize
                });
                let nt = taps.len();
                let mut packed = vec![0.0; cout * cin * nt];
                for co in 0..cout {
                    for ci in 0..cin {
                        for (j, &tap) in taps.iter().enumerate() {
                            packed[(co * cin + ci) * nt + j] = w.data[(ci * cout + co) * k + tap];
                        }
                    }
                }
                Phase {
                    base,
                    taps: nt,
                    packed,
                }
            })
            .collect();
        Self {
            cin,
            cout,
            k,
            stride,
            pad,
            phases,
        }
    }

    pub fn stride(&self) -> usize {
        self.stride
    }

    /// Output length for `t` input columns.
    pub fn out_len(&self, t: usize) -> usize {
        assert!(
            t > 0 && (t - 1) * self.stride + self.k > 2 * self.pad,
            "conv_transpose1d: bad shape"
        );
        (t - 1) * self.stride + self.k - 2 * self.pad
    }

    /// The whole output `[Cout, out_len(T)]` of `x [Cin, T]`, with the input through
    /// LeakyReLU(`slope`) when given; tiles run in parallel.
    pub fn run(&self, x: &Tensor, bias: Option<&Tensor>, slope: Option<f32>) -> Tensor {
        assert_eq!(x.dim(0), self.cin, "conv_transpose1d: channel mismatch");
        let t_out = self.out_len(x.dim(1));
        let mut out = Tensor::zeros(vec![self.cout, t_out]);
        let s = self.stride;
        let q_total = t_out.div_ceil(s);
        let macs = self.cin * self.cout * self.k * x.dim(1);
        // Phase blocks (Cout × tile × stride floats) stay in L2.
        let tile = conv_tile_columns(self.cout * s, 0, q_total, macs);
        let dst = SharedOut(out.data.as_mut_ptr());
        for_each_tile(q_total, tile, macs, |q0, q1, scratch: &mut PolyScratch| {
            let cols = (q1 * s).min(t_out) - q0 * s;
            self.tile(x, bias, slope, q0 as isize, q1 - q0, scratch, |co, row| {
                // SAFETY: columns [q0·s, q0·s + cols) of row `co` belong to this tile only.
                unsafe { dst.cols(co, t_out, q0 * s, cols) }.copy_from_slice(&row[..cols]);
            });
        });
        out
    }

    /// Output columns `[q0·s, (q0 + nq)·s)` (q0 may be negative: input outside `[0, T)` reads
    /// as zero), handed out a row at a time as `emit(co, row)`.
    #[allow(clippy::too_many_arguments)]
    pub fn tile(
        &self,
        x: &Tensor,
        bias: Option<&Tensor>,
        slope: Option<f32>,
        q0: isize,
        nq: usize,
        scratch: &mut PolyScratch,
        mut emit: impl FnMut(usize, &[f32]),
    ) {
        let (cout, s, n) = (self.cout, self.stride, nq);
        let pbuf = &mut scratch.phases;
        pbuf.resize(s * cout * n, 0.0);
        // One padded, activated input block that every phase reads at its own offset (they
        // differ by a column or two), rather than a copy per phase.
        let live = self.phases.iter().filter(|ph| ph.taps > 0);
        let first = live.clone().map(|ph| ph.base).min().unwrap_or(0);
        let end = live
            .map(|ph| ph.base + ph.taps as isize)
            .max()
            .unwrap_or(first);
        let width = (end - first) as usize + n - 1;
        padded_block(
            &x.data,
            x.dim(1),
            q0 + first,
            width,
            slope,
            &mut scratch.input,
        );
        for (r, ph) in self.phases.iter().enumerate() {
            let block = &mut pbuf[r * cout * n..(r + 1) * cout * n];
            for (co, row) in block.chunks_exact_mut(n).enumerate() {
                row.fill(bias.map_or(0.0, |b| b.data[co]));
            }
            if ph.taps == 0 {
                continue;
            }
            let d = ConvDims {
                cin: self.cin,
                cout,
                k: ph.taps,
                dil: 1,
                n,
            };
            let off = (ph.base - first) as usize;
            conv_valid_acc(&scratch.input[off..], width, &ph.packed, d, block, n);
        }
        let row = &mut scratch.row;
        row.resize(n * s, 0.0);
        for co in 0..cout {
            for (r, ph_row) in pbuf.chunks_exact(cout * n).enumerate() {
                let src = &ph_row[co * n..(co + 1) * n];
                for (q, &v) in src.iter().enumerate() {
                    row[q * s + r] = v;
                }
            }
            emit(co, row);
        }
    }
}
