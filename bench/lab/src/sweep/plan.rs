//! The plan of a sweep: which runs it makes ([`plan`]) and in which order
//! ([`run_order`]). Pure functions of the flags; touches nothing.

use std::path::PathBuf;

use super::{Source, SweepArgs};
use bench::params::{Bench, Design, LockKind, Params};

/// One planned run.
#[derive(Clone, Debug)]
pub(super) enum Job {
    Guest(Params),
    Host(Params),
    LinuxHost {
        dir: PathBuf,
        cpus: usize,
    },
    LinuxGuest {
        cpus: usize,
        kernel: qemu::linuxref::Kernel,
    },
}

/// Every run of the sweep, in the order a round makes them: per testcase
/// and source, one configuration (design and lock, Linux directory or
/// kernel) after another, each at all its CPU counts in a row. The CPU
/// counts snake: ascending for the first configuration, descending for the
/// second, and so on. So the runs a scaling ratio divides (one
/// configuration at two CPU counts) are neighbours, and so are two
/// neighbouring configurations at the CPU count where they meet (the design
/// ratios at 2 CPUs of `--designs transient,noalloc --cpus 1,2`).
pub(super) fn plan(a: &SweepArgs) -> Vec<Job> {
    let mut jobs = Vec::new();
    // No --designs: every design of the registry.
    let designs: Vec<Design> = if a.designs.is_empty() {
        Design::all().collect()
    } else {
        a.designs.clone()
    };
    let mut sources = a.sources.clone();
    sources.sort();
    sources.dedup();
    let mut locks = a.locks.clone();
    locks.dedup();
    for &bench in &a.testcases {
        for &src in &sources {
            // One closure per configuration: the job at a CPU count.
            let mut configs: Vec<Box<dyn Fn(usize) -> Job>> = Vec::new();
            match src {
                Source::Guest | Source::Host => {
                    for &design in &designs {
                        for &lock in &locks {
                            let (warmup, secs) = (a.warmup, a.secs);
                            configs.push(Box::new(move |cpus| {
                                let p = Params {
                                    bench,
                                    tasks: cpus,
                                    design,
                                    warmup,
                                    secs,
                                    lock,
                                    pause: 0,
                                    names: bench::params::DEFAULT_NAMES,
                                    frontend: bench::params::Frontend::DEFAULT,
                                };
                                if src == Source::Guest {
                                    Job::Guest(p)
                                } else {
                                    Job::Host(p)
                                }
                            }));
                        }
                    }
                }
                // The Linux references measure statneg only.
                Source::LinuxHost if bench == Bench::Statneg => {
                    for d in &a.linux_dirs {
                        let dir = d.clone();
                        configs.push(Box::new(move |cpus| Job::LinuxHost {
                            dir: dir.clone(),
                            cpus,
                        }));
                    }
                }
                Source::LinuxGuest if bench == Bench::Statneg => {
                    for k in a.kernels() {
                        configs.push(Box::new(move |cpus| Job::LinuxGuest {
                            cpus,
                            kernel: k.clone(),
                        }));
                    }
                }
                _ => {}
            }
            for (i, job) in configs.iter().enumerate() {
                if i % 2 == 0 {
                    jobs.extend(a.cpus.iter().map(|&c| job(c)));
                } else {
                    jobs.extend(a.cpus.iter().rev().map(|&c| job(c)));
                }
            }
        }
    }
    jobs
}

/// The order runs are made in: `(rep, job)` pairs, `rep` counting from 1.
///
/// Repetitions go in rounds over the whole plan — every job once, then
/// every job again — rather than N back-to-back runs of each job, and
/// every second round runs the plan backwards (ABBA). The plan puts the two
/// runs a ratio divides next to each other ([`plan`]), so within a round
/// they run back to back, seconds apart, and share the machine's state;
/// reversing alternate rounds swaps which of the two goes first, so a drift
/// within a pair (the CPU warming, a neighbour starting) favours each side
/// in turn instead of always the same one. For one design at cpus 1,2 and
/// N = 3 the order is 1, 2, 2, 1, 1, 2.
pub(super) fn run_order(jobs: &[Job], repeat: u32) -> Vec<(u32, &Job)> {
    (1..=repeat)
        .flat_map(|rep| {
            let round: Vec<&Job> = if rep % 2 == 1 {
                jobs.iter().collect()
            } else {
                jobs.iter().rev().collect()
            };
            round.into_iter().map(move |j| (rep, j))
        })
        .collect()
}

