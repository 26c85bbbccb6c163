//! The bootable research kernel: PVH entry (in `arch`), then [`kernel_main`],
//! whose body is the boot order as a list; application processors enter
//! [`ap_main`] and then idle, waiting for cross-CPU jobs.
//!
//! Module map: `arch` (everything x86), `mm` (frames, heap, slab, stacks),
//! `time`, `smp` (CPU sets, run closures on CPUs), `sync::rcu` (QSBR RCU +
//! the fs crate's platform), `console` (serial + log), `exit` (status codes),
//! `panic`, `selftest` (the self-test runner; `ktest` is the bodies'
//! harness), `benchrun` (bench=), `demo` (demo=, trace=),
//! `stress` (stress=), `drivers` (PCI, virtio-net), `net` (smoltcp TCP/IP,
//! blocking sockets, SMB transport), `smbmount` (smb=: mount a share and
//! list it); the command-line parser is `kernel::cmdline` in the
//! library half of this crate.
#![no_std]
#![no_main]
// The unsafe fence: hardware access in `arch`, memory management in `mm`
// (both allowed below, every block with its SAFETY comment); everything
// else is safe Rust.
#![deny(unsafe_code)]

extern crate alloc;

#[allow(unsafe_code)]
mod arch;
mod benchrun;
mod cmdline_test;
mod console;
mod demo;
mod drivers;
mod exit;
mod ktest;
#[allow(unsafe_code)]
mod mm;
mod net;
mod panic;
mod percpu;
mod selftest;
mod smbmount;
mod smp;
mod smp_test;
mod stress;
mod sync;
mod time;
mod time_test;

use console::kprintln;
use exit::{exit, ExitCode};
use kernel::cmdline::{self, Config, Crash};

/// Boot CPU entry (called by the PVH entry on the boot stack, long mode,
/// identity-mapped, interrupts off). `start_info` is the physical address of
/// `hvm_start_info`.
pub extern "C" fn kernel_main(start_info: u32) -> ! {
    // 1. Per-core area (GS) and serial console: from here on we can print.
    arch::early_init();
    console::init(log::LevelFilter::Info);
    // 2. Copy the PVH start info: command line, memory map, RSDP.
    let boot = arch::read_boot_info(start_info).unwrap_or_else(|e| boot_failure(e));
    // 3. Strict command line: bad input exits here with the key reference.
    let config = parse_cmdline(boot.cmdline(), boot.cmdline_truncated);
    console::init(config.log);
    log::info!(
        "boot: PVH start info v{}, {} memory map entries",
        boot.version,
        boot.memory_map().len()
    );
    log::debug!(
        "boot: PVH entry to command line: {} TSC ticks",
        arch::processor::rdtsc() - arch::boot_tsc()
    );
    // 4. Memory: frame allocator, heap, per-CPU slab, page tables.
    let layout = mm::init(boot.memory_map()).unwrap_or_else(|e| boot_failure(e));
    log::info!(
        "mm: {} MiB usable, heap {} MiB at {:#x}, {} frames",
        layout.usable >> 20,
        layout.heap_size >> 20,
        layout.heap_start,
        layout.frames
    );
    // The source of the SMB client's keys and nonces, named so a log
    // shows whether `sign` and `seal` can be had (see `arch::rand`).
    log::info!("rand: {}", arch::rand::source().name());
    if config.poison == Some(true) {
        mm::poison::enable();
        log::info!("mm: poisoning freed memory (poison=1)");
    }
    log::debug!(
        "boot: PVH entry to mm up: {} TSC ticks",
        arch::processor::rdtsc() - arch::boot_tsc()
    );
    // 5. This CPU's GDT/TSS (guarded IST stack for #DF) and the IDT.
    arch::boot_processor_init();
    // 6. The firmware's list of processors and timers.
    let machine = arch::discover_cpus(boot);
    let cpu_ids = &machine.cpu_ids;
    // 6b. Enough memory for this many vCPUs (and for the self-tests)?
    //     Refuse now, naming the minimum, rather than panic in an AP.
    let ram = mm::ram_below_4g(boot.memory_map());
    if let Err(min_mib) = mm::check_fits(cpu_ids.len(), config.selftest, ram, layout.usable) {
        kprintln!(
            "boot failure: {} vCPUs{} need at least {min_mib} MiB of memory (have {} MiB); boot with -m {min_mib}M or more (ENOMEM)",
            cpu_ids.len(),
            if config.selftest { " running selftest" } else { "" },
            ram.div_ceil(1 << 20)
        );
        exit(ExitCode::BootFailure);
    }
    // 7. Calibrate the TSC against the reference clock; timestamps in the log.
    let (tsc_hz, reference) = time::init(&machine);
    console::time_ready();
    if reference == time::Reference::Guess {
        log::warn!(
            "time: no {} answer, assuming a 2 GHz TSC",
            arch::clock::REFERENCES
        );
    }
    // 8. The boot CPU joins: its tick, RCU, online; the fs platform.
    arch::boot_processor_local_init();
    time::start_tick(config.hz);
    sync::rcu::cpu_online();
    arch::smp::mark_online(0);
    arch::interrupts::enable();
    sync::rcu::install();
    if let Some(n) = config.failslab {
        fs::fault::fail_every(n);
        log::info!("failslab={n}: every {n}-th fs allocation fails with ENOMEM");
    }
    log::info!(
        "time: TSC {} MHz ({reference:?}), {} {} kHz, tick {} Hz",
        tsc_hz / 1_000_000,
        arch::clock::TICK_TIMER,
        time::timer_hz() / 1000,
        config.hz
    );
    // 9. Start the application processors and report.
    let online = arch::smp::start_aps(cpu_ids, config.smp_timeout_ms as u64);
    if online < cpu_ids.len() {
        log::warn!("smp: only {online} of {} CPUs came online", cpu_ids.len());
    }
    let ms = time::tsc_to_ns(arch::smp::last_online_tsc() - arch::boot_tsc()) / 1_000_000;
    kprintln!("smp: {online} CPUs online in {ms} ms");
    // 10. Do what the command line asked.
    run(&config)
}

