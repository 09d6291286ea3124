//! The persistent kernel's protocol: word indices and sizes of the shared memory areas and
//! of the argument table. `kernels/persistent.cu` gets every one of them as a `-D` define
//! (see [`defines`]), so the host and the device read the same list.

use hark_voice::ModelDims;

/// Declares `pub const NAME: usize = value;` items and a list of `(prefix + NAME, value)`
/// for the kernel's defines.
macro_rules! indices {
    ($list:ident, $prefix:literal; $($name:ident = $v:expr),* $(,)?) => {
        $(pub const $name: usize = $v;)*
        pub const $list: &[(&str, usize)] = &[$((concat!($prefix, stringify!($name)), $name)),*];
    };
}

/// Phoneme ids per job (the CUDA encoder itself takes more; longer jobs use the graph path).
pub const TMAX: usize = 4096;
/// Frames per job (95 s of audio at Joe's rate).
pub const FMAX: usize = 8192;
/// Largest chunk the kernel decodes at once (frames).
pub const STEP_MAX: usize = 256;
/// Output ring slots.
pub const NSLOT: usize = 4;

/// Control words (u32). The host writes the first `HOST_WORDS`; the device writes from
/// `FRONT` on, in cache lines of their own.
pub mod ctl {
    indices!(DEFINES, "C_";
        JOB = 0,        // last published job
        STOP = 1,       // jobs up to this one are abandoned (stop/flush)
        NOISE = 2,      // the prior noise of this job is complete
        STEP = 3,       // frames per chunk
        CONSUMED = 4,   // ring slots the host has taken
        SEEK_GEN = 5,   // bumped to restart the walk at SEEK_FRAME
        SEEK_FRAME = 6,
        PAUSE = 7,      // 1: no chunk starts
        SHUTDOWN = 8,   // 1: the kernel returns
        WANT = 9,       // the host needs frames up to here
        AHEAD = 10,     // and the kernel may run this many frames beyond (speculation)
        PROFILE = 11,   // 1: the kernel stamps its stages into the profile area (benchmarks)
        HOST_WORDS = 12,
        FRONT = 32,     // durations of this job are in its slot
        PRODUCED = 33,  // ring slots filled
        DONE = 34,      // jobs up to this one are finished with
        BEAT = 35,      // bumped while the kernel polls
        STATE = 36,     // 1 running, 2 returned
        ERR = 37,       // a job the kernel cannot walk (too many frames)
        WORDS = 64,
    );
}

/// Job slot words (u32 / i32 / f32).
pub mod job {
    use super::TMAX;
    indices!(DEFINES, "J_";
        SEQ = 0,
        T = 1,
        LS = 2,       // length scale (f32 bits)
        NS = 3,       // noise scale (f32 bits)
        FRAMES = 4,   // written by the device
        GEN = 5,      // walk generation the job starts with
        IDS = 8,
        ZSDP = 8 + TMAX,      // [2, T] SDP noise (already times noise_w)
        DUR = 8 + 3 * TMAX,   // written by the device
        EPS = 8 + 4 * TMAX,   // [C, F] prior noise, written by the host
    );
}

/// Output ring slot words: header, then PCM (f32).
pub mod ring {
    indices!(DEFINES, "R_"; JOB = 0, GEN = 1, START = 2, END = 3, PCM = 4);
}

/// The stage profile (mapped, after the ring): the leader thread appends `(stage, ns)` pairs
/// (ns since it took the job, from `%globaltimer`) after each grid barrier of a job whose
/// `ctl::PROFILE` was set, and the count to `N`.
pub mod prof {
    indices!(DEFINES, "PF_"; N = 0, E = 1, MAX = 96, WORDS = 196);
}

/// Stage labels of the profile, in the order a job's front half and first chunk pass them;
/// each entry's time is the time since the previous entry.
pub mod stage {
    indices!(DEFINES, "PS_";
        DISPATCH = 1,   // job taken → every block past the dispatch barrier
        INPUTS = 2,     // ids and SDP noise from the job slot to device memory
        EMBED = 3,
        ATTN = 4,       // each encoder layer's attention
        FFN = 5,        // each encoder layer's feed-forward
        SDP = 6,        // duration predictor, durations and prefix sum
        FRONT_OUT = 7,  // durations published
        CHUNK_WAIT = 8, // → the chunk is dispatched (the host's prior noise, the decision)
        FLOW = 9,
        PRE = 10,       // decoder's first conv
        UP = 11,        // each upsampling
        RB = 12,        // each stage's resblocks
        POST = 13,      // last conv into the ring slot, fence, barrier
    );
    /// A readable name per label.
    pub fn name(label: u32) -> &'static str {
        match label as usize {
            DISPATCH => "dispatch",
            INPUTS => "inputs to device",
            EMBED => "encoder: embedding",
            ATTN => "encoder: attention",
            FFN => "encoder: feed-forward",
            SDP => "duration predictor",
            FRONT_OUT => "durations published",
            CHUNK_WAIT => "wait for the chunk",
            FLOW => "flow",
            PRE => "decoder: first conv",
            UP => "decoder: upsampling",
            RB => "decoder: resblocks",
            POST => "decoder: last conv + publish",
            _ => "unknown",
        }
    }
}

