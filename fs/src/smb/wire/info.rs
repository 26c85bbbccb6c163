//! File information classes read by QUERY_INFO for stat (MS-FSCC 2.4):
//! FileBasicInformation (4), FileStandardInformation (5) and
//! FileAllInformation (18), which begins with the two and adds the inode
//! number and EaSize.

use super::create::FileTimes;
use super::{slice, u32_at, u64_at, u8_at, Result};

/// Info classes.
pub mod class {
    pub const BASIC: u8 = 4;
    pub const STANDARD: u8 = 5;
    pub const ALL: u8 = 18;
}

/// What stat needs of a file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct FileStat {
    pub times: FileTimes,
    pub attributes: u32,
    pub allocation_size: u64,
    pub end_of_file: u64,
    pub nlink: u32,
    pub delete_pending: bool,
    pub directory: bool,
    /// IndexNumber (FileAll only).
    pub file_id: Option<u64>,
    /// EaSize (FileAll only).
    pub ea_size: Option<u32>,
}

/// Parses FileBasicInformation (40 bytes) into `st`.
pub fn parse_basic(b: &[u8], st: &mut FileStat) -> Result<()> {
    slice(b, 0, 36)?;
    st.times = FileTimes::parse(b, 0)?;
    st.attributes = u32_at(b, 32)?;
    Ok(())
}

/// Parses FileStandardInformation (24 bytes) into `st`.
pub fn parse_standard(b: &[u8], st: &mut FileStat) -> Result<()> {
    st.allocation_size = u64_at(b, 0)?;
    st.end_of_file = u64_at(b, 8)?;
    st.nlink = u32_at(b, 16)?;
    st.delete_pending = u8_at(b, 20)? != 0;
    st.directory = u8_at(b, 21)? != 0;
    Ok(())
}

/// Parses FileAllInformation (the fixed part; the trailing name is ignored).
pub fn parse_all(b: &[u8]) -> Result<FileStat> {
    let mut st = FileStat::default();
    parse_basic(slice(b, 0, 40)?, &mut st)?;
    parse_standard(slice(b, 40, 24)?, &mut st)?;
    st.file_id = Some(u64_at(b, 64)?);
    st.ea_size = Some(u32_at(b, 72)?);
    Ok(st)
}
