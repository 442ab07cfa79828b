"""The VLA's CPU-independent float64 arithmetic (wmrl.vla.exact) against torch's and math's own.

The cross-kernel check (the same bits under other torch kernels and another MKL code path) is a
whole run, in tests/test_vla.py; here each operation is checked for what it computes."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from torch import nn

from wmrl.vla import exact

D = torch.float64


def _ulps(a: torch.Tensor, b: torch.Tensor) -> float:
    return float(((a - b).abs() / torch.finfo(D).eps / b.abs().clamp(min=torch.finfo(D).tiny)).max())


def test_exp_is_within_two_ulp_of_libm_over_the_whole_float64_range():
    x = torch.cat([torch.linspace(-708, 709, 20001, dtype=D), torch.linspace(-1, 1, 2001, dtype=D)])
    reference = torch.tensor([math.exp(v) for v in x.tolist()], dtype=D)
    assert _ulps(exact.exp(x), reference) <= 2
    assert float(exact.exp(torch.zeros(1, dtype=D))) == 1.0


def test_tanh_and_sigmoid_agree_with_torch_and_have_their_derivatives():
    x = torch.linspace(-30, 30, 6001, dtype=D, requires_grad=True)
    for ours, theirs in ((exact.tanh, torch.tanh), (exact.sigmoid, torch.sigmoid)):
        y = ours(x)
        torch.testing.assert_close(y, theirs(x), rtol=0, atol=4e-16)
        (g,) = torch.autograd.grad(y.sum(), x)
        (h,) = torch.autograd.grad(theirs(x).sum(), x)
        torch.testing.assert_close(g, h, rtol=0, atol=4e-16)
    assert float(exact.tanh(torch.tensor([-3.0], dtype=D))) == -float(exact.tanh(torch.tensor([3.0], dtype=D)))


@pytest.mark.parametrize("n", [1, 2, 3, 7, 64, 1000, 3201])
def test_fsum_is_the_sum_and_follows_its_pairwise_order(n):
    x = torch.as_tensor(np.random.default_rng(n).standard_normal((n, 3)) * 10.0 ** np.arange(3))
    torch.testing.assert_close(exact.fsum(x, 0), torch.tensor([math.fsum(c) for c in x.T.tolist()], dtype=D),
                               rtol=1e-13, atol=1e-12)

    def pairwise(v):  # the documented order, element by element
        while len(v) > 1:
            h = len(v) // 2
            v = [v[i] + v[h + i] for i in range(h)] + v[2 * h:]
        return v[0]
    assert exact.fsum(x[:, 0], 0).item() == pairwise(x[:, 0].tolist())


def test_linear_is_the_layer_and_its_gradients_are_autograds():
    rng = np.random.default_rng(0)
    layer = exact.init_(nn.Linear(42, 16), 0)
    x = torch.as_tensor(rng.standard_normal((5, 7, 42))).requires_grad_()
    ours, theirs = exact.linear(x, layer), layer(x)
    torch.testing.assert_close(ours, theirs, rtol=1e-13, atol=1e-13)
    g = torch.as_tensor(rng.standard_normal(ours.shape))
    mine = torch.autograd.grad(ours, [x, layer.weight, layer.bias], g)
    ref = torch.autograd.grad(theirs, [x, layer.weight, layer.bias], g)
    for a, b in zip(mine, ref):
        torch.testing.assert_close(a, b, rtol=1e-12, atol=1e-12)


def test_an_mlp_is_its_sequentials_forward_and_init_is_torchs_default_in_float64_by_seed():
    def net():
        return nn.Sequential(nn.Linear(10, 32), nn.Tanh(), nn.Linear(32, 3))
    a, b = exact.init_(net(), 5), exact.init_(net(), 5)
    assert all(p.dtype == D and torch.equal(p, q) for p, q in zip(a.parameters(), b.parameters()))
    assert not torch.equal(a[0].weight, exact.init_(net(), 6)[0].weight)
    assert float(a[0].weight.abs().max()) <= 1 / math.sqrt(10) and float(a[2].bias.abs().max()) <= 1 / math.sqrt(32)
    x = torch.as_tensor(np.random.default_rng(0).standard_normal((8, 10)))
    torch.testing.assert_close(exact.mlp(a, x, exact.tanh), a(x), rtol=1e-13, atol=1e-13)


def test_a_rows_output_is_the_same_bits_alone_or_in_any_batch():
    rng = np.random.default_rng(1)
    layer = exact.init_(nn.Linear(128, 128), 1)
    x = torch.as_tensor(rng.standard_normal((300, 128)))
    batch = exact.linear(x, layer)
    for i in (0, 7, 299):
        assert torch.equal(exact.linear(x[i:i + 1], layer)[0], batch[i])
        assert torch.equal(exact.linear(x[i:i + 33], layer)[0], batch[i])


def test_the_large_and_small_weight_gradient_paths_give_the_same_bits():
    rng = np.random.default_rng(2)
    layer = exact.init_(nn.Linear(128, 128), 2)
    x = torch.as_tensor(rng.standard_normal((300, 128)))
    g = torch.as_tensor(rng.standard_normal((300, 128)))
    grads = []
    for small in (exact._SMALL, 0):  # 300 * 128 * 128 fits: the one-product path; 0 forces the loop
        exact._SMALL, saved = small, exact._SMALL
        try:
            layer.weight.grad = None
            exact.linear(x, layer).backward(g)
            grads.append(layer.weight.grad.clone())
        finally:
            exact._SMALL = saved
    assert torch.equal(*grads)


def test_broadcast_sums_its_gradient_over_the_batch():
    p = torch.tensor([0.5, -1.0], dtype=D, requires_grad=True)
    like = torch.zeros(4, 3, 2, dtype=D)
    y = exact.broadcast(p, like)
    assert y.shape == like.shape and torch.equal(y[2, 1], p.detach())
    (g,) = torch.autograd.grad(y, p, torch.arange(24, dtype=D).reshape(4, 3, 2))
    assert g.tolist() == [sum(range(0, 24, 2)), sum(range(1, 24, 2))]


def test_adam_takes_torchs_default_adam_steps():
    rng = np.random.default_rng(3)
    start = torch.as_tensor(rng.standard_normal(50))
    target = torch.as_tensor(rng.standard_normal(50))
    params = [start.clone().requires_grad_(), start.clone().requires_grad_()]
    opts = [exact.Adam([params[0]], lr=1e-2), torch.optim.Adam([params[1]], lr=1e-2)]
    for _ in range(200):
        for p, opt in zip(params, opts):
            opt.zero_grad()
            ((p - target) ** 2 * torch.arange(1, 51, dtype=D)).sum().backward()
            opt.step()
    torch.testing.assert_close(params[0], params[1], rtol=1e-10, atol=1e-12)
    assert float((params[0].detach() - target).abs().max()) < float((start - target).abs().max())
    state = opts[0].state_dict()  # a checkpoint resumes it
    again = exact.Adam([params[0].detach().clone().requires_grad_()], lr=1e-2)
    again.load_state_dict(state)
    assert again.state_dict()["state"][0]["step"] == 200
