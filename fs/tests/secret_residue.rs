//! No copy of the password is left in freed heap memory by the NTLM
//! computations (issue 49, point 3: passwords zeroed on drop). The test
//! binary's allocator ([`fs::sync::residue::ResidueWatch`]) looks in every
//! block before it is freed for the password, as UTF-8 and as UTF-16LE
//! (the form the NT hash is taken over); the test runs what sees the
//! password and asserts no freed block held it. Stack copies inside the
//! hash crates are out of its reach. Touches nothing outside the process.

use fs::sync::residue::{self, ResidueWatch};
use smb::ntlm::{self, Credentials};

#[global_allocator]
static WATCH: ResidueWatch = ResidueWatch;

/// ASCII, so its UTF-16LE form is each byte followed by a zero byte.
const PASSWORD: &str = "Zq7-unlikely-Pw-9f3";

#[test]
fn ntlm_leaves_no_password_in_freed_memory() {
    residue::watch(PASSWORD.as_bytes());
    // Not vacuous: a freed UTF-16LE copy and a freed UTF-8 copy are seen.
    drop(smb::wire::utf16le(PASSWORD));
    drop(String::from(PASSWORD));
    assert_eq!(residue::found(), 2, "the watch sees freed copies");

    residue::watch(PASSWORD.as_bytes());
    let creds = Credentials {
        user: "alice".into(),
        password: PASSWORD.into(),
        domain: "CORP".into(),
        workstation: "WS".into(),
    };
    let nt = ntlm::nt_hash(&creds.password);
    let owf = ntlm::ntowfv2(&creds.password, &creds.user, &creds.domain);
    let v2 = ntlm::ntlmv2(&creds, &[1; 8], &[0, 0, 0, 0], &[2; 8], 0, false);
    let cfg = smb::Config::new("srv", "share", "alice", PASSWORD);
    drop(cfg.clone());
    drop(cfg);
    drop(v2);
    drop(creds);
    assert_ne!(nt, owf);
    assert_eq!(
        residue::found(),
        0,
        "freed heap blocks held the password (UTF-8 or UTF-16LE)"
    );
}
