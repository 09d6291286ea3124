//! The persistent engine (issue 7) against the graph path: the same stage code under the
//! other scheduler, so durations must be identical and audio equal up to float noise, with
//! no host launch or copy on the persistent path; its stage profile; the hand-over of jobs
//! too long for it; and the smallest whole life of the kernel for compute-sanitizer. (Both
//! engines against the CPU reference: the chunk cases of `backend_ops`.) Without a CUDA
//! device every test prints `skipped: no CUDA device` and passes.

use super::common::*;
use hark_model::backend::Backend;
use hark_model::gpu::device::{COPIES, LAUNCHES};
use hark_model::gpu::persist::PersistentBackend;
use hark_model::gpu::{CudaBackend, GpuModel};
use hark_voice::Scales;
use hark_voice::tensor::rel_l2;
use rand::Rng;
use std::sync::atomic::Ordering::Relaxed;
use std::time::Instant;

type Case = (Vec<i64>, Scales, u64);

pub fn noisy() -> Scales {
    Scales {
        noise_scale: 0.667,
        length_scale: 1.0,
        noise_w: 0.8,
    }
}

pub fn quiet() -> Scales {
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
    let (d, w, mut rng) = random_model(21);
    let graph = CudaBackend::from_model(GpuModel::new(&w, &d, &gpu_options()).unwrap()).unwrap();
    let quick = quick();
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
    let (d, w, mut rng) = random_model(seed);
    let graph = CudaBackend::from_model(GpuModel::new(&w, &d, &gpu_options()).unwrap()).unwrap();
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
    let Some(voice) = real_voice() else {
        return;
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
    let graph = CudaBackend::new(&voice, &gpu_options()).expect("CUDA backend");
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
