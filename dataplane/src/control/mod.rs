//! The operator's side of a running daemon: the control socket
//! (`dataplane reload`, `dataplane stats`) and what a reload checks and
//! reports. Runs on the control thread only; nothing here is on the data
//! path.
pub mod reload;
pub mod socket;
