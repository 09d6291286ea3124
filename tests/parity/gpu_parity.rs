//! GPU kernels against their CPU twins, ggml style: fresh random inputs and random weights of
//! the voice's shapes, compared by relative L2 error (‖gpu − cpu‖ / ‖cpu‖), each case also
//! timed. Then the whole pipeline on the real voice (if installed) against the CPU reference.
//! Without a CUDA device every test prints `skipped: no CUDA device` and passes.
//!
//! Precision per test: HARK_CUDA_F32=1 runs flow/decoder with f32 weights (tight bounds).

use hark_model::backend::{Backend, CpuBackend};
use hark_model::cpu::{decoder, duration, durations, encoder, flow, noise::NoiseSource, ops};
use hark_model::gpu::device::unavailable_reason;
use hark_model::gpu::weights::weight_shapes;
use hark_model::gpu::{CudaBackend, GpuModel};
use hark_voice::Scales;
use hark_voice::tensor::{Tensor, rel_l2};
use hark_voice::{ModelDims, Voice, Weights};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

/// Written straight to stderr, past the test harness's capture, so CI shows the skip.
fn say(msg: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "{msg}");
}

fn gpu_or_skip() -> bool {
    match unavailable_reason() {
        None => true,
        Some(why) => {
            say(&format!("skipped: no CUDA device ({why})"));
            false
        }
    }
}

/// Joe's dimensions (en_US-joe-medium), so random-weight cases have the real shapes.
fn joe_dims() -> ModelDims {
    ModelDims {
        n_vocab: 256,
        hidden_channels: 192,
        filter_channels: 768,
        n_heads: 2,
        n_layers: 6,
        ffn_kernel_size: 3,
        window_size: 4,
        inter_channels: 192,
        dp_filter_channels: 192,
        dp_kernel_size: 3,
        dp_ddsconv_layers: 3,
        dp_flow_indices: vec![7, 5, 3],
        dp_num_bins: 10,
        dp_tail_bound: 5.0,
        flow_n_couplings: 4,
        flow_wn_layers: 4,
        flow_kernel_size: 5,
        flow_dilation_rate: 1,
        upsample_initial_channel: 256,
        upsample_rates: vec![8, 8, 4],
        upsample_kernel_sizes: vec![16, 16, 8],
        resblock_kernel_sizes: vec![3, 5, 7],
        resblock_dilation_sizes: vec![vec![1, 2], vec![2, 6], vec![3, 12]],
        dec_pre_kernel_size: 7,
        dec_post_kernel_size: 7,
    }
}

fn rand_vec(rng: &mut ChaCha8Rng, n: usize, scale: f32) -> Vec<f32> {
    (0..n)
        .map(|_| rng.random_range(-1.0f32..1.0) * scale)
        .collect()
}

/// Random weights for every tensor the GPU reads, scaled like trained ones (≈1/√fan_in).
fn random_weights(d: &ModelDims, seed: u64) -> Weights {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut m = HashMap::new();
    for (name, shape) in weight_shapes(d) {
        let n: usize = shape.iter().product();
        let data = if name.ends_with("gamma") {
            rand_vec(&mut rng, n, 0.2)
                .into_iter()
                .map(|v| 1.0 + v)
                .collect()
        } else if shape.len() == 3 && !name.contains("emb_rel") {
            let fan = (shape[1] * shape[2]) as f32;
            rand_vec(&mut rng, n, 1.7 / fan.sqrt())
        } else if name.contains("emb") {
            rand_vec(&mut rng, n, 0.5)
        } else {
            rand_vec(&mut rng, n, 0.1)
        };
        m.insert(name, Tensor::new(shape, data));
    }
    Weights::from_map(m)
}

/// HARK_PARITY_QUICK=1 (under compute-sanitizer, which is slow): the smaller sizes only.
fn sizes(all: &[usize]) -> &[usize] {
    if std::env::var_os("HARK_PARITY_QUICK").is_some() {
        &all[..2]
    } else {
        all
    }
}

fn f16_mode() -> bool {
    !hark_model::gpu::f32_mode_requested()
}

