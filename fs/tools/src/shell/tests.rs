//! Tests of vfsh's parser and output lines (`super`).

use super::*;
use fs::vfs::FileType;

#[test]
fn parse_words_and_arity() {
    assert_eq!(parse("  # comment"), Ok(None));
    assert_eq!(parse("\t\r\n"), Ok(None));
    assert_eq!(parse("mkdir /a\n"), Ok(Some(Cmd::Mkdir(b"/a".to_vec()))));
    assert_eq!(
        parse("rename  /a\t/b"),
        Ok(Some(Cmd::Rename(b"/a".to_vec(), b"/b".to_vec())))
    );
    assert_eq!(parse("stat \"\""), Ok(Some(Cmd::Stat(Vec::new()))));
    assert_eq!(parse("mkdir"), Err(ParseError::Arity("mkdir P")));
    assert_eq!(parse("mkdir /a /b"), Err(ParseError::Arity("mkdir P")));
    assert_eq!(
        parse("stats x"),
        Err(ParseError::Arity("stats | stats reset"))
    );
    assert_eq!(parse("stats"), Ok(Some(Cmd::Stats)));
    assert_eq!(parse(" stats\treset "), Ok(Some(Cmd::StatsReset)));
    assert_eq!(
        parse("stats reset now"),
        Err(ParseError::Arity("stats | stats reset"))
    );
    assert_eq!(parse("help"), Ok(Some(Cmd::Help)));
    assert_eq!(parse("help mkdir"), Err(ParseError::Arity("help")));
    assert!(matches!(
        parse("frob /a"),
        Err(ParseError::UnknownCommand(_))
    ));
    assert!(matches!(parse("trace maybe"), Err(ParseError::TraceArg(_))));
    assert_eq!(parse("stat /a\\x00"), Err(ParseError::Nul));
    assert_eq!(
        parse("mount enoent=noalloc /m"),
        Ok(Some(Cmd::Mount {
            opts: "enoent=noalloc".into(),
            path: Some(b"/m".to_vec())
        }))
    );
}

#[test]
fn write_text_is_rest_of_line() {
    assert_eq!(
        parse("write /f  two  spaces \r\n"),
        Ok(Some(Cmd::Write(b"/f".to_vec(), b" two  spaces ".to_vec())))
    );
    assert_eq!(
        parse("write /f"),
        Ok(Some(Cmd::Write(b"/f".to_vec(), Vec::new())))
    );
    assert_eq!(parse("write"), Err(ParseError::Arity("write P TEXT")));
    assert_eq!(
        parse("write /f a\\nb\\\\\\xff"),
        Ok(Some(Cmd::Write(b"/f".to_vec(), b"a\nb\\\xff".to_vec())))
    );
    assert!(matches!(
        parse("write /f \\q"),
        Err(ParseError::BadEscape(_))
    ));
    assert!(matches!(
        parse("write /f \\x4"),
        Err(ParseError::BadEscape(_))
    ));
    assert!(matches!(
        parse("write /f \\"),
        Err(ParseError::BadEscape(_))
    ));
}

#[test]
fn escapes_round_trip() {
    let all: Vec<u8> = (0..=255u8).chain("é ü".bytes()).collect();
    for esc in [escape_text(&all), escape_word(&all)] {
        assert!(!esc.contains('\n'));
        assert_eq!(unescape(&esc).unwrap(), all);
    }
    assert_eq!(escape_text(b"a b\n\\\xc3"), "a b\\n\\\\\\xc3");
    assert_eq!(escape_word(b"a b"), "a\\x20b");
    assert_eq!(escape_text("é".as_bytes()), "é");
}

#[test]
fn result_lines() {
    assert_eq!(
        ls_line(vec![b"c".to_vec(), b"a".to_vec(), b"b".to_vec()]),
        "ok a b c"
    );
    assert_eq!(ls_line(Vec::new()), "ok");
    assert_eq!(stat_line(FileType::File, 5), "ok file size=5");
    assert_eq!(err_line(Errno::ENOTDIR), "err ENOTDIR");
    let names: Vec<String> = stats_lines()
        .iter()
        .map(|l| l.split(' ').nth(1).unwrap().to_string())
        .collect();
    assert!(names.contains(&"lookups".to_string()));
    assert!(names.contains(&"fallbacks_cache_miss".to_string()));
}
