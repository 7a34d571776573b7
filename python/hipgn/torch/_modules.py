"""Modules: GroupNorm (a drop-in nn.GroupNorm), GroupNormSiLU, and patch(), which puts them
into an existing model."""

import collections
from typing import List, NamedTuple, Optional

from torch import Tensor, nn

from ._ops import group_norm


class GroupNorm(nn.GroupNorm):
    """nn.GroupNorm computed by hipgn: the same constructor, parameters and state_dict (it is an
    nn.GroupNorm, so isinstance checks and checkpoints keep working). With fallback=True, inputs
    hipgn cannot take (CPU tensors, float64, other layouts) go to PyTorch instead of raising."""

    activation = None  # what group_norm() fuses after the normalization

    def __init__(self, num_groups: int, num_channels: int, eps: float = 1e-5, affine: bool = True, device=None,
                 dtype=None, *, fallback: bool = False):
        super().__init__(num_groups, num_channels, eps, affine, device, dtype)
        self.fallback = fallback

    def forward(self, input: Tensor) -> Tensor:
        return group_norm(input, self.num_groups, self.weight, self.bias, self.eps, self.activation,
                          fallback=self.fallback)

    def extra_repr(self) -> str:
        s = super().extra_repr()
        if self.activation:
            s += f", activation={self.activation!r}"
        return s + (", fallback=True" if self.fallback else "")

    @classmethod
    def from_module(cls, module: nn.GroupNorm, *, fallback: bool = False) -> "GroupNorm":
        """The module computing `module`'s GroupNorm (then this class's activation), sharing its
        parameters, not copies: an optimizer that holds them keeps training the same tensors.
        Its hooks come along too."""
        new = cls.__new__(cls)
        nn.Module.__init__(new)
        new.num_groups, new.num_channels = module.num_groups, module.num_channels
        new.eps, new.affine = module.eps, module.affine
        new.register_parameter("weight", module.weight)  # the same Parameter objects (or None)
        new.register_parameter("bias", module.bias)
        new.fallback = fallback
        for name, value in vars(module).items():
            if "hook" in name:  # the hook dictionaries (forward, backward, state_dict): shared
                setattr(new, name, value)
        new.train(module.training)
        return new


class GroupNormSiLU(GroupNorm):
    """GroupNorm followed by SiLU, fused: nn.Sequential(nn.GroupNorm(...), nn.SiLU()) in one
    kernel and one pass over memory, forward and backward. Its state_dict is the GroupNorm's."""

    activation = "silu"


class Replacement(NamedTuple):
    name: str              # the replaced module's qualified name in the model
    old: nn.Module         # the nn.GroupNorm that was there
    new: nn.Module         # the hipgn module now there
    fused: Optional[str]   # the SiLU folded into `new` (its slot now holds nn.Identity), or None


def _hooked(m: nn.Module) -> bool:
    return any(getattr(m, name, None) for name in ("_forward_hooks", "_forward_pre_hooks", "_backward_hooks",
                                                   "_backward_pre_hooks"))


def patch(model: nn.Module, *, fuse_silu: bool = True, fallback: bool = False) -> List[Replacement]:
    """Replaces every nn.GroupNorm in `model` (exactly that class: a subclass may compute
    something else) by hipgn's GroupNorm, sharing the parameters, and returns what it replaced.

    A SiLU that directly follows a GroupNorm is fused into it (GroupNormSiLU; the SiLU's slot
    becomes nn.Identity) only where the module structure proves that the GroupNorm's output goes
    to that SiLU alone: consecutive children of a plain nn.Sequential, with the GroupNorm used
    nowhere else in the model and neither module hooked. A forward() that calls them in turn
    (diffusers' ResnetBlock2D, say) does not prove it, and is left unfused here; under
    torch.compile the traced graph proves it, and fuse_silu fuses it there (set_compile_fusion).
    """
    if type(model) is nn.GroupNorm:
        raise ValueError("patch() replaces a model's submodules; for a lone nn.GroupNorm use "
                         "hipgn.torch.GroupNorm.from_module(module)")
    uses = collections.Counter(id(m) for _, m in model.named_modules(remove_duplicate=False))
    replaced = {}  # id(old) -> new: a module shared by several parents gets one replacement
    out = []
    for parent_name, parent in list(model.named_modules()):
        children = list(parent._modules.items())
        folded = set()
        for i, (name, child) in enumerate(children):
            if name in folded or type(child) is not nn.GroupNorm:
                continue
            qualified = f"{parent_name}.{name}" if parent_name else name
            after = children[i + 1] if i + 1 < len(children) else None
            if (fuse_silu and type(parent) is nn.Sequential and after is not None and type(after[1]) is nn.SiLU
                    and uses[id(child)] == 1 and not _hooked(child) and not _hooked(after[1])):
                new = GroupNormSiLU.from_module(child, fallback=fallback)
                parent._modules[name] = new
                parent._modules[after[0]] = nn.Identity()
                folded.add(after[0])
                fused = f"{parent_name}.{after[0]}" if parent_name else after[0]
                out.append(Replacement(qualified, child, new, fused))
                continue
            new = replaced.get(id(child))
            if new is None:
                new = replaced[id(child)] = GroupNorm.from_module(child, fallback=fallback)
            parent._modules[name] = new
            out.append(Replacement(qualified, child, new, None))
    return out
