//! Every CUDA kernel Hark launches, named once (in the style of candle's kernel modules): the
//! [`Module`]s, one per kernel file in the top-level `kernels/` plus the persistent engine's
//! module made of all of them, and [`KERNELS`], each entry point with its module and the
//! dynamic shared memory it is prepared for. The graph path loads [`Module::GRAPH`] from this
//! table, the persistent module's file list is [`Module::GRAPH`] then `persistent.cu`, and the
//! disk cache names each cubin after [`Module::name`] and keys it by the module's text
//! ([`super::compile::cubin`]); the model's module cache (`modules.rs`) compiles each once
//! and hands its kernels out.
//!
//! A new kernel: write it in its stage's `.cu` file, add an [`Entry`] and its row here, and
//! launch it from the stage's host file in `stages/`.

use super::stages::{decoder, duration, encoder, flow};
use hark_voice::ModelDims;
use std::borrow::Cow;

/// One compilation unit.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Module {
    Encoder,
    Duration,
    Flow,
    Decoder,
    /// Every stage file, then `persistent.cu`, compiled once more with `HARK_PERSISTENT_MODULE`
    /// defined (which leaves out the graph path's kernels): the stage code is the same text.
    Persistent,
}

impl Module {
    pub const ALL: [Module; 5] = [
        Self::Encoder,
        Self::Duration,
        Self::Flow,
        Self::Decoder,
        Self::Persistent,
    ];
    /// The stage families in data-flow order: the graph path's modules, compiled at start.
    pub const GRAPH: [Module; 4] = [Self::Encoder, Self::Duration, Self::Flow, Self::Decoder];

    /// The kernel file's stem (`kernels/<name>.cu`), NVRTC's program name and the cubin's
    /// name in the disk cache.
    pub const fn name(self) -> &'static str {
        match self {
            Self::Encoder => "encoder",
            Self::Duration => "duration",
            Self::Flow => "flow",
            Self::Decoder => "decoder",
            Self::Persistent => "persistent",
        }
    }

    /// The kernel file, embedded in the binary.
    pub const fn file(self) -> &'static str {
        match self {
            Self::Encoder => include_str!("../../../../kernels/encoder.cu"),
            Self::Duration => include_str!("../../../../kernels/duration.cu"),
            Self::Flow => include_str!("../../../../kernels/flow.cu"),
            Self::Decoder => include_str!("../../../../kernels/decoder.cu"),
            Self::Persistent => include_str!("../../../../kernels/persistent.cu"),
        }
    }

    /// What NVRTC compiles, before the defines and with `common.cuh` still to be inlined: the
    /// file itself, or for the persistent module every stage file then persistent.cu, with
    /// common.cuh included once.
    pub fn text(self) -> Cow<'static, str> {
        if self != Self::Persistent {
            return Cow::Borrowed(self.file());
        }
        let mut s = String::from("#include \"common.cuh\"\n");
        for m in Self::GRAPH.into_iter().chain([Self::Persistent]) {
            s.push_str(&format!("\n// ---- {}.cu\n", m.name()));
            s.push_str(&m.file().replace("#include \"common.cuh\"", ""));
        }
        Cow::Owned(s)
    }

    /// The module's entry points.
    pub fn kernels(self) -> impl Iterator<Item = &'static KernelDef> {
        KERNELS.iter().filter(move |k| k.module == self)
    }
}

/// An entry point, by what it does; [`Entry::def`] is its row in [`KERNELS`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Entry {
    EncEmbed,
    EncAttn,
    EncFfn,
    Sdp,
    FlowCoop,
    FlowConvProbe,
    DecConv,
    DecUp,
    DecRb,
    DecPost,
    ConvProbe,
    Persistent,
    BarrierProbe,
}

impl Entry {
    pub fn def(self) -> &'static KernelDef {
        &KERNELS[self as usize]
    }
}

/// What a kernel is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// A graph-path stage; the persistent kernel runs its body too.
    Stage,
    /// Tests and benchmarks only.
    Probe,
    /// The persistent engine itself.
    Engine,
}

/// Dynamic shared memory a kernel is prepared for (its launches may ask for less).
#[derive(Clone, Copy, Debug)]
pub enum Smem {
    Fixed(usize),
    /// Set by the voice's dimensions (tile sizes times channels).
    Dims(fn(&ModelDims) -> usize),
}

