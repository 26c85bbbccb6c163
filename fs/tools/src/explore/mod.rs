//! The step-through page of the lookup walk (`make explore`,
//! docs/explore/index.html): its fixed [`scenarios`], run through the vfsh
//! engine ([`crate::shell`]) with `trace on` and `trace json`, and
//! Linux's own walk of the same stats beside them ([`linux`]: the function
//! graphs `make linux-walks` committed under docs/explore/linux/).
//!
//! Above the shell: it only drives shells; the shell knows nothing of it.

pub mod linux;
pub mod scenarios;
