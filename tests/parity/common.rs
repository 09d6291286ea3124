//! What the GPU tests share: the skip line, the CUDA options this run asks for (read here, at
//! the test binary's edge), Joe's shapes with random weights, the real voice, and reporting.

use hark_model::gpu::GpuOptions;
use hark_model::gpu::device::unavailable_reason;
use hark_model::gpu::weights::weight_shapes;
use hark_voice::tensor::Tensor;
use hark_voice::{ModelDims, Voice, WeightDtype, Weights, import_piper};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::collections::HashMap;
use std::sync::{Arc, OnceLock};
use std::time::Instant;

/// Written straight to stderr, past the test harness's capture, so CI shows the skip.
pub fn say(msg: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "{msg}");
}

/// Whether a CUDA device is usable; prints `skipped: no CUDA device (why)` when it is not.
pub fn gpu_or_skip() -> bool {
    match unavailable_reason() {
        None => true,
        Some(why) => {
            say(&format!("skipped: no CUDA device ({why})"));
            false
        }
    }
}

/// The CUDA switches of this run, from the `HARK_*` variables (`HARK_CUDA_F32=1`: the f32
/// pass; `HARK_CUDA_WARMUP=0`, `HARK_PERSIST_*` under compute-sanitizer).
pub fn gpu_options() -> GpuOptions {
    static O: OnceLock<GpuOptions> = OnceLock::new();
    *O.get_or_init(|| hark_engine::Overrides::from_env().gpu)
}

pub fn f16_mode() -> bool {
    gpu_options().f16()
}

/// Bound on rel L2 of a flow or decoder stage against the CPU: f16 weights, or all f32.
pub fn back_tol() -> f64 {
    if f16_mode() { 1e-2 } else { 1e-5 }
}

/// HARK_PARITY_QUICK=1 (under compute-sanitizer, which is slow): the smaller cases only.
pub fn quick() -> bool {
    std::env::var_os("HARK_PARITY_QUICK").is_some()
}

/// Joe's dimensions (en_US-joe-medium), so random-weight cases have the real shapes.
pub fn joe_dims() -> ModelDims {
    ModelDims::piper_medium()
}

pub fn rand_vec(rng: &mut ChaCha8Rng, n: usize, scale: f32) -> Vec<f32> {
    (0..n)
        .map(|_| rng.random_range(-1.0f32..1.0) * scale)
        .collect()
}

/// Random weights for every tensor the GPU reads, scaled like trained ones (≈1/√fan_in).
pub fn random_weights(d: &ModelDims, seed: u64) -> Weights {
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

/// Joe's shapes, random weights from `seed`, and an input generator seeded from `seed + 1`.
pub fn random_model(seed: u64) -> (ModelDims, Weights, ChaCha8Rng) {
    let d = joe_dims();
    let w = random_weights(&d, seed);
    (d, w, ChaCha8Rng::seed_from_u64(seed + 1))
}

/// The real voice: the installed one (HARK_VOICES_DIR), else the ONNX of `HARK_TEST_ONNX`
/// imported once per test binary; `None` after printing the skip line.
pub fn real_voice() -> Option<Arc<Voice>> {
    static V: OnceLock<Option<(Arc<Voice>, Option<tempfile::TempDir>)>> = OnceLock::new();
    V.get_or_init(|| {
        if let Ok(v) = Voice::load_from(&hark_engine::Overrides::from_env().voices_dir, None) {
            return Some((Arc::new(v), None));
        }
        let onnx = testkit::voice_onnx_or_skip()?;
        let tmp = tempfile::tempdir().expect("tempdir");
        let dir = import_piper(&onnx, None, tmp.path(), None, WeightDtype::F32)
            .expect("import the voice");
        let v = Voice::load_from(tmp.path(), dir.to_str()).expect("load the imported voice");
        Some((Arc::new(v), Some(tmp)))
    })
    .as_ref()
    .map(|(v, _)| Arc::clone(v))
}

/// f16 rounding as the device does it (round to nearest even).
pub fn to_f16(v: &[f32]) -> Vec<f32> {
    v.iter().map(|&x| half::f16::from_f32(x).to_f32()).collect()
}

/// One comparison line of the focused tests, asserted: rel L2 against its bound.
pub fn report(what: &str, err: f64, tol: f64, gpu_ms: f64, cpu_ms: f64) {
    eprintln!(
        "{what:<34} rel L2 {err:.2e} (≤ {tol:.0e})  gpu {gpu_ms:8.3} ms  cpu {cpu_ms:8.2} ms",
    );
    assert!(err <= tol, "{what}: rel L2 {err:e} > {tol:e}");
}

pub fn ms(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1e3
}
