//! `vfsh`: a command shell over a fresh tmpfs, for people and for tools.
//!
//! `vfsh [-o OPTS] [SCRIPT]` reads commands one per line from SCRIPT (or from
//! standard input) and prints exactly one result line per command on standard
//! output, plus `# ` lines for `stats` and `trace`. The command set and the
//! output format are described in `fstools::shell` (they are a contract). Lines
//! rejected as `err EINVAL` are also explained on standard error.
//!
//! Touches: the script file or standard input, standard output and error.
#![deny(unsafe_code)]

use std::io::{self, BufRead, BufReader, Read, Write};
use std::process::ExitCode;

use fstools::shell::{self, Shell};

const HELP: &str = "usage: vfsh [-o OPTS] [--mem-budget SIZE] [SCRIPT]

Runs commands (one per line, from SCRIPT or standard input) against a fresh
tmpfs and prints one result line per command: `ok ...` or `err ENAME`.
  -o OPTS   mount options of the root tmpfs, e.g. enoent=noalloc
  --mem-budget SIZE
            the most heap the fs may hold (bytes, or with K, M, G; 0: no
            limit; default 128M): past it what would allocate gets ENOMEM";

/// The memory budget without `--mem-budget`.
const DEFAULT_BUDGET: usize = 128 << 20;

// Counts the heap, so that admission can hold the budget (not in the loom
// build, whose models replace the sync layer: there is no budget there).
#[cfg(not(loom))]
#[global_allocator]
static ALLOC: fs::sync::budget::CountingAlloc = fs::sync::budget::CountingAlloc;

/// `SIZE` of `--mem-budget`: bytes, or a number with K, M or G.
fn parse_size(s: &str) -> Option<usize> {
    let (num, shift) = match s.as_bytes().last()? {
        b'K' | b'k' => (&s[..s.len() - 1], 10),
        b'M' | b'm' => (&s[..s.len() - 1], 20),
        b'G' | b'g' => (&s[..s.len() - 1], 30),
        _ => (s, 0),
    };
    num.parse::<usize>().ok()?.checked_mul(1 << shift)
}

/// The help after [`HELP`]: the commands and the designs (the `help`
/// command's list).
fn help_tail() -> String {
    shell::help::lines().collect::<Vec<_>>().join("\n")
}

fn main() -> ExitCode {
    let mut opts = String::new();
    let mut budget = DEFAULT_BUDGET;
    let mut script: Option<String> = None;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "-h" | "--help" => {
                println!("{HELP}\n{}", help_tail());
                return ExitCode::SUCCESS;
            }
            "-o" => match args.next() {
                Some(o) => opts = o,
                None => return usage_error("-o needs an argument"),
            },
            "--mem-budget" => match args.next().as_deref().map(parse_size) {
                Some(Some(b)) => budget = b,
                _ => return usage_error("--mem-budget needs a SIZE (bytes, K, M, G)"),
            },
            _ if a.starts_with('-') && a != "-" => {
                return usage_error(&format!("unknown option {a}"));
            }
            _ if script.is_none() => script = Some(a),
            _ => return usage_error("more than one SCRIPT"),
        }
    }

    #[cfg(not(loom))]
    fs::sync::budget::set_budget(Some(budget).filter(|&b| b > 0));
    #[cfg(loom)]
    let _ = budget;
    let mut sh = match Shell::try_new(&opts) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("vfsh: cannot mount tmpfs with options {opts:?}: {e}");
            return ExitCode::from(2);
        }
    };

    // From standard input every result is flushed at once, so that a tool
    // driving vfsh through a pipe sees each answer before sending the next.
    let (input, interactive): (Box<dyn Read>, bool) = match script.as_deref() {
        None | Some("-") => (Box::new(io::stdin()), true),
        Some(path) => match std::fs::File::open(path) {
            Ok(f) => (Box::new(f), false),
            Err(e) => {
                eprintln!("vfsh: cannot open {path}: {e}");
                return ExitCode::from(2);
            }
        },
    };
    let mut reader = BufReader::new(input);
    let stdout = io::stdout();
    let mut out = io::BufWriter::new(stdout.lock());
    let mut raw = Vec::new();
    let mut lineno = 0u64;
    loop {
        raw.clear();
        match reader.read_until(b'\n', &mut raw) {
            Ok(0) => break,
            Ok(_) => {}
            Err(e) => {
                eprintln!("vfsh: read error: {e}");
                return ExitCode::from(2);
            }
        }
        lineno += 1;
        let lines = match std::str::from_utf8(&raw) {
            Ok(line) => {
                if let Err(e) = shell::parse(line) {
                    eprintln!("vfsh: line {lineno}: {e}");
                }
                sh.exec(line)
            }
            Err(_) => {
                eprintln!("vfsh: line {lineno}: not UTF-8 (use \\xHH escapes)");
                vec![shell::err_line(fs::Errno::EINVAL)]
            }
        };
        for l in lines {
            if writeln!(out, "{l}").is_err() {
                // Reader of our output went away: nothing left to do.
                return ExitCode::SUCCESS;
            }
        }
        if interactive && out.flush().is_err() {
            return ExitCode::SUCCESS;
        }
    }
    let _ = out.flush();
    ExitCode::SUCCESS
}

fn usage_error(msg: &str) -> ExitCode {
    eprintln!("vfsh: {msg}\n{HELP}\n{}", help_tail());
    ExitCode::from(2)
}
