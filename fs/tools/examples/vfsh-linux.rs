//! `vfsh-linux DIR`: the Linux half of the vfsh scripts, as a program, for
//! the reference guest (statically linked): runs every `DIR/NAME.vfsh`
//! against the running kernel in a fresh tmpfs sandbox (the same code as
//! `fs/tools/tests/vfsh_scripts.rs`' Linux side) and compares with `NAME.out`,
//! Linux's recorded answers. Prints `vfsh-linux script=NAME same|differs`
//! per script, the first differing lines, then `vfsh-linux scripts=N
//! differ=D`; exits 1 when D > 0. Root only (mount namespace, chroot).

#[path = "../tests/vfsh_linux/mod.rs"]
mod vfsh_linux;

fn main() {
    let dir = std::env::args().nth(1).unwrap_or_else(|| ".".into());
    if let Some(why) = vfsh_linux::unavailable() {
        eprintln!("vfsh-linux: {why}");
        std::process::exit(2);
    }
    // Read the scripts here: the sandbox thread is chrooted away from them.
    let mut scripts = Vec::new();
    for e in std::fs::read_dir(&dir).expect("scripts dir") {
        let p = e.expect("dir entry").path();
        if p.extension().and_then(|x| x.to_str()) == Some("vfsh") {
            let name = p.file_stem().unwrap().to_string_lossy().into_owned();
            let text = std::fs::read_to_string(&p).expect("script");
            let want = std::fs::read_to_string(p.with_extension("out")).unwrap_or_default();
            scripts.push((name, text, want));
        }
    }
    scripts.sort();
    let n = scripts.len();
    let differ = vfsh_linux::in_sandbox(move |sb| {
        let mut differ = 0;
        for (name, text, want) in scripts {
            sb.reset().expect("reset");
            let mut lx = vfsh_linux::LinuxShell::new();
            let mut got = String::new();
            for line in text.split_inclusive('\n') {
                for l in lx.exec(line) {
                    got.push_str(&l);
                    got.push('\n');
                }
            }
            if got == want {
                println!("vfsh-linux script={name} same");
            } else {
                differ += 1;
                println!("vfsh-linux script={name} differs");
                for (w, g) in want
                    .lines()
                    .zip(got.lines())
                    .filter(|(w, g)| w != g)
                    .take(3)
                {
                    println!("  want: {w}\n  got:  {g}");
                }
            }
        }
        differ
    })
    .unwrap_or_else(|why| {
        eprintln!("vfsh-linux: no sandbox: {why}");
        std::process::exit(2);
    });
    println!("vfsh-linux scripts={n} differ={differ}");
    std::process::exit(i32::from(differ > 0));
}
