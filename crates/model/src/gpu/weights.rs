//! The voice's weights on the device, uploaded once. The front half (encoder, duration
//! predictor) stays f32; flow and decoder weights are f16 unless the all-f32 mode is on.
//! Biases and norms are always f32 (tiny, and added after f32 accumulation).

use super::GpuError;
use super::device::{DBuf, Gpu};
use hark_voice::{ModelDims, Weights};

pub struct EncLayer {
    pub wqkv: u64,
    pub bqkv: u64,
    pub ek: u64,
    pub ev: u64,
    pub wo: u64,
    pub bo: u64,
    pub g1: u64,
    pub b1n: u64,
    pub w1: u64,
    pub b1: u64,
    pub w2: u64,
    pub b2: u64,
    pub g2: u64,
    pub b2n: u64,
}

pub struct WnLayer {
    pub in_w: u64,
    pub in_b: u64,
    pub rs_w: u64,
    pub rs_b: u64,
}

pub struct Coupling {
    pub pre_w: u64,
    pub pre_b: u64,
    pub layers: Vec<WnLayer>,
    pub post_w: u64,
    pub post_b: u64,
}

pub struct Stage {
    pub up_w: u64,
    pub up_b: u64,
    /// Pointer tables for dec_rb: entry j * n_dilations + m.
    pub rb_w_table: u64,
    pub rb_b_table: u64,
}

/// Gate channels per flow work item (flow.cu's GROUP).
pub const GATE_GROUP: usize = 32;

pub struct GpuWeights {
    pub emb: u64,
    pub enc: Vec<EncLayer>,
    pub proj_w: u64,
    pub proj_b: u64,
    /// duration.cu's pointer table.
    pub sdp_table: u64,
    pub flow: Vec<Coupling>,
    /// flow.cu's pointer table (per coupling: pre, post, then per layer in/res-skip).
    pub flow_table: u64,
    pub pre_w: u64,
    pub pre_b: u64,
    pub stages: Vec<Stage>,
    pub post_w: u64,
    /// 0 when conv_post has no bias (Piper's case).
    pub post_b: u64,
    pub bytes: usize,
    _bufs: Vec<DBuf>,
}

struct Up<'a> {
    gpu: &'a Gpu,
    w: &'a Weights,
    f16: bool,
    bufs: Vec<DBuf>,
    bytes: usize,
}

impl Up<'_> {
    fn keep(&mut self, b: DBuf) -> u64 {
        let p = b.ptr;
        self.bytes += b.bytes;
        self.bufs.push(b);
        p
    }
    fn f32s(&mut self, data: &[f32]) -> Result<u64, GpuError> {
        let b = self.gpu.upload(data)?;
        Ok(self.keep(b))
    }
    fn f32(&mut self, name: &str, shape: &[usize]) -> Result<u64, GpuError> {
        let t = self
            .w
            .get_shaped(name, shape)
            .map_err(|e| GpuError::Weights(e.to_string()))?;
        let data = t.data.clone();
        self.f32s(&data)
    }
    /// Flow/decoder matrix: f16 or f32 by mode.
    fn wt(&mut self, name: &str, shape: &[usize]) -> Result<u64, GpuError> {
        let t = self
            .w
            .get_shaped(name, shape)
            .map_err(|e| GpuError::Weights(e.to_string()))?;
        let data = t.data.clone();
        self.wt_data(&data)
    }
    fn wt_data(&mut self, data: &[f32]) -> Result<u64, GpuError> {
        if !self.f16 {
            return self.f32s(data);
        }
        let h: Vec<u16> = data
            .iter()
            .map(|&v| half::f16::from_f32(v).to_bits())
            .collect();
        let b = self.gpu.upload(&h)?;
        Ok(self.keep(b))
    }
    /// A WaveNet in_layer (weight [2H, H, K] or bias [2H]) with its rows regrouped so that
    /// each block of 2·GATE_GROUP rows holds GATE_GROUP tanh rows then their sigmoid partners
    /// (flow.cu computes one such group per work item).
    fn gate_grouped(&mut self, name: &str, shape: &[usize], weight: bool) -> Result<u64, GpuError> {
        let t = self
            .w
            .get_shaped(name, shape)
            .map_err(|e| GpuError::Weights(e.to_string()))?;
        let h = shape[0] / 2;
        let row = t.data.len() / shape[0];
        let mut out = Vec::with_capacity(t.data.len());
        for g in 0..h / GATE_GROUP {
            for half in 0..2 {
                let r0 = half * h + g * GATE_GROUP;
                out.extend_from_slice(&t.data[r0 * row..(r0 + GATE_GROUP) * row]);
            }
        }
        if weight {
            self.wt_data(&out)
        } else {
            self.f32s(&out)
        }
    }
    fn table(&mut self, ptrs: &[u64]) -> Result<u64, GpuError> {
        let b = self.gpu.upload(ptrs)?;
        Ok(self.keep(b))
    }
}

