//! Kernel sources (embedded in the binary, listed in [`super::registry`]), specialised to a
//! voice by `-D` defines and compiled by NVRTC to a cubin for this GPU. Cubins are cached on
//! disk under `$XDG_CACHE_HOME/hark/kernels`, keyed by source, defines, architecture and NVRTC
//! version, so a second start skips compilation; an entry carries its length and SHA-256, so
//! a truncated or damaged one is compiled again.

use super::GpuError;
use super::options::Mma;
use super::registry::Module;
use cudarc::nvrtc::{result as nv, sys as nvsys};
use hark_voice::ModelDims;
use sha2::{Digest, Sha256};
use std::ffi::CString;
use std::path::{Path, PathBuf};

const COMMON: &str = include_str!("../../../../kernels/common.cuh");
/// Whether the voice's shape is one these kernels are written for.
pub fn check_dims(d: &ModelDims) -> Result<(), String> {
    let nd = d.resblock_dilation_sizes.first().map_or(0, Vec::len);
    let ok = d.n_heads > 0
        && d.hidden_channels.is_multiple_of(d.n_heads)
        && d.inter_channels.is_multiple_of(2)
        && d.ffn_kernel_size % 2 == 1
        && d.dp_kernel_size % 2 == 1
        && d.flow_kernel_size % 2 == 1
        && d.hidden_channels.is_multiple_of(64)
        && d.flow_n_couplings.is_multiple_of(2)
        && d.filter_channels.is_multiple_of(128)
        && nd > 0
        && d.resblock_dilation_sizes.iter().all(|v| v.len() == nd)
        && d.resblock_kernel_sizes.len() == d.resblock_dilation_sizes.len()
        && d.dp_num_bins > 0;
    if ok {
        Ok(())
    } else {
        Err("this voice's architecture is not supported by the CUDA kernels".into())
    }
}

