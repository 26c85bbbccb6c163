//! The option parser against Linux's rules and the seed's line. (That
//! docs/mount-options.md lists every option without effect is checked
//! from the document's side: scripts/mount-options-check.sh.)

use super::*;
use alloc::vec;

/// The seed's mount line (a Linux 6.12 `/proc/mounts` line) pasted as
/// is, with credentials: every option is accepted, the implemented
/// ones take effect.
pub const SEED: &str = "vers=3.1.1,cache=strict,upcall_target=app,uid=5000,forceuid,gid=5000,\
forcegid,file_mode=0664,dir_mode=0775,iocharset=utf8,soft,nounix,mapposix,\
reparse=nfs,nativesocket,symlink=native,rsize=4194304,wsize=4194304,\
acdirmax=300,acregmax=30";

#[test]
fn the_seed_line_parses() {
    let o = CifsOpts::parse(&format!("{SEED},username=root,password=pw")).unwrap();
    assert_eq!(o.vers, vec![0x0311]);
    assert_eq!(
        (o.uid, o.gid, o.forceuid, o.forcegid),
        (5000, 5000, true, true)
    );
    assert_eq!((o.file_mode, o.dir_mode), (0o664, 0o775));
    assert_eq!((o.acregmax_ms, o.acdirmax_ms), (30_000, 300_000));
    assert_eq!((o.rsize, o.wsize), (4 << 20, 4 << 20));
    assert!(o.soft && !o.unix && o.remap == Remap::Sfm);
    assert_eq!(o.cache, CachePolicy::Strict);
    assert!(o.all_forced());
}

#[test]
fn unknown_options_are_all_named_and_sloppy_accepts_them() {
    let e = CifsOpts::parse("soft,bogus=1,vers=3.0,frob").unwrap_err();
    assert_eq!(
        e.0,
        "cifs: Unknown parameters 'bogus', 'frob' (sloppy accepts them)"
    );
    let e = CifsOpts::parse("bogus").unwrap_err();
    assert_eq!(e.0, "cifs: Unknown parameter 'bogus' (sloppy accepts them)");
    let o = CifsOpts::parse("bogus=1,sloppy,frob,vers=3.0").unwrap();
    assert_eq!(o.ignored, vec!["bogus".to_string(), "frob".to_string()]);
    assert_eq!(o.vers, vec![0x0300]);
}

#[test]
fn every_linux_option_is_accepted() {
    for spec in OPTIONS {
        let s = match spec.kind {
            Kind::Flag | Kind::FlagNo => spec.name.to_string(),
            Kind::Num if spec.name.ends_with("mode") => format!("{}=0644", spec.name),
            Kind::Num => format!("{}=4096", spec.name),
            Kind::Str => match spec.name {
                "vers" | "ver" => "vers=3.0".into(),
                "sec" => "sec=ntlmssp".into(),
                "cache" => "cache=loose".into(),
                "iocharset" => "iocharset=utf8".into(),
                "wslea" => "wslea=probe".into(),
                "eacache" => "eacache=always".into(),
                "credentials" | "cred" => continue,
                n => format!("{n}=x"),
            },
        };
        CifsOpts::parse(&s).unwrap_or_else(|e| panic!("{s}: {e}"));
        if spec.kind == Kind::FlagNo {
            CifsOpts::parse(&format!("no{}", spec.name)).unwrap();
        }
    }
    assert!(CifsOpts::parse("soft=1")
        .unwrap_err()
        .0
        .contains("Unexpected value"));
    assert!(CifsOpts::parse("uid")
        .unwrap_err()
        .0
        .contains("needs a value"));
}

