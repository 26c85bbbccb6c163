//! Markdown tables: a header with one alignment per column, then rows,
//! each line `| a | b |`. The one writer of every table the report,
//! `bench predict` and the Linux reference print.
//!
//! ```
//! use formats::markdown::{Align, Table};
//! let mut t = Table::new([("design", Align::Left), ("ops/s", Align::Right)]);
//! t.row(["noalloc", "1.2 M"]);
//! assert_eq!(t.to_string(), "| design | ops/s |\n|---|---:|\n| noalloc | 1.2 M |\n");
//! ```
//!
//! Touches nothing; allocates the table's text.

use alloc::string::String;
use core::fmt::{self, Write as _};

/// A column's alignment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Align {
    /// `---`: markdown's default (left).
    Left,
    /// `---:`.
    Right,
}

/// A table being written: the header and alignment lines, then a line per
/// [`Table::row`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Table {
    text: String,
}

impl Table {
    /// A table with these columns (header text, alignment).
    pub fn new<H, I>(cols: I) -> Table
    where
        H: fmt::Display,
        I: IntoIterator<Item = (H, Align)>,
    {
        let mut text = String::from("|");
        let mut rule = String::from("|");
        for (h, a) in cols {
            let _ = write!(text, " {h} |");
            rule.push_str(match a {
                Align::Left => "---|",
                Align::Right => "---:|",
            });
        }
        text.push('\n');
        text.push_str(&rule);
        text.push('\n');
        Table { text }
    }

    /// One row: each cell as it displays, between `| ` and ` |`.
    pub fn row<C, I>(&mut self, cells: I)
    where
        C: fmt::Display,
        I: IntoIterator<Item = C>,
    {
        self.text.push('|');
        for c in cells {
            let _ = write!(self.text, " {c} |");
        }
        self.text.push('\n');
    }

    /// The table's text, every line ending in `\n`.
    pub fn into_string(self) -> String {
        self.text
    }
}

impl fmt::Display for Table {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::string::ToString;

    #[test]
    fn header_rule_and_rows() {
        let mut t = Table::new([("a", Align::Left), ("b", Align::Right), ("c", Align::Left)]);
        t.row([&"x" as &dyn fmt::Display, &1, &2.5]);
        t.row(["", "", ""]);
        assert_eq!(
            t.to_string(),
            "| a | b | c |\n|---|---:|---|\n| x | 1 | 2.5 |\n|  |  |  |\n"
        );
    }

    #[test]
    fn a_table_without_rows_is_its_header() {
        let t = Table::new([("only", Align::Right)]);
        assert_eq!(t.into_string(), "| only |\n|---:|\n");
    }
}
