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

/// Compiles (or loads from the disk cache, unless `disk_cache` is off) one kernel file for
/// compute capability `cc`. Returns the cubin and whether it came from the cache.
pub fn cubin(
    name: &str,
    file: &str,
    defs: &[(String, String)],
    cc: (i32, i32),
    disk_cache: bool,
) -> Result<(Vec<u8>, bool), GpuError> {
    let src = source(file, defs);
    let arch = format!("--gpu-architecture=sm_{}{}", cc.0, cc.1);
    let opts = vec![arch, "-std=c++17".to_string(), "-lineinfo".to_string()];
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
            Ok(()) => {
                let mut n = 0usize;
                let r = nvsys::nvrtcGetCUBINSize(prog, &mut n);
                if r != nvsys::nvrtcResult::NVRTC_SUCCESS || n == 0 {
                    Err(GpuError::Compile(format!("{name}: no cubin ({r:?})")))
                } else {
                    let mut bin = vec![0u8; n];
                    let r = nvsys::nvrtcGetCUBIN(prog, bin.as_mut_ptr() as *mut _);
                    if r == nvsys::nvrtcResult::NVRTC_SUCCESS {
                        Ok(bin)
                    } else {
                        Err(GpuError::Compile(format!("{name}: nvrtcGetCUBIN {r:?}")))
                    }
                }
            }
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
    use crate::cpu::testutil::tiny_dims;

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

    /// Every kernel file, and the persistent engine's module, compiles for Hopper in both
    /// precisions, wherever NVRTC is present (no GPU needed: NVRTC is a plain library).
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
        let mut d = tiny_dims();
        d.hidden_channels = 32;
        d.inter_channels = 8;
        d.filter_channels = 128;
        let opts = vec!["--gpu-architecture=sm_90".to_string(), "-std=c++17".into()];
        for f16 in [true, false] {
            for m in Module::ALL {
                let defs = module_defines(m, &d, f16, Mma::default());
                let bin = compile(m.name(), &source(&m.text(), &defs), &opts)
                    .unwrap_or_else(|e| panic!("{e}"));
                assert!(bin.len() > 1000, "{}: cubin too small", m.name());
            }
        }
    }
}