/// The `design` column of a guest or host row: the design, and the lock
/// kind after a `+` unless it is the default (`transient`,
/// `transient+ticket`), so rows of older sweeps and of the default lock
/// read alike.
pub fn design_label(p: &Params) -> String {
    if p.lock == LockKind::DEFAULT {
        p.design.name().to_string()
    } else {
        format!("{}+{}", p.design, p.lock)
    }
}

pub(super) fn job_label(j: &Job) -> String {
    match j {
        Job::Guest(p) => format!("guest {} {} cpus={}", p.bench, design_label(p), p.tasks),
        Job::Host(p) => format!("host {} {} cpus={}", p.bench, design_label(p), p.tasks),
        Job::LinuxHost { dir, cpus } => format!("linux-host {} cpus={cpus}", dir.display()),
        Job::LinuxGuest {
            cpus,
            kernel: qemu::linuxref::Kernel::Debian(r),
        } if *r == qemu::linuxref::Release::default() => format!("linux-guest cpus={cpus}"),
        Job::LinuxGuest { cpus, kernel } => format!("linux-guest kernel={kernel} cpus={cpus}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plan_covers_every_source() {
        use clap::Parser;
        #[derive(Parser)]
        struct Cli {
            #[command(flatten)]
            a: SweepArgs,
        }
        let cli =
            Cli::try_parse_from(["x", "--testcases", "statneg,churn", "--cpus", "1,2"]).unwrap();
        let jobs = plan(&cli.a);
        let count = |f: fn(&Job) -> bool| jobs.iter().filter(|j| f(j)).count();
        // 2 testcases × 2 CPU counts × every registered design.
        let per_source = 4 * Design::all().count();
        assert_eq!(count(|j| matches!(j, Job::Guest(_))), per_source);
        assert_eq!(count(|j| matches!(j, Job::Host(_))), per_source);
        // The Linux references only measure statneg: 2 dirs × 2 CPU counts, 2 boots.
        assert_eq!(count(|j| matches!(j, Job::LinuxHost { .. })), 4);
        assert_eq!(count(|j| matches!(j, Job::LinuxGuest { .. })), 2);
        assert!(jobs.iter().all(|j| match j {
            Job::Host(p) | Job::Guest(p) => p.warmup == 2 && p.secs == 5,
            _ => true,
        }));
        assert!(Cli::try_parse_from(["x", "--designs", "fast"]).is_err());
        assert!(Cli::try_parse_from(["x", "--cpus", "0"]).is_err());
        assert!(Cli::try_parse_from(["x", "--accel", "foo"]).is_err());
        assert!(Cli::try_parse_from(["x", "--sources", "guest,nowhere"]).is_err());
    }

    #[test]
    fn locks_are_a_dimension_of_guest_and_host_points() {
        use clap::Parser;
        #[derive(Parser)]
        struct Cli {
            #[command(flatten)]
            a: SweepArgs,
        }
        let one = Cli::try_parse_from(["x", "--sources", "host"]).unwrap();
        let jobs = plan(&one.a);
        assert_eq!(
            jobs.len(),
            2 * Design::all().count(),
            "every design x 2 CPU counts, default lock only"
        );
        let three = Cli::try_parse_from([
            "x",
            "--sources",
            "host,guest",
            "--designs",
            "transient",
            "--locks",
            "qspinlock,ticket,ttas",
        ])
        .unwrap();
        let labels: Vec<String> = plan(&three.a).iter().map(job_label).collect();
        assert_eq!(labels.len(), 12);
        for l in [
            "host statneg transient cpus=2",
            "host statneg transient+ticket cpus=2",
            "guest statneg transient+ttas cpus=1",
        ] {
            assert!(labels.iter().any(|x| x == l), "{l} missing from {labels:?}");
        }
        assert!(Cli::try_parse_from(["x", "--locks", "mcs"]).is_err());
    }

    #[test]
    fn the_release_switch_picks_the_linux_guests_kernels() {
        use clap::Parser;
        use qemu::linuxref::{Fs, Kernel, Release};
        #[derive(Parser)]
        struct Cli {
            #[command(flatten)]
            a: SweepArgs,
        }
        let kernels = |extra: &[&str]| -> Vec<Kernel> {
            let base = [
                "x",
                "--testcases",
                "statneg",
                "--cpus",
                "1",
                "--sources",
                "linux-guest",
            ];
            let a = Cli::try_parse_from(base.iter().chain(extra)).unwrap().a;
            plan(&a)
                .into_iter()
                .map(|j| match j {
                    Job::LinuxGuest { kernel, .. } => kernel,
                    other => panic!("only linux-guest jobs planned, got {other:?}"),
                })
                .collect()
        };
        assert_eq!(kernels(&[]), [Kernel::Debian(Release::V6_12)]);
        assert_eq!(
            kernels(&[
                "--linux-release",
                "7.3",
                "--linux-kernels",
                "debian,vanilla"
            ]),
            [
                Kernel::Debian(Release::V7_3),
                Kernel::Built(Release::V7_3, "vanilla".into())
            ]
        );
        // A full label names its own release.
        assert_eq!(
            kernels(&["--linux-release", "7.3", "--linux-kernels", "6.12.117"]),
            [Kernel::Debian(Release::V6_12)]
        );
        assert!(Cli::try_parse_from(["x", "--linux-release", "5.10"]).is_err());
        assert!(Cli::try_parse_from(["x", "--linux-kernels", "nosuch"]).is_err());
        // Row names: 6.12's as before, other releases name theirs.
        let d = super::super::sources::linux_design;
        assert_eq!(d(&Kernel::Debian(Release::V6_12), Fs::Tmpfs), "linux-tmpfs");
        assert_eq!(
            d(&Kernel::Built(Release::V6_12, "noalloc".into()), Fs::Ext4),
            "linux-noalloc-ext4"
        );
        assert_eq!(
            d(&Kernel::Debian(Release::V7_3), Fs::Tmpfs),
            "linux-7.3-tmpfs"
        );
        assert_eq!(
            d(&Kernel::Built(Release::V7_3, "vanilla".into()), Fs::Tmpfs),
            "linux-7.3-vanilla-tmpfs"
        );
        assert_eq!(
            job_label(&Job::LinuxGuest {
                cpus: 2,
                kernel: Kernel::Debian(Release::V7_3)
            }),
            "linux-guest kernel=7.3.4 cpus=2"
        );
    }

    #[test]
    fn repetitions_go_in_rounds_over_the_plan() {
        use clap::Parser;
        #[derive(Parser)]
        struct Cli {
            #[command(flatten)]
            a: SweepArgs,
        }
        // Host statneg at cpus 1,2 with `designs` (a repeated --designs
        // would add to the list, not replace it) and `extra` flags.
        let args = |designs: &str, extra: &[&str]| {
            let base = [
                "x",
                "--testcases",
                "statneg",
                "--designs",
                designs,
                "--cpus",
                "1,2",
                "--sources",
                "host",
            ];
            Cli::try_parse_from(base.iter().chain(extra)).unwrap().a
        };
        let a = args("noalloc", &["--repeat", "3"]);
        let jobs = plan(&a);
        let order: Vec<(u32, usize)> = run_order(&jobs, a.repeat)
            .into_iter()
            .map(|(rep, j)| match j {
                Job::Host(p) => (rep, p.tasks),
                other => panic!("only host jobs planned, got {other:?}"),
            })
            .collect();
        // 1, 2, 2, 1, 1, 2 CPUs: each round runs every point once, the
        // pair back to back, first one way round, then the other (ABBA).
        assert_eq!(
            order,
            [(1, 1), (1, 2), (2, 2), (2, 1), (3, 1), (3, 2)],
            "ABBA rounds"
        );

        // With two designs each round still holds every point once, in the
        // plan's order, and the plan itself does not depend on --repeat.
        let two = args("transient,noalloc", &["--repeat", "2"]);
        let jobs = plan(&two);
        let labels: Vec<(u32, String)> = run_order(&jobs, two.repeat)
            .into_iter()
            .map(|(rep, j)| (rep, job_label(j)))
            .collect();
        let round: Vec<String> = jobs.iter().map(job_label).collect();
        // A design's two CPU counts side by side, snaking: transient 1, 2,
        // then noalloc 2, 1 (so the two designs at 2 CPUs meet too).
        assert_eq!(
            round,
            [
                "host statneg transient cpus=1",
                "host statneg transient cpus=2",
                "host statneg noalloc cpus=2",
                "host statneg noalloc cpus=1",
            ]
        );
        assert_eq!(labels.len(), 8);
        for (i, (rep, l)) in labels.iter().enumerate() {
            // Round 2 runs the plan backwards.
            let j = if i < 4 { i } else { 7 - i };
            assert_eq!((*rep as usize, l), (i / 4 + 1, &round[j]));
        }

        // The default is one run of everything, in plan order.
        let one = args("noalloc", &[]);
        assert_eq!(one.repeat, 1);
        assert_eq!(run_order(&plan(&one), one.repeat).len(), 2);
        for bad in ["0", "101", "many"] {
            let base = ["x", "--repeat", bad];
            assert!(Cli::try_parse_from(base).is_err(), "--repeat {bad}");
        }
    }
}
