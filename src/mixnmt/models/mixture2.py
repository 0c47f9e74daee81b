"""The second-order mixture RNN, section 3 of models.md.

The transition depends on the two last states, each order with its own component bank:

    u_t = h_{t-1} + x_t                         (+ W_c c if source: summary)
    h_t = LN(u_t + Mix_a(u_t ; M_a) + Mix_b(h_{t-2} ; M_b))

The state carried between steps is the pair (h_{t-1}, h_{t-2}); the encoder hands the
decoder its summary as both. With `source: states` the encoder states are candidates of
Mix_a only. The knobs mean what they mean for `mixture`.
"""

from __future__ import annotations

from torch import Tensor

from mixnmt.models.base import Weights
from mixnmt.models.mixture import Memory, Mixture, MixtureCell, mixture_axes


class SecondOrderCell(MixtureCell):
    """One step of second-order mixture dynamics. The state is (h_{t-1}, h_{t-2})."""

    order = 2
    mixtures = ("responsibilities_a", "responsibilities_b")

    def forward(
        self, state: tuple[Tensor, ...], x: Tensor, memory: tuple[Memory, ...]
    ) -> tuple[tuple[Tensor, ...], Weights]:
        h1, h2 = state
        u = h1 + x
        update_a, pi_a = self.mixes[0](u, memory[0])
        update_b, pi_b = self.mixes[1](h2, memory[1])
        return (self.next_state(h1, u, u + update_a + update_b), h1), {
            "responsibilities_a": pi_a,
            "responsibilities_b": pi_b,
        }


class Mixture2(Mixture):
    Cell = SecondOrderCell
    analysis_axes = mixture_axes(SecondOrderCell)
