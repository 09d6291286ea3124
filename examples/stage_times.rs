//! Times each CPU stage on the bench sentence: `cargo run --release --example stage_times [runs]`.
//! Prints min and median per stage (the machine is shared, so min is the steadier figure);
//! `stage_times RUNS STAGE` times one stage only, e.g. under `perf stat`.

use hark::model::Scales;
use hark::model::cpu::{decoder, duration, encoder, flow, noise::NoiseSource, pipeline};
use hark::model::tensor::Tensor;
use hark::voice::Voice;
use std::time::Instant;

const SENTENCE: &str = "The quick brown fox jumps over the lazy dog, while the old farmer watches \
from his porch and wonders whether the rain will ever come back to the valley before the end of \
this long, dry summer.";

fn main() {
    let runs: usize = std::env::args().nth(1).map_or(7, |s| s.parse().unwrap());
    // Optional stage name: time only that one (for `perf stat` on a single stage).
    let only = std::env::args().nth(2);
    let v = Voice::load(None).unwrap();
    let (w, d) = (&v.weights, &v.config.dims);
    let ids = hark::text::text_to_ids(SENTENCE, &v.config.espeak_voice, &v.config.phoneme_id_map)
        .unwrap()
        .remove(0)
        .ids;
    let scales: Scales = v.config.inference.into();
    let front = pipeline::frontend(w, d, &ids, &scales, &mut NoiseSource::new(0)).unwrap();
    let enc = encoder::text_encoder(w, d, &ids).unwrap();
    let z = flow::flow_reverse(w, d, &front.z_p).unwrap();
    let noise = Tensor::zeros(vec![2, ids.len()]);
    println!("ids {} frames {}", ids.len(), front.z_p.dim(1));
    let stage = |name: &str, f: &mut dyn FnMut()| {
        if only.as_deref().is_some_and(|o| o != name) {
            return;
        }
        let cpu0 = cpu_ms();
        let mut ms: Vec<f64> = (0..runs)
            .map(|_| {
                let t0 = Instant::now();
                f();
                t0.elapsed().as_secs_f64() * 1e3
            })
            .collect();
        let cpu = (cpu_ms() - cpu0) / runs as f64;
        ms.sort_by(f64::total_cmp);
        println!(
            "{name:>10}: min {:7.1} ms  median {:7.1} ms  cpu {cpu:7.1} ms/run",
            ms[0],
            ms[runs / 2]
        );
    };
    stage("encoder", &mut || {
        encoder::text_encoder(w, d, &ids).unwrap();
    });
    stage("sdp", &mut || {
        duration::duration_logw(w, d, &enc.x, &noise).unwrap();
    });
    stage("flow", &mut || {
        flow::flow_reverse(w, d, &front.z_p).unwrap();
    });
    stage("decoder", &mut || {
        decoder::decode(w, d, &z).unwrap();
    });
    stage("total", &mut || {
        pipeline::synthesize(w, d, &ids, &scales, 0).unwrap();
    });
}

/// CPU time of all this process's threads so far (from the scheduler's per-thread counters),
/// which a busy machine inflates far less than wall time.
fn cpu_ms() -> f64 {
    let mut ns = 0u64;
    for t in std::fs::read_dir("/proc/self/task")
        .into_iter()
        .flatten()
        .flatten()
    {
        if let Ok(s) = std::fs::read_to_string(t.path().join("schedstat")) {
            ns += s
                .split_whitespace()
                .next()
                .and_then(|v| v.parse().ok())
                .unwrap_or(0);
        }
    }
    ns as f64 / 1e6
}