/// Names of the SDP weights in duration.cu's pointer-table order.
fn sdp_names(d: &ModelDims) -> Vec<(String, Vec<usize>)> {
    let (h, f, k) = (d.hidden_channels, d.dp_filter_channels, d.dp_kernel_size);
    let mut v = vec![
        ("dp.pre.weight".to_string(), vec![f, h, 1]),
        ("dp.pre.bias".to_string(), vec![f]),
    ];
    let dds = |v: &mut Vec<(String, Vec<usize>)>, p: &str| {
        for i in 0..d.dp_ddsconv_layers {
            v.push((format!("{p}.convs_sep.{i}.weight"), vec![f, 1, k]));
            v.push((format!("{p}.convs_sep.{i}.bias"), vec![f]));
            v.push((format!("{p}.norms_1.{i}.gamma"), vec![f]));
            v.push((format!("{p}.norms_1.{i}.beta"), vec![f]));
            v.push((format!("{p}.convs_1x1.{i}.weight"), vec![f, f, 1]));
            v.push((format!("{p}.convs_1x1.{i}.bias"), vec![f]));
            v.push((format!("{p}.norms_2.{i}.gamma"), vec![f]));
            v.push((format!("{p}.norms_2.{i}.beta"), vec![f]));
        }
    };
    dds(&mut v, "dp.convs");
    v.push(("dp.proj.weight".into(), vec![f, f, 1]));
    v.push(("dp.proj.bias".into(), vec![f]));
    let np = 3 * d.dp_num_bins - 1;
    for &idx in &d.dp_flow_indices {
        let p = format!("dp.flows.{idx}");
        v.push((format!("{p}.pre.weight"), vec![f, 1, 1]));
        v.push((format!("{p}.pre.bias"), vec![f]));
        dds(&mut v, &format!("{p}.convs"));
        v.push((format!("{p}.proj.weight"), vec![np, f, 1]));
        v.push((format!("{p}.proj.bias"), vec![np]));
    }
    v.push(("dp.flows.0.m".into(), vec![2, 1]));
    v.push(("dp.flows.0.logs".into(), vec![2, 1]));
    v
}

