//! Focused GPU kernel tests that are not a stage of the backend table: the convolution core
//! alone, in each of its tile variants, against its CPU twins. Without a CUDA device they
//! print `skipped: no CUDA device` and pass.

use super::common::*;
use hark_model::cpu::ops;
use hark_model::gpu::{GpuModel, Mma};
use hark_voice::tensor::{Tensor, rel_l2};
use std::time::Instant;

/// The convolution core alone (`conv_smem` through `conv_probe`) on random inputs and weights,
/// in shapes that take each of its tile variants: the WaveNet k5 conv, the res/skip 1×1,
/// conv_pre, the resblock convs (dilated, LeakyReLU on the input) and a channel count the
/// tensor-core path does not take. Two twins on the CPU (`conv1d_fused`): one fed exactly
/// what the device multiplies (f16 weights; on the tensor-core path also f16 activations),
/// so only the summation order differs and a layout slip shows at once; and the plain f32
/// convolution, whose distance is the precision cost.
#[test]
fn conv_core_matches_cpu() {
    if !gpu_or_skip() {
        return;
    }
    let (d, w, mut rng) = random_model(12);
    let mut g = GpuModel::new(&w, &d, &gpu_options()).expect("GPU model");
    let f16 = f16_mode();
    // (what, cin, rows, k, dilation, LeakyReLU slope, length, columns per block)
    let cases = [
        ("wavenet k5", 192, 64, 5, 1, 1.0, 37, 8),
        ("res/skip 1x1", 192, 384, 1, 1, 1.0, 45, 16),
        ("conv_pre k7", 192, 256, 7, 1, 1.0, 70, 32),
        ("resblock k3 C128", 128, 128, 3, 1, 0.1, 300, 88),
        ("resblock k7 d12 C64", 64, 64, 7, 12, 0.1, 500, 200),
        ("resblock k5 d6 C32", 32, 32, 5, 6, 0.1, 1000, 256),
        ("odd rows", 48, 20, 3, 1, 0.1, 19, 8),
        ("cin 24 (FMA path)", 24, 40, 3, 2, 0.1, 50, 16),
    ];
    let quick = quick();
    let mma = gpu_options().mma;
    // The decoder's core, then the flow's (with split activations in mode 2).
    for (flow, (what, cin, rows, k, dil, slope, l, tc)) in cases
        .iter()
        .map(|&c| (false, c))
        .chain(cases.iter().map(|&c| (true, c)))
    {
        // Two blocks per case under the sanitizer.
        let l = if quick { l.min(tc + 5) } else { l };
        let x = rand_vec(&mut rng, cin * l, 2.0);
        let wt = rand_vec(&mut rng, rows * cin * k, 1.7 / ((cin * k) as f32).sqrt());
        let b = rand_vec(&mut rng, rows, 0.1);
        let t0 = Instant::now();
        let got = g
            .conv_host(flow, &x, cin, &wt, &b, k, dil, slope, tc)
            .unwrap();
        let gpu_ms = ms(t0);
        let conv = |x: Vec<f32>, wt: Vec<f32>, slope: Option<f32>| {
            ops::conv1d_fused(
                &Tensor::new(vec![cin, l], x),
                &Tensor::new(vec![rows, cin, k], wt),
                Some(&Tensor::new(vec![rows], b.clone())),
                dil * (k - 1) / 2,
                dil,
                slope,
                None,
            )
            .data
        };
        let t1 = Instant::now();
        let act = if slope == 1.0 { None } else { Some(slope) };
        let plain = conv(x.clone(), wt.clone(), act);
        let cpu_ms = ms(t1);
        let tensor_cores = f16 && mma != Mma::Off && cin % 16 == 0;
        let split = tensor_cores && flow && mma == Mma::SplitFlow;
        let exact = if tensor_cores && !split {
            let a: Vec<f32> = x
                .iter()
                .map(|&v| if v < 0.0 { v * slope } else { v })
                .collect();
            conv(to_f16(&a), to_f16(&wt), None)
        } else if f16 {
            conv(x.clone(), to_f16(&wt), act)
        } else {
            plain.clone()
        };
        let path = match (tensor_cores, split) {
            (false, _) => "fma",
            (true, false) => "mma",
            (true, true) => "mma, split x",
        };
        let core = if flow { "flow" } else { "dec" };
        // Tensor cores add inside one mma with truncation, not f32 rounding: a little looser.
        report(
            &format!("{core} conv {what} [{path}] vs same inputs"),
            rel_l2(&got, &exact),
            if tensor_cores { 1e-4 } else { 1e-5 },
            gpu_ms,
            cpu_ms,
        );
        report(
            &format!("{core} conv {what} [{path}] vs f32"),
            rel_l2(&got, &plain),
            back_tol(),
            0.0,
            0.0,
        );
    }
}
