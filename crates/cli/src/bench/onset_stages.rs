//! The parts of the streaming onset, timed one by one in the same run as `hark bench --onset`:
//! what the engine does between `speak()` and the first audible sample at the callback, for
//! the first segment of the benchmark text, on the CPU reference.

use super::Stats;
use hark_audio::resample::StreamResampler;
use hark_engine::steps::StepPolicy;
use hark_model::cpu::{NEVER, decoder, encoder, flow, noise::NoiseSource, pipeline};
use hark_text::segment::Segmenter;
use hark_voice::Scales;
use hark_voice::Voice;
use serde::Serialize;
use std::time::Instant;

/// Median time of each part, in ms, and what it was measured on.
#[derive(Serialize, Clone, Debug)]
pub struct Stages {
    pub first_segment: String,
    pub ids: usize,
    pub frames: usize,
    pub first_step: usize,
    /// Normalising and segmenting the text up to its first segment (the phonemiser's work
    /// before segment 1).
    pub segment_ms: Stats,
    pub g2p_ms: Stats,
    pub encoder_ms: Stats,
    /// Duration predictor, expansion and prior noise.
    pub durations_ms: Stats,
    /// The first chunk's flow (its window includes the right context).
    pub flow_ms: Stats,
    pub decoder_ms: Stats,
    /// Resampling the first chunk to the device rate (the hand-off to the ring).
    pub resample_ms: Stats,
    /// The resampler's filter delay, dropped at the start of each run (so 0 is added).
    pub resampler_delay_compensated_ms: f64,
    /// Inaudible start of the segment's audio (before the first sample above −60 dBFS).
    pub lead_in_ms: f64,
    /// Anchor: the whole first segment synthesised without streaming (what a sentence-at-a-
    /// time engine needs before its first sample).
    pub whole_segment_ms: Stats,
    /// Encoder + durations again, each after 1 s without work: how much slower a start
    /// from idle is on this machine (caches, clocks) than the warm figures above.
    pub front_after_idle_ms: Stats,
}

impl Stages {
    /// Expected onset: the compute on the critical path plus half a callback period (the
    /// average wait for the next callback), plus the lead-in when it is played.
    pub fn expected_ms(&self, period_ms: f64, lead_in_played: bool) -> f64 {
        let compute = [
            &self.segment_ms,
            &self.g2p_ms,
            &self.encoder_ms,
            &self.durations_ms,
            &self.flow_ms,
            &self.decoder_ms,
            &self.resample_ms,
        ]
        .iter()
        .map(|s| s.median_ms)
        .sum::<f64>();
        compute + period_ms / 2.0 + if lead_in_played { self.lead_in_ms } else { 0.0 }
    }
}

/// Runs of the front half after an idle second.
const IDLE_RUNS: usize = 5;

fn ms_since(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1e3
}