/// The compile-time constants for one voice, precision and convolution mode.
pub fn defines(d: &ModelDims, f16: bool, mma: Mma) -> Vec<(String, String)> {
    let list = |v: &[usize]| {
        format!(
            "{{{}}}",
            v.iter()
                .map(|x| x.to_string())
                .collect::<Vec<_>>()
                .join(",")
        )
    };
    let dils: Vec<usize> = d
        .resblock_dilation_sizes
        .iter()
        .flatten()
        .copied()
        .collect();
    let mut v: Vec<(String, String)> = [
        ("H", d.hidden_channels.to_string()),
        ("NHEADS", d.n_heads.to_string()),
        ("KCH", (d.hidden_channels / d.n_heads).to_string()),
        ("WIN", d.window_size.to_string()),
        ("FFN_F", d.filter_channels.to_string()),
        ("FFN_K", d.ffn_kernel_size.to_string()),
        ("CI", d.inter_channels.to_string()),
        ("DPF", d.dp_filter_channels.to_string()),
        ("DPK", d.dp_kernel_size.to_string()),
        ("DDS_L", d.dp_ddsconv_layers.to_string()),
        ("NFLOWS", d.dp_flow_indices.len().to_string()),
        ("NBINS", d.dp_num_bins.to_string()),
        ("TAIL_BOUND", format!("{:e}f", d.dp_tail_bound)),
        ("WN_K", d.flow_kernel_size.to_string()),
        ("WN_L", d.flow_wn_layers.to_string()),
        ("WN_RATE", d.flow_dilation_rate.max(1).to_string()),
        ("FLOW_NC", d.flow_n_couplings.to_string()),
        ("RB_N", d.resblock_kernel_sizes.len().to_string()),
        ("RB_ND", d.resblock_dilation_sizes[0].len().to_string()),
        ("RB_KS", list(&d.resblock_kernel_sizes)),
        ("RB_DS", list(&dils)),
        // The duration bounds are the CPU reference's, so both backends cut alike.
        (
            "MAX_TOKEN_FRAMES",
            crate::cpu::durations::MAX_TOKEN_FRAMES.to_string(),
        ),
        (
            "MAX_SENTENCE_FRAMES",
            crate::cpu::durations::MAX_SENTENCE_FRAMES.to_string(),
        ),
        ("LRELU", "1e-1f".into()),
        ("LRELU_POST", "1e-2f".into()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    if f16 {
        v.push(("HARK_F16".into(), "1".into()));
        if mma != Mma::Off {
            v.push(("HARK_MMA".into(), "1".into()));
        }
        if mma == Mma::SplitFlow {
            v.push(("HARK_MMA_FLOW_SPLIT".into(), "1".into()));
        }
    }
    v
}

/// The defines of module `m`: the voice's constants, and for the persistent module also the
/// protocol's layout and `HARK_PERSISTENT_MODULE` (which leaves out the graph path's kernels).
pub fn module_defines(m: Module, d: &ModelDims, f16: bool, mma: Mma) -> Vec<(String, String)> {
    let mut v = defines(d, f16, mma);
    if m == Module::Persistent {
        v.extend(super::persist::layout::defines(d));
        v.push(("HARK_PERSISTENT_MODULE".into(), "1".into()));
    }
    v
}

/// Full source of one kernel file: defines, then the file with common.cuh inlined (NVRTC
/// gets no include path).
pub fn source(file: &str, defs: &[(String, String)]) -> String {
    let mut s = String::new();
    for (k, v) in defs {
        s.push_str(&format!("#define {k} {v}\n"));
    }
    s.push_str(&file.replace("#include \"common.cuh\"", COMMON));
    s
}

pub fn nvrtc_version() -> Result<(i32, i32), GpuError> {
    let (mut a, mut b) = (0, 0);
    // SAFETY: the library was found by `unavailable_reason`; two out-parameters.
    let r = unsafe { nvsys::nvrtcVersion(&mut a, &mut b) };
    if r != nvsys::nvrtcResult::NVRTC_SUCCESS {
        return Err(GpuError::Compile(format!("nvrtcVersion failed: {r:?}")));
    }
    Ok((a, b))
}

fn cache_dir() -> PathBuf {
    dirs::cache_dir()
        .unwrap_or_else(std::env::temp_dir)
        .join("hark")
        .join("kernels")
}

/// The oldest GPU the kernels run on: `mma.sync` m16n8k16 on f16 and `cvt.rn.f16x2.f32` need
/// Ampere (compute capability 8.0).
pub const MIN_ARCH: i32 = 80;

/// The architectures Hark's kernels are checked to compile for (`kernels_compile_for_every_arch`):
/// Ampere (A100, RTX 30), Ada (RTX 40), Hopper, Blackwell data centre and consumer (RTX 50).
pub const PORTABLE_ARCHS: [i32; 6] = [80, 86, 89, 90, 100, 120];

/// What NVRTC builds for one GPU.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    /// Machine code for `sm_N`: loads at once.
    Cubin(i32),
    /// PTX for `compute_N`, which the driver compiles for the GPU when the module loads (a GPU
    /// newer than this NVRTC knows: PTX runs on any later architecture).
    Ptx(i32),
}

impl Target {
    fn nvrtc_option(self) -> String {
        match self {
            Target::Cubin(a) => format!("--gpu-architecture=sm_{a}"),
            Target::Ptx(a) => format!("--gpu-architecture=compute_{a}"),
        }
    }
}

/// The build for a GPU of compute capability `cc` from an NVRTC that can build `supported`
/// (`sm_N` numbers; empty if it could not say): the GPU's own machine code when NVRTC knows
/// its architecture (and `force_ptx` is off), else that of an older one of the same family
/// (a cubin runs on later minor versions of its major one), else PTX of the newest
/// architecture at or below the GPU's. A GPU older than [`MIN_ARCH`], or one that NVRTC
/// cannot build for at all, is an error that says so (the engine then speaks on the CPU).
pub fn choose_target(cc: (i32, i32), supported: &[i32], force_ptx: bool) -> Result<Target, String> {
    let dev = cc.0 * 10 + cc.1;
    if dev < MIN_ARCH {
        return Err(format!(
            "this GPU has compute capability {}.{}; Hark's CUDA kernels need {}.{} (Ampere) or newer",
            cc.0,
            cc.1,
            MIN_ARCH / 10,
            MIN_ARCH % 10
        ));
    }
    if supported.is_empty() {
        // An NVRTC that cannot list its architectures: ask for the GPU's own.
        return Ok(if force_ptx {
            Target::Ptx(dev)
        } else {
            Target::Cubin(dev)
        });
    }
    let best = supported
        .iter()
        .copied()
        .filter(|&a| (MIN_ARCH..=dev).contains(&a))
        .max()
        .ok_or_else(|| {
            format!(
                "this NVRTC builds for sm_{}…sm_{}, none of which runs on this GPU (sm_{dev}); \
                 install a CUDA toolkit that knows it",
                supported.iter().min().unwrap_or(&0),
                supported.iter().max().unwrap_or(&0)
            )
        })?;
    Ok(if !force_ptx && best / 10 == dev / 10 {
        Target::Cubin(best)
    } else {
        Target::Ptx(best)
    })
}

/// The `sm_N` architectures this NVRTC can build for (empty if it cannot say).
pub fn supported_archs() -> Vec<i32> {
    let mut n = 0;
    // SAFETY: one out-parameter, then a buffer of the size it gave.
    unsafe {
        if nvsys::nvrtcGetNumSupportedArchs(&mut n) != nvsys::nvrtcResult::NVRTC_SUCCESS || n <= 0 {
            return Vec::new();
        }
        let mut v = vec![0; n as usize];
        if nvsys::nvrtcGetSupportedArchs(v.as_mut_ptr()) != nvsys::nvrtcResult::NVRTC_SUCCESS {
            return Vec::new();
        }
        v
    }
}

/// The target for a GPU of compute capability `cc` from the NVRTC that is loaded.
pub fn target_for(cc: (i32, i32), force_ptx: bool) -> Result<Target, GpuError> {
    choose_target(cc, &supported_archs(), force_ptx).map_err(GpuError::Compile)
}

/// Compiles (or loads from the disk cache, unless `disk_cache` is off) one kernel file for
/// `target`. Returns the module image (a cubin, or NUL-terminated PTX) and whether it came
/// from the cache.
pub fn cubin(
    name: &str,
    file: &str,
    defs: &[(String, String)],
    target: Target,
    disk_cache: bool,
) -> Result<(Vec<u8>, bool), GpuError> {
    let src = source(file, defs);
    let opts = vec![
        target.nvrtc_option(),
        "-std=c++17".to_string(),
        "-lineinfo".to_string(),
    ];
    let ver = nvrtc_version()?;
    let mut h = Sha256::new();
    h.update(src.as_bytes());
    h.update(opts.join(" ").as_bytes());
    h.update(format!("nvrtc {}.{}", ver.0, ver.1).as_bytes());
    let key: String = h
        .finalize()
        .iter()
        .take(16)
        .map(|b| format!("{b:02x}"))
        .collect();
    let path = cache_dir().join(format!("{name}-{key}.cubin"));
    cached_or_built(&path, disk_cache, || {
        let t0 = std::time::Instant::now();
        let bin = compile(name, &src, &opts)?;
        tracing::debug!(
            "NVRTC: {name} in {:.0} ms ({} KB cubin)",
            t0.elapsed().as_secs_f64() * 1e3,
            bin.len() / 1024
        );
        Ok(bin)
    })
}

/// A cache entry: this tag, the cubin's length (u64, little-endian) and SHA-256, the cubin.
/// A truncated, damaged or foreign file fails the check and is compiled again.
const CACHE_MAGIC: &[u8; 8] = b"HARKCUB1";
const CACHE_HEADER: usize = 8 + 8 + 32;

fn seal(bin: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(CACHE_HEADER + bin.len());
    out.extend_from_slice(CACHE_MAGIC);
    out.extend_from_slice(&(bin.len() as u64).to_le_bytes());
    out.extend_from_slice(&Sha256::digest(bin));
    out.extend_from_slice(bin);
    out
}

/// The cubin in a cache entry, if the entry is whole.
fn unseal(entry: &[u8]) -> Option<&[u8]> {
    let (head, bin) = entry.split_at_checked(CACHE_HEADER)?;
    let len = u64::from_le_bytes(head[8..16].try_into().ok()?);
    let whole = &head[..8] == CACHE_MAGIC
        && len == bin.len() as u64
        && !bin.is_empty()
        && Sha256::digest(bin).as_slice() == &head[16..];
    whole.then_some(bin)
}

/// The cubin from the cache entry at `path` when it is whole (and `disk_cache` is on), else
/// `build()`'s, which is then written to the entry (temp file and rename). Returns whether it
/// came from the cache.
fn cached_or_built(
    path: &Path,
    disk_cache: bool,
    build: impl FnOnce() -> Result<Vec<u8>, GpuError>,
) -> Result<(Vec<u8>, bool), GpuError> {
    if disk_cache && let Ok(entry) = std::fs::read(path) {
        if let Some(bin) = unseal(&entry) {
            return Ok((bin.to_vec(), true));
        }
        tracing::info!(
            "kernel cache entry {} is damaged; compiling again",
            path.display()
        );
    }
    let bin = build()?;
    // The cache is an optimisation: failing to write it is not an error.
    if let Some(dir) = path.parent()
        && std::fs::create_dir_all(dir).is_ok()
    {
        let tmp = path.with_extension(format!("tmp{}", std::process::id()));
        if std::fs::write(&tmp, seal(&bin)).is_ok() {
            let _ = std::fs::rename(&tmp, path);
        }
    }
    Ok((bin, false))
}

/// The compiled image of `prog` (its `kind`, for messages) through NVRTC's size and copy calls.
///
/// # Safety
/// `prog` is a program that compiled.
unsafe fn image(
    name: &str,
    kind: &str,
    prog: nvsys::nvrtcProgram,
    size: unsafe fn(nvsys::nvrtcProgram, *mut usize) -> nvsys::nvrtcResult,
    copy: unsafe fn(nvsys::nvrtcProgram, *mut u8) -> nvsys::nvrtcResult,
) -> Result<Vec<u8>, GpuError> {
    let ok = nvsys::nvrtcResult::NVRTC_SUCCESS;
    let mut n = 0usize;
    // SAFETY: the caller's program; one out-parameter, then a buffer of that size.
    let r = unsafe { size(prog, &mut n) };
    if r != ok || n <= 1 {
        return Err(GpuError::Compile(format!("{name}: no {kind} ({r:?})")));
    }
    let mut bin = vec![0u8; n];
    // SAFETY: as above.
    let r = unsafe { copy(prog, bin.as_mut_ptr()) };
    if r != ok {
        return Err(GpuError::Compile(format!(
            "{name}: getting the {kind}: {r:?}"
        )));
    }
    Ok(bin)
}

fn is_ptx(opts: &[String]) -> bool {
    opts.iter()
        .any(|o| o.starts_with("--gpu-architecture=compute_"))
}

fn compile(name: &str, src: &str, opts: &[String]) -> Result<Vec<u8>, GpuError> {
    let c_src = CString::new(src).map_err(|e| GpuError::Compile(e.to_string()))?;
    let c_name = CString::new(format!("{name}.cu")).expect("no NUL in a file name");
    let prog = nv::create_program(&c_src, Some(&c_name))
        .map_err(|e| GpuError::Compile(format!("{name}: {e:?}")))?;
    // SAFETY: `prog` is a valid program until destroyed below.
    let out = unsafe {
        let res = nv::compile_program(prog, opts);
        let log = nv::get_program_log(prog)
            .map(|l| {
                let bytes: Vec<u8> = l.iter().map(|&c| c as u8).take_while(|&c| c != 0).collect();
                String::from_utf8_lossy(&bytes).into_owned()
            })
            .unwrap_or_default();
        match res {
            Err(e) => Err(GpuError::Compile(format!("{name}.cu: {e:?}\n{log}"))),
            // PTX's size counts the terminating NUL, which the module loader needs.
            Ok(()) if is_ptx(opts) => image(name, "PTX", prog, nvsys::nvrtcGetPTXSize, |p, b| {
                nvsys::nvrtcGetPTX(p, b as *mut _)
            }),
            Ok(()) => image(name, "cubin", prog, nvsys::nvrtcGetCUBINSize, |p, b| {
                nvsys::nvrtcGetCUBIN(p, b as *mut _)
            }),
        }
    };
    // SAFETY: created above, destroyed once.
    unsafe {
        let _ = nv::destroy_program(prog);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A damaged cache entry (garbage, truncated, one byte flipped, an old bare cubin) is
    /// rejected and compiled again, and the entry is then whole; a whole one is used.
    #[test]
    fn a_damaged_kernel_cache_entry_is_compiled_again() {
        let dir = std::env::temp_dir().join(format!("hark-kcache-{}", std::process::id()));
        let path = dir.join("m-key.cubin");
        let cubin: Vec<u8> = (0..5000u32).map(|i| (i * 7 % 251) as u8).collect();
        let build = |n: &mut usize| {
            *n += 1;
            Ok(cubin.clone())
        };
        let mut builds = 0;
        assert_eq!(
            cached_or_built(&path, true, || build(&mut builds)).unwrap(),
            (cubin.clone(), false)
        );
        let whole = std::fs::read(&path).unwrap();
        assert_eq!(
            cached_or_built(&path, true, || build(&mut builds)).unwrap(),
            (cubin.clone(), true)
        );
        assert_eq!(builds, 1);
        let mut flipped = whole.clone();
        flipped[CACHE_HEADER + 100] ^= 1;
        let damaged: [Vec<u8>; 5] = [
            b"garbage, not a cubin at all".to_vec(),
            whole[..whole.len() / 2].to_vec(),
            whole[..CACHE_HEADER - 1].to_vec(),
            flipped,
            cubin.clone(),
        ];
        for (i, bytes) in damaged.iter().enumerate() {
            std::fs::write(&path, bytes).unwrap();
            let (bin, cached) = cached_or_built(&path, true, || build(&mut builds)).unwrap();
            assert!(!cached && bin == cubin, "damage {i} was not rejected");
            assert_eq!(builds, 2 + i, "damage {i}: not compiled again");
            assert_eq!(
                std::fs::read(&path).unwrap(),
                whole,
                "damage {i}: not rewritten"
            );
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn the_target_is_the_gpus_own_code_else_its_family_else_ptx() {
        let cuda13 = [75, 80, 86, 87, 89, 90, 100, 103, 110, 120, 121];
        let cuda12_4 = [50, 60, 70, 75, 80, 86, 87, 89, 90];
        // Known architectures: their own machine code.
        for (cc, a) in [((8, 0), 80), ((8, 6), 86), ((9, 0), 90), ((12, 0), 120)] {
            assert_eq!(choose_target(cc, &cuda13, false), Ok(Target::Cubin(a)));
        }
        // Not listed, but an older minor version of its family is: that cubin runs on it.
        assert_eq!(choose_target((8, 8), &cuda13, false), Ok(Target::Cubin(87)));
        // A GPU newer than NVRTC knows (an RTX 5090 with CUDA 12.4): PTX of the newest
        // architecture below it, finished by the driver.
        assert_eq!(
            choose_target((12, 0), &cuda12_4, false),
            Ok(Target::Ptx(90))
        );
        assert_eq!(
            choose_target((10, 0), &cuda12_4, false),
            Ok(Target::Ptx(90))
        );
        // Forced PTX (HARK_CUDA_PTX=1) on a known GPU.
        assert_eq!(choose_target((9, 0), &cuda13, true), Ok(Target::Ptx(90)));
        // An NVRTC that cannot list its architectures: the GPU's own.
        assert_eq!(choose_target((8, 9), &[], false), Ok(Target::Cubin(89)));
        // Too old for the kernels, or for this NVRTC: a clear error, never a failed launch.
        let old = choose_target((7, 5), &cuda13, false).unwrap_err();
        assert!(old.contains("7.5") && old.contains("8.0"), "{old}");
        let unknown = choose_target((8, 0), &[90, 100], false).unwrap_err();
        assert!(
            unknown.contains("sm_80") && unknown.contains("sm_90"),
            "{unknown}"
        );
    }

    /// Every kernel file, and the persistent engine's module, compiles in both precisions
    /// for Hopper, and in the default one for every other architecture of
    /// [`PORTABLE_ARCHS`] this NVRTC knows (and as PTX), wherever NVRTC is present (no GPU
    /// needed: NVRTC is a plain library).
    #[test]
    fn kernels_compile_with_nvrtc() {
        // SAFETY: only probes whether the library can be opened.
        let present =
            std::panic::catch_unwind(|| unsafe { nvsys::is_culib_present() }).unwrap_or(false);
        if !present {
            use std::io::Write;
            let _ = writeln!(
                std::io::stderr(),
                "skipped: NVRTC not found, kernels not compiled"
            );
            return;
        }
        // The real voice's shapes: the kernels' static checks (the encoder's k splits, the
        // tile shapes) hold for voices `check_dims` accepts, not for any toy shape.
        let d = ModelDims::piper_medium();
        assert_eq!(check_dims(&d), Ok(()));
        let supported = supported_archs();
        let mut builds = vec![(Target::Cubin(90), false), (Target::Ptx(90), true)];
        for a in PORTABLE_ARCHS {
            if supported.contains(&a) {
                builds.push((Target::Cubin(a), true));
            } else {
                use std::io::Write;
                let _ = writeln!(std::io::stderr(), "sm_{a}: not known to this NVRTC");
            }
        }
        for (target, f16) in builds {
            let opts = vec![target.nvrtc_option(), "-std=c++17".into()];
            // The modules side by side, as `Modules::load` compiles them.
            std::thread::scope(|s| {
                for m in Module::ALL {
                    let d = &d;
                    let opts = &opts;
                    s.spawn(move || {
                        let defs = module_defines(m, d, f16, Mma::default());
                        let bin = compile(m.name(), &source(&m.text(), &defs), opts)
                            .unwrap_or_else(|e| panic!("{target:?}: {e}"));
                        assert!(
                            bin.len() > 1000,
                            "{}, {target:?}: image too small",
                            m.name()
                        );
                        if let Target::Ptx(_) = target {
                            assert_eq!(bin.last(), Some(&0), "PTX ends in NUL");
                        }
                    });
                }
            });
        }
    }
}
