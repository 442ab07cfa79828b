r"""Float64 arithmetic with the same bits on every CPU: what lets a VLA run replay on another machine.

Why. MuJoCo's contacts amplify a difference in the last bit of one action to centimetres within
a hundred steps, so a rollout, and every policy update after it, depends on every bit the policy
computes. Torch's own kernels do not give the same bits everywhere: a sum or a matrix product is
reduced in an order set by the CPU's vector width and BLAS code path, ``tanh`` and ``exp`` are
vectorised approximations that differ from the scalar ones, and fused kernels (``addcmul``,
``lerp``) may be compiled to fused multiply-adds on one CPU and not on another. Float64 alone
does not help: a difference of one part in 1e16 in the weights still sends a rollout elsewhere.

How. The networks use only IEEE-754 basic operations (``+ - * /``, ``sqrt``, comparisons,
rounding to an integer), each its own kernel. Each is correctly rounded, so its result does not
depend on how it is vectorised. On top of them:

- :func:`fsum`: a sum in a fixed order (pairwise, by halving), forward and backward;
- :func:`linear`: a dense layer whose products are accumulated in the order of the inputs, each
  row alone, with a backward of the same kind (autograd's own would reduce the weight gradient
  with ``torch.sum``);
- :func:`exp`: Cody-Waite range reduction and a degree-13 Taylor polynomial, :math:`2^k` built
  from the exponent bits; :func:`tanh` and :func:`sigmoid` from it;
- :func:`broadcast`: a parameter repeated over a batch, its gradient summed by :func:`fsum`;
- :class:`Adam`: torch's default Adam step, written in basic operations;
- :func:`mlp`: a stack of such layers and activations; :func:`init_`: a module in float64 with
  torch's default initialisation of its layers, drawn by NumPy.

``tests/test_vla.py`` trains and evaluates a run under other torch kernels (``ATEN_CPU_CAPABILITY``),
another MKL code path (``MKL_CBWR``), OpenBLAS's generic kernels and NumPy's baseline loops, and
checks every bit of the result. The simulator's side is :mod:`wmrl.vla.envs`' (no BLAS in an
observation). What stays CPU-dependent: MuJoCo calls glibc's ``sin``, ``cos``, ``exp``, ``pow``,
``atan2``, whose implementation glibc picks by the CPU, one for every CPU with AVX2 and FMA and
another without; so a run's bits hold on every x86-64 CPU with AVX2 and FMA (docs/reproducibility.md).
"""

from __future__ import annotations

import math

import numpy as np
import torch
from torch import nn

__all__ = ["ARITHMETIC", "DTYPE", "Adam", "broadcast", "exp", "fsum", "init_", "linear", "mlp", "sigmoid", "tanh"]

DTYPE = torch.float64
#: Stamped into every SFT cache key, checkpoint and result: one computed in another arithmetic is rebuilt.
ARITHMETIC = "float64-exact"

# fdlibm's split of log(2): k * LN2_HI is exact for |k| < 2**11.
_LN2_HI, _LN2_LO, _INV_LN2 = 6.93147180369123816490e-01, 1.90821492927058770002e-10, 1.44269504088896338700e+00
_SMALL = 1 << 22  # elements of a (rows, out, in) product worth forming at once
_TAYLOR = [1.0 / math.factorial(n) for n in range(14)]  # |r| <= log(2)/2: the remainder is below 1e-17


def fsum(x: torch.Tensor, dim: int) -> torch.Tensor:
    """Sum over ``dim`` in a fixed order: pairwise, halving, an odd last element carried to the next round."""
    n = x.shape[dim]
    if n == 0:
        return x.sum(dim)
    while n > 1:
        h = n // 2
        y = x.narrow(dim, 0, h) + x.narrow(dim, h, h)
        x = torch.cat([y, x.narrow(dim, 2 * h, 1)], dim) if n % 2 else y
        n = h + n % 2
    return x.squeeze(dim)