impl GpuWeights {
    pub fn upload(gpu: &Gpu, w: &Weights, d: &ModelDims, f16: bool) -> Result<Self, GpuError> {
        let mut u = Up {
            gpu,
            w,
            f16,
            bufs: Vec::new(),
            bytes: 0,
        };
        let (h, f, k) = (d.hidden_channels, d.filter_channels, d.ffn_kernel_size);
        let kc = h / d.n_heads;
        let nrel = 2 * d.window_size + 1;
        let emb = u.f32("enc_p.emb.weight", &[d.n_vocab, h])?;
        let mut enc = Vec::new();
        for l in 0..d.n_layers {
            let a = format!("enc_p.encoder.attn_layers.{l}");
            let get = |n: &str, s: &[usize]| -> Result<Vec<f32>, GpuError> {
                Ok(w.get_shaped(n, s)
                    .map_err(|e| GpuError::Weights(e.to_string()))?
                    .data
                    .clone())
            };
            let mut wqkv = Vec::with_capacity(3 * h * h);
            let mut bqkv = Vec::with_capacity(3 * h);
            for n in ["conv_q", "conv_k", "conv_v"] {
                wqkv.extend(get(&format!("{a}.{n}.weight"), &[h, h, 1])?);
                bqkv.extend(get(&format!("{a}.{n}.bias"), &[h])?);
            }
            let fp = format!("enc_p.encoder.ffn_layers.{l}");
            let n1 = format!("enc_p.encoder.norm_layers_1.{l}");
            let n2 = format!("enc_p.encoder.norm_layers_2.{l}");
            enc.push(EncLayer {
                wqkv: u.f32s(&wqkv)?,
                bqkv: u.f32s(&bqkv)?,
                ek: u.f32(&format!("{a}.emb_rel_k"), &[1, nrel, kc])?,
                ev: u.f32(&format!("{a}.emb_rel_v"), &[1, nrel, kc])?,
                wo: u.f32(&format!("{a}.conv_o.weight"), &[h, h, 1])?,
                bo: u.f32(&format!("{a}.conv_o.bias"), &[h])?,
                g1: u.f32(&format!("{n1}.gamma"), &[h])?,
                b1n: u.f32(&format!("{n1}.beta"), &[h])?,
                w1: u.f32(&format!("{fp}.conv_1.weight"), &[f, h, k])?,
                b1: u.f32(&format!("{fp}.conv_1.bias"), &[f])?,
                w2: u.f32(&format!("{fp}.conv_2.weight"), &[h, f, k])?,
                b2: u.f32(&format!("{fp}.conv_2.bias"), &[h])?,
                g2: u.f32(&format!("{n2}.gamma"), &[h])?,
                b2n: u.f32(&format!("{n2}.beta"), &[h])?,
            });
        }
        let c = d.inter_channels;
        let proj_w = u.f32("enc_p.proj.weight", &[2 * c, h, 1])?;
        let proj_b = u.f32("enc_p.proj.bias", &[2 * c])?;

        let mut table = Vec::new();
        for (name, shape) in sdp_names(d) {
            table.push(u.f32(&name, &shape)?);
        }
        let sdp_table = u.table(&table)?;

        let half = c / 2;
        let mut flow = Vec::new();
        for cp in 0..d.flow_n_couplings {
            let p = format!("flow.flows.{}", 2 * cp);
            let mut layers = Vec::new();
            for i in 0..d.flow_wn_layers {
                let rs = if i + 1 == d.flow_wn_layers { h } else { 2 * h };
                layers.push(WnLayer {
                    in_w: u.gate_grouped(
                        &format!("{p}.enc.in_layers.{i}.weight"),
                        &[2 * h, h, d.flow_kernel_size],
                        true,
                    )?,
                    in_b: u.gate_grouped(
                        &format!("{p}.enc.in_layers.{i}.bias"),
                        &[2 * h],
                        false,
                    )?,
                    rs_w: u.wt(&format!("{p}.enc.res_skip_layers.{i}.weight"), &[rs, h, 1])?,
                    rs_b: u.f32(&format!("{p}.enc.res_skip_layers.{i}.bias"), &[rs])?,
                });
            }
            flow.push(Coupling {
                pre_w: u.wt(&format!("{p}.pre.weight"), &[h, half, 1])?,
                pre_b: u.f32(&format!("{p}.pre.bias"), &[h])?,
                layers,
                post_w: u.wt(&format!("{p}.post.weight"), &[half, h, 1])?,
                post_b: u.f32(&format!("{p}.post.bias"), &[half])?,
            });
        }

        let mut ft = Vec::new();
        for cp in &flow {
            ft.extend([cp.pre_w, cp.pre_b, cp.post_w, cp.post_b]);
            for l in &cp.layers {
                ft.extend([l.in_w, l.in_b, l.rs_w, l.rs_b]);
            }
        }
        let flow_table = u.table(&ft)?;

        let up0 = d.upsample_initial_channel;
        let pre_w = u.wt("dec.conv_pre.weight", &[up0, c, d.dec_pre_kernel_size])?;
        let pre_b = u.f32("dec.conv_pre.bias", &[up0])?;
        let nk = d.resblock_kernel_sizes.len();
        let mut stages = Vec::new();
        for s in 0..d.upsample_rates.len() {
            let (cin, cout) = (up0 >> s, up0 >> (s + 1));
            let kk = d.upsample_kernel_sizes[s];
            let up_w = u.wt(&format!("dec.ups.{s}.weight"), &[cin, cout, kk])?;
            let up_b = u.f32(&format!("dec.ups.{s}.bias"), &[cout])?;
            let (mut wt, mut bt) = (Vec::new(), Vec::new());
            for j in 0..nk {
                let rk = d.resblock_kernel_sizes[j];
                for m in 0..d.resblock_dilation_sizes[j].len() {
                    let n = format!("dec.resblocks.{}.convs.{m}", s * nk + j);
                    wt.push(u.wt(&format!("{n}.weight"), &[cout, cout, rk])?);
                    bt.push(u.f32(&format!("{n}.bias"), &[cout])?);
                }
            }
            stages.push(Stage {
                up_w,
                up_b,
                rb_w_table: u.table(&wt)?,
                rb_b_table: u.table(&bt)?,
            });
        }
        let last = up0 >> d.upsample_rates.len();
        let post_w = u.wt("dec.conv_post.weight", &[1, last, d.dec_post_kernel_size])?;
        let post_b = if w.contains("dec.conv_post.bias") {
            u.f32("dec.conv_post.bias", &[1])?
        } else {
            0
        };
        Ok(Self {
            emb,
            enc,
            proj_w,
            proj_b,
            sdp_table,
            flow,
            flow_table,
            pre_w,
            pre_b,
            stages,
            post_w,
            post_b,
            bytes: u.bytes,
            _bufs: u.bufs,
        })
    }
}

