//! No secret in any `Debug` output (issue 49): every type that holds a
//! password, an NT hash or a session, signing or sealing key — the cifs
//! mount options, the smb crate's `Config` and `Credentials`, the NTLMv2
//! result, `Signer` on each dialect, `Sealer` with each cipher — is
//! formatted with `{:?}` and `{:#?}`, and none of the secrets (the
//! sealing keys of both directions among them) appears, in
//! any of the forms `Debug` could print it: the text, the bytes as a
//! decimal array (compact or one per line), or hex. Touches nothing.

use fs::fstype::cifs::options::CifsOpts;
use smb::crypto::{Cipher, PreauthHash, Sealer, SignAlg, Signer};
use smb::ntlm::{self, Credentials};

const PASSWORD: &str = "Tr0ub4dor&3-horse";

/// The forms in which `Debug` could show `bytes`.
fn forms(bytes: &[u8]) -> Vec<String> {
    let dec: Vec<String> = bytes.iter().map(|b| b.to_string()).collect();
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    vec![
        // Decimal array, whitespace removed (compact and pretty alike).
        dec.join(","),
        hex.clone(),
        hex.to_uppercase(),
    ]
}

/// `text` with every whitespace character removed.
fn squeeze(text: &str) -> String {
    text.chars().filter(|c| !c.is_whitespace()).collect()
}

/// Fails if any secret form is in `{:?}` or `{:#?}` of `v`.
fn assert_clean(what: &str, v: &dyn std::fmt::Debug, secrets: &[(&str, Vec<String>)]) {
    for text in [format!("{v:?}"), format!("{v:#?}")] {
        let flat = squeeze(&text);
        for (name, forms) in secrets {
            for f in forms {
                assert!(
                    !flat.contains(&squeeze(f)),
                    "{what}: {name} appears as {f:?} in {text}"
                );
            }
        }
    }
}

#[test]
fn no_secret_in_any_debug_output() {
    let user = "alice";
    let domain = "CORP";
    let nt = ntlm::nt_hash(PASSWORD);
    let ntowf = ntlm::ntowfv2(PASSWORD, user, domain);
    let creds = Credentials {
        user: user.into(),
        password: PASSWORD.into(),
        domain: domain.into(),
        workstation: "WS".into(),
    };
    let v2 = ntlm::ntlmv2(&creds, &[1; 8], &[0, 0, 0, 0], &[2; 8], 0, false);
    let session_key = v2.session_key;
    let preauth = PreauthHash::default();
    let signers = [
        Signer::smb2(&session_key),
        Signer::smb30(&session_key),
        Signer::smb311(&session_key, SignAlg::AesCmac, &preauth),
        Signer::smb311(&session_key, SignAlg::AesGmac, &preauth),
    ];
    let mut secrets: Vec<(&str, Vec<String>)> = vec![
        ("password", vec![PASSWORD.to_string()]),
        ("NT hash", forms(&nt)),
        ("NTOWFv2", forms(&ntowf)),
        ("session key", forms(&session_key)),
    ];
    for s in &signers {
        secrets.push(("signing key", forms(&s.key)));
    }
    // The sealer's keys (both directions, 3.0.x and 3.1.1), derived as
    // `Sealer::smb30` and `Sealer::smb311` derive them.
    use smb::crypto::kdf;
    for (label, context) in [
        (&b"SMB2AESCCM\0"[..], &b"ServerIn \0"[..]),
        (b"SMB2AESCCM\0", b"ServerOut\0"),
        (b"SMBC2SCipherKey\0", &preauth.0[..]),
        (b"SMBS2CCipherKey\0", &preauth.0[..]),
    ] {
        secrets.push(("sealing key", forms(&kdf(&session_key, label, context))));
    }
    let sealers = [
        Sealer::smb30(&session_key, 7, [1; 4]),
        Sealer::smb311(&session_key, Cipher::Aes128Gcm, &preauth, 7, [1; 4]),
        Sealer::smb311(&session_key, Cipher::Aes128Ccm, &preauth, 7, [1; 4]),
    ];
    for s in &sealers {
        assert_clean("Sealer", s, &secrets);
    }
    for s in &signers {
        assert_clean("Signer", s, &secrets);
    }
    assert_clean("Credentials", &creds, &secrets);
    assert_clean("NtlmV2", &v2, &secrets);
    let mut cfg = smb::Config::new("srv", "share", user, PASSWORD);
    cfg.creds.domain = domain.into();
    assert_clean("Config", &cfg, &secrets);
    // Every way a password reaches the mount options.
    for line in [
        format!("username={user},password={PASSWORD},domain={domain}"),
        format!("user={user}%{PASSWORD}"),
        format!("user={user},pass={PASSWORD},sign"),
        format!("username={user},password={PASSWORD},seal,vers=3.1.1"),
    ] {
        let o = CifsOpts::parse(&line).expect("options parse");
        assert_eq!(&*o.password, PASSWORD, "{line}");
        assert_clean(&line, &o, &secrets);
    }
    // The forms are not vacuous: a plain array does show them.
    let shown = format!("{:?}", session_key);
    assert!(squeeze(&shown).contains(&forms(&session_key)[0]));
}
