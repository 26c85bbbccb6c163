//! `bench lsla`'s report rendered from saved rows: the three tables (ours
//! with the Linux base rows first, the Linux rows', the seed's variants),
//! the ratio line and the distributions, exactly as smb.md prints them.

use benchlab::lsla::{report_all, LinuxLsla, LslaRow, HOST_LS_VARIANT};
use qemu::linuxref::CifsListing;
use qemu::relay::Totals;

fn totals(round_trips: u64, query_info: u64) -> Totals {
    let mut t = Totals {
        round_trips,
        ..Totals::default()
    };
    let c = &mut t.client_to_server.commands;
    c.insert("CREATE".into(), round_trips - query_info);
    c.insert("QUERY_INFO".into(), query_info);
    t.server_to_client
        .statuses
        .insert("0x00000000".into(), round_trips);
    t
}

fn row(design: &str, rtt_ms: u64, cold_s: f64, warm_s: f64, cold: Totals, warm: Totals) -> LslaRow {
    LslaRow {
        design: design.into(),
        rtt_ms,
        entries: 511,
        cold_s,
        warm_s,
        relay_round_trips: cold.round_trips + warm.round_trips + 7,
        client_frames: cold.round_trips + warm.round_trips + 7,
        cold,
        warm,
        ..LslaRow::default()
    }
}

fn listing(phase: &str, wall_s: f64, query_infos: u64) -> CifsListing {
    CifsListing {
        variant: "base".into(),
        phase: phase.into(),
        wall_s,
        ls: "9.7".into(),
        lines: 514,
        stats: format!("QueryInfos: {query_infos} total 0 failed\nReads: 0 total 0 failed\n"),
        trace: "    511 status=0x0\n    511 cmd=16\n smb3_query_info_compound_enter:\n".into(),
        ..CifsListing::default()
    }
}

fn linux(variant: &str, ls: &str, qi_cold: u64, agree: bool) -> LinuxLsla {
    let design = if variant.is_empty() {
        "linux-6.12".to_string()
    } else {
        format!("linux-6.12+{variant}")
    };
    let r = row(
        &design,
        76,
        39.125,
        0.5,
        totals(1030, qi_cold),
        totals(3, 0),
    );
    LinuxLsla {
        row: r,
        opts: "vers=3.1.1,cache=strict".into(),
        dropped: if variant == "reparse-wsl" {
            vec!["reparse=wsl".into(), "nativesocket".into()]
        } else {
            Vec::new()
        },
        cold: listing("cold", 39.125, if agree { qi_cold } else { qi_cold + 1 }),
        warm: listing("warm", 0.5, 0),
        kernel: "Linux 6.12.117 (Debian)".into(),
        ls: ls.into(),
        is_variant: !variant.is_empty(),
        module_log: Vec::new(),
    }
}

#[test]
fn lsla_report_renders_its_tables() {
    let ours = vec![
        row("always", 76, 40.0, 0.0126, totals(1024, 511), totals(2, 0)),
        row("easize", 76, 2.5, 0.01, totals(20, 0), totals(2, 0)),
        LslaRow {
            client_frames: 5,
            ..row("off", 0, 0.25, 0.0005, totals(9, 0), totals(2, 0))
        },
    ];
    let linux = vec![
        linux("", "9.7", 511, true),
        linux("noserverino", "9.7", 271, false),
        linux("reparse-wsl", "9.7", 511, true),
        linux(HOST_LS_VARIANT, "9.1", 511, true),
    ];
    let got = report_all(&linux, &ours);
    assert_eq!(got, include_str!("lsla_report.md"));
    // Without the Linux rows: the first table and the lines only.
    assert!(benchlab::lsla::report(&ours).starts_with(
        "# `ls -la` over SMB: EA-cache designs\n\nHost mode: the fs crate's SMB client"
    ));
}

#[test]
fn a_module_built_out_of_tree_says_what_the_kernel_logged() {
    let mut l = linux("eacache", "9.7", 0, true);
    l.module_log = vec![
        "/cifs.ko, tainted=12288".into(),
        "cifs: module verification failed: signature and/or required key missing - tainting kernel"
            .into(),
    ];
    let got = benchlab::lsla::report_linux(&[l]);
    assert!(
        got.contains("Loading the module, the kernel logged: `/cifs.ko, tainted=12288`; `cifs: module verification failed"),
        "{got}"
    );
    assert!(
        !benchlab::lsla::report_linux(&[linux("", "9.7", 511, true)])
            .contains("Loading the module")
    );
}
