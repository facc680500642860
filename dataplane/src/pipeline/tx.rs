//! Where a forwarding stage's fast path puts the packets it rewrote: the
//! pipeline hands the last stage [`SendTx`] in the worker (straight to the
//! output), every other stage and `Pipeline::run` [`MarkTx`] (a verdict
//! for [`super::dispatch`]). The stage calls [`FastTx::forwarded`] and
//! does not know which; both inline to the few stores they make.
use super::{Meta, Output, Verdict};

/// What becomes of a packet a stage's fast path forwarded (rewritten, to
/// output `port`).
pub trait FastTx<P> {
    /// `note` writes what the stage records in the packet's `Meta` for
    /// the stages after it (route: the next hop); called only when the
    /// packet is marked, not when it is sent at once.
    fn forwarded(
        &mut self,
        slot: &mut Option<P>,
        m: &mut Meta,
        port: u16,
        note: impl FnOnce(&mut Meta),
    );
}

/// Marks the verdict (and the input port: the fast path never filled the
/// `Meta`), as every other forwarded packet gets; [`super::dispatch`] sends
/// it later, in packet order (`Pipeline::run`, and stages after the
/// forwarder).
pub struct MarkTx {
    pub in_port: u16,
}

impl<P> FastTx<P> for MarkTx {
    #[inline(always)]
    fn forwarded(
        &mut self,
        _slot: &mut Option<P>,
        m: &mut Meta,
        port: u16,
        note: impl FnOnce(&mut Meta),
    ) {
        note(m);
        m.in_port = self.in_port;
        m.verdict = Verdict::Tx(port);
    }
}

/// Moves the packet to the output at once (`Pipeline::run_and_dispatch`, the
/// worker's way): no verdict round trip through `dispatch` (a visible part
/// of the core in the route profile). The slot is left empty and the verdict at the
/// `Continue` the pass set: dispatch skips empty slots, and a `Continue`
/// keeps it off its whole-burst shortcut (which would send the burst's
/// slots as they are). So a burst's fast-path packets leave before its
/// other packets to the same port. Which path a packet takes depends on
/// its frame's shape (untagged, no IP options) and its route, which a
/// flow's packets normally share; a flow whose packets differ in shape
/// within one burst (some with IP options, say) can be reordered there.
pub struct SendTx<'a, O> {
    pub out: &'a mut O,
}

impl<P, O: Output<P>> FastTx<P> for SendTx<'_, O> {
    #[inline(always)]
    fn forwarded(
        &mut self,
        slot: &mut Option<P>,
        _m: &mut Meta,
        port: u16,
        _note: impl FnOnce(&mut Meta),
    ) {
        if let Some(p) = slot.take() {
            self.out.tx(port, p);
        }
    }
}
