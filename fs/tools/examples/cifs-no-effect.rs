//! `cifs-no-effect`: the cifs mount options the option table
//! (`fs::fstype::cifs::options::OPTIONS`) accepts with no effect here, one
//! a line: the option as docs/mount-options.md's "Accepted, no effect here"
//! list shows it (`` `name=` ``, `` `name / noname` `` or `` `name` ``), a
//! tab, and the table's reason. `scripts/mount-options-check.sh` checks the
//! document against these lines, so the two cannot drift apart. Reads
//! nothing; writes only to stdout.

use fs::fstype::cifs::options::{Kind, OPTIONS};

fn main() {
    for spec in OPTIONS {
        let Some(why) = spec.no_effect else { continue };
        let shown = match spec.kind {
            Kind::Num | Kind::Str => format!("`{}=`", spec.name),
            Kind::FlagNo => format!("`{} / no{}`", spec.name, spec.name),
            Kind::Flag => format!("`{}`", spec.name),
        };
        println!("{shown}\t{why}");
    }
}
