//! Test helpers: tiny model dimensions with Joe's structure and random weights for them.

use hark_voice::tensor::Tensor;
use hark_voice::{ModelDims, Weights};
use std::collections::HashMap;

pub fn lcg(seed: u64, n: usize, scale: f32) -> Vec<f32> {
    let mut s = seed.wrapping_mul(0x9E3779B97F4A7C15).wrapping_add(12345);
    (0..n)
        .map(|_| {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (((s >> 40) as f32 / (1u64 << 24) as f32) - 0.5) * 2.0 * scale
        })
        .collect()
}

pub fn random_tensor(seed: u64, shape: &[usize], scale: f32) -> Tensor {
    let n = shape.iter().product();
    Tensor::new(shape.to_vec(), lcg(seed, n, scale))
}

/// Joe's flow/decoder structure (kernels, dilations, strides) with few channels.
pub fn tiny_dims() -> ModelDims {
    ModelDims {
        n_vocab: 8,
        hidden_channels: 6,
        filter_channels: 8,
        n_layers: 1,
        inter_channels: 4,
        dp_filter_channels: 6,
        upsample_initial_channel: 16,
        ..ModelDims::piper_medium()
    }
}

/// Random flow + decoder weights under Piper's names, scaled ~1/√fan_in.
pub fn random_weights(d: &ModelDims, seed: u64) -> Weights {
    let mut m: HashMap<String, Tensor> = HashMap::new();
    let mut next = seed;
    let mut put = |name: String, shape: &[usize]| {
        next += 1;
        let fan_in: usize = if shape.len() == 3 {
            shape[1] * shape[2]
        } else {
            1
        };
        let scale = 1.0 / (fan_in as f32).sqrt();
        m.insert(name, random_tensor(next, shape, scale));
    };
    let (h, half) = (d.hidden_channels, d.inter_channels / 2);
    for c in 0..d.flow_n_couplings {
        let p = format!("flow.flows.{}", 2 * c);
        put(format!("{p}.pre.weight"), &[h, half, 1]);
        put(format!("{p}.pre.bias"), &[h]);
        put(format!("{p}.post.weight"), &[half, h, 1]);
        put(format!("{p}.post.bias"), &[half]);
        for i in 0..d.flow_wn_layers {
            let out = if i + 1 == d.flow_wn_layers { h } else { 2 * h };
            put(
                format!("{p}.enc.in_layers.{i}.weight"),
                &[2 * h, h, d.flow_kernel_size],
            );
            put(format!("{p}.enc.in_layers.{i}.bias"), &[2 * h]);
            put(format!("{p}.enc.res_skip_layers.{i}.weight"), &[out, h, 1]);
            put(format!("{p}.enc.res_skip_layers.{i}.bias"), &[out]);
        }
    }
    let u = d.upsample_initial_channel;
    put(
        "dec.conv_pre.weight".into(),
        &[u, d.inter_channels, d.dec_pre_kernel_size],
    );
    put("dec.conv_pre.bias".into(), &[u]);
    let nk = d.resblock_kernel_sizes.len();
    for (s, &k) in d.upsample_kernel_sizes.iter().enumerate() {
        let (cin, cout) = (u >> s, u >> (s + 1));
        put(format!("dec.ups.{s}.weight"), &[cin, cout, k]);
        put(format!("dec.ups.{s}.bias"), &[cout]);
        for (j, &rk) in d.resblock_kernel_sizes.iter().enumerate() {
            for c in 0..d.resblock_dilation_sizes[j].len() {
                put(
                    format!("dec.resblocks.{}.convs.{c}.weight", s * nk + j),
                    &[cout, cout, rk],
                );
                put(
                    format!("dec.resblocks.{}.convs.{c}.bias", s * nk + j),
                    &[cout],
                );
            }
        }
    }
    let last = u >> d.upsample_rates.len();
    put(
        "dec.conv_post.weight".into(),
        &[1, last, d.dec_post_kernel_size],
    );
    Weights::from_map(m)
}