#[test]
fn user_percent_pass_escaped_commas_and_credentials_file() {
    let o = CifsOpts::parse("username=root%pw,vers=3.0").unwrap();
    assert_eq!((o.username.as_str(), o.password.as_str()), ("root", "pw"));
    let o = CifsOpts::parse("password=p,,w,,,,x,soft").unwrap();
    assert_eq!(o.password, "p,w,,x");
    assert!(o.soft);
    let read = |p: &str| -> Result<String, String> {
        assert_eq!(p, "/etc/cred");
        Ok("username=alice\npassword=s3,cret\ndomain=WG\n".into())
    };
    let o = CifsOpts::parse_with("credentials=/etc/cred,vers=3.0", &read).unwrap();
    assert_eq!(
        (o.username.as_str(), o.password.as_str(), o.domain.as_str()),
        ("alice", "s3,cret", "WG")
    );
    // The command line wins over the file.
    let o = CifsOpts::parse_with("user=bob,credentials=/etc/cred", &read).unwrap();
    assert_eq!(
        (o.username.as_str(), o.password.as_str()),
        ("bob", "s3,cret")
    );
    let nofile = |_: &str| -> Result<String, String> { Err("No such file".into()) };
    let e = CifsOpts::parse_with("credentials=/etc/cred", &nofile).unwrap_err();
    assert_eq!(e.0, "cifs: credentials=/etc/cred: No such file");
}

#[test]
fn cache_sec_vers_and_iocharset() {
    let o = CifsOpts::parse("cache=none,acregmax=30").unwrap();
    assert_eq!((o.acregmax_ms, o.acdirmax_ms), (0, 0));
    assert_eq!(CifsOpts::parse("noac").unwrap().acregmax_ms, 0);
    assert!(CifsOpts::parse("sec=ntlmsspi").unwrap().sign);
    assert!(CifsOpts::parse("sec=krb5").is_err());
    assert!(CifsOpts::parse("iocharset=iso8859-1").is_err());
    assert_eq!(CifsOpts::parse("vers=2.0").unwrap().vers, vec![0x0202]);
    assert_eq!(
        CifsOpts::parse("vers=3").unwrap().vers,
        vec![0x0311, 0x0302, 0x0300]
    );
    assert_eq!(
        CifsOpts::default().vers,
        vec![0x0311, 0x0302, 0x0300, 0x0210]
    );
    assert!(CifsOpts::parse("vers=4.0")
        .unwrap_err()
        .0
        .contains("Unknown vers="));
    let o = CifsOpts::parse("noserverino,serverino,nomapposix,hard,noforceuid").unwrap();
    assert!(!o.noserverino && o.remap == Remap::None && !o.soft && !o.forceuid);
}

#[test]
fn eacache_user_xattr_and_the_old_wslea_names() {
    use crate::fstype::cifs::eacache;
    let d = |o: &CifsOpts| o.effective_eacache().name();
    assert_eq!(d(&CifsOpts::default()), eacache::DEFAULT);
    for name in eacache::names().split('|') {
        let o = CifsOpts::parse(&format!("eacache={name}")).unwrap();
        assert_eq!(d(&o), name);
        assert!(o.notes.is_empty());
    }
    let e = CifsOpts::parse("eacache=probe").unwrap_err();
    assert_eq!(
        e.0,
        alloc::format!("cifs: bad eacache= option: probe ({})", eacache::names())
    );
    assert!(e.0.contains("(always|negcache|easize|off"), "{}", e.0);
    // The old name, with a note saying what it means now.
    let o = CifsOpts::parse("wslea=probe,wslea_k=3").unwrap();
    assert_eq!((d(&o), o.eacache_k), ("always", 3));
    assert!(o.notes[0].starts_with("cifs: wslea=probe is now eacache=always"));
    assert_eq!(o.notes[1], "cifs: wslea_k= is now eacache_k=");
    let o = CifsOpts::parse("wslea=negcache").unwrap();
    assert_eq!(d(&o), "negcache");
    assert_eq!(
        o.notes,
        vec!["cifs: wslea=negcache is now eacache=negcache"]
    );
    assert!(CifsOpts::parse("wslea=bogus").is_err());
    // nouser_xattr wins over any design; user_xattr gives it back.
    let o = CifsOpts::parse("eacache=always,nouser_xattr").unwrap();
    assert_eq!(d(&o), "off");
    let o = CifsOpts::parse("nouser_xattr,user_xattr,eacache=negcache,eacache_k=2").unwrap();
    assert_eq!((d(&o), o.eacache_k), ("negcache", 2));
    // Forcing every owner field no longer turns the EA cache off.
    let o = CifsOpts::parse("uid=1,forceuid,gid=1,forcegid,file_mode=0644,dir_mode=0755").unwrap();
    assert!(o.all_forced());
    assert_eq!(d(&o), eacache::DEFAULT);
}
