//! Unit tests of the one command-line parser, over small tables of their
//! own: the word rules every table gets (the kernel's and the benchmark's
//! tables have their own tests beside them), the messages and the help.

use alloc::format;

use super::*;

#[derive(Debug, Default, PartialEq)]
struct State {
    on: bool,
    n: Option<u64>,
    word: Option<&'static str>,
}

const FLAG_AND_NUMBER: &[Key<State>] = &[
    Key {
        name: "on",
        syntax: Values::Text(""),
        help: "a flag",
        kind: Kind::Flag(|s| s.on = true),
    },
    Key {
        name: "n",
        syntax: Values::Text("0..9"),
        help: "a digit",
        kind: Kind::Value(|s, v| {
            s.n = Some(value::int_in(v, 0, 9, "a digit from 0 to 9")?);
            Ok(())
        }),
    },
];

fn two_words(w: &mut dyn fmt::Write) -> fmt::Result {
    w.write_str("a|b")
}

const WORD: &[Key<State>] = &[Key {
    name: "w",
    syntax: Values::Render(two_words),
    help: "one of two words",
    kind: Kind::Value(|s, v| {
        s.word = Some(value::one_of(v, &[("a", "a"), ("b", "b")], "a or b")?);
        Ok(())
    }),
}];

/// Another table that also claims `n`.
const ANOTHER_N: &[Key<State>] = &[Key {
    name: "n",
    syntax: Values::Text("N"),
    help: "a second n",
    kind: Kind::Value(|s, _| {
        s.n = Some(99);
        Ok(())
    }),
}];

fn parse(line: &str) -> Result<State, CmdlineError<'_>> {
    let mut s = State::default();
    parse_words(words(line), &mut s, &[FLAG_AND_NUMBER, WORD])?;
    Ok(s)
}

#[test]
fn empty_line_gives_the_state_untouched() {
    assert_eq!(parse(""), Ok(State::default()));
    assert_eq!(parse("  \t\n "), Ok(State::default()));
}

#[test]
fn flags_and_values_from_every_table() {
    let s = parse("  on\tn=7 w=b ").unwrap();
    assert_eq!(
        s,
        State {
            on: true,
            n: Some(7),
            word: Some("b")
        }
    );
}

#[test]
fn unknown_keys() {
    assert_eq!(parse("bogus=1"), Err(CmdlineError::UnknownKey("bogus")));
    assert_eq!(parse("on bogus"), Err(CmdlineError::UnknownKey("bogus")));
    // A bare word that is not a flag is an unknown key, not a value.
    assert_eq!(
        parse("n=1 noalloc"),
        Err(CmdlineError::UnknownKey("noalloc"))
    );
    assert_eq!(parse("On"), Err(CmdlineError::UnknownKey("On")));
}

#[test]
fn shape_errors() {
    assert_eq!(parse("n"), Err(CmdlineError::MissingValue("n")));
    assert_eq!(parse("n="), Err(CmdlineError::MissingValue("n")));
    assert_eq!(
        parse("on=1"),
        Err(CmdlineError::UnexpectedValue {
            key: "on",
            value: "1"
        })
    );
    assert_eq!(
        parse("on="),
        Err(CmdlineError::UnexpectedValue {
            key: "on",
            value: ""
        })
    );
    assert_eq!(parse("=1"), Err(CmdlineError::EmptyKey("=1")));
    assert_eq!(parse("=3 n=1"), Err(CmdlineError::EmptyKey("=3")));
    assert_eq!(parse("on on"), Err(CmdlineError::Duplicate("on")));
    assert_eq!(parse("n=1 w=a n=1"), Err(CmdlineError::Duplicate("n")));
    // A repeat is refused even when its value is bad or missing.
    assert_eq!(parse("n=1 n="), Err(CmdlineError::Duplicate("n")));
}

#[test]
fn bad_values() {
    for v in ["10", "-1", "+5", "1.5", "0x1", "99999999999999999999"] {
        let line = format!("n={v}");
        assert_eq!(
            parse(&line),
            Err(CmdlineError::BadValue {
                key: "n",
                value: line.strip_prefix("n=").unwrap(),
                expected: Values::Text("a digit from 0 to 9")
            }),
            "{line}"
        );
    }
    assert!(matches!(
        parse("w=c"),
        Err(CmdlineError::BadValue { key: "w", .. })
    ));
}