def _dot(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """``sum_k a[k][:, None] * b[k][None, :]`` accumulated in the order of k: an (n, m) product of a (K, n)
    and a (K, m) operand, each row computed alone, without the (n, m, K) intermediate of a pairwise sum."""
    acc = a[0].unsqueeze(1) * b[0]
    for k in range(1, len(a)):
        acc = acc + a[k].unsqueeze(1) * b[k]
    return acc


def _exp(x: torch.Tensor) -> torch.Tensor:
    x = x.clamp(-708.0, 709.0)
    k = torch.round(x * _INV_LN2)
    r = (x - k * _LN2_HI) - k * _LN2_LO
    p = torch.full_like(r, _TAYLOR[13])
    for c in reversed(_TAYLOR[:13]):
        p = p * r + c
    two_k = ((k.to(torch.int64) + 1023) << 52).view(DTYPE)
    return p * two_k


class _Exp(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        y = _exp(x)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        return g * y


class _Tanh(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        t = _exp(-2.0 * x.abs())
        y = (1.0 - t) / (1.0 + t)
        y = torch.where(x < 0, -y, y)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        return g * (1.0 - y * y)


class _Sigmoid(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        y = 1.0 / (1.0 + _exp(-x))
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        return g * (y * (1.0 - y))


class _Linear(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, weight, bias):
        ctx.save_for_backward(x, weight)
        return _dot(x.t().contiguous(), weight.t().contiguous()) + bias

    @staticmethod
    def backward(ctx, g):
        x, weight = ctx.saved_tensors
        gx = _dot(g.t().contiguous(), weight) if ctx.needs_input_grad[0] else None
        if g.numel() * x.shape[1] <= _SMALL:  # one pairwise sum over the rows; the same order as the loop below
            gw = fsum(g.unsqueeze(-1) * x.unsqueeze(1), 0)
        else:
            gw = torch.stack([fsum(g * xk.unsqueeze(1), 0) for xk in x.t().contiguous()], 1)
        return gx, gw, fsum(g, 0)


class _Broadcast(torch.autograd.Function):
    @staticmethod
    def forward(ctx, p, rows):
        return p.expand(rows, *p.shape).clone()

    @staticmethod
    def backward(ctx, g):
        return fsum(g, 0), None


def exp(x: torch.Tensor) -> torch.Tensor:
    """:math:`e^x` (to within 2 ulp), the same bits on every CPU."""
    return _Exp.apply(x)


def tanh(x: torch.Tensor) -> torch.Tensor:
    return _Tanh.apply(x)


def sigmoid(x: torch.Tensor) -> torch.Tensor:
    return _Sigmoid.apply(x)


def linear(x: torch.Tensor, layer: nn.Linear) -> torch.Tensor:
    """``layer(x)`` for ``x`` of any leading shape, summed in a fixed order forward and backward."""
    lead = x.shape[:-1]
    y = _Linear.apply(x.reshape(-1, x.shape[-1]), layer.weight, layer.bias)
    return y.reshape(*lead, layer.out_features)


def broadcast(p: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
    """``p`` repeated over the leading dimensions of ``like``; its gradient is summed in a fixed order."""
    lead = like.shape[:like.dim() - p.dim()]
    return _Broadcast.apply(p, math.prod(lead)).reshape(*lead, *p.shape)


def mlp(net: nn.Sequential, x: torch.Tensor, activation) -> torch.Tensor:
    """``net(x)``: its linear layers by :func:`linear`, every other layer replaced by ``activation``."""
    for layer in net:
        x = linear(x, layer) if isinstance(layer, nn.Linear) else activation(x)
    return x


@torch.no_grad()
def init_(module: nn.Module, seed: int) -> nn.Module:
    """``module`` in float64, each linear layer initialised as torch does by default (weight and bias uniform
    in :math:`\\pm 1/\\sqrt{\\text{fan in}}`), drawn in order by NumPy from ``seed``."""
    module.to(DTYPE)
    rng = np.random.default_rng(seed)
    for layer in module.modules():
        if isinstance(layer, nn.Linear):
            bound = 1.0 / math.sqrt(layer.in_features)
            layer.weight.copy_(torch.as_tensor(rng.uniform(-bound, bound, tuple(layer.weight.shape)), dtype=DTYPE))
            layer.bias.copy_(torch.as_tensor(rng.uniform(-bound, bound, tuple(layer.bias.shape)), dtype=DTYPE))
    return module


class Adam(torch.optim.Optimizer):
    """Torch's Adam with its defaults (no weight decay, no AMSGrad), each operation its own kernel.

    :math:`m \\leftarrow \\beta_1 m + (1-\\beta_1) g`, :math:`v \\leftarrow \\beta_2 v + (1-\\beta_2) g^2`,
    :math:`\\theta \\leftarrow \\theta - \\eta\\, \\hat m / (\\sqrt{\\hat v} + \\epsilon)` with the
    bias corrections :math:`1 - \\beta^t` computed by repeated multiplication (``pow`` is a libm
    call that may differ by CPU).
    """

    def __init__(self, params, lr: float, betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8):
        super().__init__(params, {"lr": lr, "betas": betas, "eps": eps})

    @torch.no_grad()
    def step(self) -> None:
        for group in self.param_groups:
            (b1, b2), lr, eps = group["betas"], group["lr"], group["eps"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                st = self.state[p]
                if not st:
                    st.update(step=0, b1_t=1.0, b2_t=1.0, m=torch.zeros_like(p), v=torch.zeros_like(p))
                g = p.grad
                st["step"] += 1
                st["b1_t"] *= b1
                st["b2_t"] *= b2
                st["m"].mul_(b1).add_(g * (1.0 - b1))
                st["v"].mul_(b2).add_((g * g) * (1.0 - b2))
                denom = (st["v"] / (1.0 - st["b2_t"])).sqrt() + eps
                p.sub_((st["m"] * (lr / (1.0 - st["b1_t"]))) / denom)