/// (f16 bound, f32 bound) for flow/decoder stages.
fn back_tol() -> f64 {
    if f16_mode() { 1e-2 } else { 1e-5 }
}

fn report(what: &str, err: f64, tol: f64, gpu_ms: f64, cpu_ms: f64) {
    eprintln!(
        "{what:<34} rel L2 {err:.2e} (≤ {tol:.0e})  gpu {gpu_ms:8.3} ms  cpu {cpu_ms:8.2} ms",
    );
    assert!(err <= tol, "{what}: rel L2 {err:e} > {tol:e}");
}

fn ms(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1e3
}

/// The common start of a kernel test: Joe's shapes, random weights from `seed`, the model on
/// the device in the requested precision, and an input generator. None without a GPU.
fn random_model(seed: u64) -> Option<(ModelDims, Weights, GpuModel, ChaCha8Rng)> {
    if !gpu_or_skip() {
        return None;
    }
    let d = joe_dims();
    let w = random_weights(&d, seed);
    let g = GpuModel::new(&w, &d, f16_mode()).expect("GPU model");
    Some((d, w, g, ChaCha8Rng::seed_from_u64(seed + 1)))
}

/// f16 rounding as the device does it (round to nearest even).
fn to_f16(v: &[f32]) -> Vec<f32> {
    v.iter().map(|&x| half::f16::from_f32(x).to_f32()).collect()
}

