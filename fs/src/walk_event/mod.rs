//! Walk events: a step of the path walk is one typed [`WalkEvent`], emitted
//! once by `namei` ([`walk_event!`](crate::walk_event!)) and rendered here:
//! as its text line (`trace on`, the guest's `demo=trace`, through
//! [`crate::trace`]'s flag and sink) and, with the `teaching` feature, as a
//! [`Step`] (`trace json`, the step-through page, the race hook of
//! `vfsh race`). The events carry the dentries they are about, so this
//! sits above the dcache while the text trace stays below it.
//!
//! - `walk.rs`: the events and their text lines;
//! - `step.rs`: the events as steps, and the step sink.
//!
//! Touches: two globals (the step flag and the step sink).

mod step;
mod walk;

pub use step::{emit_step, enable_steps, mirrors, set_step_sink, steps_enabled, Step};
pub use walk::{emit_walk, SeqNote, Text, UnlazyFail, WalkEvent};