impl Smem {
    pub fn bytes(self, d: &ModelDims) -> usize {
        match self {
            Self::Fixed(b) => b,
            Self::Dims(f) => f(d),
        }
    }
}

/// One entry point: its name in the `.cu` file, its module, its shared memory and role.
#[derive(Debug)]
pub struct KernelDef {
    pub entry: Entry,
    pub name: &'static str,
    pub module: Module,
    pub smem: Smem,
    pub role: Role,
}

/// Dynamic shared memory of the convolution-core probes (`conv_probe`, `flow_conv_probe`).
pub const PROBE_SMEM: usize = 96 * 1024;

const fn k(entry: Entry, name: &'static str, module: Module, smem: Smem, role: Role) -> KernelDef {
    KernelDef {
        entry,
        name,
        module,
        smem,
        role,
    }
}

/// Every entry point, in [`Entry`] order.
#[rustfmt::skip]
pub static KERNELS: [KernelDef; 13] = {
    use Entry as E;
    use Module as M;
    use Role::*;
    use Smem::*;
    [
        k(E::EncEmbed,      "enc_embed",       M::Encoder,    Fixed(0),                  Stage),
        k(E::EncAttn,       "enc_attn",        M::Encoder,    Fixed(encoder::ATTN_SMEM), Stage),
        k(E::EncFfn,        "enc_ffn",         M::Encoder,    Dims(encoder::ffn_smem),   Stage),
        k(E::Sdp,           "sdp",             M::Duration,   Dims(duration::sdp_smem),  Stage),
        k(E::FlowCoop,      "flow_coop",       M::Flow,       Dims(flow::flow_smem),     Stage),
        k(E::FlowConvProbe, "flow_conv_probe", M::Flow,       Fixed(PROBE_SMEM),         Probe),
        k(E::DecConv,       "dec_conv",        M::Decoder,    Dims(decoder::conv_smem),  Stage),
        k(E::DecUp,         "dec_up",          M::Decoder,    Dims(decoder::up_smem),    Stage),
        k(E::DecRb,         "dec_rb",          M::Decoder,    Dims(decoder::rb_smem),    Stage),
        k(E::DecPost,       "dec_post",        M::Decoder,    Dims(decoder::post_smem),  Stage),
        k(E::ConvProbe,     "conv_probe",      M::Decoder,    Fixed(PROBE_SMEM),         Probe),
        k(E::Persistent,    "persistent",      M::Persistent, Dims(persistent_smem),     Engine),
        k(E::BarrierProbe,  "barrier_probe",   M::Persistent, Dims(persistent_smem),     Probe),
    ]
};

/// The persistent kernel runs every stage in one launch: the most any stage kernel needs.
fn persistent_smem(d: &ModelDims) -> usize {
    KERNELS
        .iter()
        .filter(|k| k.role == Role::Stage)
        .map(|k| k.smem.bytes(d))
        .max()
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_is_in_entry_order_and_every_name_is_in_its_file() {
        for (i, k) in KERNELS.iter().enumerate() {
            assert_eq!(k.entry as usize, i, "{} out of order", k.name);
            assert_eq!(k.entry.def().name, k.name);
            // `name(` after a space or at a line start, or `MACRO(name, …)`.
            let text = k.module.text();
            let declared = [" ", "\n"]
                .iter()
                .any(|p| text.contains(&format!("{p}{}(", k.name)))
                || text.contains(&format!("({},", k.name));
            assert!(
                declared,
                "{} is not declared in {}.cu",
                k.name,
                k.module.name()
            );
        }
        for m in Module::ALL {
            assert!(m.kernels().next().is_some(), "{} has no kernel", m.name());
        }
        let mut names: Vec<_> = KERNELS.iter().map(|k| k.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), KERNELS.len(), "a kernel named twice");
    }

    #[test]
    fn the_persistent_module_holds_every_stage_file_once() {
        let text = Module::Persistent.text();
        assert_eq!(text.matches("#include \"common.cuh\"").count(), 1);
        for m in Module::GRAPH {
            assert!(text.contains(m.file().replace("#include \"common.cuh\"", "").trim()));
        }
    }
}