/// The convolution core alone (`conv_smem` through `conv_probe`) on random inputs and weights,
/// in shapes that take each of its tile variants: the WaveNet k5 conv, the res/skip 1×1,
/// conv_pre, the resblock convs (dilated, LeakyReLU on the input) and a channel count the
/// tensor-core path does not take. Two twins on the CPU (`conv1d_fused`): one fed exactly
/// what the device multiplies (f16 weights; on the tensor-core path also f16 activations),
/// so only the summation order differs and a layout slip shows at once; and the plain f32
/// convolution, whose distance is the precision cost.
#[test]
fn conv_core_matches_cpu() {
    let Some((_, _, mut g, mut rng)) = random_model(12) else {
        return;
    };
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
    let quick = std::env::var_os("HARK_PARITY_QUICK").is_some();
    let mode = hark_model::gpu::mma_mode();
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
        let tensor_cores = f16 && mode > 0 && cin % 16 == 0;
        let split = tensor_cores && flow && mode == 2;
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

#[test]
fn encoder_matches_cpu() {
    let Some((d, w, mut g, mut rng)) = random_model(1) else {
        return;
    };
    for &t in sizes(&[1, 9, 37, 300]) {
        let ids: Vec<i64> = (0..t).map(|_| rng.random_range(0..151)).collect();
        g.run_encoder(&ids).unwrap(); // warm
        let t0 = Instant::now();
        g.run_encoder(&ids).unwrap();
        let gpu_ms = ms(t0);
        let got = g.read_front(t).unwrap();
        let t1 = Instant::now();
        let want = encoder::text_encoder(&w, &d, &ids).unwrap();
        let cpu_ms = ms(t1);
        report(
            &format!("encoder x      T={t}"),
            rel_l2(&got.x, &want.x.data),
            1e-5,
            gpu_ms,
            cpu_ms,
        );
        report(
            &format!("encoder m_p    T={t}"),
            rel_l2(&got.m_p, &want.m_p.data),
            1e-5,
            0.0,
            0.0,
        );
        report(
            &format!("encoder logs_p T={t}"),
            rel_l2(&got.logs_p, &want.logs_p.data),
            1e-5,
            0.0,
            0.0,
        );
    }
}

#[test]
fn duration_predictor_matches_cpu() {
    let Some((d, w, mut g, mut rng)) = random_model(3) else {
        return;
    };
    for &t in sizes(&[1, 23, 211]) {
        let x = Tensor::new(vec![192, t], rand_vec(&mut rng, 192 * t, 1.5));
        let noise = Tensor::new(vec![2, t], rand_vec(&mut rng, 2 * t, 1.2));
        g.set_encoder_output(&x.data, t).unwrap();
        g.run_sdp(&noise.data, 1.0).unwrap();
        let t0 = Instant::now();
        let dur = g.run_sdp(&noise.data, 1.0).unwrap();
        let gpu_ms = ms(t0);
        let got = g.read_front(t).unwrap();
        let t1 = Instant::now();
        let logw = duration::duration_logw(&w, &d, &x, &noise).unwrap();
        let cpu_ms = ms(t1);
        report(
            &format!("sdp logw       T={t}"),
            rel_l2(&got.logw, &logw),
            1e-4,
            gpu_ms,
            cpu_ms,
        );
        let want = durations::durations(&logw, 1.0);
        // A ceil may flip only where exp(logw) sits within float noise of an integer.
        for (i, (&a, &b)) in dur.iter().zip(&want).enumerate() {
            let wv = logw[i].exp();
            assert!(
                a == b || (wv - wv.round()).abs() < 1e-3,
                "token {i}: {a} vs {b} ({wv})"
            );
        }
        let mut acc = 0;
        for (i, &dv) in dur.iter().enumerate() {
            assert_eq!(got.off[i] as usize, acc, "frame offset {i}");
            acc += dv;
        }
        assert_eq!(got.off[t] as usize, acc, "frame count");
    }
}

#[test]
fn flow_matches_cpu() {
    let Some((d, w, mut g, mut rng)) = random_model(5) else {
        return;
    };
    for &n in sizes(&[1, 5, 58, 100]) {
        let z_p = Tensor::new(vec![192, n], rand_vec(&mut rng, 192 * n, 2.0));
        g.flow_host(&z_p.data, n).unwrap();
        let t0 = Instant::now();
        let got = g.flow_host(&z_p.data, n).unwrap();
        let gpu_ms = ms(t0);
        let t1 = Instant::now();
        let want = flow::flow_reverse(&w, &d, &z_p).unwrap();
        let cpu_ms = ms(t1);
        report(
            &format!("flow reverse   n={n}"),
            rel_l2(&got, &want.data),
            back_tol(),
            gpu_ms,
            cpu_ms,
        );
    }
}

#[test]
fn decoder_matches_cpu() {
    let Some((d, w, mut g, mut rng)) = random_model(7) else {
        return;
    };
    for &n in sizes(&[1, 3, 58, 100]) {
        let z = Tensor::new(vec![192, n], rand_vec(&mut rng, 192 * n, 1.0));
        g.decode_host(&z.data, n).unwrap();
        let t0 = Instant::now();
        let got = g.decode_host(&z.data, n).unwrap();
        let gpu_ms = ms(t0);
        let t1 = Instant::now();
        let want = decoder::decode(&w, &d, &z).unwrap();
        let cpu_ms = ms(t1);
        report(
            &format!("decoder        n={n}"),
            rel_l2(&got, &want),
            back_tol(),
            gpu_ms,
            cpu_ms,
        );
    }
}

/// (d) fused: z_p built inside the first flow kernel from m_p, logs_p, offsets and the prior
/// noise, then flow and decoder over windows; against expand + sample_prior + decode_window.
#[test]
fn windows_from_prior_match_cpu() {
    let Some((d, w, mut g, mut rng)) = random_model(9) else {
        return;
    };
    let t = 31;
    let durs: Vec<usize> = (0..t).map(|_| rng.random_range(0..9)).collect();
    let frames: usize = durs.iter().sum();
    let m_p = Tensor::new(vec![192, t], rand_vec(&mut rng, 192 * t, 1.0));
    let logs_p = Tensor::new(vec![192, t], rand_vec(&mut rng, 192 * t, 0.5));
    let mut src = NoiseSource::new(11);
    let eps = src.normal(vec![192, frames]);
    g.set_prior(&m_p.data, &logs_p.data, &durs).unwrap();
    g.set_utterance(durs.clone(), 0.667, Some(&eps.data))
        .unwrap();
    let m_f = durations::expand_frames(&m_p, &durs);
    let l_f = durations::expand_frames(&logs_p, &durs);
    let z_p = hark_model::cpu::noise::sample_prior(&m_f, &l_f, 0.667, &mut NoiseSource::new(11));
    let ctx = d.flow_decoder_receptive_frames();
    let hop = d.samples_per_frame();
    let full = decoder::decode_window(&w, &d, &z_p, 0, frames, ctx).unwrap();
    let mut chunked = Vec::new();
    for (a, b) in [(0, 16), (16, 48), (48, 49), (49, frames)] {
        let t0 = Instant::now();
        let n = g.launch_window(a, b, ctx, 0).unwrap();
        let got: Vec<f32> = g.gpu.dtoh_sync(g.out_ptr(0), n).unwrap();
        let gpu_ms = ms(t0);
        report(
            &format!("window [{a},{b}) of {frames}"),
            rel_l2(&got, &full[a * hop..b * hop]),
            back_tol(),
            gpu_ms,
            0.0,
        );
        chunked.extend(got);
    }
    let n = g.launch_window(0, frames, ctx, 1).unwrap();
    let whole: Vec<f32> = g.gpu.dtoh_sync(g.out_ptr(1), n).unwrap();
    // Chunks equal the full GPU decode up to float summation order.
    report(
        "gpu chunks vs gpu full",
        rel_l2(&chunked, &whole),
        1e-5,
        0.0,
        0.0,
    );
}

/// The real voice end to end: identical durations, audio close to the CPU reference, and
/// chunked decoding equal to the full decode. Needs an installed voice (HARK_VOICES_DIR).
#[test]
fn real_voice_matches_cpu() {
    if !gpu_or_skip() {
        return;
    }
    let voice = match Voice::load_from(&hark_engine::Overrides::from_env().voices_dir, None) {
        Ok(v) => Arc::new(v),
        Err(e) => {
            say(&format!("skipped: no voice installed ({e})"));
            return;
        }
    };
    let cfg = &voice.config;
    let sentences = [
        "The quick brown fox jumps over the lazy dog, while the old farmer watches from his porch.",
        "Hello world, this is a test.",
        "Numbers like 42 and words like rhythm.",
    ];
    // HARK_PARITY_QUICK=1 (used under compute-sanitizer): one sentence, f16 only.
    let quick = std::env::var_os("HARK_PARITY_QUICK").is_some();
    let sentences = if quick {
        &sentences[1..2]
    } else {
        &sentences[..]
    };
    for f16 in if quick { vec![true] } else { vec![true, false] } {
        let t0 = Instant::now();
        let mut gpu = CudaBackend::with_precision(&voice, f16).expect("CUDA backend");
        eprintln!(
            "{} ready in {:.0} ms: {:?}",
            gpu.name(),
            ms(t0),
            gpu.model.startup
        );
        let tol = if f16 { 1e-2 } else { 1e-4 };
        for (si, s) in sentences.iter().enumerate() {
            let ids =
                &hark_text::text_to_ids(s, &cfg.espeak_voice, &cfg.phoneme_id_map).unwrap()[0].ids;
            for scales in [
                Scales {
                    noise_scale: 0.667,
                    length_scale: 1.0,
                    noise_w: 0.8,
                },
                Scales {
                    noise_scale: 0.0,
                    length_scale: 1.0,
                    noise_w: 0.0,
                },
            ] {
                let mut cpu = CpuBackend::new(voice.clone());
                let t1 = Instant::now();
                let ci = cpu.begin(ids, &scales, si as u64).unwrap();
                let want = cpu.decode(0, ci.frames).unwrap();
                let cpu_ms = ms(t1);
                let t2 = Instant::now();
                let gi = gpu.begin(ids, &scales, si as u64).unwrap();
                assert_eq!(gi.durations, ci.durations, "durations differ ({s})");
                let got = gpu.decode(0, gi.frames).unwrap();
                let gpu_ms = ms(t2);
                report(
                    &format!(
                        "voice {} s{si} ns{}",
                        if f16 { "f16" } else { "f32" },
                        scales.noise_scale
                    ),
                    rel_l2(&got, &want),
                    tol,
                    gpu_ms,
                    cpu_ms,
                );
                // Chunked: first chunk of 16 frames, then 37-frame chunks.
                let mut chunked = Vec::new();
                let mut a = 0;
                while a < gi.frames {
                    let b = (a + if a == 0 { 16 } else { 37 }).min(gi.frames);
                    chunked.extend(gpu.decode(a, b).unwrap());
                    a = b;
                }
                let e = rel_l2(&chunked, &got);
                eprintln!("  chunked vs full rel L2 {e:.2e}");
                assert!(
                    e <= 1e-5,
                    "chunked decode differs from the full decode: {e:e}"
                );
            }
        }
    }
}

// ---- The persistent engine (issue 7) against the graph path: the same stage code under
// the other scheduler, so durations must be identical and audio equal up to float noise.

use hark_model::gpu::device::{COPIES, LAUNCHES};
use hark_model::gpu::persist::PersistentBackend;
use std::sync::atomic::Ordering::Relaxed;

type Case = (Vec<i64>, Scales, u64);

fn noisy() -> Scales {
    Scales {
        noise_scale: 0.667,
        length_scale: 1.0,
        noise_w: 0.8,
    }
}

fn quiet() -> Scales {
    Scales {
        noise_scale: 0.0,
        length_scale: 1.0,
        noise_w: 0.0,
    }
}

/// Streams `case` through `b` (16 frames, then 37-frame chunks); `None` when it has no frames.
fn stream(b: &mut dyn Backend, case: &Case) -> (Vec<usize>, Option<Vec<f32>>) {
    let info = b.begin(&case.0, &case.1, case.2).unwrap();
    if info.frames == 0 {
        return (info.durations, None);
    }
    let mut out = Vec::new();
    let mut a = 0;
    while a < info.frames {
        let e = (a + if a == 0 { 16 } else { 37 }).min(info.frames);
        out.extend(b.decode(a, e).unwrap());
        a = e;
    }
    (info.durations, Some(out))
}

/// The graph path makes the reference of every case, then the same backend becomes the
/// persistent engine and must match it: streamed, whole again (a restarted walk), and after
/// an interrupted utterance. No host launch or copy may happen on the persistent path.
fn persistent_matches_graph(mut graph: CudaBackend, cases: &[Case], label: &str) {
    let want: Vec<_> = cases.iter().map(|c| stream(&mut graph, c)).collect();
    let t0 = Instant::now();
    let mut pk = PersistentBackend::from_graph(graph, None);
    eprintln!(
        "{label}: persistent kernel up in {:.0} ms ({} blocks): {}",
        ms(t0),
        pk.blocks(),
        pk.name()
    );
    assert!(pk.is_persistent(), "not persistent: {:?}", pk.fallback);
    let (l0, c0) = (LAUNCHES.load(Relaxed), COPIES.load(Relaxed));
    for (case, (dur, audio)) in cases.iter().zip(&want) {
        let t = Instant::now();
        let (got_dur, got) = stream(&mut pk, case);
        let gpu_ms = ms(t);
        assert!(pk.on_persistent_path(), "case fell back: {:?}", pk.fallback);
        assert_eq!(
            &got_dur,
            dur,
            "{label}: durations differ (T={})",
            case.0.len()
        );
        let (Some(got), Some(audio)) = (got, audio) else {
            assert!(audio.is_none(), "frames differ");
            continue;
        };
        let what = format!("{label} T={} ns{}", case.0.len(), case.1.noise_scale);
        report(&what, rel_l2(&got, audio), 1e-4, gpu_ms, 0.0);
        let again = pk.decode(0, dur.iter().sum()).unwrap();
        report(
            &format!("{what} whole again"),
            rel_l2(&again, audio),
            1e-4,
            0.0,
            0.0,
        );
    }
    // Interrupt: a new utterance while the kernel may still walk the previous one.
    if let (Some(a), Some(b)) = (cases.first(), cases.last())
        && let Some(audio) = &want[cases.len() - 1].1
    {
        pk.speculate = true;
        let info = pk.begin(&a.0, &a.1, a.2).unwrap();
        if info.frames > 0 {
            pk.decode(0, info.frames.min(16)).unwrap();
        }
        let (_, got) = stream(&mut pk, b);
        let got = got.expect("frames");
        report(
            &format!("{label} after an interrupt"),
            rel_l2(&got, audio),
            1e-4,
            0.0,
            0.0,
        );
    }
    let (l1, c1) = (LAUNCHES.load(Relaxed), COPIES.load(Relaxed));
    eprintln!(
        "{label}: host launches {} and copies {} on the persistent path",
        l1 - l0,
        c1 - c0
    );
    assert_eq!(
        (l1 - l0, c1 - c0),
        (0, 0),
        "host launches/copies on the persistent path"
    );
}

#[test]
fn persistent_matches_graph_on_random_weights() {
    if !gpu_or_skip() {
        return;
    }
    let d = joe_dims();
    let w = random_weights(&d, 21);
    let graph = CudaBackend::from_model(GpuModel::new(&w, &d, f16_mode()).unwrap()).unwrap();
    let mut rng = ChaCha8Rng::seed_from_u64(22);
    let quick = std::env::var_os("HARK_PARITY_QUICK").is_some();
    let sizes: &[usize] = if quick { &[9] } else { &[1, 9, 37, 150] };
    let mut cases = Vec::new();
    for (i, &t) in sizes.iter().enumerate() {
        let ids: Vec<i64> = (0..t)
            .map(|_| rng.random_range(0..d.n_vocab as i64))
            .collect();
        cases.push((ids.clone(), noisy(), i as u64));
        if !quick {
            cases.push((ids, quiet(), 100 + i as u64));
        }
    }
    persistent_matches_graph(graph, &cases, "random");
}

/// The graph backend on random weights of Joe's shapes (`seed`), and a source of random ids
/// (seeded from `seed + 1`).
fn random_graph(seed: u64) -> (CudaBackend, impl FnMut(usize) -> Vec<i64>) {
    let d = joe_dims();
    let w = random_weights(&d, seed);
    let graph = CudaBackend::from_model(GpuModel::new(&w, &d, f16_mode()).unwrap()).unwrap();
    let mut rng = ChaCha8Rng::seed_from_u64(seed + 1);
    let ids = move |n: usize| -> Vec<i64> {
        (0..n)
            .map(|_| rng.random_range(0..d.n_vocab as i64))
            .collect()
    };
    (graph, ids)
}

/// The smallest whole life of the persistent kernel, for compute-sanitizer's racecheck (which
/// reports shared-memory hazards only when a kernel exits, and runs the kernel ~1000× slower):
/// launch, one 5-id job's front half and first 16-frame chunk, shut down. Matches the graph
/// path like the longer test.
#[test]
fn persistent_one_short_job_then_shutdown() {
    if !gpu_or_skip() {
        return;
    }
    let (mut graph, mut random_ids) = random_graph(25);
    let ids = random_ids(5);
    let info = graph.begin(&ids, &noisy(), 7).unwrap();
    let n = info.frames.min(16);
    assert!(n > 0, "no frames to compare");
    let want = graph.decode(0, n).unwrap();
    let mut pk = PersistentBackend::from_graph(graph, None);
    assert!(pk.is_persistent(), "not persistent: {:?}", pk.fallback);
    let got_info = pk.begin(&ids, &noisy(), 7).unwrap();
    assert_eq!(got_info.durations, info.durations, "durations differ");
    let got = pk.decode(0, n).unwrap();
    assert!(pk.on_persistent_path(), "fell back: {:?}", pk.fallback);
    report("one short job", rel_l2(&got, &want), 1e-4, 0.0, 0.0);
    drop(pk); // shuts the kernel down: racecheck reports now
}

/// The kernel's stage profile (benchmarks read it): every stage of a job's front half and
/// first chunk is stamped, in order, and the stamps add up to less than the host waited.
#[test]
fn persistent_profile_stamps_every_stage() {
    if !gpu_or_skip() {
        return;
    }
    let (graph, mut random_ids) = random_graph(26);
    let mut pk = PersistentBackend::from_graph(graph, None);
    assert!(pk.is_persistent(), "not persistent: {:?}", pk.fallback);
    pk.speculate = false;
    pk.set_profile(true);
    let ids = random_ids(9);
    let t0 = Instant::now();
    let info = pk.begin(&ids, &noisy(), 3).unwrap();
    pk.decode(0, info.frames.min(16)).unwrap();
    let host_ms = t0.elapsed().as_secs_f64() * 1e3;
    assert!(pk.on_persistent_path(), "fell back: {:?}", pk.fallback);
    pk.quiesce().unwrap();
    let stages = pk.stage_profile();
    let names: Vec<&str> = stages.iter().map(|(n, _)| *n).collect();
    let want = [
        "dispatch",
        "inputs to device",
        "encoder: embedding",
        "encoder: attention",
        "encoder: feed-forward",
        "duration predictor",
        "durations published",
        "wait for the chunk",
        "flow",
        "decoder: first conv",
        "decoder: upsampling",
        "decoder: resblocks",
        "decoder: last conv + publish",
    ];
    assert_eq!(names, want, "stages missing or out of order");
    let total: f64 = stages.iter().map(|(_, ms)| ms).sum();
    assert!(stages.iter().all(|(_, ms)| *ms >= 0.0));
    assert!(
        total > 0.0 && total <= host_ms,
        "kernel stamps {total:.3} ms against {host_ms:.3} ms on the host"
    );
    say(&format!(
        "  profile: {total:.3} ms stamped of {host_ms:.3} ms on the host: {stages:?}"
    ));
}

#[test]
fn persistent_matches_graph_on_the_voice() {
    if !gpu_or_skip() {
        return;
    }
    let voice = match Voice::load_from(&hark_engine::Overrides::from_env().voices_dir, None) {
        Ok(v) => v,
        Err(e) => {
            say(&format!("skipped: no voice installed ({e})"));
            return;
        }
    };
    let cfg = &voice.config;
    let mut cases = Vec::new();
    for (i, s) in [
        "The quick brown fox jumps over the lazy dog, while the old farmer watches from his porch.",
        "Hello world, this is a test.",
        "Numbers like 42 and words like rhythm.",
    ]
    .iter()
    .enumerate()
    {
        let ids = hark_text::text_to_ids(s, &cfg.espeak_voice, &cfg.phoneme_id_map).unwrap()[0]
            .ids
            .clone();
        cases.push((ids.clone(), noisy(), i as u64));
        cases.push((ids, quiet(), i as u64));
    }
    let graph = CudaBackend::new(&voice).expect("CUDA backend");
    persistent_matches_graph(graph, &cases, "voice");
}

/// A job longer than the kernel's slots runs on the graph path (the kernel is stopped for
/// it), and the next one is back on the kernel.
#[test]
fn persistent_hands_long_jobs_to_graphs() {
    if !gpu_or_skip() {
        return;
    }
    let (mut graph, mut random_ids) = random_graph(23);
    let long = random_ids(hark_model::gpu::persist::layout::TMAX + 1);
    let short = random_ids(20);
    let info = graph.begin(&long, &noisy(), 5).unwrap();
    let want_long = graph.decode(0, info.frames.min(16)).unwrap();
    let (_, want_short) = stream(&mut graph, &(short.clone(), noisy(), 6));
    let mut pk = PersistentBackend::from_graph(graph, None);
    assert!(pk.is_persistent(), "not persistent: {:?}", pk.fallback);
    let info2 = pk.begin(&long, &noisy(), 5).unwrap();
    assert!(
        !pk.on_persistent_path(),
        "a {}-id job on the kernel",
        long.len()
    );
    assert_eq!(info2.durations, info.durations);
    let got = pk.decode(0, info2.frames.min(16)).unwrap();
    report(
        "long job via graphs",
        rel_l2(&got, &want_long),
        1e-6,
        0.0,
        0.0,
    );
    let (_, got) = stream(&mut pk, &(short, noisy(), 6));
    assert!(
        pk.on_persistent_path(),
        "kernel not restarted: {:?}",
        pk.fallback
    );
    let (got, want) = (got.expect("frames"), want_short.expect("frames"));
    report(
        "next job, kernel restarted",
        rel_l2(&got, &want),
        1e-4,
        0.0,
        0.0,
    );
}
