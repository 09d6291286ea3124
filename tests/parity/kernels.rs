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

/// The duration predictor's output is bounded on the device as on the CPU (issue 19: memory
/// bounded by design): at most `MAX_TOKEN_FRAMES` per token and `MAX_SENTENCE_FRAMES` per
/// sentence, every duration scaled down alike, and the frame offsets follow the bounded
/// durations. A huge length scale asks for billions of frames without the bounds.
#[test]
fn durations_are_bounded_as_on_the_cpu() {
    use hark_model::cpu::durations::{MAX_SENTENCE_FRAMES, MAX_TOKEN_FRAMES, durations};
    if !gpu_or_skip() {
        return;
    }
    let (d, w, mut rng) = random_model(13);
    let mut g = GpuModel::new(&w, &d, &gpu_options()).expect("GPU model");
    // (tokens, length scale): within both bounds, the token bound alone (30 · 200 frames),
    // and both (100 or 400 tokens · 200 frames > 8192).
    for (t, length_scale) in [(40, 1.0), (30, 1e9), (100, 1e9), (400, 1e9)] {
        let x = rand_vec(&mut rng, d.hidden_channels * t, 1.0);
        let noise = rand_vec(&mut rng, 2 * t, 0.8);
        g.set_encoder_output(&x, t).unwrap();
        let got = g.run_sdp(&noise, length_scale).unwrap();
        let f = g.read_front(t).unwrap();
        let want = durations(&f.logw, length_scale);
        let total: usize = got.iter().sum();
        say(&format!(
            "durations: {t} tokens, length scale {length_scale}: {total} frames, longest {}",
            got.iter().max().unwrap()
        ));
        assert!(got.iter().all(|&n| n <= MAX_TOKEN_FRAMES), "{got:?}");
        assert!(total <= MAX_SENTENCE_FRAMES, "{total} frames");
        if length_scale > 1.0 {
            // Every token over the bound, so no ceil sits near an integer: exactly the CPU's.
            let bound = MAX_TOKEN_FRAMES as f32 + 1.0;
            assert!(f.logw.iter().all(|l| l.exp() * length_scale > bound));
            assert_eq!(got, want, "{t} tokens, length scale {length_scale}");
        }
        let mut acc = 0;
        for (i, &n) in got.iter().enumerate() {
            assert_eq!(f.off[i] as usize, acc, "offset {i}");
            acc += n;
        }
        assert_eq!(f.off[t] as usize, total, "the frame count");
    }
}