/// Every weight the CUDA backend reads, with its shape (tests build random voices from it).
pub fn weight_shapes(d: &ModelDims) -> Vec<(String, Vec<usize>)> {
    let (h, f, k, c) = (
        d.hidden_channels,
        d.filter_channels,
        d.ffn_kernel_size,
        d.inter_channels,
    );
    let kc = h / d.n_heads;
    let nrel = 2 * d.window_size + 1;
    let mut v: Vec<(String, Vec<usize>)> = vec![("enc_p.emb.weight".into(), vec![d.n_vocab, h])];
    for l in 0..d.n_layers {
        let a = format!("enc_p.encoder.attn_layers.{l}");
        for n in ["conv_q", "conv_k", "conv_v", "conv_o"] {
            v.push((format!("{a}.{n}.weight"), vec![h, h, 1]));
            v.push((format!("{a}.{n}.bias"), vec![h]));
        }
        v.push((format!("{a}.emb_rel_k"), vec![1, nrel, kc]));
        v.push((format!("{a}.emb_rel_v"), vec![1, nrel, kc]));
        let fp = format!("enc_p.encoder.ffn_layers.{l}");
        v.push((format!("{fp}.conv_1.weight"), vec![f, h, k]));
        v.push((format!("{fp}.conv_1.bias"), vec![f]));
        v.push((format!("{fp}.conv_2.weight"), vec![h, f, k]));
        v.push((format!("{fp}.conv_2.bias"), vec![h]));
        for n in ["norm_layers_1", "norm_layers_2"] {
            v.push((format!("enc_p.encoder.{n}.{l}.gamma"), vec![h]));
            v.push((format!("enc_p.encoder.{n}.{l}.beta"), vec![h]));
        }
    }
    v.push(("enc_p.proj.weight".into(), vec![2 * c, h, 1]));
    v.push(("enc_p.proj.bias".into(), vec![2 * c]));
    v.extend(sdp_names(d));
    let half = c / 2;
    for cp in 0..d.flow_n_couplings {
        let p = format!("flow.flows.{}", 2 * cp);
        v.push((format!("{p}.pre.weight"), vec![h, half, 1]));
        v.push((format!("{p}.pre.bias"), vec![h]));
        v.push((format!("{p}.post.weight"), vec![half, h, 1]));
        v.push((format!("{p}.post.bias"), vec![half]));
        for i in 0..d.flow_wn_layers {
            let rs = if i + 1 == d.flow_wn_layers { h } else { 2 * h };
            v.push((
                format!("{p}.enc.in_layers.{i}.weight"),
                vec![2 * h, h, d.flow_kernel_size],
            ));
            v.push((format!("{p}.enc.in_layers.{i}.bias"), vec![2 * h]));
            v.push((
                format!("{p}.enc.res_skip_layers.{i}.weight"),
                vec![rs, h, 1],
            ));
            v.push((format!("{p}.enc.res_skip_layers.{i}.bias"), vec![rs]));
        }
    }
    let up0 = d.upsample_initial_channel;
    v.push((
        "dec.conv_pre.weight".into(),
        vec![up0, c, d.dec_pre_kernel_size],
    ));
    v.push(("dec.conv_pre.bias".into(), vec![up0]));
    let nk = d.resblock_kernel_sizes.len();
    for (s, &kk) in d.upsample_kernel_sizes.iter().enumerate() {
        let (cin, cout) = (up0 >> s, up0 >> (s + 1));
        v.push((format!("dec.ups.{s}.weight"), vec![cin, cout, kk]));
        v.push((format!("dec.ups.{s}.bias"), vec![cout]));
        for (j, &rk) in d.resblock_kernel_sizes.iter().enumerate() {
            for m in 0..d.resblock_dilation_sizes[j].len() {
                let n = format!("dec.resblocks.{}.convs.{m}", s * nk + j);
                v.push((format!("{n}.weight"), vec![cout, cout, rk]));
                v.push((format!("{n}.bias"), vec![cout]));
            }
        }
    }
    let last = up0 >> d.upsample_rates.len();
    v.push((
        "dec.conv_post.weight".into(),
        vec![1, last, d.dec_post_kernel_size],
    ));
    v
}