/// The kernel's decision words (device memory).
pub mod dispatch {
    indices!(DEFINES, "D_";
        OP = 0, SLOT = 1, T = 2, F = 3, NS = 4, START = 5, END = 6, RING = 7, JOB = 8, GEN = 9,
        WORDS = 10,
    );
}

/// The argument table (u64): device pointers, then small integers.
pub mod args {
    pub const ENC_STRIDE: usize = 14;
    pub const MAX_LAYERS: usize = 16;
    pub const STAGE_STRIDE: usize = 13;
    pub const MAX_STAGES: usize = 8;
    indices!(DEFINES, "PA_";
        CTL = 0, JOBS = 1, RING = 2, BAR = 3, DISPATCH = 4,
        X = 5, QKV = 6, HBUF = 7, MP = 8, LOGSP = 9, A = 10, B = 11, G = 12, Z2 = 13,
        LOGW = 14, DUR = 15, OFF = 16,
        Z = 17, H0 = 18, H1 = 19, ACTS = 20, SKIP = 21, PRE = 22,
        EMB = 23, PROJ_W = 24, PROJ_B = 25, SDP_TABLE = 26, FLOW_TABLE = 27,
        PRE_W = 28, PRE_B = 29, POST_W = 30, POST_B = 31,
        PRE_K = 32, POST_K = 33, UP0 = 34, NLAYERS = 35, NSTAGES = 36, CONTEXT = 37, SMS = 38,
        IDS = 39, PROF = 40,
        // per encoder layer: wqkv bqkv ek ev wo bo g1 b1n w1 b1 w2 b2 g2 b2n
        ENC = 41,
        // per decoder stage: up_w up_b rb_w_table rb_b_table up_buf rbs_buf
        //                    cin cout rate k pad tn hmax
        STAGE = 41 + ENC_STRIDE * MAX_LAYERS,
        WORDS = 41 + ENC_STRIDE * MAX_LAYERS + STAGE_STRIDE * MAX_STAGES,
        ENC_STRIDE_ = ENC_STRIDE,
        STAGE_STRIDE_ = STAGE_STRIDE,
    );
}

/// Words of one job slot for `ci` prior channels.
pub fn job_words(ci: usize) -> usize {
    job::EPS + ci * FMAX
}

/// Words of one ring slot for `hop` samples per frame.
pub fn ring_words(hop: usize) -> usize {
    ring::PCM + STEP_MAX * hop
}

/// First word of the profile area.
pub fn prof_base(ci: usize, hop: usize) -> usize {
    ctl::WORDS + 2 * job_words(ci) + NSLOT * ring_words(hop)
}

/// Words of the whole mapped area: control, two job slots, the ring, the profile.
pub fn mapped_words(ci: usize, hop: usize) -> usize {
    prof_base(ci, hop) + prof::WORDS
}

/// The protocol as defines for kernels/persistent.cu.
pub fn defines(d: &ModelDims) -> Vec<(String, String)> {
    let mut v: Vec<(String, String)> = [
        ctl::DEFINES,
        job::DEFINES,
        ring::DEFINES,
        prof::DEFINES,
        stage::DEFINES,
        dispatch::DEFINES,
        args::DEFINES,
    ]
    .iter()
    .flat_map(|l| l.iter())
    .map(|(k, n)| (k.trim_end_matches('_').to_string(), n.to_string()))
    .collect();
    for (k, n) in [
        ("PK_TMAX", TMAX),
        ("PK_FMAX", FMAX),
        ("PK_STEP_MAX", STEP_MAX),
        ("PK_NSLOT", NSLOT),
        ("HOP", d.samples_per_frame()),
        ("J_WORDS", job_words(d.inter_channels)),
        ("R_WORDS", ring_words(d.samples_per_frame())),
    ] {
        v.push((k.to_string(), n.to_string()));
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpu::testutil::tiny_dims;

    #[test]
    fn areas_are_16_byte_aligned_and_disjoint() {
        let d = tiny_dims();
        let (ci, hop) = (d.inter_channels, d.samples_per_frame());
        assert_eq!(job_words(ci) % 4, 0);
        assert_eq!(ring_words(hop) % 4, 0);
        const {
            assert!(ctl::HOST_WORDS <= 16 && ctl::FRONT >= 16);
            assert!(job::IDS + TMAX <= job::ZSDP && job::ZSDP + 2 * TMAX <= job::DUR);
            assert!(job::DUR + TMAX <= job::EPS);
        }
        assert_eq!(prof::WORDS % 4, 0);
        const { assert!(prof::E + 2 * prof::MAX <= prof::WORDS) };
        assert_eq!(
            mapped_words(ci, hop),
            ctl::WORDS + 2 * job_words(ci) + NSLOT * ring_words(hop) + prof::WORDS
        );
    }

    #[test]
    fn defines_are_unique_and_complete() {
        let defs = defines(&tiny_dims());
        let mut names: Vec<&str> = defs.iter().map(|(k, _)| k.as_str()).collect();
        names.sort_unstable();
        let n = names.len();
        names.dedup();
        assert_eq!(names.len(), n, "duplicate define");
        for want in [
            "C_JOB",
            "C_HOST_WORDS",
            "J_EPS",
            "R_PCM",
            "D_WORDS",
            "PA_STAGE",
            "PA_ENC_STRIDE",
            "PF_MAX",
            "PS_POST",
        ] {
            assert!(names.contains(&want), "{want} missing");
        }
    }
}