/// Times each part `runs` times (after one warm-up) on the first segment of `text`.
pub fn measure(voice: &Voice, text: &str, device_rate: u32, runs: usize) -> anyhow::Result<Stages> {
    let (w, d, cfg) = (&voice.weights, &voice.config.dims, &voice.config);
    let scales: Scales = cfg.inference;
    let segmenter = Segmenter::default();
    let step = StepPolicy::default().start;
    let ctx = d.flow_decoder_receptive_frames();
    // Made once, as the CPU backend makes them per voice.
    let flow_packs = flow::FlowPacks::new(w, d)?;
    let enc_packs = encoder::EncoderPacks::new(w, d)?;
    let dec_packs = decoder::DecoderPacks::with_winograd(w, d)?;
    let mut t: [Vec<f64>; 8] = Default::default();
    let mut last = None;
    for run in 0..=runs {
        let t0 = Instant::now();
        let first = segmenter
            .iter(text, true)
            .next()
            .ok_or_else(|| anyhow::anyhow!("the benchmark text has no segment"))?;
        let seg_ms = ms_since(t0);
        let t0 = Instant::now();
        let sentences =
            hark_text::text_to_ids(&first.text, &cfg.espeak_voice, &cfg.phoneme_id_map)?;
        let g2p_ms = ms_since(t0);
        let ids = &sentences
            .first()
            .ok_or_else(|| anyhow::anyhow!("the first segment has no sentence"))?
            .ids;
        let t0 = Instant::now();
        let enc = encoder::text_encoder_packed(w, d, enc_packs.as_ref(), ids)?;
        let enc_ms = ms_since(t0);
        let t0 = Instant::now();
        let mut rng = NoiseSource::new(0);
        let front = pipeline::frontend_after_encoder(w, d, enc, &scales, &mut rng)?;
        let dur_ms = ms_since(t0);
        let frames = front.z_p.dim(1);
        let n = step.min(frames);
        let t0 = Instant::now();
        let (z, keep) =
            decoder::window_flow(w, d, Some(&flow_packs), &front.z_p, 0, n, ctx, NEVER)?;
        let flow_ms = ms_since(t0);
        let t0 = Instant::now();
        let audio = decoder::decode_cols_packed(w, d, &dec_packs, &z, keep, NEVER)?;
        let dec_ms = ms_since(t0);
        let mut rs =
            StreamResampler::new(cfg.sample_rate, device_rate).map_err(anyhow::Error::msg)?;
        let mut out = Vec::with_capacity(audio.len() * 3);
        let t0 = Instant::now();
        rs.process(&audio, &mut out).map_err(anyhow::Error::msg)?;
        let rs_ms = ms_since(t0);
        let t0 = Instant::now();
        pipeline::synthesize(w, d, ids, &scales, 0)?;
        let whole_ms = ms_since(t0);
        if run == 0 {
            continue; // warm-up
        }
        for (v, x) in t.iter_mut().zip([
            seg_ms, g2p_ms, enc_ms, dur_ms, flow_ms, dec_ms, rs_ms, whole_ms,
        ]) {
            v.push(x);
        }
        // The lead-in is a property of the whole segment's audio, not of the chunk alone.
        let lead = audio
            .iter()
            .position(|s| s.abs() > 1e-3)
            .unwrap_or(audio.len());
        let delay = rs.compensated_delay() as f64 / device_rate as f64 * 1e3;
        last = Some((first.text.clone(), ids.len(), frames, n, lead, delay));
    }
    let (first_segment, n_ids, frames, first_step, lead, delay) =
        last.ok_or_else(|| anyhow::anyhow!("--runs must be at least 1"))?;
    let [seg, g2p, enc, dur, flow, dec, rs, whole] = t.map(Stats::of);
    let ids = hark_text::text_to_ids(&first_segment, &cfg.espeak_voice, &cfg.phoneme_id_map)?
        .swap_remove(0)
        .ids;
    let idle: Vec<f64> = (0..IDLE_RUNS)
        .map(|_| {
            std::thread::sleep(std::time::Duration::from_secs(1));
            let t0 = Instant::now();
            pipeline::frontend(w, d, &ids, &scales, &mut NoiseSource::new(0)).map(|_| ms_since(t0))
        })
        .collect::<Result<_, _>>()?;
    Ok(Stages {
        first_segment,
        ids: n_ids,
        frames,
        first_step,
        segment_ms: seg,
        g2p_ms: g2p,
        encoder_ms: enc,
        durations_ms: dur,
        flow_ms: flow,
        decoder_ms: dec,
        resample_ms: rs,
        resampler_delay_compensated_ms: delay,
        lead_in_ms: lead as f64 / cfg.sample_rate as f64 * 1e3,
        whole_segment_ms: whole,
        front_after_idle_ms: Stats::of(idle),
    })
}

pub fn print(s: &Stages, period_ms: f64) {
    println!(
        "first segment: {:?} ({} ids, {} frames; first step {} frames)",
        s.first_segment, s.ids, s.frames, s.first_step
    );
    println!("| part of the onset | median ms | P99 ms |");
    println!("|---|---|---|");
    let row = |name: &str, st: &Stats| {
        println!("| {name} | {:.2} | {:.2} |", st.median_ms, st.p99_ms);
    };
    row("normalise + segment the text", &s.segment_ms);
    row("text → phoneme ids (espeak-ng)", &s.g2p_ms);
    row("encoder", &s.encoder_ms);
    row("duration predictor + prior", &s.durations_ms);
    row(
        &format!("flow, first chunk ({} frames + context)", s.first_step),
        &s.flow_ms,
    );
    row("decoder, first chunk", &s.decoder_ms);
    row("resample the chunk (hand-off to the ring)", &s.resample_ms);
    println!(
        "| resampler delay ({:.2} ms, dropped at the start of a run) | 0 | 0 |",
        s.resampler_delay_compensated_ms
    );
    println!(
        "| wait for the next callback (half a {period_ms:.1} ms period) | {:.2} | |",
        period_ms / 2.0
    );
    println!(
        "| lead-in before the voice (skipped unless kept) | {:.2} | |",
        s.lead_in_ms
    );
    println!(
        "| **expected onset** (sum; lead-in skipped / kept) | {:.1} / {:.1} | |",
        s.expected_ms(period_ms, false),
        s.expected_ms(period_ms, true)
    );
    row(
        "anchor: whole first segment, not streamed",
        &s.whole_segment_ms,
    );
    row(
        &format!(
            "encoder + durations after 1 s idle (warm: {:.1})",
            s.encoder_ms.median_ms + s.durations_ms.median_ms
        ),
        &s.front_after_idle_ms,
    );
}