#[test]
fn a_value_may_contain_equals_and_nothing_quotes() {
    assert!(matches!(
        parse("w=a=b"),
        Err(CmdlineError::BadValue { value: "a=b", .. })
    ));
    // No quoting: `"` is a byte like any other, and a space ends the word.
    assert!(matches!(
        parse("w=\"a b\""),
        Err(CmdlineError::BadValue { value: "\"a", .. })
    ));
    assert_eq!(
        words("w=\"a b\"").collect::<alloc::vec::Vec<_>>(),
        ["w=\"a", "b\""]
    );
}

#[test]
fn a_word_two_tables_claim_is_refused_untaken() {
    for tables in [
        &[FLAG_AND_NUMBER, ANOTHER_N][..],
        &[ANOTHER_N, FLAG_AND_NUMBER][..],
    ] {
        let mut s = State::default();
        assert_eq!(
            parse_words(words("on n=1"), &mut s, tables),
            Err(CmdlineError::Ambiguous("n"))
        );
        assert_eq!(s.n, None, "neither table took it");
        // Words only one table claims still parse.
        let mut s = State::default();
        assert_eq!(parse_words(words("on"), &mut s, tables), Ok(()));
        assert!(s.on);
    }
}

#[test]
fn every_message_names_the_word_the_reason_and_the_errno() {
    let e = |e: CmdlineError<'_>| format!("{e}");
    assert_eq!(
        e(CmdlineError::UnknownKey("cpus")),
        "Unknown parameter `cpus' (ENOENT)"
    );
    assert_eq!(
        e(parse("n=12").unwrap_err()),
        "`12' invalid for parameter `n': expected a digit from 0 to 9 (EINVAL)"
    );
    assert_eq!(
        e(parse("w=c").unwrap_err()),
        "`c' invalid for parameter `w': expected a or b (EINVAL)"
    );
    assert_eq!(
        e(parse("on=1").unwrap_err()),
        "`1' invalid for parameter `on': it is a flag and takes no value (EINVAL)"
    );
    assert_eq!(
        e(parse("n").unwrap_err()),
        "parameter `n' needs a value (`n=...') (EINVAL)"
    );
    assert_eq!(
        e(parse("=1").unwrap_err()),
        "`=1' has no parameter name before `=' (EINVAL)"
    );
    assert_eq!(
        e(parse("on on").unwrap_err()),
        "parameter `on' given more than once (EINVAL)"
    );
    assert_eq!(
        e(CmdlineError::Required("bench")),
        "missing parameter `bench=' (EINVAL)"
    );
    assert_eq!(
        e(CmdlineError::Needs {
            key: "smbopts",
            needs: "smb"
        }),
        "parameter `smbopts' does nothing without `smb=' (EINVAL)"
    );
    assert_eq!(
        e(CmdlineError::Conflict("demo", "stress")),
        "parameters `demo' and `stress' cannot run together (EINVAL)"
    );
    assert_eq!(
        e(CmdlineError::NotUtf8),
        "command line is not valid UTF-8 (EINVAL)"
    );
    assert_eq!(
        e(CmdlineError::TooLong { max: 4096 }),
        "command line longer than 4096 bytes was cut, so it is refused (E2BIG)"
    );
    assert_eq!(CmdlineError::UnknownKey("x").errno(), Errno::ENOENT);
    assert_eq!(CmdlineError::TooLong { max: 1 }.errno(), Errno::E2BIG);
    assert_eq!(CmdlineError::Duplicate("x").errno(), Errno::EINVAL);
}

#[test]
fn help_lists_every_key_of_every_table() {
    let text = format!(
        "{}",
        Help {
            title: "valid keys:",
            tables: &[FLAG_AND_NUMBER, WORD],
        }
    );
    let lines: alloc::vec::Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], "valid keys:");
    assert_eq!(lines.len(), 4, "{text}");
    assert_eq!(lines[1], format!("  {:<44} a flag", "on"));
    assert_eq!(lines[2], format!("  {:<44} a digit", "n=0..9"));
    assert_eq!(lines[3], format!("  {:<44} one of two words", "w=a|b"));
}

#[test]
fn values_compare_and_print_as_their_text() {
    assert_eq!(Values::Render(two_words), Values::Text("a|b"));
    assert_ne!(Values::Render(two_words), Values::Text("a"));
    assert_eq!(format!("[{:>5}]", Values::Render(two_words)), "[  a|b]");
    assert_eq!(format!("{:?}", Values::Text("x")), "Values(\"x\")");
}

#[test]
fn stack_str_keeps_whole_characters() {
    use fmt::Write;
    let mut s = StackStr::<4>::new();
    assert!(s.write_str("ab").is_ok());
    assert!(s.write_str("é€").is_err());
    assert_eq!(s.as_str(), "abé");
}
