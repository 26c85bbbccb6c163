//! Build script of the kernel: links the binary at 1 MiB with `linker.ld`
//! (PVH ELF note, boot stack with a guard page) when building for the bare
//! `x86_64-unknown-none` target. Host builds (the `cargo test -p kernel --lib`
//! unit tests of the pure modules) get no link arguments.

fn main() {
    let dir = std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    println!("cargo:rerun-if-changed=linker.ld");
    println!("cargo:rerun-if-changed=build.rs");
    if std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("none") {
        println!("cargo:rustc-link-arg-bins=-T{dir}/linker.ld");
        println!("cargo:rustc-link-arg-bins=--no-dynamic-linker");
        println!("cargo:rustc-link-arg-bins=-zmax-page-size=4096");
    }
}