/// Application processor entry, after `arch` set up its descriptor tables
/// and interrupts on its own stack. Joins RCU, goes online, then idles.
pub fn ap_main(cpu: usize) -> ! {
    sync::rcu::cpu_online();
    arch::smp::mark_online(cpu);
    arch::interrupts::enable();
    idle_loop()
}

/// Idle: run cross-CPU jobs, pass quiescent states and run RCU callbacks,
/// halt until the next interrupt (tick or wake-up IPI).
fn idle_loop() -> ! {
    loop {
        if arch::smp::poll_mailbox() {
            continue;
        }
        sync::rcu::quiescent_state();
        arch::interrupts::disable();
        if arch::smp::has_job() {
            arch::interrupts::enable();
            continue;
        }
        arch::processor::enable_interrupts_and_halt();
    }
}

/// Parse the command line, before the heap exists (the parser never
/// allocates); a bad or cut line exits 2 with the reason and the key table.
fn parse_cmdline(raw: &[u8], truncated: bool) -> Config {
    match cmdline::parse_boot(raw, truncated) {
        Ok(c) => c,
        Err(e) => {
            kprintln!("cmdline: {e}");
            kprintln!("{}", cmdline::Help);
            exit(ExitCode::BadCmdline)
        }
    }
}

fn run(config: &Config) -> ! {
    if let Some(c) = config.crash {
        crash(c);
    }
    if config.trace_lookup {
        demo::enable_trace();
    }
    // Before anything builds an fs lock (a benchmark sets its own `lock=`;
    // the demo table the figures' lock unless overcommitted).
    let lock = match config.demo {
        Some(cmdline::Demo::Table) => {
            kernel::demotable::demo_lock(config.lock, smp::online_count(), config.host_cores).0
        }
        _ => config.lock.unwrap_or(cmdline::GUEST_LOCK),
    };
    fs::sync::rawlock::set_default_kind(lock);
    if let Some(p) = &config.bench {
        benchrun::run(p);
    }
    if let Some(d) = config.demo {
        demo::run(
            d,
            config.trace_lookup,
            config.host_cores,
            config.lock,
            config.rounds,
        );
    }
    if let Some(s) = config.stress {
        stress::run(s, config.secs, config.design, config.poison != Some(false));
    }
    if let Some(source) = &config.smb {
        let opts = config.smbopts.as_ref().map_or("", |o| o.as_str());
        smbmount::run(source, opts, config.smbread.as_ref().map(|p| p.as_str()));
    }
    if config.selftest {
        let summary = selftest::run();
        log::info!(
            "selftest: done at {} ms guest time",
            time::now_ns() / 1_000_000
        );
        kprintln!("{summary}");
        exit(if summary.failed == 0 {
            ExitCode::Success
        } else {
            ExitCode::TestsFailed
        });
    }
    kprintln!("boot complete; nothing to do (kernel command line `selftest` runs the self-tests)");
    exit(ExitCode::Success)
}

fn crash(c: Crash) -> ! {
    log::warn!("crashing on purpose: {c:?}");
    match c {
        Crash::PageFault => {
            arch::processor::read_unmapped();
        }
        Crash::StackOverflow => {
            core::hint::black_box(recurse(1));
        }
        Crash::StackOverflowAp => {
            let last = smp::cpu_count() - 1;
            smp::run_on(&smp::CpuSet::single(last), |_| {
                core::hint::black_box(recurse(1));
            });
        }
        Crash::InvalidOpcode => arch::processor::invalid_opcode(),
        Crash::Panic => panic!("crash=panic on the kernel command line"),
    }
    panic!("the deliberate crash did not crash")
}

#[inline(never)]
fn recurse(n: u64) -> u64 {
    let buf = core::hint::black_box([n; 32]);
    if n == u64::MAX {
        return buf[0];
    }
    recurse(n + 1).wrapping_add(buf[1])
}

fn boot_failure(why: &str) -> ! {
    kprintln!("boot failure: {why}");
    exit(ExitCode::BootFailure)
}
