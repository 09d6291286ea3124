//! Wall time of each CPU stage, at 1 and 2 threads, with the CPU backend's Winograd packs and
//! without (the direct kernel), interleaved run by run:
//! `cargo run --release -p hark-model --example stage_times -- VOICES_DIR IDS_FILE [RUNS [ISA]]`
//! (IDS_FILE: the phoneme ids, separated by commas or whitespace). Each run is one
//! `team::hot` call, as the CPU backend makes it. `STAGE_THREADS=1` (or `2`, `1,2`) picks the
//! pools, `STAGE_KERNELS=winograd` leaves the direct arm out (for a profile of the engine's
//! own kernels).

use hark_model::cpu::decoder::{DecoderPacks, decode_cols_packed, window_flow};
use hark_model::cpu::encoder::{EncoderPacks, text_encoder_packed};
use hark_model::cpu::flow::FlowPacks;
use hark_model::cpu::noise::NoiseSource;
use hark_model::cpu::{NEVER, isa, pipeline, team};
use hark_voice::Voice;
use std::time::Instant;

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let voice = Voice::load_from(std::path::Path::new(&args[1]), None)?; // the voices folder
    let ids: Vec<i64> = std::fs::read_to_string(&args[2])?
        .split(|c: char| c == ',' || c.is_whitespace())
        .filter(|s| !s.is_empty())
        .map(str::parse)
        .collect::<Result<_, _>>()?;
    let runs: usize = args.get(3).map_or(Ok(7), |s| s.parse())?;
    // An optional instruction-set cap: avx2 or scalar.
    if let Some(level) = args.get(4) {
        let want = match level.as_str() {
            "avx2" => isa::Isa::Avx2,
            "scalar" => isa::Isa::Scalar,
            _ => isa::Isa::Avx512,
        };
        println!("kernels: {}", isa::cap(want).name());
    }
    let (w, d) = (&voice.weights, &voice.config.dims);
    let scales = voice.config.inference;
    let t0 = Instant::now();
    let enc_p = EncoderPacks::new(w, d)?;
    let flow_p = FlowPacks::new(w, d)?;
    let dec_w = DecoderPacks::with_winograd(w, d)?;
    println!(
        "Winograd packs (the decoder's) made in {:.1} ms",
        t0.elapsed().as_secs_f64() * 1e3
    );
    let dec_d = DecoderPacks::new(w, d)?;
    let ctx = d.flow_decoder_receptive_frames();
    // STAGE_THREADS (e.g. `1` or `1,2`) picks the pools; both by default.
    let counts: Vec<usize> = std::env::var("STAGE_THREADS")
        .unwrap_or_else(|_| "1,2".into())
        .split(',')
        .map(str::parse)
        .collect::<Result<_, _>>()?;
    let pools: Vec<_> = counts
        .iter()
        .map(|&n| rayon::ThreadPoolBuilder::new().num_threads(n).build())
        .collect::<Result<_, _>>()?;
    // STAGE_KERNELS=winograd times only the packed kernels (for a profile of the engine's own).
    let arms: &[bool] = if std::env::var("STAGE_KERNELS").is_ok_and(|k| k == "winograd") {
        &[true]
    } else {
        &[false, true]
    };
    // [pool][packed][stage] → times
    let mut t = vec![vec![vec![Vec::new(); 4]; 2]; counts.len()];
    for _ in 0..runs {
        for (pi, pool) in pools.iter().enumerate() {
            for &packed in arms {
                let times = pool
                    .install(|| {
                        team::hot(
                            || -> Result<[f64; 4], Box<dyn std::error::Error + Send + Sync>> {
                                let t0 = Instant::now();
                                let enc = text_encoder_packed(
                                    w,
                                    d,
                                    enc_p.as_ref().filter(|_| packed),
                                    &ids,
                                )?;
                                let t1 = Instant::now();
                                let mut rng = NoiseSource::new(0);
                                let front =
                                    pipeline::frontend_after_encoder(w, d, enc, &scales, &mut rng)?;
                                let t2 = Instant::now();
                                let frames = front.z_p.dim(1);
                                let fp = packed.then_some(&flow_p);
                                let (z, keep) =
                                    window_flow(w, d, fp, &front.z_p, 0, frames, ctx, NEVER)?;
                                let t3 = Instant::now();
                                let dp = if packed { &dec_w } else { &dec_d };
                                let audio = decode_cols_packed(w, d, dp, &z, keep, NEVER)?;
                                let t4 = Instant::now();
                                std::hint::black_box(audio);
                                Ok([(t0, t1), (t1, t2), (t2, t3), (t3, t4)]
                                    .map(|(a, b)| (b - a).as_secs_f64() * 1e3))
                            },
                        )
                    })
                    .map_err(|e| e.to_string())?;
                for (v, x) in t[pi][packed as usize].iter_mut().zip(times) {
                    v.push(x);
                }
            }
        }
    }
    println!("{} ids, {runs} runs, medians in ms", ids.len());
    println!("| threads | kernels | encoder | durations + prior | flow | decoder | sum |");
    println!("|---|---|---|---|---|---|---|");
    for (pi, n) in counts.iter().enumerate() {
        for &packed in arms {
            let st = &mut t[pi][packed as usize];
            let m: Vec<f64> = st.iter_mut().map(|v| median(v)).collect();
            let how = if packed { "winograd" } else { "direct" };
            println!(
                "| {n} | {how} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} |",
                m[0],
                m[1],
                m[2],
                m[3],
                m.iter().sum::<f64>()
            );
        }
    }
    Ok(())
}

/// The binaries' allocator (mimalloc, `hark-alloc`), so that the stages allocate as they do in
/// the CLI.
#[global_allocator]
static ALLOC: hark_alloc::Allocator = hark_alloc::Allocator;
