//! Link options for the `kennel` binary in release builds.
//!
//! `-z pack-relative-relocs` stores the position-independent binary's relative relocations
//! in the compact RELR form instead of one 24-byte `.rela.dyn` entry each: 66,655 entries,
//! 1.6 MB of the file, became 26 KB, and the loader applies them a little faster at start
//! (docs/BENCHMARKS.md, "Dynamic tools"). The binary stays PIE, so address-space layout
//! randomisation still covers it. It needs glibc 2.36 (Debian 12) to run, and a linker that
//! knows the option: rustc links with its bundled LLD on this target since Rust 1.90.

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let release = std::env::var("PROFILE").is_ok_and(|p| p == "release");
    let linux_gnu = std::env::var("TARGET").is_ok_and(|t| t == "x86_64-unknown-linux-gnu");
    if release && linux_gnu {
        println!("cargo:rustc-link-arg-bins=-Wl,-z,pack-relative-relocs");
    }
}
